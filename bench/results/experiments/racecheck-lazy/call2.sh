# bench/results/experiments/racecheck-lazy/call2.sh - racecheck over backend cases (CASES; by default the two no run has
# finished under the tool), lazy warm-up and every ROW_STEP-th row as in call1.sh (the clean runs took 48), each at
# most CAP seconds (default 250). Stage and carry as call1.sh.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-570}; export LAYAD_TEST_ROW_STEP=${ROW_STEP:-12}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
for c in ${CASES:-packing_order_and_k timed_paths}; do
  sanitize racecheck "$B/gpu_backend_cuda_rc" "$c" "${CAP:-250}"
done
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail)
