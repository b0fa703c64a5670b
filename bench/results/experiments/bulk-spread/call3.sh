# bench/results/experiments/bulk-spread/call3.sh - the session's kept changes together (the spread bulk copies and
# the fused projections up to 48 tokens) against the tree at the session's start (build/base: ee5cba0's library):
# the suites, English fp16 parity with the default forward (fused projections off in parity-fast) and with them up
# to 48 tokens, then the forward A/B/A/B at 16-512 tokens and 8x512. Stage: scripts/device/prep
# build/tests/gpu_kernels build/tests/gpu_backend_cuda build/base/layad-dev-base; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 120 "$B/gpu_kernels" > "$W/kernels.log" 2>&1; echo "kernels exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/kernels.log")"
LAYAD_TINY=$W/tiny timeout 120 "$B/gpu_backend_cuda" > "$W/backend.log" 2>&1
echo "backend exit $? $((SECONDS-t0)) s: $(grep -h Checks "$W/backend.log")"
for f in 0 48; do
  timeout 120 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --label "english fused $f" \
    --fused-proj-tokens $f --ref .carry/ref/english.ref --out "$OUT/parity-fused$f.json" > "$W/parity$f.log" 2>&1
  echo "parity (fused $f) exit $? $((SECONDS-t0)) s"; grep -E "gates" "$W/parity$f.log" | head -2
done
for v in base new base2 new2; do
  b=$B/layad-dev; case $v in base*) b=$B/layad-dev-base ;; esac
  echo "== $v"
  timeout 100 "$b" bench --model "$W/english" --shapes 1x16,1x30,1x40,1x83,1x150,1x512,8x512 \
    --commit "$LAYAD_COMMIT ($v)" --out "$OUT/forward-$v.json" | grep -E "^ +[0-9]+x"
done
echo "done $((SECONDS-t0)) s"
