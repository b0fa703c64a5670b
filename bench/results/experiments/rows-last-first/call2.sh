# bench/results/experiments/rows-last-first/call2.sh - prepared, not run: does a GEMM's output reach the pass after
# it from the L2? Nsight Compute with the caches left alone (--cache-control none; one pass, so no replay
# restores them) on the forward at 8x512: the L2 hit rate and DRAM bytes of GeGLU (after Wi), RoPE (after Wqkv)
# and the LayerNorms (after the residual GEMMs), next to their times. A hit rate near 0 says the rows-last-first
# result is the L2's (cuBLASLt's stores do not stay), not the order's. Stage: scripts/device/prep; carry .carry.
export OUT; source scripts/device/run-env.sh
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for re in geglu rope layernorm; do
  timeout 150 "$NCU" --cache-control none --clock-control none --kernel-name "regex:$re" --launch-skip 300 \
    --launch-count 6 --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,lts__t_sector_op_read_hit_rate.pct,dram__bytes_read.sum \
    --csv "$B/layad-dev" bench --model "$W/english" --shapes 8x512 --groups 1 --per-group 1 > "$OUT/ncu-$re.csv" 2> "$W/ncu-$re.err"
  echo "ncu $re exit $?"; grep -E '"(gpu__time|lts__t_sector|dram__bytes)' "$OUT/ncu-$re.csv" | cut -d, -f5,13- | head -12
done
