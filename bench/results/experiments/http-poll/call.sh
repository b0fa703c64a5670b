# call 2: the HTTP thread polling for a lone answer (http_spin_us) against the base, concurrency 1, 8, 32;
# and the same with the CPUs held out of deep idle states (/dev/cpu_dma_latency = 0) if the machine lets us.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
exec > >(tee -a "$OUT/log.txt") 2>&1
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/raw $W/state
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv
nproc; lscpu | grep -E "Model name|Socket|NUMA node\(s\)|Thread" ; cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null; ls /sys/devices/system/cpu/cpu0/cpuidle/ 2>/dev/null; for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do echo "$(cat $s/name 2>/dev/null) lat=$(cat $s/latency 2>/dev/null)"; done; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
ls -la /dev/cpu_dma_latency 2>&1
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english >/dev/null || echo mkmodel failed
serve() { local bin=$1; shift; "$bin" serve --model $W/english --device cuda --dtype fp16 --port 18192 --state-dir $W/state --log-requests false --log-file $W/serve-$(basename $bin).log "$@" & pid=$!; for _ in $(seq 240); do curl -fsS http://127.0.0.1:18192/readyz >/dev/null 2>&1 && break; sleep 0.25; done; }
run_variant() {
  local v=$1 bin=$2; shift 2
  echo "== $v $(date -u +%T)"
  serve "$bin" "$@"
  timeout 40 $BIN/loadgen --port 18192 --concurrency 1 --duration 8 --warmup 2 --label "H200, $v, english-large, loopback, concurrency 1" --out $W/raw/serving-$v-c1.json --meta "commit=$LAYAD_COMMIT" --meta "variant=$v" --meta "date=$(date -u +%FT%TZ)" | tail -9
  curl -s http://127.0.0.1:18192/metrics > $W/raw/metrics-$v-c1.txt
  timeout 40 $BIN/loadgen --port 18192 --concurrency 8,32 --duration 5 --warmup 1 --label "H200, $v, english-large, loopback, concurrency 8 and 32" --out $W/raw/serving-$v-c8c32.json --meta "commit=$LAYAD_COMMIT" --meta "variant=$v" | tail -6
  curl -s http://127.0.0.1:18192/metrics > $W/raw/metrics-$v-all.txt
  grep -E "laya_http_answers_total" $W/raw/metrics-$v-all.txt
  kill -TERM $pid; wait $pid
}
run_variant before $BIN/layad-before
run_variant poll $BIN/layad
run_variant poll0 $BIN/layad --http-spin-us 0
# the CPUs out of deep idle states while the process holds the file open (PM QoS)
if python3 - <<'PY'
import os, struct, sys
try:
    fd = os.open('/dev/cpu_dma_latency', os.O_WRONLY); os.close(fd)
except OSError as e:
    print('cpu_dma_latency: not writable:', e); sys.exit(1)
PY
then
  python3 -c "
import os, struct, time
fd = os.open('/dev/cpu_dma_latency', os.O_WRONLY); os.write(fd, struct.pack('i', 0)); time.sleep(300)" & qos=$!
  sleep 0.5
  run_variant before-qos0 $BIN/layad-before
  run_variant poll-qos0 $BIN/layad
  kill $qos
fi
python3 - <<'PY'
import json, glob, re, os
W='/tmp/layad-run/raw'
rows=[]
for f in sorted(glob.glob(W+'/serving-*-c1.json')):
    v=os.path.basename(f)[8:-8]
    d=json.load(open(f))
    m=open(W+f'/metrics-{v}-c1.txt').read()
    st={}
    for s in ['parse','wake','back','resume','format','send','run']:
        su=re.search(r'laya_serving_stage_seconds_sum\{stage="%s"\} (\S+)'%s, m); co=re.search(r'laya_serving_stage_seconds_count\{stage="%s"\} (\S+)'%s, m)
        if su and co and float(co.group(1))>0: st[s]=round(float(su.group(1))/float(co.group(1))*1e6,1)
    print(v, json.dumps(d.get('results', d))[:600])
    print('  stage means us', st)
PY
tar -C $W/raw -czf $OUT/raw.tgz .
for v in before poll poll0 before-qos0 poll-qos0; do [ -f $W/raw/serving-$v-c1.json ] && cp $W/raw/serving-$v-c1.json $OUT/; done
echo "== done $(date -u +%T)"
