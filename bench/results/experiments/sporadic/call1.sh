# bench/results/experiments/sporadic/call1.sh - run from the repository root on the lent GPU machine,
# carrying .carry (scripts/device/prep build/loadgen build/tests/gpu_kernels build/tests/gpu_backend_cuda;
# `git rev-parse --short HEAD > .carry/commit`) and bench/mixed/wheels/peers-site.txz, with the other
# experiment folders out of the working tree (the 64 MiB cap). ~7-8 minutes.
# 1. `layad serve` (English fp16) under build/loadgen at concurrency 1 with pauses of 0, 2, 20 and 200 ms
#    after every answer (sporadic traffic), then 8 and 64 without, the GPU's clocks sampled every 20 ms
#    throughout (clocks.csv; marks.txt says when each level ran);
# 2. the forward at the shapes (layad-dev bench, paths timed at warm-up as the daemon does);
# 3. bench/mixed/peers.sh: layad next to laya-cuda and the official package's two paths.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/peers-run; mkdir -p $W; t0=$SECONDS
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,utilization.gpu --format=csv -lms 20 \
  > $OUT/clocks.csv 2>&1 & smi=$!
mark() { echo "$(date -u +%FT%T.%3N) $*" >> $OUT/marks.txt; }
port=18190
mark serve start
$B/layad serve --model $W/english --device cuda --dtype fp16 --port $port --log-requests false \
  --log-file $W/serve.log & pid=$!
for _ in $(seq 300); do curl -fsS http://127.0.0.1:$port/readyz > /dev/null 2>&1 && break; sleep 0.2; done
mark ready; echo "ready $((SECONDS-t0)) s"
lg() { timeout 60 $B/loadgen --port $port --warmup 1 --meta "commit=$LAYAD_COMMIT" "$@" 2>&1 | grep concurrency; }
lg --concurrency 1 --duration 4 --out /dev/null > /dev/null # a call's first daemon run measures slower
for g in 0 2 20 200; do
  d=8; [ $g = 200 ] && d=16
  mark "gap $g start"; lg --concurrency 1 --duration $d --gap-ms $g --label "gap $g ms" --out $OUT/loadgen-gap$g.json
  mark "gap $g end"
done
mark "c8,64 start"; lg --concurrency 8,64 --duration 5 --label "closed loop" --out $OUT/loadgen-c8-64.json
mark "c8,64 end"
curl -s http://127.0.0.1:$port/metrics > $OUT/metrics.txt
kill -TERM $pid; wait $pid; echo "serve exit $? $((SECONDS-t0)) s"; tail -2 $W/serve.log
mark bench start
timeout 150 $B/layad-dev bench --model $W/english --shapes 1x16,1x83,1x150,1x512,8x512,64x512 --path-tune-tokens 64 \
  --commit "$LAYAD_COMMIT" --out $OUT/forward.json | grep -E "^ +[0-9]+x"
mark bench end; kill $smi
echo "bench done $((SECONDS-t0)) s"
rem=$((590 - (SECONDS - t0)))
[ $rem -gt 200 ] && PEERS_RUN_DIR=$W OUT=$OUT/peers timeout $rem bash bench/mixed/peers.sh > /dev/null 2>&1
echo "peers exit $? $((SECONDS-t0)) s"; grep -vE "^ *$" $OUT/peers/log.txt | tail -22
gzip -f $OUT/clocks.csv
# the device tool returns at most 8 files: the metrics and the peers' files go in one archive
(cd $OUT && tar czf extra.tgz metrics.txt peers && rm -rf metrics.txt peers)
