#!/usr/bin/env bash
# bench/results/experiments/bulk-x/stage3.sh - the third call's binaries: this tree's, and the tree with
# spread.patch (the X rows' bulk copies issued by all four warps, not warp 0's lanes) and with cp32.patch
# (the split kernel's X by cp.async at 17-32 rows), and with wi-only.patch (Wqkv + RoPE fused only up to
# 16 tokens, Wi + GeGLU up to fused_proj_tokens) and with step8.patch (buckets 8 tokens apart from 64 to
# 128, not 16), staged into .carry with call3.sh (then a device
# call carrying .carry: `bash .carry/call3.sh`).
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-bulk-wt stage=/tmp/layad-bulk-stage
rm -rf "$wt" "$stage"
git worktree prune
mkdir -p "$stage"
for v in spread cp32 wi-only step8; do
  git worktree add -q -f "$wt" HEAD
  (cd "$wt" && git apply "$repo/bench/results/experiments/bulk-x/$v.patch" &&
    make -j2 build/layad-dev build/tests/gpu_kernels > /dev/null)
  for b in layad-dev tests/gpu_kernels; do cp "$wt/build/$b" "$stage/$(basename $b)-$v"; done
  git worktree remove --force "$wt"
done
scripts/device/prep build/layad-dev build/tests/gpu_kernels "$stage"/*
rm -rf "$stage"
git rev-parse --short HEAD > .carry/commit
rm -f .carry/call*.sh
cp bench/results/experiments/bulk-x/call3.sh .carry/call3.sh
