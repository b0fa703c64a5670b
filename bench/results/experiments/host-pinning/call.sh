# where the host stages' cold caches come from: the daemon as is, pinned to 4 cores (taskset), and
# pinned with one HTTP thread; c1 and c8/c64
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
exec > >(tee -a "$OUT/log.txt") 2>&1
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/raw $W/state
nproc; lscpu | grep -E "^CPU\(s\)|On-line|L2|L3|Model name"
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english >/dev/null || echo mkmodel failed
serve() { "$@" serve --model $W/english --device cuda --dtype fp16 --port 18192 --state-dir $W/state --log-requests false --log-file $W/serve.log ${EXTRA:-} & pid=$!; for _ in $(seq 240); do curl -fsS http://127.0.0.1:18192/readyz >/dev/null 2>&1 && break; sleep 0.25; done; }
run_variant() {
  local v=$1; shift
  echo "== $v $(date -u +%T)"
  serve "$@"
  timeout 40 taskset -c 12-15 $BIN/loadgen --port 18192 --concurrency 1 --duration 8 --warmup 2 --label "H200, $v, english-large, loopback, concurrency 1" --out $W/raw/serving-$v-c1.json --meta "commit=$LAYAD_COMMIT" --meta "variant=$v" | tail -1
  curl -s http://127.0.0.1:18192/metrics > $W/raw/metrics-$v-c1.txt
  timeout 40 taskset -c 12-15 $BIN/loadgen --port 18192 --concurrency 8,64 --duration 5 --warmup 1 --label "H200, $v, c8 c64" --out $W/raw/serving-$v-c8c64.json --meta "variant=$v" | tail -2
  kill -TERM $pid; wait $pid
}
run_variant base $BIN/layad
run_variant pin4 taskset -c 2-5 $BIN/layad
EXTRA="--http-threads 1" run_variant pin4-http1 taskset -c 2-5 $BIN/layad
run_variant base2 $BIN/layad
python3 - <<'PY'
import json, re
W='/tmp/layad-run/raw'
for v in ['base','pin4','pin4-http1','base2']:
    l=json.load(open(f'{W}/serving-{v}-c1.json'))['levels'][0]; b=l['by_type']; L=l['latency']
    m=open(f'{W}/metrics-{v}-c1.txt').read(); st={}
    for s in ['parse','back','resume','format','send']:
        su=re.search(r'laya_serving_stage_seconds_sum\{stage="%s"\} (\S+)'%s, m); co=re.search(r'laya_serving_stage_seconds_count\{stage="%s"\} (\S+)'%s, m)
        if su and co and float(co.group(1))>0: st[s]=round(float(su.group(1))/float(co.group(1))*1e6,1)
    print(v, round(l['requests_per_s'],1), 'p50', round(L['p50_ms'],3), 'p99', round(L['p99_ms'],3), 'q1_83tok p50', round(b['q1_83tok']['p50_ms'],3), st)
    d=json.load(open(f'{W}/serving-{v}-c8c64.json'))
    print('  ', [(x['concurrency'], round(x['requests_per_s'],1), round(x['latency']['p50_ms'],2), round(x['latency']['p99_ms'],2), x['errors']) for x in d['levels']])
PY
tar -C $W/raw -czf $OUT/raw.tgz .
