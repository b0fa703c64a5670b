# bench/results/experiments/sporadic/pauses.sh - sourced by call2.sh, call5-7.sh and ../graph-seam/call.sh on the
# lent GPU machine (B, W, OUT, port and t0 set; W/english made). ab_daemon VARIANT BINARY [SERVE ARG...]: one
# daemon (the state directory W/state shared by all, so later starts read the first one's GEMM tuning) under loadgen at
# concurrency 1 with pauses of 0, 2, 20 and 200 ms after every answer, skipped past AB_LIMIT_S (480) s.
# ab_summary VARIANT...: q1_83tok and the stage means of each level, into OUT/summary.txt.
ab_daemon() {
  local v=$1 b=$2 pid g d
  shift 2
  [ $((SECONDS - t0)) -lt "${AB_LIMIT_S:-480}" ] || { echo "skipped $v"; return; }
  $b serve --model $W/english --device cuda --dtype fp16 --port $port --state-dir $W/state --log-requests false \
    --log-file $W/serve-$v.log "$@" & pid=$!
  for _ in $(seq 300); do curl -fsS http://127.0.0.1:$port/readyz > /dev/null 2>&1 && break; sleep 0.2; done
  timeout 20 $B/loadgen --port $port --concurrency 1 --duration 3 --warmup 1 --out /dev/null 2> /dev/null
  for g in 0 2 20 200; do
    d=5; [ $g = 200 ] && d=10
    timeout 40 $B/loadgen --port $port --concurrency 1 --duration $d --warmup 1 --gap-ms $g --label "$v gap $g ms" \
      --meta "variant=$v" --out $OUT/loadgen-$v-gap$g.json 2>&1 | sed "s/^/$v /"
  done
  curl -s http://127.0.0.1:$port/metrics > $W/metrics-$v.txt
  kill -TERM $pid; wait $pid
  echo "$v done $((SECONDS-t0)) s"
}

ab_summary() {
  python3 - $OUT "$@" <<'PY' | tee $OUT/summary.txt
import json, os, sys
for g in (0, 2, 20, 200):
    for v in sys.argv[2:]:
        f = os.path.join(sys.argv[1], "loadgen-%s-gap%d.json" % (v, g))
        if not os.path.exists(f):
            continue
        l = json.load(open(f))["levels"][0]; q = l["by_type"]["q1_83tok"]; st = l["server"]["stage_mean_ms"]
        print("gap %3d %-8s q1_83tok p50 %.3f p99 %.3f | mix p50 %.3f | queue %.3f wake %.3f parse %.3f run %.3f" % (
            g, v, q["p50_ms"], q["p99_ms"], l["latency"]["p50_ms"], st["queue"], st["wake"], st["parse"], st["run"])
              + ("".join(" %s %.4f" % (k, st[k]) for k in ("launch", "gpu", "h2d") if k in st)))
PY
}
