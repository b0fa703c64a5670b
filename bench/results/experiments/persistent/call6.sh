# bench/results/experiments/persistent/call6.sh - v4 after call 5's profile: X's copies issued without a division a
# chunk, two accumulator sets a warp up to 32 rows, the units bookkeeping in 32 bits without a division a unit (the
# first run also tried a split row 4/4/4/8, which Wo2 refuses: 2624 / 8 is no multiple of 16); the whole probe, plain
# and with PERSIST_GEMM_COPY, at 16-128 tokens, then Nsight Compute on the timed 16-row W_NONE launch again. Stage:
# scripts/device/prep build/bench/persist_probe build/bench/persist_probe_copy; carry .carry.
export OUT; source .carry/env.sh; W=/tmp/layad-run; mkdir -p "$W"; B=$PWD/.carry/bin; t0=$SECONDS
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
for v in persist_probe persist_probe_copy; do
  timeout 120 "$B/$v" 16 32 64 96 128 > "$OUT/$v.json" 2> "$W/$v.err"
  echo "$v exit $? $((SECONDS-t0)) s"
done
PERSIST_MODE=3 PERSIST_SPLIT=0 timeout 150 "$NCU" --set full --import-source yes --kernel-name regex:persist_kernel \
  --launch-skip 1 --launch-count 1 -o "$W/ncu-none16" -f "$B/persist_probe" 16 > /dev/null 2> "$W/ncu.err"
echo "ncu exit $? $((SECONDS-t0)) s"
"$NCU" --import "$W/ncu-none16.ncu-rep" --page details > "$W/ncu-none16-details.txt" 2>&1
"$NCU" --import "$W/ncu-none16.ncu-rep" --page source --csv --print-source sass > "$W/ncu-none16-sass.csv" 2>&1
grep -E "Duration|Issued Ipc|Warp Cycles Per Issued" "$W/ncu-none16-details.txt" | head -5
(cd "$W" && tar czf "$OUT/ncu.tgz" ncu-none16* *.err)
