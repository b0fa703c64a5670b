# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/bench_kernels, the GPU suites and 1d871ce's layad-dev, bench_kernels (-base)
# decision tail with its loads in flight, head branches split into partial products:
# forward A/B against 1d871ce, suites, English fp16 parity (carried CPU reference), memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
AB_SHAPES=1x16,1x40,1x83,1x120,1x150,1x512,8x512 timeout 200 scripts/device/binary-ab layernorm_parts > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head
timeout 150 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --out $OUT/parity-english.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; tail -n 12 $W/parity.log
rem=$((560-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
