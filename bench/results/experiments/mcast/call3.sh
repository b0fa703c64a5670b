# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites: the own split product in the forward, same binary, --own-split-tokens 0 / 32 / 48 (A/B/A/B);
# suites with its tests, English fp16 parity at the default, memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 150 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head; grep -E 'gemm_split_own|split_own' $OUT/gpu-suites.log | head -12; grep -iE 'fail' $OUT/gpu-suites.log | head -8
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in 0 32 48 0b 32b; do
  echo "== own-split-tokens $v"; timeout 80 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x30,1x40,1x83,1x512 --own-split-tokens ${v%b} --commit "$LAYAD_COMMIT (own $v)" --out $OUT/forward-own$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 90 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
rem=$((570-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
