# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# the GPU suites and build/bench/cutlass_probe
# 1. dfa00a6's one branch() on the GPU: suites, English fp16 parity (carried CPU reference),
#    forward at 16-512 tokens and 8x512 / 64x512, memcheck
# 2. the CUTLASS probe: each GEMM alone and the layer chain, cuBLAS vs CUTLASS (plain / PDL)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
timeout 90 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates|max" $W/parity.log | head -5
timeout 150 $BIN/cutlass_probe 16 96 128 512 > $OUT/cutlass-probe.txt 2>&1; echo "probe exit $? $((SECONDS-t0)) s"; cat $OUT/cutlass-probe.txt
timeout 90 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x83,1x150,1x512,8x512,64x512 --commit "$LAYAD_COMMIT" --out $OUT/forward.json | grep -E "^ +[0-9]+x"; echo "bench $((SECONDS-t0)) s"
rem=$((570-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
