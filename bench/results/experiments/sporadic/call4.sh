# bench/results/experiments/sporadic/call4.sh - prepared, not run: does an empty kernel launched when a
# decision's headers wake a sleeping GPU worker (device_nudge) take back the ~60 us a lone forward loses
# after a pause (call1/call3: `run` 1.336-1.349 ms closed loop, 1.391-1.410 after 200 ms, at 1980 MHz)?
# Run from the repository root on the lent GPU machine, carrying .carry (scripts/device/prep build/loadgen
# build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`). ~5 minutes: the backend suite
# (its nudge_leaves_answers case), then one daemon binary with device_nudge false / true / false / true, one
# state directory, loadgen at concurrency 1 with pauses of 0, 2, 20 and 200 ms; the summary compares `run`.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
LAYAD_TINY=$W/tiny timeout 90 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $?"; grep -E "Checks|F:" $OUT/gpu_backend_cuda.log
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
source bench/results/experiments/sporadic/pauses.sh
for v in off on off2 on2; do
  n=false; case $v in on*) n=true ;; esac
  ab_daemon $v $B/layad --device-nudge $n
done
ab_summary off on off2 on2
# the device tool returns at most 8 files
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
cd $W && tar czf $OUT/raw.tgz metrics-*.txt serve-*.log
