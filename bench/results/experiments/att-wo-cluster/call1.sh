# bench/results/experiments/att-wo-cluster/call1.sh - the fused attention out-projection with its per-head products
# summed in clusters through distributed shared memory (cluster.patch, --att-wo-cluster N): the kernel suite's
# attention case (per head, clusters of 2 and 4 against double), the backend's att_wo_rows (tiny geometry, per head
# and clusters of 2, one row a forward against the CPU fp32 forward), the forward A/B/A/B with the fused launch up to
# 128 tokens per head (wo1) and in clusters of 4 (wo4), the tree's default once beside them, English fp16 parity in
# clusters of 4, then memcheck and, on the padded build, racecheck over the attention case, cut to DL. Whether one
# part per four heads carries the fused launch past 48 tokens, where the per-head parts' traffic took its gain
# (att-wo/). Stage with stage.sh; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-540}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_case "$B/gpu_kernels" attention kernels-attention.log 150
grep -E "cl[24]: (part 0 |layernorm)|outside|differ|Failure|Error" "$W/kernels-attention.log" | head -12
run_case "$B/gpu_backend_cuda" att_wo_rows backend-att-wo.log 200
grep -E "attention \+ out|Failure|Error" "$W/backend-att-wo.log" | head -6
for c in 1 4; do
  printf '#!/bin/sh\nexec %s "$@" --att-wo-tokens 128 --att-wo-cluster %s\n' "$B/layad-dev" "$c" > "$W/wo$c"
  chmod +x "$W/wo$c"
done
shapes=1x16,1x32,1x48,1x56,1x64,1x83,1x96,1x120
bench_abab $shapes wo1 "$W/wo1" wo4 "$W/wo4"
echo "== tree (the fused launch to 48 tokens, per head)"
timeout 100 "$B/layad-dev" bench --model "$W/english" --shapes $shapes --commit "$LAYAD_COMMIT (tree)" \
  --out "$OUT/forward-tree.json" | grep -E "^ +[0-9]+x"
echo "bench $((SECONDS-t0)) s"
run_parity parity-cl4.json parity-cl4.log cl4 --att-wo-tokens 128 --att-wo-cluster 4
sanitize memcheck "$B/gpu_kernels" attention 60
sanitize racecheck "$B/gpu_kernels_rc" attention 120
cp "$W/kernels-attention.log" "$W/backend-att-wo.log" "$W/parity-cl4.log" "$W"/*.kernels "$OUT/" 2>/dev/null
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.kernels ./parity-*.json 2>/dev/null && rm -f ./*.log ./*.kernels ./parity-*.json)
echo "done $((SECONDS-t0)) s"
