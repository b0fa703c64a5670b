# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites and the session start's layad-dev as layad-dev-base (ff83903): the final code (the small
# split product on the own kernel up to 32 tokens, the gathered LayerNorm's loads before the wait)
# against the session's start, A/B/A/B; suites, English fp16 parity, memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6; grep -iE 'outside|F:' $OUT/gpu-suites.log | head -5
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in base new base2 new2; do b=$BIN/layad-dev; case $v in base*) b=$BIN/layad-dev-base;; esac
  echo "== $v"; timeout 75 $b bench --model $W/english --shapes 1x16,1x30,1x40,1x83,1x150,1x512,8x512 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 80 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
rem=$((560-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
