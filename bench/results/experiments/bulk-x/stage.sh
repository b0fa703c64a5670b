#!/usr/bin/env bash
# bench/results/experiments/bulk-x/stage.sh N - builds call N's binaries and stages them into .carry with
# callN.sh (then a device call carrying .carry: `bash .carry/callN.sh`). Needs .carry/ref/english.ref
# (see ../xcopy/stage.sh).
#   1 (ran at 17829d4; the macros it edits left the tree after it): the tree's binaries and -bulk
#     (SO_BULK_X_ROWS 1: X by bulk copies at every M), -nt40 (PS_GEGLU_NT 40), -nt40bulk (both)
#   2 (ran at e0e120d): the tree's, -nt24 (PS_ROPE_NT 24) and -start (35b31ac's layad-dev)
#   3 (not yet run): the tree's, -spread, -cp32, -wi-only, -step8, -step4 and -wi-pairs-by-f (the patches here);
#     the tree's also time path_tune_tokens, and bench_kernels the fused projections (proj_small);
#     and -halves (../attention-halves/attention-halves.patch) for call4.sh, that folder's call.sh;
#     call5.sh is ../profile-gemms/call.sh (the tree's binaries only)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 1|2|3" >&2; exit 2; }
repo=$(git rev-parse --show-toplevel)
here=bench/results/experiments/bulk-x
cd "$repo"
export PATH=/usr/local/cuda/bin:$PATH
wt=/tmp/layad-bulk-wt stage=/tmp/layad-bulk-stage
rm -rf "$wt" "$stage"
git worktree prune
mkdir -p "$stage"
# variant NAME REV "BINARIES" EDIT...: REV's tree with each EDIT applied (a patch file of this folder,
# else a sed expression on the small kernels' sources), BINARIES (build/...) built and staged as *-NAME
variant() {
  local name=$1 rev=$2 bins=$3 e b
  shift 3
  git worktree add -q -f "$wt" "$rev"
  (cd "$wt" && for e in "$@"; do
      case $e in
        *.patch) git apply "$repo/$here/$e" ;;
        *) sed -i "$e" kernels/gemm_small.cuh kernels/proj_small.cu ;;
      esac
    done && make -j2 $bins > /dev/null)
  for b in $bins; do cp "$wt/$b" "$stage/$(basename "$b")-$name"; done
  git worktree remove --force "$wt"
}
dev="build/layad-dev build/tests/gpu_kernels"
main="build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda"
case $1 in
  1)
    bulk='s/#define SO_BULK_X_ROWS [0-9]*/#define SO_BULK_X_ROWS 1/'
    nt40='s/#define PS_GEGLU_NT [0-9]*/#define PS_GEGLU_NT 40/'
    variant bulk HEAD "$dev build/bench/bench_kernels" "$bulk"
    variant nt40 HEAD "$dev" "$nt40"
    variant nt40bulk HEAD "$dev" "$bulk" "$nt40"
    main="$main build/bench/bench_kernels" ;;
  2)
    variant nt24 HEAD "$main" 's/#define PS_ROPE_NT [0-9]*/#define PS_ROPE_NT 24/'
    variant start 35b31ac build/layad-dev ;;
  3)
    for v in spread cp32 wi-only step8 step4 wi-pairs-by-f; do variant "$v" HEAD "$dev" "$v.patch"; done
    variant halves HEAD "$main build/bench/bench_kernels" ../attention-halves/attention-halves.patch
    main="$main build/bench/bench_kernels" ;;
  *) echo "usage: $0 1|2|3" >&2; exit 2 ;;
esac
scripts/device/prep $main "$stage"/*
rm -rf "$stage"
git rev-parse --short HEAD > .carry/commit
rm -f .carry/call*.sh
cp "$here/call$1.sh" ".carry/call$1.sh"
[ "$1" != 3 ] || cp bench/results/experiments/attention-halves/call.sh .carry/call4.sh
[ "$1" != 3 ] || cp bench/results/experiments/profile-gemms/call.sh .carry/call5.sh
