# bench/results/experiments/racecheck-own/call4.sh - compute-sanitizer over what racecheck has not covered case by
# case: the kernel suite's vs_cpu case (call 2 kept only its log's first 30 KB), then the backend suite one test at a
# time (each test is now a case of its own; the whole suite outran 500 s under racecheck), then initcheck over both
# suites if time is left. Every kernel instrumented (leaving cuBLASLt's out breaks it under the tool, call 1), the
# tuner off (LAYAD_TEST_NO_TUNE=1). For each run: exit, summary, and every kernel a report names, counted (names
# parsed up to their "+0x" offset, so templated kernels of ours are counted too; call3.sh's pattern missed them).
# Stage: make racecheck-build; mkdir -p build/rc; cp build/racecheck/tests/gpu_kernels build/rc/gpu_kernels_rc;
# cp build/racecheck/tests/gpu_backend_cuda build/rc/gpu_backend_cuda_rc;
# scripts/device/prep build/rc/gpu_kernels_rc build/rc/gpu_backend_cuda_rc build/tests/gpu_kernels
# build/tests/gpu_backend_cuda; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-575}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
"$cs" --version | tail -1 | tee -a "$OUT/gpu.txt"
# sanitize TOOL BINARY CASE CAP: one case (all: every case) under the tool, at most CAP seconds and what is left before DL.
sanitize() {
  local tool=$1 bin=$2 case=$3 cap=$4 left log
  left=$((DL - (SECONDS - t0))); [ "$cap" -le "$left" ] || cap=$left
  [ "$cap" -ge 20 ] || { echo "$tool $case: not run (time)"; return; }
  log=$W/$tool-$(basename "$bin")-$case.log
  local sel=(CK_RUN_CASE="$case"); [ "$case" = all ] && sel=()
  env LAYAD_TINY="$W/tiny" LAYAD_TEST_NO_TUNE=1 "${sel[@]}" timeout "$cap" "$cs" --tool "$tool" "$bin" > "$log" 2>&1
  echo "$tool $(basename "$bin") $case: exit $? at $((SECONDS-t0)) s (cap $cap): $(grep -hE 'SUMMARY|Checks:' "$log" | tr '\n' ' ')"
  awk '/Race reported between/ { sub(/.* access at /, ""); sub(/\+0x.*/, ""); print; next }
       /Uninitialized __global__ memory read/ { u = 1; next }
       u && / at / { sub(/.* at /, ""); sub(/\+0x.*/, ""); print "uninitialized read in " $0; u = 0 }' "$log" |
    sed 's/(.*//' | sort | uniq -c | sort -rn > "${log%.log}.kernels"
  grep -v nvjet "${log%.log}.kernels" | sed 's/^/    not cuBLASLt: /' | head -8
  grep -c nvjet "${log%.log}.kernels" | sed 's/^/    cuBLASLt kernels named: /'
  tail -c 20000 "$log" > "$log.tail"
}
sanitize racecheck "$B/gpu_kernels_rc" vs_cpu 200
for c in bad_rows forward_timing late_capture packing_order_and_k split_branch_rows fused_proj_rows att_pack_forms \
    timed_paths parity_fp16 parity_bf16; do
  sanitize racecheck "$B/gpu_backend_cuda_rc" $c 120
done
sanitize initcheck "$B/gpu_kernels" vs_cpu 90
sanitize initcheck "$B/gpu_backend_cuda" parity_fp16 90
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail)
