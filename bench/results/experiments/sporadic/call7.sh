# bench/results/experiments/sporadic/call7.sh - where the ~40 us a forward loses after a pause go: the daemon now
# reports, inside `run`, the host's graph launch call (`launch`) and the device's own span of the forward (`gpu`,
# events around the input and output copies). One daemon at pauses of 0, 2, 20 and 200 ms (pauses.sh), then the
# backend suite (forward_timing checks the two new stages) with what time is left. Carry .carry
# (scripts/device/prep build/loadgen build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`).
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/state; t0=$SECONDS; port=18192
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
source bench/results/experiments/sporadic/pauses.sh
ab_daemon now $B/layad
ab_summary now
cd $OUT && tar czf loadgen.tgz loadgen-*.json && rm -f loadgen-*.json
cd $W && tar czf $OUT/raw.tgz metrics-*.txt serve-*.log; cd - > /dev/null
left=$((CALL7_LIMIT_S - (SECONDS - t0)))
if [ $left -gt 30 ]; then
  $B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
  LAYAD_TINY=$W/tiny timeout $left $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
  echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"; grep -E "Checks|:F:|:E:" $OUT/gpu_backend_cuda.log
fi
