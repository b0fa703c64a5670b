# bench/results/experiments/racecheck-own/call4.sh - compute-sanitizer over what racecheck has not covered case by
# case: the kernel suite's vs_cpu case (call 2 kept only its log's first 30 KB), then the backend suite one test at a
# time (each test is now a case of its own; the whole suite outran 500 s under racecheck), then initcheck over both
# suites if time is left. Every kernel instrumented (leaving cuBLASLt's out breaks it under the tool, call 1), the
# tuner off (LAYAD_TEST_NO_TUNE=1). For each run: exit, summary, and every kernel a report names, counted (names
# parsed up to their "+0x" offset, so templated kernels of ours are counted too).
# Stage: make racecheck-build; mkdir -p build/rc; cp build/racecheck/tests/gpu_kernels build/rc/gpu_kernels_rc;
# cp build/racecheck/tests/gpu_backend_cuda build/rc/gpu_backend_cuda_rc;
# scripts/device/prep build/rc/gpu_kernels_rc build/rc/gpu_backend_cuda_rc build/tests/gpu_kernels
# build/tests/gpu_backend_cuda; carry .carry. The runs are scripts/device/run-env.sh's `sanitize`.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-575}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
"$cs" --version | tail -1 | tee -a "$OUT/gpu.txt"
sanitize racecheck "$B/gpu_kernels_rc" vs_cpu 200
for c in bad_rows forward_timing late_capture packing_order_and_k split_branch_rows fused_proj_rows att_pack_forms \
    timed_paths parity_fp16 parity_bf16; do
  sanitize racecheck "$B/gpu_backend_cuda_rc" $c 120
done
sanitize initcheck "$B/gpu_kernels" vs_cpu 90
sanitize initcheck "$B/gpu_backend_cuda" parity_fp16 90
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail)
