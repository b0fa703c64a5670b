# bench/results/experiments/att-wgmma/call7.sh - which part of the attention makes racecheck report its two-group
# handoff: bench/racecheck_probe.cu's "unequal" and "none" cases with each feature of the kernel added (1 cp.async
# in the walk, 2 griddepcontrol, 4 the state array at 84 KB of 100 KB dynamic shared memory, 8 a grid of 264
# blocks, 16 the handoff as bar.arrive / bar.sync on barrier 3), then the attention with that handoff
# (gpu_kernels-arrive): its cases plain and under racecheck.
# Stage: scripts/device/prep build/bench/racecheck_probe build/base/gpu_kernels-arrive
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
CK_RUN_CASE=attention timeout 60 "$B/gpu_kernels-arrive" > "$W/arrive.log" 2>&1; echo "gpu_kernels-arrive exit $?: $(grep -h Checks "$W/arrive.log")"
CK_RUN_CASE=attention timeout 100 "$cs" --tool racecheck --racecheck-report all "$B/gpu_kernels-arrive" > "$W/racecheck-arrive.log" 2>&1 &
"$B/racecheck_probe" unequal 31; echo "probe exit $?"
for f in 0 1 2 4 8 12 15 16 31; do for c in unequal none; do
  [ $f = 0 ] && [ $c = none ] && continue
  timeout 60 "$cs" --tool racecheck --racecheck-report all "$B/racecheck_probe" $c $f > "$W/probe-$c-$f.log" 2>&1
  echo "racecheck $c features $f exit $? $((SECONDS-t0)) s: $(grep -hE 'read wrong|RACECHECK SUMMARY' "$W/probe-$c-$f.log" | tr '\n' ' ')"
done; done
for f in 15 31; do timeout 60 "$cs" --tool racecheck --racecheck-report all "$B/racecheck_probe" racy $f > "$W/probe-racy-$f.log" 2>&1
  echo "racecheck racy features $f exit $?: $(grep -hE 'read wrong|RACECHECK SUMMARY' "$W/probe-racy-$f.log" | tr '\n' ' ')"; done
wait
echo "racecheck gpu_kernels-arrive $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY' "$W/racecheck-arrive.log") $(grep -h Checks "$W/racecheck-arrive.log")"
grep -m1 -A2 Potential "$W/racecheck-arrive.log"
for l in "$W"/probe-*.log "$W"/racecheck-arrive.log "$W"/arrive.log; do head -c 20000 "$l" > "$l.head"; done
tar -C "$W" -czf "$OUT/call7.tgz" $(cd "$W" && ls *.log.head)
echo "end $((SECONDS-t0)) s"
