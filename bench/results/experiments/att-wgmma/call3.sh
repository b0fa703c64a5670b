# bench/results/experiments/att-wgmma/call3.sh - call2.sh cut to the session's last ~150 s of device time: the
# pipelined walk's suites, its kernel against the committed wgmma walk (wg1), the forward wg1 / new at four
# shapes, English fp16 parity, SASS counts, then memcheck and synccheck on the attention cases as time allows.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; L=${LIMIT:-150}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
{ CK_RUN_CASE=attention timeout 60 "$B/gpu_kernels"; echo "gpu_kernels attention exit $?"
  LAYAD_TINY=$W/tiny timeout 90 "$B/gpu_backend_cuda"; echo "gpu_backend_cuda exit $?"; } > "$OUT/gpu-suites.log" 2>&1
grep -hE "exit|Checks|:F:|:E:" "$OUT/gpu-suites.log"; echo "suites $((SECONDS-t0)) s"
mkdir -p "$W/k" "$W/f"
timeout 40 "$B/bench_kernels-wg1" "$W/k/kernels-wg1.json" --only=attention > /dev/null 2>&1
timeout 40 "$B/bench_kernels" "$W/k/kernels-new.json" --only=attention > /dev/null 2>&1
python3 scripts/kernels_ab.py "$W/k/kernels-wg1.json" "$W/k/kernels-new.json" | cut -c1-60,150- || true
for v in wg1 new; do
  bin=$B/layad-dev; [ $v = wg1 ] && bin=$B/layad-dev-wg1
  timeout 60 "$bin" bench --model "$W/english" --shapes 1x83,1x512,8x512,64x512 --tuning-cache "$W/tuning.txt" \
    --commit "$LAYAD_COMMIT ($v)" --out "$W/f/forward-$v.json" | sed "s/^/$v /" | grep -E "^[a-z0-9]+ +[0-9]+x" | cut -c1-40
done
tar -C "$W" -czf "$OUT/kernels-forward.tgz" k f; echo "bench $((SECONDS-t0)) s"
timeout 40 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --ref .carry/ref/english.ref \
  --tuning-cache "$W/tuning.txt" --label wgmma-pipelined --out "$OUT/parity-english-fp16.json" | grep -E "gates|PASS|FAIL" | head -3
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for v in wg1 new; do b=$B/layad-dev; [ $v = wg1 ] && b=$B/layad-dev-wg1
  "$CUOBJ" -sass -fun '_Z16attention_kernelI6__halfLi1EEvPKT_PS1_iiPKiS6_i' "$b" > "$W/sass-$v.txt" 2>&1
  echo "SASS $v: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$W/sass-$v.txt") instructions; $(grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z][A-Z0-9_.]*' "$W/sass-$v.txt" | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -12 | awk '{printf "%s %s, ", $2, $1}')"
done
tar -C "$W" -czf "$OUT/sass.tgz" sass-wg1.txt sass-new.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in synccheck memcheck; do
  left=$((L - (SECONDS - t0))); [ $left -gt 5 ] || break
  CK_RUN_CASE=attention timeout $left "$cs" --tool $tool "$B/gpu_kernels" > "$OUT/$tool-attention.log" 2>&1
  echo "$tool attention exit $? $((SECONDS-t0)) s: $(grep -h 'ERROR SUMMARY' "$OUT/$tool-attention.log") $(grep -h 'Checks' "$OUT/$tool-attention.log")"
done
