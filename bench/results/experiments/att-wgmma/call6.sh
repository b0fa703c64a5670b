# bench/results/experiments/att-wgmma/call6.sh - racecheck's RAW reports on the two-group attention (att_save ->
# __syncthreads -> att_load, every build since the halves landed) against bench/racecheck_probe.cu, the same handoff
# alone: groups with equal, unequal and no named barriers before it, and a racy control; then memcheck and
# synccheck on the lean1 build's attention cases.
# Stage: scripts/device/prep build/tests/gpu_kernels build/bench/racecheck_probe (lean1 build)
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$B/racecheck_probe"; echo "probe exit $?"
for c in equal unequal none racy; do
  timeout 60 "$cs" --tool racecheck --racecheck-report all "$B/racecheck_probe" $c > "$W/probe-$c.log" 2>&1
  echo "racecheck $c exit $?: $(grep -hE 'read wrong|RACECHECK SUMMARY' "$W/probe-$c.log" | tr '\n' ' ')"
  grep -m2 -A2 'Potential' "$W/probe-$c.log"
done
for tool in memcheck synccheck; do
  CK_RUN_CASE=attention timeout 150 "$cs" --tool $tool "$B/gpu_kernels" > "$W/$tool-lean1.log" 2>&1
  echo "$tool lean1 exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY' "$W/$tool-lean1.log") $(grep -h 'Checks' "$W/$tool-lean1.log")"
done
tar -C "$W" -czf "$OUT/call6.tgz" probe-equal.log probe-unequal.log probe-none.log probe-racy.log memcheck-lean1.log synccheck-lean1.log
echo "end $((SECONDS-t0)) s"
