# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites and ccd1c57's layad-dev as layad-dev-base: the library's small split kernel with X by
# cp.async (no cluster) and small_gemm_tokens 48 against the multicast form at 32 (A/B/A/B), the
# new binary at 64 once; suites, English fp16 parity, memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6; grep -iE 'outside|F:' $OUT/gpu-suites.log | head -5
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in base new base2 new2 new64; do b=$BIN/layad-dev; x=""; case $v in base*) b=$BIN/layad-dev-base;; new64) x="--small-gemm-tokens 64";; esac
  echo "== $v"; timeout 75 $b bench --model $W/english --shapes 1x16,1x30,1x40,1x60,1x83,1x150,1x512 $x --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 80 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
rem=$((570-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
