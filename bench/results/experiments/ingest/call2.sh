# bench/results/experiments/ingest/call2.sh - the ingest probe with its ring fixed (call 1's first configuration
# addressed shared memory beyond its ring), then the daemon's tail after pauses, request by request: call 1's H100
# put q1_83tok p95 at 2.5 ms after 2 ms pauses and 5.4 ms after 20 ms (1.26 closed loop), the server's own queue,
# wake and resume stages 0.17-0.29 ms on average. Four daemons one after the other, default / all threads polling
# through the pauses (--worker-spin-us 50000: the loop and the worker never sleep between requests 20 ms apart) /
# default / polling, each at 2 and 20 ms pauses with loadgen --slow-ms 2 (every answer of 2 ms or more with its
# Server-Timing), vmstat beside each (steal time). Stage: scripts/device/prep build/bench/ingest_probe build/loadgen;
# `git rev-parse --short HEAD > .carry/commit`; carry .carry.
export OUT; source scripts/device/run-env.sh; source scripts/device/serve-lib.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 "$B/ingest_probe" > "$OUT/ingest.jsonl" 2> "$W/ingest.err"
echo "ingest exit $? $((SECONDS-t0)) s: $(wc -l < "$OUT/ingest.jsonl") lines"; tail -3 "$W/ingest.err"
mkdir -p "$W/tail"
levels() { # NAME SERVE-ARGS...
  local name=$1; shift
  serve_start 18190 "$@" || return 1
  timeout 20 "$B/loadgen" --port 18190 --concurrency 1 --duration 3 --warmup 1 --out /dev/null 2> /dev/null
  for g in 2 20; do
    local s=10; [ $g = 20 ] && s=15
    (vmstat 1 $((s + 1)) > "$W/tail/vmstat-$name-$g.txt" &)
    timeout 40 "$B/loadgen" --port 18190 --concurrency 1 --duration $s --warmup 1 --gap-ms $g --slow-ms 2 \
      --label "$name gap $g ms" --meta "commit=$LAYAD_COMMIT" --out "$W/tail/loadgen-$name-$g.json" 2>&1 | sed "s/^/$name /"
  done
  serve_stop
}
levels default; levels poll --worker-spin-us 50000; levels default2; levels poll2 --worker-spin-us 50000
echo "levels $((SECONDS-t0)) s; load $(cat /proc/loadavg)"
python3 - "$W/tail" <<'PY' | tee "$OUT/tail-summary.txt"
import glob, json, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/loadgen-*.json")):
    L = json.load(open(f))["levels"][0]; q = L["by_type"]["q1_83tok"]; st = L["server"]["stage_mean_ms"]
    print(os.path.basename(f), "q1_83tok p50 %.3f p95 %.3f p99 %.3f max %.3f" % (q["p50_ms"], q["p95_ms"], q["p99_ms"], q["max_ms"]),
          "| slow %d of %d |" % (len(L.get("slow", [])), L["requests"]),
          " ".join("%s %.3f" % (k, st[k]) for k in ("queue", "wake", "run", "back", "resume", "format") if k in st))
PY
(cd "$W" && tar czf "$OUT/tail.tgz" tail ingest.err serve.log)
