# bench/results/experiments/att-wgmma/call12.sh - call10.sh widened: every suite of `make racecheck-build`
# (KN_ATT_PAD_BARRIERS=1) under compute-sanitizer racecheck: the kernel suite's attention, split and vs_cpu cases,
# then the backend suite (tiny checkpoint). Stage: make racecheck-build; scripts/device/prep
# build/racecheck/tests/gpu_kernels build/racecheck/tests/gpu_backend_cuda; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for c in attention split vs_cpu; do
  CK_RUN_CASE=$c timeout 150 "$cs" --tool racecheck "$B/gpu_kernels" > "$W/rc-$c.log" 2>&1
  echo "racecheck $c exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks|Internal' "$W/rc-$c.log" | head -5 | tr '\n' ' ')"
done
LAYAD_TINY=$W/tiny timeout 200 "$cs" --tool racecheck "$B/gpu_backend_cuda" > "$W/rc-backend.log" 2>&1
echo "racecheck backend exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks|Internal' "$W/rc-backend.log" | head -5 | tr '\n' ' ')"
for l in "$W"/rc-*.log; do head -c 30000 "$l" > "$l.head"; done
tar -C "$W" -czf "$OUT/racecheck-logs.tgz" $(cd "$W" && ls rc-*.log.head)
