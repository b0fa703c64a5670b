# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites (built with the LayerNorm change) and three layad-dev builds: layad-dev-head (HEAD, the
# session's code), layad-dev-lnpre (the split branch's LayerNorm reads its residual row before the
# programmatic wait), layad-dev-tail (the tail's products of at most 16 gathered rows on the small
# split kernel whatever the bucket); head / lnpre / tail twice; the suites
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in head lnpre tail head2 lnpre2 tail2; do b=$BIN/layad-dev-${v%2}
  echo "== $v"; timeout 60 $b bench --model $W/english --shapes 1x16,1x40,1x83,1x150,1x512 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
