# bench/results/experiments/early-trigger/call.sh - in packs of at most 48 tokens, do the forward's own small kernels
# (the split branch products, the fused projections: their weights are loaded before their programmatic wait) gain
# when the LayerNorms, the attention and GeGLU before them trigger their dependents right after their own wait,
# instead of at exit? The early binaries are this commit built with -DKN_EARLY_TRIGGER=48 (kernels/cuda_util.cuh).
# Run from the repository root on the lent GPU machine, carrying .carry (scripts/device/prep build/loadgen
# build/tests/gpu_backend_cuda build/tests/gpu_kernels and the early build's layad-dev, gpu_backend_cuda and
# gpu_kernels renamed *-early; `git rev-parse --short HEAD > .carry/commit`). ~5 minutes: both suites on the early
# build, then the forward base / early / base / early.
export OUT; source scripts/device/run-env.sh
for t in gpu_kernels gpu_backend_cuda; do
  LAYAD_TINY=$W/tiny timeout 150 $B/$t-early > $OUT/$t-early.log 2>&1
  echo "$t-early exit $?"; grep -E "Checks|:F:|:E:" $OUT/$t-early.log
done
for v in base early base2 early2; do
  bin=$B/layad-dev; case $v in early*) bin=$B/layad-dev-early ;; esac
  echo "== $v"
  timeout 100 $bin bench --model $W/english --shapes 1x16,1x30,1x40,1x48,1x83,1x512 --tuning-cache $W/tuning.txt \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"
done
