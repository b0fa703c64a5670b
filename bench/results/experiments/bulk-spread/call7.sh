# bench/results/experiments/bulk-spread/call7.sh - the final form (bulk32.patch folded in: the split kernel's X by bulk
# copies round the warps at every row count; machine code byte for byte call 6's bulk32 binary): the suites, the
# split case (the small kernels' tests) under compute-sanitizer memcheck and synccheck, English fp16 parity with the
# fused projections up to 48 tokens, and the forward at 16-83 tokens against the session's start. Stage:
# scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda build/base/layad-dev-base; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_suites
for tool in memcheck synccheck; do
  CK_RUN_CASE=split timeout 120 "$cs" --tool $tool "$B/gpu_kernels" > "$W/$tool.log" 2>&1
  echo "$tool exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY|Checks' "$W/$tool.log" | tr '\n' ' ')"
done
run_parity parity-fused48.json parity.log "english fused 48" --fused-proj-tokens 48
bench_abab 1x16,1x24,1x30,1x40,1x48,1x83 base "$B/layad-dev-base" new "$B/layad-dev"
echo "done $((SECONDS-t0)) s"
for l in kernels backend memcheck synccheck parity; do head -c 20000 "$W/$l.log" > "$W/$l.log.head"; done
(cd "$W" && tar czf "$OUT/logs.tgz" *.log.head)
