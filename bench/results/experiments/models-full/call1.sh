# bench/results/experiments/models-full/call1.sh - two full-size checkpoints in one CUDA daemon: the English-large
# and mmBERT-base geometries (random weights, run-env.sh's mkmodel), each served alone and then both in one daemon.
# The same mixed set (bench/mixed/gen_requests.py, 120 bodies) goes to each as "model": "english" and "model":
# "multilingual", interleaved for the pair; run_layad.py times the start to /readyz, answers the set one request at
# a time, then closed loops at concurrency 1 and 16. The last step checks that each of the pair's sequential answers
# equals that model's alone (the parsed bodies, in their order). nvidia-smi samples the GPU's memory every second
# (smi.csv). Carry
# .carry (scripts/device/prep) and, from the working tree, bench/mixed and this folder.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
mkmodel_mmbert "$W/mmbert"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -l 1 > "$OUT/smi.csv" & smi=$!
python3 bench/mixed/gen_requests.py --n 120 --out "$W/set.jsonl" > /dev/null
python3 bench/results/experiments/models-full/bodies.py "$W/set.jsonl" "$W" en=english ml=multilingual
serve="$B/layad serve --device cuda --dtype fp16 --port 18190 --log-requests false"
drive() {  # NAME REQUESTS MODEL-ARGS...: one daemon launched by run_layad.py
  local name=$1 reqs=$2; shift 2
  echo "== $name $((SECONDS-t0)) s: $(date +%T)"
  timeout 200 python3 bench/mixed/run_layad.py --requests "$W/$reqs.jsonl" --port 18190 --out-dir "$OUT/runs" \
    --name "$name" --concurrency 1,16 --duration 5 --launch "$serve $*" 2>&1 | grep -E "ready|sequential|c=|Error|error"
}
drive english en --model english="$W/english"
drive multilingual ml --model multilingual="$W/mmbert"
drive pair pair --model english="$W/english" --model multilingual="$W/mmbert"
kill $smi
python3 - "$OUT/runs" <<'PY' | tee "$OUT/compare-pair.txt"
import json, sys
d = sys.argv[1]
def rows(name):
    return [json.loads(l) for l in open("%s/%s-answers.jsonl" % (d, name))]
pair, alone = rows("pair"), {"english": rows("english"), "multilingual": rows("multilingual")}
same = diff = failed = 0
for k, r in enumerate(pair):
    model = "english" if k % 2 == 0 else "multilingual"
    a = alone[model][k // 2]
    if not (r["ok"] and a["ok"]):
        failed += 1
    elif json.dumps(r["body"]) == json.dumps(a["body"]):
        same += 1
    else:
        diff += 1
        print("differs: request %d (%s)" % (k // 2, model))
print("pair against alone: %d identical, %d different, %d not answered by both" % (same, diff, failed))
PY
cd "$OUT" && tar czf runs.tgz runs && rm -rf runs && echo "done $((SECONDS-t0)) s"
