# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the
# GPU suites, build/bench/bench_kernels and fe3b665's layad-dev / bench_kernels as -base
# the row-streaming GEMM with 4 output columns a warp instead of 2 (X rows read from L2 by half as
# many warps): the head's products alone (meant as bench_kernels --only=head, but the family is
# gemm_head: no kernel rows were timed), the forward, the suites and English fp16 parity (bit for
# bit the same sums: the figures must repeat to the digit)
export OUT; source .carry/env.sh; BIN=$PWD/.carry/bin; W=/tmp/layad-run; t0=$SECONDS
AB_SHAPES=1x16,1x83,1x150,1x512,8x512 timeout 240 scripts/device/binary-ab head > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -vE '^(bench_kernels|==)' $OUT/log.txt | head -40; grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head
timeout 90 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
