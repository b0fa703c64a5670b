# run from the repository root on the lent H200, carrying .carry as staged by `scripts/device/prep
# build/layad-dev build/tests/gpu_kernels build/tests/gpu_backend_cuda` (the English CPU reference in
# .carry/ref/english.ref). fused-proj landed with fused_proj_tokens 16 (the default): both suites,
# the small kernels' tests under compute-sanitizer memcheck, English fp16 parity at the defaults,
# the forward at 16 against 0 (A/B/A/B) and at the defaults on the shapes.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
for s in gpu_kernels gpu_backend_cuda; do
  timeout 200 $BIN/$s > $OUT/$s.log 2>&1; echo "$s exit $? $((SECONDS-t0)) s"
  grep -E "Checks|proj_small|fused projections|F:" $OUT/$s.log | tail -8
done
scripts/device/flag-ab $BIN/layad-dev --fused-proj-tokens 0 16 1x16,1x30,1x83
echo "flag-ab $((SECONDS-t0)) s"
grep -h -o '"graph_nodes": [0-9]*' $OUT/forward-off.json $OUT/forward-on.json | paste -sd' '
timeout 120 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x40,1x83,1x512,8x512,64x512 \
  --commit "$LAYAD_COMMIT" --out $OUT/forward-main.json | grep -E "^ +[0-9]+x"
echo "bench $((SECONDS-t0)) s"
timeout 120 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 \
  --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1
echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates|max|PASS|FAIL" $W/parity.log | head -6
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$cs" ] && CK_RUN_CASE=split timeout 200 "$cs" --tool memcheck --error-exitcode 9 $BIN/gpu_kernels \
  > $OUT/memcheck-split.log 2>&1
echo "memcheck (split and small kernels) exit $? $((SECONDS-t0)) s"; tail -3 $OUT/memcheck-split.log
echo "done $((SECONDS-t0)) s"
