# final call A: GPU suites at the final commit, the serving path before/after the reserved
# arenas (concurrency 1, 8, 32), and the host costs of parse/format on the H200's CPU.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
exec > >(tee -a "$OUT/log.txt") 2>&1
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/raw $W/state
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv
$BIN/layad-dev mkmodel --preset tiny --out $W/tiny >/dev/null 2>&1 || $BIN/layad-dev mkmodel --out $W/tiny >/dev/null 2>&1
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english >/dev/null || echo mkmodel failed
echo "== suites $(date -u +%T)"
for t in $BIN/gpu_kernels $BIN/gpu_backend_cuda; do LAYAD_TINY=$W/tiny timeout 200 $t > $W/raw/$(basename $t).log 2>&1; echo "$(basename $t) exit $?"; grep -E "Checks" $W/raw/$(basename $t).log; done
cat $W/raw/gpu_kernels.log $W/raw/gpu_backend_cuda.log > $OUT/gpu-suites.log
echo "== bench-request $(date -u +%T)"
for mb in 0 32; do $BIN/layad-dev bench-request --model $W/english --body .carry/q1_83tok-body.json --iters 2000 --thrash-mb $mb --out $OUT/bench-request-thrash$mb.json > /dev/null; echo "thrash $mb rc=$?"; done
python3 -c "
import json
for mb in (0,32):
    d=json.load(open('$OUT/bench-request-thrash%d.json'%mb)); print('thrash',mb,'parse',{k:round(v,1) for k,v in d['parse'].items()},'format',{k:round(v,1) for k,v in d['format'].items()},'tokens',d['tokens'])"
serve() { local bin=$1; shift; "$bin" serve --model $W/english --device cuda --dtype fp16 --port 18192 --state-dir $W/state --log-requests false --log-file $W/serve-$(basename $bin).log "$@" & pid=$!; for _ in $(seq 240); do curl -fsS http://127.0.0.1:18192/readyz >/dev/null 2>&1 && break; sleep 0.25; done; }
run_variant() {
  local v=$1 bin=$2; shift 2
  echo "== $v $(date -u +%T)"
  serve "$bin" "$@"
  timeout 40 $BIN/loadgen --port 18192 --concurrency 1 --duration 8 --warmup 2 --label "H200, $v, english-large, loopback, concurrency 1" --out $W/raw/serving-$v-c1.json --meta "commit=$LAYAD_COMMIT" --meta "variant=$v" --meta "date=$(date -u +%FT%TZ)" | tail -4
  curl -s http://127.0.0.1:18192/metrics > $W/raw/metrics-$v-c1.txt
  timeout 40 $BIN/loadgen --port 18192 --concurrency 8,64 --duration 5 --warmup 1 --label "H200, $v, english-large, loopback, concurrency 8 and 64" --out $W/raw/serving-$v-c8c64.json --meta "commit=$LAYAD_COMMIT" --meta "variant=$v" | tail -4
  grep "process_resident_memory_bytes\|laya_http_answers_total{" <(curl -s http://127.0.0.1:18192/metrics)
  kill -TERM $pid; wait $pid
}
run_variant before $BIN/layad-before
run_variant arena $BIN/layad
python3 - <<'PY'
import json, re
W='/tmp/layad-run/raw'
for v in ['before','arena']:
    l=json.load(open(f'{W}/serving-{v}-c1.json'))['levels'][0]; b=l['by_type']; L=l['latency']
    m=open(f'{W}/metrics-{v}-c1.txt').read(); st={}
    for s in ['parse','wake','back','resume','format','send']:
        su=re.search(r'laya_serving_stage_seconds_sum\{stage="%s"\} (\S+)'%s, m); co=re.search(r'laya_serving_stage_seconds_count\{stage="%s"\} (\S+)'%s, m)
        if su and co and float(co.group(1))>0: st[s]=round(float(su.group(1))/float(co.group(1))*1e6,1)
    print(v, round(l['requests_per_s'],1), 'p50', round(L['p50_ms'],3), 'p99', round(L['p99_ms'],3), 'max', round(L['max_ms'],2), 'q1_83tok p50', round(b['q1_83tok']['p50_ms'],3), 'p99', round(b['q1_83tok']['p99_ms'],3), st)
    d=json.load(open(f'{W}/serving-{v}-c8c64.json'))
    print('  ', [(x['concurrency'], round(x['requests_per_s'],1), round(x['latency']['p50_ms'],2), round(x['latency']['p99_ms'],2), round(x['latency']['max_ms'],2), x['errors']) for x in d['levels']])
PY
tar -C $W/raw -czf $OUT/raw.tgz .
for v in before arena; do cp $W/raw/serving-$v-c1.json $OUT/ 2>/dev/null; done
echo "== done $(date -u +%T)"
