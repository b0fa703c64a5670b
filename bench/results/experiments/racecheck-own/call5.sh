# bench/results/experiments/racecheck-own/call5.sh - what call 4 left: initcheck (never run before) over both suites,
# every case, then racecheck over the backend case that call 4 cut first (packing_order_and_k) with the rest of the
# call. Stage and carry as call4.sh.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-480}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
"$cs" --version | tail -1 | tee -a "$OUT/gpu.txt"
sanitize initcheck "$B/gpu_kernels" all 150
sanitize initcheck "$B/gpu_backend_cuda" all 150
sanitize racecheck "$B/gpu_backend_cuda_rc" packing_order_and_k 300
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail)
