# bench/results/experiments/rows-last-first/call1.sh - the memory-bound passes after a GEMM (LayerNorm, RoPE,
# GeGLU) walking their rows last first (kn_row_order), against the tree before, same call: scripts/device/binary-ab
# (bench_kernels' geglu, layernorm and rope families, then the forward base / new / base2) and one more new /
# base pair; then the new build's kernel suite on those families and English fp16 parity (the bits must not move:
# a pass's arithmetic per row is unchanged). Stage: build/base/{layad-dev,bench_kernels}-base (92ccfe5's build),
# then scripts/device/prep build/bench/bench_kernels build/tests/gpu_kernels build/base/layad-dev-base
# build/base/bench_kernels-base; carry .carry.
export OUT; t0=$SECONDS
AB_SHAPES=1x83,1x512,2x512,8x512,64x512 bash scripts/device/binary-ab geglu,layernorm,rope
source scripts/device/run-env.sh
for v in new base; do
  b=$B/layad-dev; [ $v = base ] && b=$B/layad-dev-base
  timeout 100 "$b" bench --model "$W/english" --shapes 1x83,1x512,2x512,8x512,64x512 --commit "$LAYAD_COMMIT ($v)" \
    --out "$OUT/forward-${v}3.json" | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "benches $((SECONDS-t0)) s"
for c in geglu layernorm rope; do
  CK_RUN_CASE=$c timeout 60 "$B/gpu_kernels" 2>&1 | grep -E "Checks|:F:|:E:" | sed "s/^/$c: /"
done
timeout 150 "$B/layad-dev" parity-fast --model "$W/english" --label english --ref .carry/ref/english.ref \
  --out "$OUT/parity-english.json" > "$W/parity.log" 2>&1
echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates|PASS|FAIL" "$W/parity.log" | head -4
