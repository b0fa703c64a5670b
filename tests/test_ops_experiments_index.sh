#!/usr/bin/env bash
# test_ops_experiments_index.sh - scripts/experiments-index: the committed
# bench/results/experiments/INDEX.md is what the experiments README gives (--check), and on a
# small README of its own each heading lands under its verdict with its line and session, and
# --check fails once that README changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
idx=$here/../scripts/experiments-index
"$idx" --check || ops_fail "bench/results/experiments/INDEX.md is stale"

readme=$OPS_TMP/README.md index=$OPS_TMP/INDEX.md
printf '%s\n' '# Session A' '## A kernel: rejected (+5%)' 'text' '## Another: kept (-3%)' '# Session B' \
  '## Where the time goes' '## A patch: landed' > "$readme"
"$idx" "$readme" "$index" > /dev/null
section() { awk -v h="$1" '/^## /{on = index($0, h) == 4} on && /^- /' "$index"; }
[ "$(section Rejected)" = "- A kernel: rejected (+5%) (line 2; Session A)" ] || ops_fail "rejected: $(section Rejected)"
if [ "$(section Kept | wc -l)" != 2 ] || ! section Kept | grep -q '^- A patch: landed (line 7; Session B)$'; then
  ops_fail "kept: $(section Kept)"
fi
[ "$(section Measurements)" = "- Where the time goes (line 6; Session B)" ] || ops_fail "other: $(section Measurements)"
"$idx" --check "$readme" "$index" || ops_fail "--check refused the index it just wrote"
echo '## One more: rejected' >> "$readme"
if "$idx" --check "$readme" "$index" 2> /dev/null; then ops_fail "--check passed a stale index"; fi
echo "PASS: experiments index"
