# bench/results/experiments/att-wo/call7.sh - the fused attention out-projection on by default up to 48 tokens
# (att_wo_tokens 48, parity-fast on the serving defaults): both suites, English fp16 parity with the defaults,
# the forward A/B/A/B against the tree before (.carry/old/layad-dev, 6b31d41) at one-row shapes 16-83 and 512, the
# mmBERT-base geometry at 16 and 40 tokens, then racecheck and memcheck over the new kernel's cases, cut to the
# deadline DL. Stage: scripts/device/prep build/loadgen build/tests/gpu_kernels build/tests/gpu_backend_cuda;
# .carry/commit; .carry/old/layad-dev.xz (the tree before, stripped, xz); .carry/ref/english.ref; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-540}
[ -f .carry/old/layad-dev ] || { xz -dk .carry/old/layad-dev.xz && chmod +x .carry/old/layad-dev; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_suites
grep -E "attn \+ wo .*(part 0 ok|layernorm over 16)|attention \+ out|Failure|Error" "$W/kernels.log" "$W/backend.log" | head -12
cp "$W/kernels.log" "$W/backend.log" "$OUT/"
run_parity parity-default.json parity-default.log defaults
cp "$W/parity-default.log" "$OUT/"
bench_abab 1x16,1x24,1x32,1x40,1x48,1x56,1x83,1x512 before "$PWD/.carry/old/layad-dev" after "$B/layad-dev"
echo "bench $((SECONDS-t0)) s"
mkmodel_mmbert "$W/mmbert"
for r in before:"$PWD/.carry/old/layad-dev" after:"$B/layad-dev" before2:"$PWD/.carry/old/layad-dev" after2:"$B/layad-dev"; do
  echo "== mmbert ${r%%:*}"
  timeout 60 "${r#*:}" bench --model "$W/mmbert" --shapes 1x16,1x40,1x83 --commit "$LAYAD_COMMIT (${r%%:*})" \
    --out "$OUT/mmbert-${r%%:*}.json" | grep -E "^ +[0-9]+x"
done
echo "mmbert $((SECONDS-t0)) s"
sanitize racecheck "$B/gpu_kernels" attention 90
sanitize memcheck "$B/gpu_backend_cuda" att_wo_rows 90
sanitize racecheck "$B/gpu_backend_cuda" att_wo_rows 120
cp "$W"/racecheck-*.kernels "$W"/memcheck-*.kernels "$OUT/" 2>/dev/null
echo "done $((SECONDS-t0)) s"
