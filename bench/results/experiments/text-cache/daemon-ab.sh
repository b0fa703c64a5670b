#!/usr/bin/env bash
# bench/results/experiments/text-cache/daemon-ab.sh BINARY PORT LABEL [TEXT] - from the repository root:
# one `layad serve` (BINARY, CPU backend, the embedded tiny model in build/tiny) under build/loadgen
# ($LOADGEN if set) at concurrency 1 for 8 s (its fixed mix, its states in loadgen's --text TEXT,
# ascii by default), then its /metrics; prints the serving stages' means (us)
# and leaves /tmp/lg-LABEL.json (loadgen) and /tmp/m-LABEL.txt (metrics). The text cache's A/B ran
# it four times, before / after / before2 / after2, with two CPU-only builds (make NVCC= build/layad
# in worktrees at 169a3d2 and a43ddfa).
bin=$1 port=$2 label=$3 text=${4:-ascii}
sd=$(mktemp -d)
$bin serve --model build/tiny --device cpu --port $port --state-dir $sd > /tmp/d-$label.log 2>&1 &
pid=$!
for i in $(seq 50); do curl -sf -o /dev/null http://127.0.0.1:$port/readyz && break; sleep 0.2; done
${LOADGEN:-build/loadgen} --port $port --concurrency 1 --duration 8 --label $label --text $text \
  --out /tmp/lg-$label.json > /tmp/lg-$label.log 2>&1
curl -s http://127.0.0.1:$port/metrics > /tmp/m-$label.txt
kill -TERM $pid; wait $pid 2>/dev/null
rm -rf "$sd"
python3 - "$label" <<'PY'
import sys,re
l=sys.argv[1]
txt=open('/tmp/m-%s.txt'%l).read()
st={}
for m in re.finditer(r'laya_serving_stage_seconds_sum\{[^}]*stage="(\w+)"[^}]*\} ([0-9.e+-]+)',txt):
    st[m.group(1)]=float(m.group(2))
cnt={}
for m in re.finditer(r'laya_serving_stage_seconds_count\{[^}]*stage="(\w+)"[^}]*\} ([0-9.e+-]+)',txt):
    cnt[m.group(1)]=float(m.group(2))
means={k:1e6*st[k]/cnt[k] for k in st if cnt.get(k)}
print(l, ' '.join('%s %.1f'%(k,v) for k,v in sorted(means.items())))
PY
