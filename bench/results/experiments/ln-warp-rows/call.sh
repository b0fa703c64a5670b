# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the
# GPU suites, build/bench/bench_kernels and fe3b665's layad-dev / bench_kernels as -base (the same
# kernels as b64e035, 7e48156's parent)
# the split branch's LayerNorm as a warp per row: the kernel alone (bench_kernels
# --only=layernorm_parts), the forward (base, new, base again), suites, English fp16 parity
# (carried CPU reference), memcheck
export OUT; source .carry/env.sh; BIN=$PWD/.carry/bin; W=/tmp/layad-run; t0=$SECONDS
AB_SHAPES=1x16,1x40,1x83,1x120,1x512,8x512 timeout 240 scripts/device/binary-ab layernorm_parts > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -vE '^(bench_kernels|==)' $OUT/log.txt | grep -vE '^ +[0-9]+x' | head -30; grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head; grep -E 'layernorm_parts' $OUT/gpu-suites.log | head -4
timeout 90 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
rem=$((560-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
