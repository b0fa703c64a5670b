# bench/results/experiments/models-full/cpu-ab.sh OLD-LAYAD NEW-LAYAD OUT - the tokenizer caches' slots with two models,
# on the CPU: one daemon serving the tiny checkpoint twice (names a and b: two tokenizers of one tokenizer.json),
# driven at concurrency 1 for 5 s with the same 40 mixed bodies sent to a only, then alternately to a and b, for
# each binary in turn (old, new, old, new). Prints each phase's parse stage per request (laya_serving_stage_seconds
# of /metrics, the difference across the phase) and requests/s.
set -u
old=$1 new=$2 out=$3; mkdir -p "$out"; W=$(mktemp -d)
build/layad-dev mkmodel --preset tiny --out "$W/tiny" > /dev/null
python3 bench/mixed/gen_requests.py --n 40 --out "$W/set.jsonl" > /dev/null
python3 bench/results/experiments/models-full/bodies.py "$W/set.jsonl" "$W" a=a b=b
parse_us() {  # METRICS-BEFORE METRICS-AFTER: parse microseconds per request in between
  python3 - "$1" "$2" <<'PY'
import re, sys
def read(p):
    d = {}
    for l in open(p):
        m = re.match(r'laya_serving_stage_seconds_(sum|count)\{stage="parse"\} (\S+)', l)
        if m:
            d[m.group(1)] = float(m.group(2))
    return d
a, b = read(sys.argv[1]), read(sys.argv[2])
print("%.1f us over %d" % (1e6 * (b["sum"] - a["sum"]) / (b["count"] - a["count"]), b["count"] - a["count"]))
PY
}
for bin in "old:$old" "new:$new" "old2:$old" "new2:$new"; do
  name=${bin%%:*}
  "${bin#*:}" serve --model a="$W/tiny" --model b="$W/tiny" --device cpu --port 18191 --log-requests false \
    > "$out/$name-serve.log" 2>&1 & pid=$!
  for _ in $(seq 100); do curl -fsS http://127.0.0.1:18191/readyz > /dev/null 2>&1 && break; sleep 0.1; done
  curl -s http://127.0.0.1:18191/metrics > "$W/m0"
  for set in a pair; do
    python3 bench/mixed/run_layad.py --requests "$W/$set.jsonl" --port 18191 --out-dir "$W/runs" --name "$name-$set" \
      --concurrency 1 --duration 5 2>&1 | grep -o "c=1 [0-9.]* req/s" | tr '\n' ' '
    cp "$W/runs/$name-$set-metrics.txt" "$W/m1"
    echo "$name $set: parse $(parse_us "$W/m0" "$W/m1")" | tee -a "$out/parse.txt"
    cp "$W/m1" "$W/m0"
  done
  kill -TERM $pid; wait $pid
done
rm -rf "$W"
