# bench/results/experiments/persistent/call4.sh - the persistent probe's v4 (where the next GEMM's weights come from:
# early / late / via the L2 / none, the L2 form with a barrier of per-CTA flags, and a stage's
# phases; a barrier alone, on one counter and on flags) at 16-128 tokens; then the tree on the GPU (suites, English
# fp16 parity, the forward at the issue's shapes), mmBERT-base against the last session's start (ab0c7ee: the small
# kernels' three changes together), and racecheck over the small kernels' cases (racecheck build, one case at a time:
# together they outgrew the machine's memory). Stage: make racecheck-build; cp build/racecheck/tests/gpu_kernels
# build/rc/gpu_kernels_rc; scripts/device/prep build/bench/persist_probe build/tests/gpu_kernels
# build/tests/gpu_backend_cuda build/base/layad-dev-base build/rc/gpu_kernels_rc; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 "$B/persist_probe" 16 32 64 96 128 > "$OUT/probe-v4.json" 2> "$W/probe.err"
echo "probe exit $? $((SECONDS-t0)) s"; tail -3 "$W/probe.err"
run_suites
run_parity parity-english-fp16.json parity.log english
timeout 100 "$B/layad-dev" bench --model "$W/english" --shapes 1x16,1x83,1x150,1x512,8x512,64x512 \
  --commit "$LAYAD_COMMIT" --out "$OUT/forward.json" | grep -E "^ +[0-9]+x"
echo "bench $((SECONDS-t0)) s"
mkmodel_mmbert "$W/mmbert"
for v in base new base2 new2; do
  b=$B/layad-dev; case $v in base*) b=$B/layad-dev-base ;; esac
  echo "== mmbert $v"
  timeout 80 "$b" bench --model "$W/mmbert" --shapes 1x16,1x30,1x40,1x48,1x83 --commit "$LAYAD_COMMIT ($v)" \
    --out "$OUT/mmbert-$v.json" | grep -E "^ +[0-9]+x"
done
echo "mmbert $((SECONDS-t0)) s"
for c in small proj split; do
  [ $((SECONDS-t0)) -lt 470 ] || break
  CK_RUN_CASE=$c timeout 80 "$cs" --tool racecheck "$B/gpu_kernels_rc" > "$W/rc-$c.log" 2>&1
  echo "racecheck $c exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks' "$W/rc-$c.log" | tr '\n' ' ')"
done
echo "done $((SECONDS-t0)) s"
for l in probe.err kernels.log backend.log parity.log rc-small.log rc-proj.log rc-split.log; do
  [ -f "$W/$l" ] && head -c 30000 "$W/$l" > "$W/$l.head"
done
(cd "$W" && tar czf "$OUT/logs.tgz" *.head)
