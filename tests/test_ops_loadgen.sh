#!/usr/bin/env bash
# test_ops_loadgen.sh - the daemon benchmark's load generator (tests/loadgen.c) against a tiny-
# checkpoint daemon: a closed-loop level and a sporadic one (--gap-ms) both complete without
# errors, the gap is recorded and holds (fewer requests a second than its period allows), and
# every level carries the server's own account of the same answers (Server-Timing stages, and the
# infer stage per request type no longer than the client's whole round trip); --slow-ms lists
# exactly the answers at least that slow, each with its Server-Timing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
T=$OPS_TMP
LG=${LAYAD_BUILD:-build}/loadgen
[ -x "$LG" ] || ops_fail "$LG not built"

ops_start d
ops_wait_ready d || ops_fail "daemon not ready"
"$LG" --port "${OPS_PORT[d]}" --concurrency 2 --duration 1.5 --warmup 0.3 --out "$T/closed.json" 2>"$T/lg.log" ||
  { cat "$T/lg.log"; ops_fail "loadgen (closed loop)"; }
"$LG" --port "${OPS_PORT[d]}" --concurrency 1 --duration 1.5 --warmup 0.2 --gap-ms 40 --out "$T/gap.json" \
  2>>"$T/lg.log" || { cat "$T/lg.log"; ops_fail "loadgen --gap-ms"; }
"$LG" --port "${OPS_PORT[d]}" --concurrency 1 --duration 1 --warmup 0.2 --slow-ms 0.001 --out "$T/slow.json" \
  2>>"$T/lg.log" || { cat "$T/lg.log"; ops_fail "loadgen --slow-ms"; }
python3 - "$T/closed.json" "$T/gap.json" "$T/slow.json" <<'PY' || ops_fail "loadgen reports"
import json, sys
closed, gap, slow = (json.load(open(f))["levels"][0] for f in sys.argv[1:])
assert "slow" not in closed, "slow answers listed without --slow-ms"
# every answer takes more than 1 us: all are listed (up to 200 a client), each with its stages
rows = slow["slow"]
assert len(rows) == min(slow["requests"], 200) and rows, (len(rows), slow["requests"])
for r in rows:
    assert r["ms"] >= 0.001 and r["type"] in slow["by_type"], r
    assert "infer;dur=" in r["server_timing"] and "queue;dur=" in r["server_timing"], r
    assert 0 <= r["at_s"] <= 1.05, r
for lv, g in ((closed, 0.0), (gap, 40.0)):
    assert lv["errors"] == 0 and lv["requests"] > 0, lv
    assert lv["gap_ms"] == g, lv["gap_ms"]
    st = lv["server"]["stage_mean_ms"]
    assert {"queue", "infer", "parse", "format"} <= set(st), st
    for name, s in lv["server"]["infer_by_type"].items():
        c = lv["by_type"][name]  # a type may see no answer in a short window on a slow (sanitizer) build
        assert s["n"] == c["n"] and (c["n"] == 0 or 0 < s["p50_ms"] <= c["max_ms"]), (name, s, c)
# one client pausing 40 ms after every answer cannot exceed 25 requests a second
assert gap["requests_per_s"] < 25, gap["requests_per_s"]
print("closed loop %d requests, gap 40 ms %d requests (%.1f/s); infer p50 by type %s"
      % (closed["requests"], gap["requests"], gap["requests_per_s"],
         {k: v["p50_ms"] for k, v in gap["server"]["infer_by_type"].items()}))
PY
ops_stop d
echo PASS
