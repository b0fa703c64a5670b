# bench/results/experiments/att-wgmma/call5.sh - the committed wgmma walk with a thread's staging places and the
# descriptors formed once (lean1: lean1.patch on HEAD, no pipelining) against HEAD (wg1), and racecheck on the
# attention cases of three builds (wg1, lean1, and the mma.sync kernel, -DKN_ATT_WG=0), after call 4 found
# hazards between att_save and att_load in the pipelined build. One call: suites on lean1, racecheck x3,
# bench_kernels and the forward wg1 / lean1 twice, English fp16 parity of lean1, SASS opcode counts.
# Stage: build/base/{layad-dev,bench_kernels,gpu_kernels}-wg1, build/base/gpu_kernels-mma, lean1 in build/, then
#   scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda build/bench/bench_kernels build/base/*
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
{ CK_RUN_CASE=attention timeout 90 "$B/gpu_kernels"; echo "gpu_kernels attention exit $?"
  LAYAD_TINY=$W/tiny timeout 150 "$B/gpu_backend_cuda"; echo "gpu_backend_cuda exit $?"; } > "$OUT/gpu-suites.log" 2>&1
grep -hE "exit|Checks|:F:|:E:" "$OUT/gpu-suites.log"; echo "suites $((SECONDS-t0)) s"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for v in wg1 mma lean1; do b=$B/gpu_kernels; [ $v != lean1 ] && b=$B/gpu_kernels-$v
  CK_RUN_CASE=attention timeout 100 "$cs" --tool racecheck --racecheck-report all "$b" > "$W/racecheck-$v.log" 2>&1
  echo "racecheck $v exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY' "$W/racecheck-$v.log" | tr '\n' ' ') $(grep -h 'Checks' "$W/racecheck-$v.log")"
  grep -E 'Race reported|Access at|access at' "$W/racecheck-$v.log" | sed 's/+0x[0-9a-f]*//' | sort | uniq -c | sort -rn | head -6
done
tar -C "$W" -czf "$OUT/racecheck.tgz" racecheck-wg1.log racecheck-mma.log racecheck-lean1.log
mkdir -p "$W/k"
for v in wg1 lean1 wg1b lean1b; do b=$B/bench_kernels; case $v in wg1*) b=$B/bench_kernels-wg1 ;; esac
  timeout 60 "$b" "$W/k/kernels-$v.json" --only=attention > "$W/k/kernels-$v.log" 2>&1; echo "bench_kernels $v exit $?"
done
tar -C "$W/k" -czf "$OUT/kernels.tgz" .
mkdir -p "$W/f"
for v in wg1 lean1 wg1b lean1b; do bin=$B/layad-dev; case $v in wg1*) bin=$B/layad-dev-wg1 ;; esac
  timeout 100 "$bin" bench --model "$W/english" --shapes 1x83,1x150,1x512,2x512,8x512,64x512 \
    --tuning-cache "$W/tuning.txt" --commit "$LAYAD_COMMIT ($v)" --out "$W/f/forward-$v.json" |
    sed "s/^/$v /" | grep -E "^[a-z0-9]+ +[0-9]+x" | cut -c1-40
done
tar -C "$W/f" -czf "$OUT/forward.tgz" .
echo "bench $((SECONDS-t0)) s"
timeout 150 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --ref .carry/ref/english.ref \
  --tuning-cache "$W/tuning.txt" --label wgmma-lean1 --out "$OUT/parity-english-fp16.json" | grep -E "gates|PASS|FAIL" | head -4
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for v in wg1 lean1; do b=$B/layad-dev; [ $v != lean1 ] && b=$B/layad-dev-$v
  "$CUOBJ" -sass -fun '_Z16attention_kernelI6__halfLi1EEvPKT_PS1_iiPKiS6_i' "$b" > "$W/att-sass-$v.txt" 2>&1; n=$W/att-sass-$v.txt
  echo "SASS $v: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$n") instructions;" \
    "$(grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?U?P[0-9T] )?[A-Z][A-Z0-9_.]*' "$n" | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -16 | awk '{printf "%s %s, ", $2, $1}')"
done
tar -C "$W" -czf "$OUT/att-sass.tgz" att-sass-wg1.txt att-sass-lean1.txt
echo "end $((SECONDS-t0)) s"
