# bench/results/experiments/parts-d/call1.sh - the split residual branches of 65-128-token buckets (cuBLASLt's split
# products, not the own small kernel) in 2 partial products instead of 4: the LayerNorm after them reads half the
# fp32 parts. At the kernel level (split-branch/, 96 rows) attention-out took 4.18 us in 2 parts against 4.14 in 4,
# MLP-out 5.83 against 5.35, and the LayerNorm over 4 parts cost ~1.1 us more than the plain one; the forward never
# ran with 2. p2 = parts-d2.patch (branches with K = D: the encoder's attention-out, the head's out-proj),
# p2all = parts-all2.patch (every split branch). A/B/A/B against the tree, then p2's English fp16 parity.
# SHAPES and DL (seconds) trim it to a short call. Stage: the two patched layad-dev builds as build/rc/layad-dev-p2,
# -p2all; scripts/device/prep with them; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-400}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
bench_abab "${SHAPES:-1x70,1x83,1x120}" tree "$B/layad-dev" p2 "$B/layad-dev-p2"; echo "ab p2 $((SECONDS-t0)) s"
[ $((SECONDS - t0)) -lt $((DL - 150)) ] && mkdir -p "$OUT/all" && OUT=$OUT/all bench_abab "${SHAPES:-1x70,1x83,1x120}" tree \
  "$B/layad-dev" p2all "$B/layad-dev-p2all"; echo "ab p2all $((SECONDS-t0)) s"
if [ $((SECONDS - t0)) -lt $((DL - 90)) ]; then
  timeout 100 "$B/layad-dev-p2" parity-fast --model "$W/english" --dtype fp16 --label "english p2" \
    --ref .carry/ref/english.ref --out "$OUT/parity-p2.json" > "$W/parity-p2.log" 2>&1
  echo "parity p2 exit $? $((SECONDS-t0)) s"; grep -E "gates|max" "$W/parity-p2.log" | head -4
fi
