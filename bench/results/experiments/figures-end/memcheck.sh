# bench/results/experiments/figures-end/memcheck.sh - both GPU suites under compute-sanitizer memcheck: the whole
# kernel suite (every case), then the backend suite on the tiny checkpoint. Carry .carry (scripts/device/prep
# build/tests/gpu_kernels build/tests/gpu_backend_cuda). ~8 minutes.
export OUT; source .carry/env.sh; B=$PWD/.carry/bin; W=/tmp/mc; mkdir -p $W; t0=$SECONDS
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 330 $cs --tool memcheck $B/gpu_kernels > $OUT/memcheck-kernels.log 2>&1
echo "memcheck kernels exit $? $((SECONDS-t0)) s"
LAYAD_TINY=$W/tiny timeout $((575 - (SECONDS - t0))) $cs --tool memcheck $B/gpu_backend_cuda \
  > $OUT/memcheck-backend.log 2>&1
echo "memcheck backend exit $? $((SECONDS-t0)) s"; grep -hE "ERROR SUMMARY|Checks|^[^ ]+:[0-9]+:F" $OUT/memcheck-*.log
