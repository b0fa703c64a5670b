# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites, build/bench/mcast_probe and the session start's layad-dev as layad-dev-base (ff83903): the
# final code after the small split product's pieces moved into kernels/gemm_small.cuh (c602ced and
# after): suites, the probe at 16 rows, the forward against the session's start once, memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 60 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6; grep -iE 'outside|F:' $OUT/gpu-suites.log | head -5
timeout 40 $BIN/mcast_probe 16 > $OUT/mcast-probe-16.jsonl 2> $W/probe.err; echo "probe exit $? $((SECONDS-t0)) s"; grep -v check $OUT/mcast-probe-16.jsonl; grep -c '"rerun_bitwise": true' $OUT/mcast-probe-16.jsonl; tail -2 $W/probe.err
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in base new; do b=$BIN/layad-dev; case $v in base*) b=$BIN/layad-dev-base;; esac
  echo "== $v"; timeout 40 $b bench --model $W/english --shapes 1x16,1x30,1x83 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
rem=$((270-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
