# bench/results/experiments/att-wide/call.sh - run once (call1-h100/, rejected): the attention in two warps of 32 query rows a
# block (wide.patch, `layad-dev bench --att-wide`), each K / V fragment loaded once for both of a warp's row tiles,
# against four warps of 16 rows. ~6 minutes. (1) The kernel suite's attention cases (every form, now groups 1-3,
# bit for bit) and the backend suite (att_wide_rows: the forward's answers identical); (2) the forward A/B/A/B at
# 2x512, 8x512 and 64x512; (3) Nsight Compute on three attention launches at 8x512 in each form (a global layer and
# two sliding ones: is the four-warp form bound by shared memory, as counted in figures-f251e94/, and does the wide
# one relieve it?). Stage: `git apply bench/results/experiments/att-wide/wide.patch`, build, then
# `scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda`, `git rev-parse --short HEAD >
# .carry/commit` (the commit the patch applies to), carry .carry, `bash .carry/call.sh`.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
CK_RUN_CASE=attention timeout 60 "$B/gpu_kernels" > "$OUT/gpu-kernels.log" 2>&1
echo "gpu_kernels attention exit $?"; grep -hE "Checks|:F:|:E:" "$OUT/gpu-kernels.log"
LAYAD_TINY=$W/tiny timeout 150 "$B/gpu_backend_cuda" > "$OUT/gpu-backend.log" 2>&1
echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"; grep -hE "Checks|:F:|:E:" "$OUT/gpu-backend.log"
for v in four wide four2 wide2; do
  args=""; case $v in wide*) args="--att-wide" ;; esac
  timeout 90 "$B/layad-dev" bench --model "$W/english" --shapes 1x512,2x512,8x512,64x512 \
    --tuning-cache "$W/tuning.txt" $args --commit "$LAYAD_COMMIT ($v)" --out "$OUT/forward-$v.json" |
    sed "s/^/$v /" | grep -E "^[a-z0-9]+ +[0-9]+x"
done
echo "bench $((SECONDS-t0)) s"
for v in four wide; do
  args="--tuning-cache $W/tuning.txt"; [ $v = wide ] && args="$args --att-wide"
  NCU_SKIP=150 NCU_BENCH_ARGS="$args" OUT=$W/ncu-$v LAYAD_RUN_DIR=$W \
    timeout $((560 - (SECONDS - t0))) bash scripts/device/ncu-profile attention_kernel 3 8x512 > /dev/null 2>&1
  cp "$W/ncu-$v/ncu-8x512.txt" "$OUT/ncu-$v-8x512.txt"
  grep -E "attention_kernel|Duration|Registers Per|Achieved Occ|Stall (Short|Long|MIO|Barrier)" \
    "$OUT/ncu-$v-8x512.txt" | head -30
  grep -E "Pipe (Tensor|Shared) Cycles" "$OUT/ncu-$v-8x512.txt" | head -6
done
echo "done $((SECONDS-t0)) s"
