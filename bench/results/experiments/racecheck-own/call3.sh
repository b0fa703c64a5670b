# bench/results/experiments/racecheck-own/call3.sh - racecheck over the kernel suite's vs_cpu case, every kernel
# instrumented, the tuner off (as call2.sh, which kept only the first 30 KB of the log): the summary, and every kernel
# a report names, counted, to say whether any report names a kernel of ours (call 2 saw only cuBLASLt's nvjet
# kernels). ~2 minutes. Stage: make racecheck-build; cp build/racecheck/tests/gpu_kernels build/rc/gpu_kernels_rc;
# scripts/device/prep build/rc/gpu_kernels_rc; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
LAYAD_TEST_NO_TUNE=1 CK_RUN_CASE=vs_cpu timeout 240 "$cs" --tool racecheck "$B/gpu_kernels_rc" > "$W/rc.log" 2>&1
echo "racecheck vs_cpu exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks' "$W/rc.log" | tr '\n' ' ')"
grep -oE 'Race reported between [A-Za-z]+ access at [A-Za-z0-9_<>:, ]+\+0x' "$W/rc.log" | sed 's/+0x$//' |
  sort | uniq -c | sort -rn | tee "$OUT/rc-vs_cpu-kernels.txt" | head -5
echo "reports naming a kernel other than cuBLASLt's:"; grep -v nvjet "$OUT/rc-vs_cpu-kernels.txt" | head
tail -c 60000 "$W/rc.log" | gzip > "$OUT/rc-vs_cpu-tail.log.gz"
