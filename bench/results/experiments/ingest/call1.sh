# bench/results/experiments/ingest/call1.sh - the tree at the session's start on the GPU (its attention source was
# refactored without a device: the suites, English fp16 parity, the forward at the issue's shapes), the ingest probe
# (bench/ingest_probe.cu: how fast bulk copies bring bytes into one SM, shared / multicast / DRAM, and a flag's round
# trip between two SMs), then the daemon at concurrency 1 closed loop and after 2 and 20 ms pauses (the H200's 5-8 ms
# outliers of figures-92ccfe5/call1). Stage: scripts/device/prep build/bench/ingest_probe build/tests/gpu_kernels
# build/tests/gpu_backend_cuda build/loadgen; `git rev-parse --short HEAD > .carry/commit`; .carry/ref/english.ref;
# carry .carry; ask for an H200.
export OUT; source scripts/device/run-env.sh; source scripts/device/serve-lib.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 "$B/ingest_probe" > "$OUT/ingest.jsonl" 2> "$W/ingest.err"
echo "ingest exit $? $((SECONDS-t0)) s: $(wc -l < "$OUT/ingest.jsonl") lines"; tail -3 "$W/ingest.err"
run_suites
run_parity parity-english-fp16.json parity.log english
timeout 100 "$B/layad-dev" bench --model "$W/english" --shapes 1x16,1x83,1x150,1x512,8x512,64x512 --path-tune-tokens 64 \
  --commit "$LAYAD_COMMIT" --out "$OUT/forward.json" | grep -E "^ +[0-9]+x"
echo "bench $((SECONDS-t0)) s"
if [ $((SECONDS-t0)) -lt 480 ] && serve_start 18190; then
  for g in 0 2 20; do
    s=8; [ $g = 20 ] && s=15
    timeout 30 "$B/loadgen" --port 18190 --concurrency 1 --duration $s --warmup 1 --gap-ms $g --label "gap $g ms" \
      --meta "commit=$LAYAD_COMMIT" --out "$W/loadgen-gap$g.json" 2>&1 | grep -E "q1_83tok|p50" | head -3
  done
  serve_stop
fi
echo "done $((SECONDS-t0)) s"
for l in ingest.err kernels.log backend.log parity.log serve.log; do [ -f "$W/$l" ] && head -c 30000 "$W/$l" > "$W/$l.head"; done
(cd "$W" && tar czf "$OUT/logs.tgz" *.head loadgen-gap*.json 2>/dev/null)
