# bench/results/experiments/att-wo/call1.sh - the attention and its out-projection in one launch
# (kn_attention_wo, cuda_backend_opts.att_wo_tokens) on whatever card comes: the kernel suite's attention
# case (the new kernel against kn_attention times each head's slice of Wo, the LayerNorm over 16 parts),
# the backend suite's att_wo_rows (one row a forward against the CPU fp32 forward, graph == eager), the
# forward A/B/A/B with the option off and at 128 tokens, English fp16 parity with it, and memcheck over the
# kernel suite's attention case. Stage: scripts/device/prep build/tests/gpu_kernels
# build/tests/gpu_backend_cuda; `git rev-parse --short HEAD > .carry/commit`; .carry/ref/english.ref; carry
# .carry. DL: the deadline in seconds from the start that memcheck's cap is cut to; MC: its cap (calls 1 and 2
# ran with 300 and 60).
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-300}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
CK_RUN_CASE=attention timeout 150 "$B/gpu_kernels" > "$W/kernels-attention.log" 2>&1
echo "kernels attention exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/kernels-attention.log")"
grep -E "attn \+ wo .*(part 0 |layernorm)|outside|differ|written|Failure|Error" "$W/kernels-attention.log" | head -24
CK_RUN_CASE=att_wo_rows LAYAD_TINY=$W/tiny timeout 150 "$B/gpu_backend_cuda" > "$W/backend-att-wo.log" 2>&1
echo "backend att_wo_rows exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/backend-att-wo.log")"
grep -E "attention \+ out|Failure|Error" "$W/backend-att-wo.log" | head -6
cp "$W/kernels-attention.log" "$W/backend-att-wo.log" "$OUT/"
printf '#!/bin/sh\nexec %s "$@" --att-wo-tokens 128\n' "$B/layad-dev" > "$W/wo" && chmod +x "$W/wo"
bench_abab 1x16,1x40,1x83,1x120,1x150 base "$B/layad-dev" wo "$W/wo"
echo "bench $((SECONDS-t0)) s"
run_parity parity-att-wo.json parity-att-wo.log att-wo --att-wo-tokens 128
cp "$W/parity-att-wo.log" "$OUT/"
sanitize memcheck "$B/gpu_kernels" attention "${MC:-60}"
cp "$W"/memcheck-*.kernels "$W"/memcheck-*.log.tail "$OUT/" 2>/dev/null
echo "done $((SECONDS-t0)) s"
