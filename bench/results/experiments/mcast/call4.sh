# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites, build/loadgen and the session start's layad-dev as layad-dev-base (ff83903): the session's
# end against its start (forward A/B/A/B), the suites and English fp16 parity after the bucket
# gating, the daemon at concurrency 1/8/64. The four systems ran in the next call (call5.sh): with
# the peers' wheels the working tree was over the 64 MiB a call carries.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in base new base2 new2; do b=$BIN/layad-dev; case $v in base*) b=$BIN/layad-dev-base;; esac
  echo "== $v"; timeout 75 $b bench --model $W/english --shapes 1x16,1x30,1x83,1x150,1x512,8x512 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 60 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6
timeout 80 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
timeout 110 scripts/device/run daemon > $W/daemon.log 2>&1; echo "daemon exit $? $((SECONDS-t0)) s"; grep -E "q1_83tok|requests/s|p50" $W/daemon.log | head -12
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
