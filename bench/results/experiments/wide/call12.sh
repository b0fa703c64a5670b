# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/bench_kernels: the final code's split family in bench_kernels (the small kernel with X
# by cp.async next to cuBLASLt's, 16-128 rows) and its forward at the usual shapes
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 90 $BIN/bench_kernels $OUT/kernels-split.json --only=gemm_split > $W/bk.log 2>&1; echo "bench_kernels exit $? $((SECONDS-t0)) s"
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
timeout 90 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x30,1x40,1x83,1x512,8x512,64x512 --commit "$LAYAD_COMMIT" --out $OUT/forward.json | grep -E "^ +[0-9]+x"; echo "bench $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
