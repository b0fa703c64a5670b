# bench/results/experiments/att-wgmma/call4.sh - the pipelined wgmma walk (pipe: pipelined.patch) and the same
# with a thread's staging places and the descriptors formed once (lean: lean.patch on top) against the
# committed wgmma walk (wg1, 6a356b2) and the mma.sync kernel (base, c35e345's code), one call: the kernel suite's
# attention cases and the backend suite on lean, bench_kernels four ways, the forward wg1 / pipe / lean twice
# each on one tuning cache, English fp16 parity of lean (must equal call 1's report), SASS opcode counts of
# all four, compute-sanitizer memcheck / racecheck / synccheck on the attention cases, then the backend suite
# under memcheck with the time left.
# Stage: build/base/{layad-dev,bench_kernels}-{base,wg1,pipe}, lean built in build/, then
#   scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda build/bench/bench_kernels build/base/*
# carry .carry; bash .carry/call.sh
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
{ CK_RUN_CASE=attention timeout 90 "$B/gpu_kernels"; echo "gpu_kernels attention exit $?"
  LAYAD_TINY=$W/tiny timeout 150 "$B/gpu_backend_cuda"; echo "gpu_backend_cuda exit $?"; } > "$OUT/gpu-suites.log" 2>&1
grep -hE "exit|Checks|:F:|:E:" "$OUT/gpu-suites.log"; echo "suites $((SECONDS-t0)) s"
mkdir -p "$W/k"
for v in base wg1 pipe lean; do
  b=$B/bench_kernels; [ $v != lean ] && b=$B/bench_kernels-$v
  timeout 60 "$b" "$W/k/kernels-$v.json" --only=attention > "$W/k/kernels-$v.log" 2>&1; echo "bench_kernels $v exit $?"
done
for v in pipe lean; do python3 scripts/kernels_ab.py "$W/k/kernels-wg1.json" "$W/k/kernels-$v.json" | cut -c1-60,150- || true; done
tar -C "$W/k" -czf "$OUT/kernels.tgz" .
echo "kernels $((SECONDS-t0)) s"
mkdir -p "$W/f"
for v in wg1 pipe lean wg1b pipe2 lean2; do
  [ $((SECONDS - t0)) -lt $((${LIMIT:-585} / 2)) ] || break # short of time: the first pass only
  bin=$B/layad-dev; case $v in wg1*) bin=$B/layad-dev-wg1 ;; pipe*) bin=$B/layad-dev-pipe ;; esac
  timeout 100 "$bin" bench --model "$W/english" --shapes 1x83,1x150,1x512,2x512,8x512,64x512 \
    --tuning-cache "$W/tuning.txt" --commit "$LAYAD_COMMIT ($v)" --out "$W/f/forward-$v.json" |
    sed "s/^/$v /" | grep -E "^[a-z0-9]+ +[0-9]+x" | cut -c1-40
done
tar -C "$W/f" -czf "$OUT/forward.tgz" .
echo "bench $((SECONDS-t0)) s"
timeout 150 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --ref .carry/ref/english.ref \
  --tuning-cache "$W/tuning.txt" --label wgmma-lean --out "$OUT/parity-english-fp16.json" | grep -E "gates|PASS|FAIL" | head -4
echo "parity $((SECONDS-t0)) s"
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for v in base wg1 pipe lean; do b=$B/layad-dev; [ $v != lean ] && b=$B/layad-dev-$v
  "$CUOBJ" -sass -fun '_Z16attention_kernelI6__halfLi1EEvPKT_PS1_iiPKiS6_i' "$b" > "$W/att-sass-$v.txt" 2>&1
  n=$W/att-sass-$v.txt
  echo "SASS $v: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$n") instructions;" \
    "$(grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z][A-Z0-9_.]*' "$n" | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -16 | awk '{printf "%s %s, ", $2, $1}')"
done
tar -C "$W" -czf "$OUT/att-sass.tgz" att-sass-base.txt att-sass-wg1.txt att-sass-pipe.txt att-sass-lean.txt
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck; do
  left=$((${LIMIT:-585} - (SECONDS - t0))); [ $left -gt 150 ] && left=150; [ $left -gt 5 ] || break
  CK_RUN_CASE=attention timeout $left "$cs" --tool $tool "$B/gpu_kernels" > "$W/$tool-attention.log" 2>&1
  echo "$tool attention exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/$tool-attention.log" | head -2 | tr '\n' ' ') $(grep -h 'Checks' "$W/$tool-attention.log")"
done
tar -C "$W" -czf "$OUT/sanitizers-attention.tgz" memcheck-attention.log racecheck-attention.log synccheck-attention.log
left=$((${LIMIT:-585} - (SECONDS - t0)))
[ $left -gt 20 ] || { echo "no time left for the backend suite under memcheck"; exit 0; }
LAYAD_TINY=$W/tiny timeout $left "$cs" --tool memcheck "$B/gpu_backend_cuda" > "$W/memcheck-backend.log" 2>&1
echo "memcheck backend exit $? $((SECONDS-t0)) s"; grep -hE "ERROR SUMMARY|Checks|^[^ ]+:[0-9]+:F" "$W/memcheck-backend.log"
tail -c 20000 "$W/memcheck-backend.log" | gzip > "$OUT/memcheck-backend-tail.log.gz"
