# bench/results/experiments/att-wgmma/call1.sh - the attention's two products on warpgroup MMAs (KN_ATT_WG=1)
# against the mma.sync build of the same tree (KN_ATT_WG=0, machine code identical to the commit before).
# 1. bench/wgmma_att_probe: do wgmma's S = Q K^T and O += P V give mma.sync's bits, and the layouts right?
# 2. the kernel suite's attention cases and the backend suite on the wgmma build;
# 3. bench_kernels --only=attention, base against new; the forward base / new / base / new, one tuning cache;
# 4. English fp16 parity (the gates) on the new build; 5. memcheck of the attention cases.
# Stage: base binaries in build/base/ (built with the change stashed), then
#   scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda build/bench/bench_kernels \
#     build/bench/wgmma_att_probe build/base/layad-dev-base build/base/bench_kernels-base
# git rev-parse --short HEAD > .carry/commit; cp this .carry/call.sh; carry .carry; bash .carry/call.sh
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 "$B/wgmma_att_probe" 256 2>&1 | tee "$OUT/probe.txt"
{ CK_RUN_CASE=attention timeout 90 "$B/gpu_kernels"; echo "gpu_kernels attention exit $?"
  LAYAD_TINY=$W/tiny timeout 150 "$B/gpu_backend_cuda"; echo "gpu_backend_cuda exit $?"; } > "$OUT/gpu-suites.log" 2>&1
grep -hE "exit|Checks|:F:|:E:" "$OUT/gpu-suites.log"; echo "suites $((SECONDS-t0)) s"
mkdir -p "$W/k"
for v in base new; do
  b=$B/bench_kernels; [ $v = base ] && b=$B/bench_kernels-base
  timeout 60 "$b" "$W/k/kernels-$v.json" --only=attention > "$W/k/kernels-$v.log" 2>&1; echo "bench_kernels $v exit $?"
done
python3 scripts/kernels_ab.py "$W/k/kernels-base.json" "$W/k/kernels-new.json" || true
tar -C "$W/k" -czf "$OUT/kernels.tgz" .
echo "kernels $((SECONDS-t0)) s"
mkdir -p "$W/f"
for v in base new base2 new2; do
  bin=$B/layad-dev; case $v in base*) bin=$B/layad-dev-base ;; esac
  timeout 100 "$bin" bench --model "$W/english" --shapes 1x83,1x150,1x512,2x512,8x512,64x512 \
    --tuning-cache "$W/tuning.txt" --commit "$LAYAD_COMMIT ($v)" --out "$W/f/forward-$v.json" |
    sed "s/^/$v /" | grep -E "^[a-z0-9]+ +[0-9]+x"
done
tar -C "$W/f" -czf "$OUT/forward.tgz" .
echo "bench $((SECONDS-t0)) s"
timeout 150 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --ref .carry/ref/english.ref \
  --tuning-cache "$W/tuning.txt" --label wgmma --out "$OUT/parity-english-fp16.json" | grep -E "gate|max|PASS|FAIL" | head -8
echo "parity $((SECONDS-t0)) s"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
CK_RUN_CASE=attention timeout $((580 - (SECONDS - t0))) "$cs" --tool memcheck "$B/gpu_kernels" > "$OUT/memcheck-attention.log" 2>&1
echo "memcheck attention exit $? $((SECONDS-t0)) s"; grep -hE "ERROR SUMMARY|Checks|:F:" "$OUT/memcheck-attention.log"
# with the time left: Nsight Compute on the new kernel at 8x512 (a global and a sliding layer), for the
# instruction count and the issue rate beside last session's profiles of the mma.sync kernel
NCU_SKIP=150 NCU_BENCH_ARGS="--tuning-cache $W/tuning.txt" OUT=$W/ncu LAYAD_RUN_DIR=$W \
  timeout $((585 - (SECONDS - t0))) bash scripts/device/ncu-profile attention_kernel 2 8x512 > /dev/null 2>&1
echo "ncu exit $? $((SECONDS-t0)) s"; gzip -c "$W/ncu/ncu-8x512.txt" > "$OUT/ncu-8x512.txt.gz"
grep -E "^  void|Duration   |Executed Instructions   |Registers Per|Achieved Occ|Issued Ipc|No Eligible" "$W/ncu/ncu-8x512.txt" | head -20
