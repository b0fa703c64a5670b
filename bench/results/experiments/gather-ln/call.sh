# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the
# GPU suites and fe3b665's layad-dev as -base (the same forward code as 7d5b8a6's parent)
# the gather of the tail's residual inside its LayerNorm: suites, English fp16 parity, forward
# (base / new / base / new), memcheck in the time left
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head; grep -E 'parts_gather' $OUT/gpu-suites.log | head -4
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
timeout 60 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
for v in base new base2 new2; do b=$BIN/layad-dev; case $v in base*) b=$BIN/layad-dev-base;; esac
  echo "== $v"; timeout 40 $b bench --model $W/english --shapes 1x16,1x83,1x150,1x512 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
rem=$((250-(SECONDS-t0))); [ $rem -gt 60 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
