# bench/results/experiments/att-wgmma/call10.sh - the suites of `make racecheck-build` (KN_ATT_PAD_BARRIERS=1) under
# compute-sanitizer racecheck: the attention cases, then the split branch's and small packs' kernels with the time
# left. Stage: make racecheck-build; scripts/device/prep build/racecheck/tests/gpu_kernels; carry .carry.
source .carry/env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for c in attention split; do
  CK_RUN_CASE=$c timeout $((170 - (SECONDS - t0))) "$cs" --tool racecheck .carry/bin/gpu_kernels > /tmp/rc-$c.log 2>&1
  echo "racecheck $c exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks|Internal|rror' /tmp/rc-$c.log | head -5 | tr '\n' ' ')"
done
