# bench/results/experiments/bulk-spread/call2.sh - after call 1 (the spread bulk copies kept: 1x16 -2.3%): do the
# fused projections now pay at 48 tokens (alone they beat cuBLASLt + RoPE / GeGLU there: 6.61 against 6.94 us and
# 8.39 against 8.59)? scripts/device/flag-ab --fused-proj-tokens 32 / 48 at 40 and 48 tokens (English); then the
# mmBERT-base geometry, base binary against new, A/B/A/B at 16-83 tokens (its fused projections gained most alone:
# -13 to -20% at 32 rows). Stage as call 1 (the same .carry); carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
LAYAD_RUN_DIR=$W OUT=$OUT/fused48 timeout 200 bash scripts/device/flag-ab "$B/layad-dev" --fused-proj-tokens 32 48 1x40,1x48
echo "flag-ab exit $? $((SECONDS-t0)) s"
mkmodel_mmbert "$W/mmbert"
for v in base new base2 new2; do
  b=$B/layad-dev; case $v in base*) b=$B/layad-dev-base ;; esac
  echo "== mmbert $v"
  timeout 80 "$b" bench --model "$W/mmbert" --shapes 1x16,1x30,1x40,1x83 --commit "$LAYAD_COMMIT ($v)" \
    --out "$OUT/mmbert-$v.json" | grep -E "^ +[0-9]+x"
done
echo "done $((SECONDS-t0)) s"
