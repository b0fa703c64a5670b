#!/usr/bin/env bash
# bench/results/experiments/bulk-x/stage2.sh - the second call's binaries: this tree's (X by bulk
# copies in the small kernels, Wi's blocks of 40 rows), its -nt24 variant (Wqkv's blocks of 24 rows:
# PS_ROPE_NT 24) and the session start's layad-dev (35b31ac, as layad-dev-start), staged into .carry
# with call2.sh (then a device call carrying .carry: `bash .carry/call2.sh`). Needs
# .carry/ref/english.ref (see ../xcopy/stage.sh).
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-bulk-wt stage=/tmp/layad-bulk-stage
rm -rf "$wt" "$stage"
git worktree prune
mkdir -p "$stage"
git worktree add -q -f "$wt" HEAD
(cd "$wt" && sed -i 's/#define PS_ROPE_NT [0-9]*/#define PS_ROPE_NT 24/' kernels/proj_small.cu &&
  make -j2 build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda > /dev/null)
for b in layad-dev tests/gpu_kernels tests/gpu_backend_cuda; do cp "$wt/build/$b" "$stage/$(basename $b)-nt24"; done
git worktree remove --force "$wt"
git worktree add -q -f "$wt" 35b31ac
(cd "$wt" && make -j2 build/layad-dev > /dev/null)
cp "$wt/build/layad-dev" "$stage/layad-dev-start"
git worktree remove --force "$wt"
scripts/device/prep build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda "$stage"/*
rm -rf "$stage"
git rev-parse --short HEAD > .carry/commit
rm -f .carry/call*.sh
cp bench/results/experiments/bulk-x/call2.sh .carry/call2.sh
