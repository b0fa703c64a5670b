#!/usr/bin/env bash
# bench/results/experiments/att-lsum/stage.sh - builds this experiment's binaries and stages them into .carry
# with call.sh (then a device call carrying .carry: `bash .carry/call.sh short`, or `all`).
#   unsuffixed: HEAD + lsum.patch + att-pack.patch (the attention's l from the rounded P, its key tiles in two
#     interleaved halves, two groups a block for packs of few tiles: att_pack_tokens); every binary the call runs
#   -lsum: HEAD + lsum.patch alone; -main: HEAD
# A patched variant builds in a worktree that reuses build/'s objects: its sources are dated before them and
# the patches then touch what they change, so make rebuilds only that (minutes, not the whole tree).
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
here=bench/results/experiments/att-lsum
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-att-wt stage=/tmp/layad-att-stage
main="build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda build/bench/bench_kernels"
make -j2 $main > /dev/null
rm -rf "$wt" "$stage"
git worktree prune
mkdir -p "$stage"
for b in build/layad-dev build/tests/gpu_backend_cuda build/bench/bench_kernels; do
  cp "$b" "$stage/$(basename "$b")-main"
done
variant() { # SUFFIX "PATCHES" "BINARIES"
  local sfx=$1 patches=$2 bins=$3 p b
  git worktree add -q -f "$wt" HEAD
  cp -a build "$wt/build"
  (cd "$wt" && git ls-files -z | xargs -0 touch -d '2000-01-01' &&
    for p in $patches; do git apply "$repo/$here/$p"; done && make -j2 $bins > /dev/null)
  for b in $bins; do cp "$wt/$b" "$stage/$(basename "$b")$sfx"; done
  git worktree remove --force "$wt"
}
variant -lsum lsum.patch "build/layad-dev build/tests/gpu_backend_cuda"
variant "" "lsum.patch att-pack.patch" "$main"
# prep copies build/'s layad and layad-dev first, then these: the patched layad-dev replaces HEAD's
scripts/device/prep "$stage"/*
rm -rf "$stage"
git rev-parse --short HEAD > .carry/commit
rm -f .carry/call*.sh
cp "$here/call.sh" .carry/call.sh
