# bench/results/experiments/mlp-chunk/call.sh - does running the encoder's MLP (Wi, GeGLU, MLP out) over
# chunks of a large bucket's token slots (mlp_chunk_tokens), so each chunk's u and g are read back from L2,
# take back GeGLU's DRAM traffic at 8x512 and 64x512 (0.5 GB a layer at 64x512)? Run from the repository
# root on the lent GPU machine, carrying .carry (scripts/device/prep build/tests/gpu_backend_cuda;
# `git rev-parse --short HEAD > .carry/commit`). ~5 minutes: the backend suite (mlp_chunk_rows), then the
# forward with chunks of 0 (whole) / 2048 / 1024 / 4096 tokens, twice, one tuning cache for all runs (a shape
# is timed once; the chunks' new shapes in their first run).
export OUT; source scripts/device/run-env.sh
LAYAD_TINY=$W/tiny timeout 120 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $?"; grep -E "Checks|:F:|:E:|MLP in chunks" $OUT/gpu_backend_cuda.log
for v in 0 2048 1024 4096 0b 2048b 1024b; do
  echo "== mlp chunk $v"
  timeout 100 $B/layad-dev bench --model $W/english --shapes 1x512,8x512,16x512,64x512 --mlp-chunk-tokens ${v%b} \
    --tuning-cache $W/tuning.txt --commit "$LAYAD_COMMIT (chunk $v)" --out $OUT/forward-chunk$v.json |
    grep -E "^ +[0-9]+x"
done
