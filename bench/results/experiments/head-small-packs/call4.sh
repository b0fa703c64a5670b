# run from the repository root on the lent H200 (carry .carry and bench/mixed/wheels) after
# scripts/device/prep with the GPU suites and the layad-dev of 1ea721a (-tail: decision tail only)
# and of b94d6e6 (-split: + the head's split branches)
# the session's kernel changes one by one (forward), suites, English fp16 parity, then the four
# systems on the same requests (bench/mixed/peers.sh)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in tail split new split2 tail2; do b=$BIN/layad-dev; case $v in tail*) b=$BIN/layad-dev-tail;; split*) b=$BIN/layad-dev-split;; esac
  echo "== $v"; timeout 60 $b bench --model $W/english --shapes 1x16,1x83,1x120,1x150,1x512,8x512 --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head
PEERS_RUN_DIR=/tmp/peers-run timeout 300 bash bench/mixed/peers.sh > /dev/null 2>&1; echo "peers exit $? $((SECONDS-t0)) s"; tail -n 20 $OUT/log.txt
rem=$((585-(SECONDS-t0))); [ $rem -gt 60 ] && { timeout $rem $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt --exclude='peers-*' * && find . -type f ! -name results.tgz ! -name log.txt ! -name 'peers-*' -delete
