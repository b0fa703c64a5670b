# bench/results/experiments/att-skip/call.sh - run once (call1-h100/, rejected): the attention skipping, in the tiles a block
# does not see whole, the blocks of 8 keys (scores) and 16 keys (P V) that no row of the warp sees (skip.patch).
# Sliding layers (a 64-query tile reads 192 keys, a warp's 16 rows see 144 of them) and a short row's last tile
# (1x83: 19 of its second tile's 64 keys) do fewer MMAs and ldmatrix loads; whole tiles run the unchanged code
# (a second instantiation). It adds exact zeros less, so the forward must keep every bit: checked here by
# parity-fast with the base build and the patched one on one tuning cache (the same cuBLASLt algorithms), whose
# reports must match to the last digit. ~5 minutes. Stage (on this tree):
#   make -j2 build/layad-dev && cp build/layad-dev /tmp/layad-dev-base
#   git apply bench/results/experiments/att-skip/skip.patch && make -j2 build/tests/gpu_kernels
#   scripts/device/prep build/tests/gpu_kernels /tmp/layad-dev-base
#   git rev-parse --short HEAD > .carry/commit; mkdir -p .carry/ref && cp english.ref .carry/ref/  # (the CPU ref)
# carry .carry, then `bash bench/results/experiments/att-skip/call.sh`.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CK_RUN_CASE=attention timeout 60 "$B/gpu_kernels" > "$OUT/gpu-kernels.log" 2>&1
echo "gpu_kernels attention exit $?"; grep -hE "Checks|:F:|:E:" "$OUT/gpu-kernels.log"
for v in base skip; do
  bin=$B/layad-dev; [ $v = base ] && bin=$B/layad-dev-base
  timeout 200 "$bin" parity-fast --model "$W/english" --dtype fp16 --ref .carry/ref/english.ref \
    --tuning-cache "$W/parity-tuning.txt" --label "$v" --out "$OUT/parity-$v.json" | grep -E "gates|max" | head -4
done
python3 - "$OUT/parity-base.json" "$OUT/parity-skip.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["dtypes"] for p in sys.argv[1:3])
print("parity reports, base against skip:", "IDENTICAL" if a == b else "DIFFER")
PY
echo "parity $((SECONDS - t0)) s"
for v in base skip base2 skip2; do
  bin=$B/layad-dev; case $v in base*) bin=$B/layad-dev-base ;; esac
  timeout 100 "$bin" bench --model "$W/english" --shapes 1x83,1x150,1x512,8x512,64x512 \
    --tuning-cache "$W/tuning.txt" --commit "$LAYAD_COMMIT ($v)" --out "$OUT/forward-$v.json" |
    sed "s/^/$v /" | grep -E "^[a-z0-9]+ +[0-9]+x"
done
echo "done $((SECONDS - t0)) s"
