# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the
# GPU suites and two base layad-dev binaries: -base (dfa00a6) and -63c (63c1b26, before the one
# branch() refactor, whose 1x512 figure in call 1 was 4.7% above the last session's)
# the type embedding folded into the head's first LayerNorm (one launch fewer): forward A/B,
# suites, English fp16 parity (carried CPU reference), memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in base 63c new base2 new2 63c2; do b=$BIN/layad-dev; case $v in base*) b=$BIN/layad-dev-base;; 63c*) b=$BIN/layad-dev-63c;; esac
  echo "== $v"; timeout 60 $b bench --model $W/english --shapes 1x16,1x83,1x150,1x512,8x512 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head; grep -E 'type_emb' $OUT/gpu-suites.log | head -8
timeout 90 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
rem=$((570-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
