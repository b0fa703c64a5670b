#!/usr/bin/env bash
# bench/results/experiments/bulk-x/stage.sh - builds main's binaries and the -bulk ones (the same
# tree with SO_BULK_X_ROWS 1) and stages them into .carry with call1.sh (then a device call carrying
# .carry: `bash .carry/call1.sh`). Needs .carry/ref/english.ref (see ../xcopy/stage.sh).
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-bulk-wt stage=/tmp/layad-bulk-stage
rm -rf "$wt" "$stage"
git worktree prune
mkdir -p "$stage"
git worktree add -q -f "$wt" HEAD
(cd "$wt" && sed -i 's/#define SO_BULK_X_ROWS [0-9]*/#define SO_BULK_X_ROWS 1/' kernels/gemm_small.cuh &&
  make -j2 build/layad-dev build/tests/gpu_kernels build/bench/bench_kernels > /dev/null)
for b in layad-dev tests/gpu_kernels bench/bench_kernels; do cp "$wt/build/$b" "$stage/$(basename $b)-bulk"; done
git worktree remove --force "$wt"
scripts/device/prep build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda build/bench/bench_kernels \
  "$stage"/*
rm -rf "$stage"
git rev-parse --short HEAD > .carry/commit
cp bench/results/experiments/bulk-x/call1.sh .carry/call1.sh
