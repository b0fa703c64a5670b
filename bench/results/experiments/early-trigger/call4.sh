# bench/results/experiments/early-trigger/call4.sh - the early trigger also in the decision tail's kernels (the
# gather, the row-streaming GEMM, the tail): base (5e7f6e4's binary, renamed layad-dev-base) against this commit
# (layad-dev-tail), the suites on this commit first. Carry .carry (scripts/device/prep build/tests/gpu_kernels
# build/tests/gpu_backend_cuda /tmp/eb/layad-dev-base /tmp/eb/layad-dev-tail).
export OUT; source scripts/device/run-env.sh
for t in gpu_kernels gpu_backend_cuda; do
  LAYAD_TINY=$W/tiny timeout 60 $B/$t > $OUT/$t.log 2>&1; echo "$t exit $?"; grep -E "Checks|:F:|:E:" $OUT/$t.log
done
for v in base tail base2 tail2; do
  echo "== $v"
  timeout 60 $B/layad-dev-${v%2} bench --model $W/english --shapes 1x16,1x30,1x83,1x512 --tuning-cache $W/tuning.txt \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"
done
