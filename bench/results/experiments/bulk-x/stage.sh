#!/usr/bin/env bash
# bench/results/experiments/bulk-x/stage.sh - builds main's binaries, the -bulk ones (the same
# tree with SO_BULK_X_ROWS 1), the -nt40 ones (PS_GEGLU_NT 40) and -nt40bulk (both), and stages them into .carry with call1.sh (then a device call carrying
# .carry: `bash .carry/call1.sh`). Needs .carry/ref/english.ref (see ../xcopy/stage.sh).
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-bulk-wt stage=/tmp/layad-bulk-stage
rm -rf "$wt" "$stage"
git worktree prune
mkdir -p "$stage"
# variant NAME SED...: the tree with each sed expression applied to kernels/, its binaries staged as *-NAME
variant() {
  local name=$1; shift
  git worktree add -q -f "$wt" HEAD
  (cd "$wt" && for e in "$@"; do sed -i "$e" kernels/gemm_small.cuh kernels/proj_small.cu; done &&
    make -j2 build/layad-dev build/tests/gpu_kernels build/bench/bench_kernels > /dev/null)
  for b in layad-dev tests/gpu_kernels; do cp "$wt/build/$b" "$stage/$(basename $b)-$name"; done
  [ "$name" != bulk ] || cp "$wt/build/bench/bench_kernels" "$stage/bench_kernels-bulk"
  git worktree remove --force "$wt"
}
bulk='s/#define SO_BULK_X_ROWS [0-9]*/#define SO_BULK_X_ROWS 1/'
nt40='s/#define PS_GEGLU_NT [0-9]*/#define PS_GEGLU_NT 40/'
variant bulk "$bulk"
variant nt40 "$nt40"
variant nt40bulk "$bulk" "$nt40"
scripts/device/prep build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda build/bench/bench_kernels \
  "$stage"/*
rm -rf "$stage"
git rev-parse --short HEAD > .carry/commit
cp bench/results/experiments/bulk-x/call1.sh .carry/call1.sh
