# bench/results/experiments/att-sass/call.sh - prepared, not run (no machine started): where the attention's ~460 instructions a 64-key step go (att-tk32/:
# only ~15% are MMAs): the kernel's SASS (cuobjdump, on the device machine: this one has no disassembler) and
# Nsight Compute's per-instruction counts and stall samples for a global and a sliding layer at 8x512; then,
# with the time left, the backend suite under compute-sanitizer memcheck (the kernel suite ran clean at f251e94
# and the kernels have not changed since). Stage: `scripts/device/prep build/tests/gpu_backend_cuda`,
# `git rev-parse --short HEAD > .carry/commit`, carry .carry, `bash .carry/call.sh`.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
"$CUOBJ" -sass -fun '_Z16attention_kernelI6__halfLi1EEvPKT_PS1_iiPKiS6_i' "$B/layad-dev" > "$W/att-sass.txt" 2>&1
echo "cuobjdump exit $? ($(wc -l < "$W/att-sass.txt") lines)"; gzip -c "$W/att-sass.txt" > "$OUT/att-sass.txt.gz"
"$B/layad-dev" bench --model "$W/english" --shapes 8x512 --tuning-cache "$W/tuning.txt" --out "$W/warm.json" | grep -E "^ +[0-9]+x"
NCU_SKIP=150 NCU_BENCH_ARGS="--tuning-cache $W/tuning.txt" OUT=$W/ncu LAYAD_RUN_DIR=$W \
  timeout 180 bash scripts/device/ncu-profile 'attention_kernel' 2 8x512 > "$W/ncu.log" 2>&1
echo "ncu exit $? $((SECONDS-t0)) s"; tail -4 "$W/ncu.log"
gzip -c "$W/ncu/ncu-8x512.txt" > "$OUT/ncu-8x512.txt.gz"; cp "$W/ncu/ncu-source.tgz" "$OUT/" 2>/dev/null
grep -E "^  void|Duration   |Executed Instructions   " "$W/ncu/ncu-8x512.txt" | head -8
[ "${MEMCHECK:-1}" = 1 ] || exit 0 # MEMCHECK=0: the profile alone (~2 minutes)
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
LAYAD_TINY=$W/tiny timeout $((580 - (SECONDS - t0))) "$cs" --tool memcheck "$B/gpu_backend_cuda" > "$OUT/memcheck-backend.log" 2>&1
echo "memcheck backend exit $? $((SECONDS-t0)) s"; grep -hE "ERROR SUMMARY|Checks|^[^ ]+:[0-9]+:F" "$OUT/memcheck-backend.log"
