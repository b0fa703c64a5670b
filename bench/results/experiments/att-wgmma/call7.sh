# bench/results/experiments/att-wgmma/call7.sh - which part of the attention makes racecheck report its two-group
# handoff: bench/racecheck_probe.cu's "unequal" case with each feature of the kernel added (cp.async in the walk,
# griddepcontrol, the state array at 84 KB of 100 KB dynamic shared memory, a grid of 264 blocks), then all.
# Stage: scripts/device/prep build/bench/racecheck_probe
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$B/racecheck_probe" unequal 15; echo "probe exit $?"
for f in 0 1 2 4 8 12 15; do for c in unequal none; do
  [ $f = 0 ] && [ $c = none ] && continue
  timeout 90 "$cs" --tool racecheck --racecheck-report all "$B/racecheck_probe" $c $f > "$W/probe-$c-$f.log" 2>&1
  echo "racecheck $c features $f exit $? $((SECONDS-t0)) s: $(grep -hE 'read wrong|RACECHECK SUMMARY' "$W/probe-$c-$f.log" | tr '\n' ' ')"
  grep -m1 -A2 'Potential' "$W/probe-$c-$f.log"
done; done
timeout 60 "$cs" --tool racecheck --racecheck-report all "$B/racecheck_probe" racy 15 > "$W/probe-racy-15.log" 2>&1
echo "racecheck racy features 15 exit $?: $(grep -hE 'read wrong|RACECHECK SUMMARY' "$W/probe-racy-15.log" | tr '\n' ' ')"
for l in "$W"/probe-*.log; do head -c 20000 "$l" > "$l.head"; done
tar -C "$W" -czf "$OUT/call7.tgz" $(cd "$W" && ls probe-*.log.head)
echo "end $((SECONDS-t0)) s"
