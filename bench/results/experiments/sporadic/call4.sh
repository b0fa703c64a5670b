# bench/results/experiments/sporadic/call4.sh - prepared, not run: does an empty kernel launched when a
# decision's headers wake a sleeping GPU worker (device_nudge) take back the ~60 us a lone forward loses
# after a pause (call1/call3: `run` 1.336-1.349 ms closed loop, 1.391-1.410 after 200 ms, at 1980 MHz)?
# Run from the repository root on the lent GPU machine, carrying .carry (scripts/device/prep build/loadgen
# build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`). ~5 minutes: the backend suite
# (its nudge_leaves_answers case), then one daemon binary with device_nudge false / true / false / true, one
# state directory, loadgen at concurrency 1 with pauses of 0, 2, 20 and 200 ms; the summary compares `run`.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
LAYAD_TINY=$W/tiny timeout 90 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $?"; grep -E "Checks|F:" $OUT/gpu_backend_cuda.log
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
for v in off on off2 on2; do
  n=false; case $v in on*) n=true ;; esac
  [ $((SECONDS - t0)) -lt 480 ] || { echo "skipped $v"; continue; }
  $B/layad serve --model $W/english --device cuda --dtype fp16 --port $port --state-dir $W/state --log-requests false \
    --device-nudge $n --log-file $W/serve-$v.log & pid=$!
  for _ in $(seq 300); do curl -fsS http://127.0.0.1:$port/readyz > /dev/null 2>&1 && break; sleep 0.2; done
  timeout 20 $B/loadgen --port $port --concurrency 1 --duration 3 --warmup 1 --out /dev/null 2> /dev/null
  for g in 0 2 20 200; do
    d=5; [ $g = 200 ] && d=10
    timeout 40 $B/loadgen --port $port --concurrency 1 --duration $d --warmup 1 --gap-ms $g --label "nudge $v gap $g ms" \
      --meta "device_nudge=$n" --out $OUT/loadgen-$v-gap$g.json 2>&1 | sed "s/^/$v /"
  done
  kill -TERM $pid; wait $pid
  echo "$v done $((SECONDS-t0)) s"
done
python3 - $OUT <<'PY' | tee $OUT/summary.txt
import json, os, sys
for g in (0, 2, 20, 200):
    for v in ("off", "on", "off2", "on2"):
        f = os.path.join(sys.argv[1], "loadgen-%s-gap%d.json" % (v, g))
        if not os.path.exists(f):
            continue
        l = json.load(open(f))["levels"][0]; q = l["by_type"]["q1_83tok"]; st = l["server"]["stage_mean_ms"]
        print("gap %3d nudge %-4s q1_83tok p50 %.3f p99 %.3f | mix p50 %.3f | run %.3f wake %.3f queue %.3f" % (
            g, v, q["p50_ms"], q["p99_ms"], l["latency"]["p50_ms"], st["run"], st["wake"], st["queue"]))
PY
# the device tool returns at most 8 files
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
