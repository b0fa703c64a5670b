# bench/results/experiments/early-trigger/call3.sh - the kept form: the early trigger on by default up to 128 rows
# (KN_PDL_EARLY_ROWS), the fused projections up to 32 tokens and the own split products up to 64. The suites,
# English fp16 parity (288 questions against the CPU fp32 reference, one row per forward and packed), and the
# forward with the new thresholds against the old ones (--fused-proj-tokens 16 --small-gemm-tokens 48), same binary.
# Carry .carry (scripts/device/prep build/tests/gpu_backend_cuda build/tests/gpu_kernels build/tests/gpu_gemm_tuning;
# .carry/ref/english.ref; `git rev-parse --short HEAD > .carry/commit`).
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
for t in gpu_kernels gpu_backend_cuda gpu_gemm_tuning; do
  LAYAD_TINY=$W/tiny timeout 150 $B/$t > $OUT/$t.log 2>&1
  echo "$t exit $? $((SECONDS-t0)) s"; grep -E "Checks|:F:|:E:" $OUT/$t.log
done
timeout 120 $B/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref \
  --out $OUT/parity-english.json > $OUT/parity.log 2>&1
echo "parity exit $? $((SECONDS-t0)) s"; tail -6 $OUT/parity.log
S=1x16,1x30,1x40,1x48,1x60,1x83,1x150,1x512,8x512
for v in new old new2 old2; do
  args=""; case $v in old*) args="--fused-proj-tokens 16 --small-gemm-tokens 48" ;; esac
  echo "== $v $args"
  timeout 100 $B/layad-dev bench --model $W/english --shapes $S --tuning-cache $W/tuning.txt $args \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"
done
echo "done $((SECONDS-t0)) s"
