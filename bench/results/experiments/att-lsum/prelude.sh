# bench/results/experiments/att-lsum/prelude.sh - sourced from the repository root by call-seq.sh and
# call-skip.sh on the lent GPU machine: the environment (B: the staged binaries, W: the run directory, t0),
# the tiny and English checkpoints, then the attention cases and the backend suite of the staged tree.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
$B/layad-dev mkmodel --preset tiny --out build/tiny > /dev/null
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
CK_RUN_CASE=attention timeout 60 $B/gpu_kernels > $OUT/gpu_kernels-attention.log 2>&1
echo "gpu_kernels (attention) exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:" $OUT/gpu_kernels-attention.log
timeout 80 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"
grep -E "Checks|F:|max\|dp\||attention forms" $OUT/gpu_backend_cuda.log
