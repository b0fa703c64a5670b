# bench/results/experiments/sporadic/call3.sh - the session's end on the lent GPU machine: run from the repository
# root carrying .carry (scripts/device/prep build/loadgen build/tests/gpu_kernels build/tests/gpu_backend_cuda;
# `git rev-parse --short HEAD > .carry/commit`) and bench/mixed/wheels/peers-site.txz, the other experiment folders
# out of the working tree (the 64 MiB cap). ~8 minutes: both GPU suites under compute-sanitizer memcheck, the
# forward at the issue's shapes, `layad serve` under loadgen with pauses of 0, 2, 20 and 200 ms, then peers.sh.
# CALL3_PEERS=0 leaves the peers out (~3 minutes less). At most 8 files come back: everything but the summaries goes into one archive.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/peers-run; mkdir -p $W $OUT/more; t0=$SECONDS
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# CALL3_KERNEL_CASE: one case of the kernel suite (attention: the kernel this session changed), else all
CK_RUN_CASE=${CALL3_KERNEL_CASE:-} timeout 200 $cs --tool memcheck $B/gpu_kernels > $OUT/more/memcheck-kernels.log 2>&1
echo "memcheck kernels exit $?"
LAYAD_TINY=$W/tiny timeout 150 $cs --tool memcheck $B/gpu_backend_cuda > $OUT/more/memcheck-backend.log 2>&1
echo "memcheck backend exit $? $((SECONDS-t0)) s"; grep -hE "ERROR SUMMARY|Checks" $OUT/more/memcheck-*.log
timeout 100 $B/layad-dev bench --model $W/english --shapes 1x16,1x83,1x150,1x512,8x512,64x512 --path-tune-tokens 64 \
  --commit "$LAYAD_COMMIT" --out $OUT/forward.json | grep -E "^ +[0-9]+x"
port=18190
$B/layad serve --model $W/english --device cuda --dtype fp16 --port $port --log-requests false \
  --log-file $W/serve.log & pid=$!
for _ in $(seq 300); do curl -fsS http://127.0.0.1:$port/readyz > /dev/null 2>&1 && break; sleep 0.2; done
echo "ready $((SECONDS-t0)) s"
timeout 20 $B/loadgen --port $port --concurrency 1 --duration 3 --warmup 1 --out /dev/null 2> /dev/null
for g in 0 2 20 200; do
  d=5; [ $g = 200 ] && d=10
  timeout 40 $B/loadgen --port $port --concurrency 1 --duration $d --warmup 1 --gap-ms $g --label "gap $g ms" \
    --meta "commit=$LAYAD_COMMIT" --out $OUT/more/loadgen-gap$g.json 2>&1
done
curl -s http://127.0.0.1:$port/metrics > $OUT/more/metrics.txt
kill -TERM $pid; wait $pid; echo "serve exit $? $((SECONDS-t0)) s"
rem=$((585 - (SECONDS - t0)))
[ $rem -gt 190 ] && [ "${CALL3_PEERS:-1}" = 1 ] && PEERS_RUN_DIR=$W OUT=$OUT/more/peers timeout $rem bash bench/mixed/peers.sh > /dev/null 2>&1
echo "peers exit $? $((SECONDS-t0)) s"; grep -A6 "p50 after" $OUT/more/peers/log.txt
cp $OUT/more/peers/peers-h200.json $OUT/ 2>/dev/null
cd $OUT && tar czf more.tgz more && rm -rf more
