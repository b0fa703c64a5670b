# bench/results/experiments/bulk-spread/call7.sh - the final form (bulk32.patch folded in: the split kernel's X by bulk
# copies round the warps at every row count; machine code byte for byte call 6's bulk32 binary): the suites, the
# split case (the small kernels' tests) under compute-sanitizer memcheck and synccheck, English fp16 parity with the
# fused projections up to 48 tokens, and the forward at 16-83 tokens against the session's start. Stage:
# scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda build/base/layad-dev-base; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 120 "$B/gpu_kernels" > "$W/kernels.log" 2>&1; echo "kernels exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/kernels.log")"
LAYAD_TINY=$W/tiny timeout 120 "$B/gpu_backend_cuda" > "$W/backend.log" 2>&1
echo "backend exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/backend.log")"
for tool in memcheck synccheck; do
  CK_RUN_CASE=split timeout 120 "$cs" --tool $tool "$B/gpu_kernels" > "$W/$tool.log" 2>&1
  echo "$tool exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY|Checks' "$W/$tool.log" | tr '\n' ' ')"
done
timeout 120 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --label "english fused 48" \
  --fused-proj-tokens 48 --ref .carry/ref/english.ref --out "$OUT/parity-fused48.json" > "$W/parity.log" 2>&1
echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" "$W/parity.log" | head -2
for v in base new base2 new2; do
  b=$B/layad-dev; case $v in base*) b=$B/layad-dev-base ;; esac
  echo "== $v"
  timeout 100 "$b" bench --model "$W/english" --shapes 1x16,1x24,1x30,1x40,1x48,1x83 \
    --commit "$LAYAD_COMMIT ($v)" --out "$OUT/forward-$v.json" | grep -E "^ +[0-9]+x"
done
echo "done $((SECONDS-t0)) s"
for l in kernels backend memcheck synccheck parity; do head -c 20000 "$W/$l.log" > "$W/$l.log.head"; done
(cd "$W" && tar czf "$OUT/logs.tgz" *.log.head)
