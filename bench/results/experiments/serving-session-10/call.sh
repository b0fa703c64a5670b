# run on the lent H200 (carry .carry) after scripts/device/prep build/loadgen <0b00551's layad as layad-before>
# session end, serving path at concurrency 1: 0b00551 (session start) against HEAD, two runs each
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
t0=$SECONDS
$PWD/.carry/bin/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out /tmp/layad-run/english >/dev/null
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/raw $W/state
serve() { "$@" serve --model $W/english --device cuda --dtype fp16 --port 18192 --state-dir $W/state --log-requests false --log-file $W/serve.log & pid=$!; for _ in $(seq 400); do curl -fsS http://127.0.0.1:18192/readyz >/dev/null 2>&1 && break; sleep 0.25; done; }
run_variant() {
  local v=$1; shift
  serve "$@"
  timeout 40 $BIN/loadgen --port 18192 --concurrency 1 --duration 8 --warmup 2 --label "H200, $v, english-large, loopback, concurrency 1" --out $W/raw/serving-$v-c1.json --meta "commit=$LAYAD_COMMIT" --meta "variant=$v" > /dev/null
  curl -s http://127.0.0.1:18192/metrics > $W/raw/metrics-$v-c1.txt
  timeout 40 $BIN/loadgen --port 18192 --concurrency 8,64 --duration 5 --warmup 1 --label "H200, $v, c8 c64" --out $W/raw/serving-$v-c8c64.json --meta "variant=$v" > /dev/null
  kill -TERM $pid; wait $pid
}
serve $BIN/layad; timeout 20 $BIN/loadgen --port 18192 --concurrency 1 --duration 6 --warmup 1 --out $W/raw/warmup.json > /dev/null; kill -TERM $pid; wait $pid
run_variant base $BIN/layad-before
run_variant new $BIN/layad
run_variant base2 $BIN/layad-before
run_variant new2 $BIN/layad
echo "serving done $((SECONDS-t0)) s"
python3 - <<'PY'
import json, re
W='/tmp/layad-run/raw'
for v in ['base','new','base2','new2']:
    l=json.load(open(f'{W}/serving-{v}-c1.json'))['levels'][0]; b=l['by_type']; L=l['latency']
    m=open(f'{W}/metrics-{v}-c1.txt').read(); st={}
    for s in ['parse','wake','stage','run','h2d','d2h','unpack','back','resume','format','send']:
        su=re.search(r'laya_serving_stage_seconds_sum\{stage="%s"\} (\S+)'%s, m); co=re.search(r'laya_serving_stage_seconds_count\{stage="%s"\} (\S+)'%s, m)
        if su and co and float(co.group(1))>0: st[s]=round(float(su.group(1))/float(co.group(1))*1e6,1)
    print(v, round(l['requests_per_s'],1), 'p50', round(L['p50_ms'],3), 'p99', round(L['p99_ms'],3), 'q1_83tok p50', round(b['q1_83tok']['p50_ms'],3), 'p99', round(b['q1_83tok']['p99_ms'],3), st)
    d=json.load(open(f'{W}/serving-{v}-c8c64.json'))
    print('  ', [(x['concurrency'], round(x['requests_per_s'],1), round(x['latency']['p50_ms'],2), round(x['latency']['p99_ms'],2), x['errors']) for x in d['levels']])
PY
cp $W/raw/serving-*-c1.json $W/raw/serving-*-c8c64.json $W/raw/metrics-*-c1.txt $OUT/ 2>/dev/null
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
