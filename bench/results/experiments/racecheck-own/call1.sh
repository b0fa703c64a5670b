# bench/results/experiments/racecheck-own/call1.sh - compute-sanitizer racecheck over the suites' cases that had not
# finished under it: the kernel suite's split (OOM-killed at 128 GB of the tool's host memory) and vs_cpu (past 150
# s), and the backend suite (past 200 s; its one case, tiny), on the racecheck build, with cuBLASLt's kernels left out
# (--kernel-name-exclude kns=nvjet: not ours, and the bulk of the instrumented launches) and its tuner off
# (LAYAD_TEST_NO_TUNE=1: with it on, the excluded run ended in an internal sanitizer error while timing candidates,
# persistent/call7-h100/). The small and proj cases passed racecheck in persistent/call4-h100/, the attention in
# att-wgmma/call12-h100/. Stage: make racecheck-build; cp build/racecheck/tests/gpu_kernels build/rc/gpu_kernels_rc;
# cp build/racecheck/tests/gpu_backend_cuda build/rc/gpu_backend_cuda_rc; scripts/device/prep build/rc/gpu_kernels_rc
# build/rc/gpu_backend_cuda_rc build/bench/ingest_probe build/bench/persist_probe; carry .carry. First, the ingest
# probe's fresh sweep (X just written by other SMs against the same bytes read before), and the persistent probe after
# its functions were split (mma_step, first_weights, record_phases: the same work as persistent/call6's).
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 60 "$B/ingest_probe" fresh > "$OUT/ingest-fresh.jsonl" 2> "$W/ingest.err"
echo "ingest fresh exit $? $((SECONDS-t0)) s"; tail -2 "$W/ingest.err"
PERSIST_SPLIT=0 timeout 60 "$B/persist_probe" 16 32 > "$OUT/persist-probe.json" 2> "$W/persist.err"
echo "persist probe exit $? $((SECONDS-t0)) s"
# each case within what is left of 560 s (split 120 s, vs_cpu 200 s, the backend suite the rest)
for c in split vs_cpu backend; do
  lim=120; [ $c = vs_cpu ] && lim=200; [ $c = backend ] && lim=$((560 - (SECONDS - t0)))
  [ $lim -le $((560 - (SECONDS - t0))) ] || lim=$((560 - (SECONDS - t0)))
  [ $lim -ge 30 ] || break
  bin=$B/gpu_kernels_rc case=$c; [ $c = backend ] && bin=$B/gpu_backend_cuda_rc case=tiny
  LAYAD_TINY=$W/tiny LAYAD_TEST_NO_TUNE=1 CK_RUN_CASE=$case timeout $lim "$cs" --tool racecheck \
    --kernel-name-exclude kns=nvjet "$bin" > "$W/rc-$c.log" 2>&1
  echo "racecheck $c exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks|rror' "$W/rc-$c.log" | head -4 | tr '\n' ' ')"
done
for l in rc-split.log rc-vs_cpu.log rc-backend.log persist.err ingest.err; do
  [ -f "$W/$l" ] && head -c 30000 "$W/$l" > "$W/$l.head"
done
(cd "$W" && tar czf "$OUT/logs.tgz" *.head)
