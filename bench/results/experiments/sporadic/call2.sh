# bench/results/experiments/sporadic/call2.sh - run from the repository root on the lent GPU machine, carrying
# .carry (scripts/device/prep build/loadgen and 8ba1ba9's layad as .carry/bin/layad-before; the working tree's
# layad wakes the scheduler's sleeping threads when a decision's headers arrive). One state directory (the
# GEMM tuning cache of the first start, read by the others). Each daemon in turn, before / prewake / before2 /
# prewake2: loadgen at concurrency 1 with pauses of 0, 2, 20 and 200 ms after every answer. ~5 minutes.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
for v in before prewake before2 prewake2; do
  b=$B/layad; case $v in before*) b=$B/layad-before ;; esac
  [ $((SECONDS - t0)) -lt 500 ] || { echo "skipped $v"; continue; }
  $b serve --model $W/english --device cuda --dtype fp16 --port $port --state-dir $W/state --log-requests false \
    --log-file $W/serve-$v.log & pid=$!
  for _ in $(seq 300); do curl -fsS http://127.0.0.1:$port/readyz > /dev/null 2>&1 && break; sleep 0.2; done
  timeout 20 $B/loadgen --port $port --concurrency 1 --duration 3 --warmup 1 --out /dev/null 2> /dev/null
  for g in 0 2 20 200; do
    d=5; [ $g = 200 ] && d=10
    timeout 40 $B/loadgen --port $port --concurrency 1 --duration $d --warmup 1 --gap-ms $g --label "$v gap $g ms" \
      --meta "binary=$v" --out $OUT/loadgen-$v-gap$g.json 2>&1 | sed "s/^/$v /"
  done
  curl -s http://127.0.0.1:$port/metrics > $W/metrics-$v.txt
  kill -TERM $pid; wait $pid
  echo "$v done $((SECONDS-t0)) s"
done
python3 - $OUT <<'PY' | tee $OUT/summary.txt
import glob, json, os, sys
for g in (0, 2, 20, 200):
    for v in ("before", "prewake", "before2", "prewake2"):
        f = os.path.join(sys.argv[1], "loadgen-%s-gap%d.json" % (v, g))
        if not os.path.exists(f):
            continue
        l = json.load(open(f))["levels"][0]; q = l["by_type"]["q1_83tok"]; st = l["server"]["stage_mean_ms"]
        print("gap %3d %-8s q1_83tok p50 %.3f p99 %.3f | mix p50 %.3f | queue %.3f wake %.3f parse %.3f run %.3f" % (
            g, v, q["p50_ms"], q["p99_ms"], l["latency"]["p50_ms"], st["queue"], st["wake"], st["parse"], st["run"]))
PY
# the device tool returns at most 8 files: one archive of the reports, one of the daemons' logs and metrics
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
cd $W && tar czf $OUT/raw.tgz metrics-*.txt serve-*.log
