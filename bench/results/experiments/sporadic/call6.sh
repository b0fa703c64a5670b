# bench/results/experiments/sporadic/call6.sh - call5.sh's A/B again after the nudge's fix: in call5 every nudge was
# refused
# (the backend kept no SM count, so kn_nudge launched nothing and its "on" daemons ran as "off"). The backend suite
# first (nudge_leaves_answers now also counts the kernels launched), then device_nudge false / true / false / true at
# pauses of 0-200 ms, with the GPU's SM and memory clocks traced every 20 ms. Carry .carry (scripts/device/prep
# build/loadgen build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`). ~5 minutes.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
LAYAD_TINY=$W/tiny timeout 100 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $?"; grep -E "Checks|F:|nudge" $OUT/gpu_backend_cuda.log | head
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv,noheader -lms 20 \
  > $W/clocks.csv 2>&1 & smi=$!
source bench/results/experiments/sporadic/pauses.sh
for v in off on off2 on2; do
  n=false; case $v in on*) n=true ;; esac
  echo "mark $v $(date +%T.%N)" >> $W/marks.txt
  ab_daemon $v $B/layad --device-nudge $n
  grep -h "nudge" $W/serve-$v.log | head -3
done
kill $smi
ab_summary off on off2 on2
python3 - $W/clocks.csv <<'PY' | tee -a $OUT/summary.txt
import sys, collections
sm, mem = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    if len(f) >= 4 and f[1].endswith("MHz"):
        sm[f[1]] += 1; mem[f[2]] += 1
print("sm clocks", sm.most_common(6)); print("mem clocks", mem.most_common(6))
PY
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
cd $W && gzip -c clocks.csv > $OUT/clocks.csv.gz && tar czf $OUT/raw.tgz metrics-*.txt serve-*.log marks.txt
