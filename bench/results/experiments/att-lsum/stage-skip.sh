#!/usr/bin/env bash
# bench/results/experiments/att-lsum/stage-skip.sh - stages call-skip.sh's binaries into .carry: HEAD's
# layad-dev as layad-dev-head, then HEAD + skip.patch (built in a worktree that reuses build/'s objects) as
# the suites and layad-dev. Then one device call carrying .carry: `bash bench/results/experiments/att-lsum/
# call-skip.sh` (~150 s). Its parity reads .carry/ref/english.ref (made as scripts/device/README.md says).
set -euo pipefail
repo=$(git rev-parse --show-toplevel)
here=bench/results/experiments/att-lsum
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-skip-wt keep=/tmp/layad-skip-keep
make -j2 build/layad-dev > /dev/null
rm -rf "$wt" "$keep" && mkdir -p "$keep"
git worktree prune
cp build/layad-dev "$keep/layad-dev-head"
git worktree add -q -f "$wt" HEAD
cp -a build "$wt/build"
(cd "$wt" && git ls-files -z | xargs -0 touch -d '2000-01-01' && git apply "$repo/$here/skip.patch" &&
  make -j2 build/layad build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda > /dev/null)
# prep takes build/'s layad and layad-dev first: the worktree's replace them
(cd "$wt" && LAYAD_SHARED="$repo/../shared" scripts/device/prep build/tests/gpu_kernels \
  build/tests/gpu_backend_cuda "$keep/layad-dev-head" > /dev/null)
rm -rf .carry/pack.txz .carry/env.sh
cp -a "$wt/.carry/." .carry/
git rev-parse --short HEAD > .carry/commit
git worktree remove --force "$wt"
rm -rf "$keep"
