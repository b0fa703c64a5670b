# bench/results/experiments/persistent/call7.sh - the probe's finding in the library: X queued behind weight copies
# still in flight. The small kernels (split products, fused projections) with their W tile only prefetched into the
# L2 before the programmatic wait and copied into shared memory after X's copies (w-after-x.patch, built with
# NVDEFS=-DKN_SMALL_W_AFTER_X=1 as layad-dev-wx) against the tree, A/B/A/B at 16-64 tokens, and English fp16 parity
# with it; then racecheck over the split case with cuBLASLt's kernels left out (they filled the tool's host memory).
# Stage: scripts/device/prep build/layad-dev-wx build/rc/gpu_kernels_rc; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
bench_abab 1x16,1x24,1x30,1x40,1x48,1x64 tree "$B/layad-dev" wx "$B/layad-dev-wx"
echo "bench $((SECONDS-t0)) s"
timeout 120 "$B/layad-dev-wx" parity-fast --model "$W/english" --dtype fp16 --label "english w-after-x" \
  --ref .carry/ref/english.ref --out "$OUT/parity-wx.json" > "$W/parity-wx.log" 2>&1
echo "parity wx exit $? $((SECONDS-t0)) s"; grep -E "gates" "$W/parity-wx.log" | head -2
CK_RUN_CASE=split timeout 150 "$cs" --tool racecheck --kernel-name-exclude kns=nvjet "$B/gpu_kernels_rc" > "$W/rc-split.log" 2>&1
echo "racecheck split exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks|rror' "$W/rc-split.log" | head -4 | tr '\n' ' ')"
for l in parity-wx.log rc-split.log; do head -c 30000 "$W/$l" > "$W/$l.head"; done
(cd "$W" && tar czf "$OUT/logs.tgz" *.head)
