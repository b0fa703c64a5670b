# bench/results/experiments/early-trigger/memcheck.sh - the backend suite under compute-sanitizer memcheck with
# the early triggers on (the forward's kernels launched as in production). Carry .carry as call3.sh.
export OUT; source .carry/env.sh; B=$PWD/.carry/bin; W=/tmp/mc; mkdir -p $W; t0=$SECONDS
$B/layad-dev mkmodel --preset tiny --out $W/tiny > /dev/null
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LAYAD_TINY=$W/tiny timeout 380 $cs --tool memcheck $B/gpu_backend_cuda > $OUT/memcheck-backend.log 2>&1
echo "memcheck backend exit $? $((SECONDS-t0)) s"; grep -hE "ERROR SUMMARY|Checks|^[^ ]+:[0-9]+:F" $OUT/memcheck-*.log
