# bench/results/experiments/l2-persist/call1.sh - the GEMMs' outputs kept in the L2's persisting part
# (l2-persist.patch): while a graph is captured, the kernel that wrote an activation gets an access-policy
# window over it (LAYAD_L2_MARK bits: 1 u after Wi, 2 g after GeGLU, 4 qkv after Wqkv and RoPE, 8 res after
# the residual GEMMs, 16 xn after the LayerNorms, 32 att after attention), with a carve-out of
# LAYAD_L2_PERSIST_MB (capped at the device's maximum). Nsight Compute at 8x512 had GeGLU reading 0.23% of
# its input from the L2 and the LayerNorms 1%. One binary: no variables = the tree's forward.
# Stage: scripts/device/prep; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; mkdir -p "$OUT/fw"
run() { # NAME MB MARK
  echo "== $1 (MB $2, mark $3)"
  LAYAD_L2_PERSIST_MB=$2 LAYAD_L2_MARK=$3 timeout 200 "$B/layad-dev" bench --model "$W/english" --label "english $1" \
    --shapes 1x83,1x512,2x512,8x512,64x512 --commit "$LAYAD_COMMIT+l2-persist.patch" --out "$OUT/fw/forward-$1.json" \
    2> "$W/$1.err" | grep -E "^ +[0-9]+x"
  grep -m1 "carve-out" "$W/$1.err"; grep "l2-persist: 4096 tokens" "$W/$1.err" | head -2
}
run base 0 0
run u 64 1
run ug 64 3
run all 64 63
run res-xn 64 24
run all16 16 63
run base2 0 0
run u2 64 1
echo "benches $((SECONDS-t0)) s"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in "geglu 1" "layernorm 24"; do set -- $v
  LAYAD_L2_PERSIST_MB=64 LAYAD_L2_MARK=$2 timeout 150 "$NCU" --cache-control none --clock-control none --kernel-name "regex:$1" \
    --launch-skip 300 --launch-count 4 --metrics gpu__time_duration.sum,lts__t_sector_op_read_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
    --csv "$B/layad-dev" bench --model "$W/english" --shapes 8x512 --groups 1 --per-group 1 > "$OUT/ncu-$1-marked.csv" 2> "$W/ncu-$1.err"
  echo "ncu $1 exit $?"; grep -E '"(gpu__time|lts__t_sector|dram__bytes)' "$OUT/ncu-$1-marked.csv" | cut -d, -f13- | head -8
done
(cd "$OUT" && tar czf fw.tgz fw && rm -rf fw)
echo "done $((SECONDS-t0)) s"
