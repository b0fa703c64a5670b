#!/usr/bin/env bash
# test_ops_bench_peers.sh - the four-system comparison's tooling on the CPU (bench/mixed/peers.sh
# runs it on the H200): gen_fixed.py writes the same bytes twice, three kinds in turn at the token
# counts its docstring states; run_layad.py measures a tiny-checkpoint daemon over the fixed set;
# stage_split.py splits each answer's round trip into gpu, the daemon's host stages and the
# rest; compare.py finds no disagreement between two copies of one system's answers and counts one
# when an answer is changed; peers_report.py gives each kind a first call and a p50 after it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ops.sh"
ops_init
B=bench/mixed
T=$OPS_TMP

echo "-- gen_fixed.py"
python3 $B/gen_fixed.py --repeat 3 --out "$T/a.jsonl" >/dev/null
python3 $B/gen_fixed.py --repeat 3 --out "$T/b.jsonl" >/dev/null
cmp -s "$T/a.jsonl" "$T/b.jsonl" || ops_fail "gen_fixed.py is not deterministic"
python3 - "$T/a.jsonl" <<'PY' || ops_fail "gen_fixed.py: wrong set"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 9, len(rows)
assert all(rows[i] == rows[i % 3] for i in range(9)), "not three requests in turn"
nq = [len(r["questions"]) for r in rows[:3]]
assert nq == [1, 1, 3], nq
assert len(rows[1]["state"]) > 5 * len(rows[0]["state"]), "the long state is not long"
meta = json.load(open(sys.argv[1] + ".meta.json"))
assert meta["kinds"] == ["short_1q", "long_1q", "three_q"] and meta["n"] == 9, meta
print("9 requests, three kinds in turn, meta", meta["sha256"][:12])
PY

echo "-- run_layad.py on the tiny checkpoint (CPU)"
ops_start d
ops_wait_ready d || ops_fail "daemon not ready"
python3 $B/run_layad.py --requests "$T/a.jsonl" --port "${OPS_PORT[d]}" --out-dir "$T/out" \
  --duration 1 --concurrency 1 --label "CPU test" --commit test >"$T/run.log" 2>&1 \
  || { cat "$T/run.log"; ops_fail "run_layad.py"; }
# token counts of the tiny checkpoint's tokenizer differ from ModernBERT's; the request shapes hold
python3 - "$T/out/layad-answers.jsonl" <<'PY' || ops_fail "layad answers"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 9 and all(r["ok"] for r in rows), [r.get("error") for r in rows]
assert [len(r["body"]["answers"]) for r in rows[:3]] == [1, 1, 3]
# each answer carries the daemon's own stages (Server-Timing), to tell a slow one's side
assert all({"queue", "infer", "parse", "format"} <= set(r["server_timing_ms"]) for r in rows), rows[0]
toks = [r["body"]["usage"]["input_tokens"] for r in rows[:3]]
assert toks[1] > toks[0] and toks[2] > toks[0], toks
print("9 answered, input tokens", toks)
PY

echo "-- stage_split.py"
python3 $B/stage_split.py "$T/out/layad-answers.jsonl" --rows 3-5 >"$T/split.log" \
  || { cat "$T/split.log"; ops_fail "stage_split.py"; }
python3 - "$T/out/layad-answers.jsonl" "$T/split.log" <<'PY' || ops_fail "stage_split.py: parts"
import json, sys
sys.path.insert(0, "bench/mixed")
import stage_split
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:  # the daemon's stages fit inside the client's round trip; the device's inside run
    ms, gpu, host, outside = stage_split.split(r)
    assert host > 0 and 0 <= gpu <= r["server_timing_ms"]["run"], (r["i"], ms, gpu, host, outside)
    assert outside > -0.01, (r["i"], outside)  # the stages are rounded to microseconds
lines = open(sys.argv[2]).read().splitlines()
assert len(lines) == 1 + len(rows) + 1, len(lines)
out = json.loads(lines[-1])
assert out["inside"]["n"] == 3 and out["others"]["n"] == 3, out
assert out["inside"]["ms"] == round(sorted(r["ms"] for r in rows[3:6])[1], 3), out
assert [x is not None for x in out["p95_without_rows"]] == [True] * 3, out
print("stages inside the round trip over", len(rows), "answers; rows 3-5 against the others")
PY

echo "-- compare.py"
cp "$T/out/layad-answers.jsonl" "$T/out/copy-answers.jsonl"
python3 $B/compare.py --set layad="$T/out/layad-answers.jsonl" --set laya-cuda="$T/out/copy-answers.jsonl" \
  --set official="$T/out/copy-answers.jsonl" --out "$T/out/compare-stock.json" >/dev/null
python3 - "$T/out" <<'PY' || ops_fail "compare.py on identical answers / a changed one"
import json, subprocess, sys
d = sys.argv[1]
same = json.load(open(d + "/compare-stock.json"))["pairs"]["laya-cuda vs layad"]
assert same["requests_disagree"] == 0 and same["requests_over_tol"] == 0, same
rows = [json.loads(l) for l in open(d + "/copy-answers.jsonl")]
ans = rows[0]["body"]["answers"]["route"]
probs = ans["probabilities"]
keys = sorted(probs, key=lambda k: probs[k])
ans["choice"] = keys[0] if ans["choice"] != keys[0] else keys[-1]
probs[keys[0]], probs[keys[-1]] = probs[keys[-1]], probs[keys[0]]
with open(d + "/changed-answers.jsonl", "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in rows))
subprocess.check_call([sys.executable, "bench/mixed/compare.py", "--set", "layad=" + d + "/layad-answers.jsonl",
                       "--set", "laya-cuda=" + d + "/changed-answers.jsonl", "--out", d + "/changed.json"],
                      stdout=subprocess.DEVNULL)
diff = json.load(open(d + "/changed.json"))["pairs"]["laya-cuda vs layad"]
assert diff["requests_disagree"] == 1, diff
print("identical: 0 disagreements; one choice changed: 1")
PY

echo "-- peers_report.py"
python3 $B/peers_report.py --dir "$T/out" --meta "$T/a.jsonl.meta.json" --out "$T/peers.json" --note test \
  >"$T/report.log" || { cat "$T/report.log"; ops_fail "peers_report.py"; }
python3 - "$T/peers.json" <<'PY' || ops_fail "peers report"
import json, sys
r = json.load(open(sys.argv[1]))
assert list(r["systems"]) == ["layad"], list(r["systems"])
by = r["systems"]["layad"]["by_kind"]
toks = [by[k]["input_tokens"] for k in ("short_1q", "long_1q", "three_q")]
assert toks[1] > toks[0] and toks[2] > toks[0], toks
assert list(by) == ["short_1q", "long_1q", "three_q"]
for k, v in by.items():
    assert v["first_ms"] > 0 and v["after_first"]["n"] == 2 and v["rejected"] == 0, (k, v)
    assert v["input_tokens"] > 0, (k, v)
    assert r["table_p50_ms"]["layad"][k] == v["after_first"]["p50_ms"]
    # the daemon's own infer stage of the same requests, no longer than their round trips
    assert v["server_infer_after_first"]["n"] == 2, (k, v)
    assert 0 < v["server_infer_after_first"]["max_ms"] <= v["after_first"]["max_ms"], (k, v)
assert r["compare"]["official_stock"]["pairs"]["official vs layad"]["requests_disagree"] == 0
print("per kind: first call, p50 after it; compare carried")
PY
ops_stop d || true
echo "PASS"
