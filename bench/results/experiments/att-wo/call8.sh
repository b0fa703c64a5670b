# bench/results/experiments/att-wo/call8.sh - after call 7: both suites with packing_order_and_k and att_wo_rows
# taking the fused out-projection off where they compare against it, then racecheck on `make racecheck-build`'s
# suites (the attention's two-group handoff padded, kernels/attention.cu) over the kernel suite's attention case
# and the backend cases that run the fused launch (att_wo_rows, fused_proj_rows; every ROW_STEP-th row), cut to the
# deadline DL. Stage: make racecheck-build; its two suites copied to build/rc/gpu_kernels_rc and
# build/rc/gpu_backend_cuda_rc; scripts/device/prep with those and build/tests/gpu_kernels
# build/tests/gpu_backend_cuda; .carry/commit; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-330}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_suites
grep -E "attention \+ out|Failure|Error" "$W/kernels.log" "$W/backend.log" | head -8
cp "$W/kernels.log" "$W/backend.log" "$OUT/"
sanitize racecheck "$B/gpu_kernels_rc" attention 90
LAYAD_TEST_ROW_STEP=${ROW_STEP:-12} sanitize racecheck "$B/gpu_backend_cuda_rc" att_wo_rows 150
LAYAD_TEST_ROW_STEP=48 sanitize racecheck "$B/gpu_backend_cuda_rc" fused_proj_rows 90
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail)
echo "done $((SECONDS-t0)) s"
