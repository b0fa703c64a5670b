# bench/results/experiments/persistent/call5.sh - why a v4 stage's MMAs take 1.2-2.9 us with no weights in flight
# (call 4: 16 rows, W_NONE, 4-16 k-steps a warp): Nsight Compute on the timed 28-layer launch (M 16, W_NONE, splits
# 1/4/1/4), the plain build and the variant that copies each stage's descriptor out of constant memory at once
# (-DPERSIST_GEMM_COPY=1); then the whole probe on that variant. Stage: scripts/device/prep build/bench/persist_probe
# build/bench/persist_probe_copy; carry .carry.
export OUT; source .carry/env.sh; W=/tmp/layad-run; mkdir -p "$W"; B=$PWD/.carry/bin; t0=$SECONDS
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
for v in persist_probe persist_probe_copy; do
  PERSIST_MODE=3 PERSIST_SPLIT=0 timeout 150 "$NCU" --set full --import-source yes --kernel-name regex:persist_kernel \
    --launch-skip 1 --launch-count 1 -o "$W/$v" -f "$B/$v" 16 > "$W/$v-ncu.json" 2> "$W/$v-ncu.err"
  echo "ncu $v exit $? $((SECONDS-t0)) s"; tail -2 "$W/$v-ncu.err"
  "$NCU" --import "$W/$v.ncu-rep" --page details > "$W/$v-details.txt" 2>&1
  "$NCU" --import "$W/$v.ncu-rep" --page source --csv --print-source sass > "$W/$v-sass.csv" 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Issued Ipc|Stall|Instruction Cache|No Instruction" "$W/$v-details.txt" | head -20
done
timeout 100 "$B/persist_probe_copy" 16 32 64 96 > "$W/probe-v4-copy.json" 2> "$W/probe-copy.err"
echo "probe copy exit $? $((SECONDS-t0)) s"
timeout 100 "$B/persist_probe" 16 32 64 96 > "$W/probe-v4-rerun.json" 2> "$W/probe-rerun.err"
echo "probe rerun exit $? $((SECONDS-t0)) s"
(cd "$W" && tar czf "$OUT/ncu.tgz" persist_probe*-details.txt persist_probe*-sass.csv persist_probe*.ncu-rep *.err)
cp "$W"/probe-v4-*.json "$OUT/"
