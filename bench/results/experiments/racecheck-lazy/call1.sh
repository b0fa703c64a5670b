# bench/results/experiments/racecheck-lazy/call1.sh - racecheck over the backend suite's cases that outran every call:
# each warmed every bucket of the tiny checkpoint (up to 64 x 512 tokens) before its first forward, and the parity
# and one-row cases ran 288 rows (three forwards each in the one-row cases). Now the buckets are captured as a case's
# forwards reach them (LAYAD_TEST_LAZY_WARM=1, which sanitize sets) and the cases take every ROW_STEP-th row
# (LAYAD_TEST_ROW_STEP, default 12: 24 rows). First the plain suite in both modes (no tool) to show they pass, then
# racecheck case by case (CASES, CAP seconds each), then, with 200 s left, parts-d/call1.sh's A/B/A/B at 1x83
# (its files in parts-d.tgz). DL (seconds) trims the call. Stage: the racecheck build copied to build/rc/
# (gpu_backend_cuda_rc), then scripts/device/prep build/rc/layad-dev-p2 build/rc/layad-dev-p2all
# build/rc/gpu_backend_cuda_rc build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`;
# .carry/ref/english.ref; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-480}
export LAYAD_TEST_ROW_STEP=${ROW_STEP:-12}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
LAYAD_TINY=$W/tiny LAYAD_TEST_NO_TUNE=1 LAYAD_TEST_LAZY_WARM=1 timeout 90 "$B/gpu_backend_cuda" > "$W/lazy.log" 2>&1
echo "lazy suite exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/lazy.log")"; grep -E "vs cpu|rows of|ROW_STEP" "$W/lazy.log"
for c in ${CASES:-split_branch_rows fused_proj_rows parity_fp16 parity_bf16 packing_order_and_k timed_paths}; do
  sanitize racecheck "$B/gpu_backend_cuda_rc" "$c" "${CAP:-110}"
  [ $((DL - (SECONDS - t0))) -ge 60 ] || break
done
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail lazy.log)
if [ $((DL - (SECONDS - t0))) -ge 200 ]; then
  mkdir -p "$W/parts-d" && OUT=$W/parts-d SHAPES=1x83 DL=190 bash bench/results/experiments/parts-d/call1.sh 2>&1 |
    grep -v "^NVIDIA"
  echo "parts-d $((SECONDS-t0)) s"; (cd "$W" && tar czf "$OUT/parts-d.tgz" parts-d)
fi
