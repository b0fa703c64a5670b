#!/usr/bin/env bash
# test_ops_examples.sh - every example of README.md and server/api/README.md runs as written and
# prints what the page shows (tests/lib/doc_examples.py: ```sh blocks of curl/layad commands, each
# compared with the ```json or ```text block after it). The daemon stands in for `make run`: the
# tiny checkpoint (the same deterministic one), CPU; the examples' 127.0.0.1:8080 is pointed at it.
# After a deliberate change of answers: tests/lib/doc_examples.py --update URL BIN TINY FILES
# rewrites the shown outputs (see its header), then read the diff.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
ops_start docs
ops_wait_ready docs || ops_fail "the daemon did not become ready"
python3 "$here/lib/doc_examples.py" "$(ops_url docs)" "$OPS_BIN" "$OPS_TINY" README.md server/api/README.md \
  || ops_fail "a documented example differs from what it prints (log: $OPS_TMP/docs.log)"
ops_stop docs TERM 30 || ops_fail "the daemon exited $?"
echo "PASS"
