# bench/results/experiments/att-wgmma/call8.sh - prepared, not run: does racecheck compare named-barrier counts
# across warps? The probe's "more" (group 1 passes more named barriers than group 0, as the halves give it for a
# span that starts at an odd key tile, i.e. sliding windows) and "first" cases, plain and with features 15; then
# the attention with both groups padded to the same count of named barriers (racecheck-pad.patch, gpu_kernels-pad):
# its cases plain, under racecheck, memcheck and synccheck.
# Stage: build/base/gpu_kernels-pad (HEAD + racecheck-pad.patch), then
#   scripts/device/prep build/bench/racecheck_probe build/base/gpu_kernels-pad
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
"$B/racecheck_probe"; echo "probe exit $?"
for f in 0 15; do for c in more first equal; do
  timeout 60 "$cs" --tool racecheck --racecheck-report all "$B/racecheck_probe" $c $f > "$W/probe-$c-$f.log" 2>&1
  echo "racecheck $c features $f exit $? $((SECONDS-t0)) s: $(grep -hE 'read wrong|RACECHECK SUMMARY' "$W/probe-$c-$f.log" | tr '\n' ' ')"
done; done
CK_RUN_CASE=attention timeout 60 "$B/gpu_kernels-pad" > "$W/pad.log" 2>&1; echo "gpu_kernels-pad exit $?: $(grep -h Checks "$W/pad.log")"
for tool in racecheck memcheck synccheck; do
  CK_RUN_CASE=attention timeout 150 "$cs" --tool $tool "$B/gpu_kernels-pad" > "$W/$tool-pad.log" 2>&1
  echo "$tool pad exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool-pad.log" | tr '\n' ' ') $(grep -h Checks "$W/$tool-pad.log")"
done
for l in "$W"/probe-*.log "$W"/*-pad.log "$W"/pad.log; do head -c 20000 "$l" > "$l.head"; done
tar -C "$W" -czf "$OUT/call8.tgz" $(cd "$W" && ls *.log.head)
echo "end $((SECONDS-t0)) s"
