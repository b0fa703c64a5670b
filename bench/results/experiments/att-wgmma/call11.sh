# bench/results/experiments/att-wgmma/call11.sh - prepared, not run: the two groups swapping halves where half 1
# has more tiles (swap-halves.patch), so group 0, which reads group 1's state after the block meets, always
# passes at least as many named barriers (the probe's "unequal" case, clean under racecheck) and the ordinary
# build needs no padding. Same call: scripts/device/binary-ab attention against the tree before (small packs,
# where the two-group form runs, and 8x512); the attention cases plain (the forms' bits equal) and under
# racecheck, memcheck and synccheck; the backend suite; English fp16 parity (the report must equal 3.462e-3 /
# 3.515e-3, the tree's). If racecheck is quiet, the bits hold and the forward does not move, the patch lands
# and KN_ATT_PAD_BARRIERS / make racecheck-build leave the tree.
# Stage: build/base/{layad-dev,bench_kernels}-base (the tree's build), apply the patch, make build/layad-dev
# build/bench/bench_kernels build/tests/gpu_kernels build/tests/gpu_backend_cuda, then scripts/device/prep
# build/bench/bench_kernels build/tests/gpu_kernels build/tests/gpu_backend_cuda build/base/layad-dev-base
# build/base/bench_kernels-base; carry .carry.
export OUT; t0=$SECONDS
AB_SHAPES=1x83,1x150,1x512,8x512 bash scripts/device/binary-ab attention
source scripts/device/run-env.sh; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
CK_RUN_CASE=attention timeout 60 "$B/gpu_kernels" > "$W/att.log" 2>&1; echo "attention cases exit $?: $(grep -h Checks "$W/att.log")"
for tool in racecheck memcheck synccheck; do
  CK_RUN_CASE=attention timeout 120 "$cs" --tool $tool "$B/gpu_kernels" > "$W/$tool.log" 2>&1
  echo "$tool exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY|Checks' "$W/$tool.log" | tr '\n' ' ')"
done
LAYAD_TINY=$W/tiny timeout 100 "$B/gpu_backend_cuda" > "$W/backend.log" 2>&1; echo "backend exit $?: $(grep -h Checks "$W/backend.log")"
timeout 150 "$B/layad-dev" parity-fast --model "$W/english" --dtype fp16 --label english --ref .carry/ref/english.ref \
  --out "$OUT/parity-english-fp16.json" > "$W/parity.log" 2>&1
echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" "$W/parity.log" | head -2
for l in att racecheck memcheck synccheck backend parity; do head -c 20000 "$W/$l.log" > "$W/$l.log.head"; done
tar -C "$W" -czf "$OUT/logs.tgz" $(cd "$W" && ls *.log.head)
