#!/usr/bin/env bash
# bench/results/experiments/xcopy/stage.sh - builds main's binaries, xcopy.patch's and
# ../fused-proj/fused-proj.patch's, and stages them into .carry with the three call scripts (then
# device calls carrying .carry: `bash .carry/call1.sh`, this folder's, `bash .carry/call2.sh`,
# fused-proj's, (call3, ../small-norm's, ran on 2026-12-05 and its code left the tree), and `bash
# .carry/call4.sh`, the serving A/B of the host changes made without a device: 169a3d2's daemon,
# staged as layad-before, against main's), and the English CPU reference the parity sweeps read
# (.carry/ref/english.ref, made here once: minutes).
# Ran on 2026-12-05 (bench/results/experiments/README.md). fused-proj.patch was then regenerated and
# landed (544631a), so it no longer applies: this script is a record of that call.
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-xcopy-wt stage=/tmp/layad-xcopy-stage
rm -rf "$wt" "$stage"
git worktree prune
mkdir -p "$stage"
git worktree add -q -f "$wt" HEAD
(cd "$wt" && git apply "$repo/bench/results/experiments/xcopy/xcopy.patch" &&
  make -j2 build/layad-dev build/tests/gpu_kernels build/bench/bench_kernels > /dev/null)
for b in layad-dev tests/gpu_kernels bench/bench_kernels; do cp "$wt/build/$b" "$stage/$(basename $b)-xcopy"; done
git worktree remove --force "$wt"
# the same for ../fused-proj/fused-proj.patch
git worktree add -q -f "$wt" HEAD
(cd "$wt" && git apply "$repo/bench/results/experiments/fused-proj/fused-proj.patch" &&
  make -j2 build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda > /dev/null)
for b in layad-dev tests/gpu_kernels tests/gpu_backend_cuda; do cp "$wt/build/$b" "$stage/$(basename $b)-fused"; done
git worktree remove --force "$wt"
# the daemon before the host changes of the sessions without a device, for call4's serving A/B
git worktree add -q -f "$wt" 169a3d2
(cd "$wt" && make -j2 build/layad > /dev/null)
cp "$wt/build/layad" "$stage/layad-before"
git worktree remove --force "$wt"
make -j2 build/bench/mcast_probe build/bench/fused_probe build/loadgen > /dev/null
scripts/device/prep build/bench/mcast_probe build/bench/fused_probe build/tests/gpu_kernels build/bench/bench_kernels \
  build/tests/gpu_backend_cuda build/loadgen "$stage"/*
if [ ! -f .carry/ref/english.ref ]; then
  mkdir -p .carry/ref
  [ -f build/english-large/model.safetensors ] ||
    build/layad-dev mkmodel --preset english-large --tokenizer ../shared/data/modernbert-tokenizer.json \
      --out build/english-large > /dev/null
  build/layad-dev parity-fast --model build/english-large --dtype none --ref .carry/ref/english.ref > /dev/null
fi
rm -rf .carry/shared-root "$stage"
git rev-parse --short HEAD > .carry/commit
rm -f .carry/call*.sh
cp bench/results/experiments/xcopy/call1.sh .carry/call1.sh
cp bench/results/experiments/fused-proj/call1.sh .carry/call2.sh
printf '%s\n' '#!/usr/bin/env bash' \
  'bash scripts/device/serving-ab base=layad-before new=layad base2=layad-before new2=layad' > .carry/call4.sh
