# bench/results/experiments/racecheck-lazy/call1.sh - racecheck over the backend suite's cases that outran every call
# (each warmed every bucket of the tiny checkpoint, up to 64 x 512 tokens, before its first forward): now with
# LAYAD_TEST_LAZY_WARM=1 (sanitize sets it), so a case captures only the buckets its forwards reach. First the plain
# suite with lazy warm-up (no tool) to show the mode passes, then parts-d/call1.sh's A/B/A/B (1x83 only, to leave
# time; its files in parts-d.tgz), then racecheck case by case. CASES and DL (seconds) trim it. Stage: scripts/device/prep
# build/rc/layad-dev-p2 build/rc/layad-dev-p2all build/rc/gpu_backend_cuda_rc build/tests/gpu_backend_cuda (the
# racecheck build copied to build/rc/ first); `git rev-parse --short HEAD > .carry/commit`; .carry/ref/english.ref;
# carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-570}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
LAYAD_TINY=$W/tiny LAYAD_TEST_NO_TUNE=1 LAYAD_TEST_LAZY_WARM=1 timeout 90 "$B/gpu_backend_cuda" > "$W/lazy.log" 2>&1
echo "lazy suite exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/lazy.log")"; grep -E "vs cpu|rows of|paths|forms" "$W/lazy.log"
mkdir -p "$W/parts-d" && OUT=$W/parts-d SHAPES=${SHAPES:-1x83} DL=260 bash bench/results/experiments/parts-d/call1.sh \
  2>&1 | grep -v "^NVIDIA"
echo "parts-d $((SECONDS-t0)) s"; (cd "$W" && tar czf "$OUT/parts-d.tgz" parts-d)
for c in ${CASES:-fused_proj_rows split_branch_rows packing_order_and_k parity_fp16 parity_bf16 timed_paths}; do
  sanitize racecheck "$B/gpu_backend_cuda_rc" "$c" 200
done
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail lazy.log)
