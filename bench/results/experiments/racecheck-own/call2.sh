# bench/results/experiments/racecheck-own/call2.sh - call 1 found that leaving cuBLASLt's kernels out of racecheck
# (--kernel-name-exclude kns=nvjet) breaks cuBLASLt itself under the tool (its first launch or its handle fails,
# "failed to handle a hardware exception"), so racecheck here instruments every kernel, with the tuner off
# (LAYAD_TEST_NO_TUNE=1: one heuristic algorithm a shape, where the OOM-killed runs had timed every candidate),
# each case's peak host memory recorded (/usr/bin/time -v). First, the 96-token bucket's own split products
# against cuBLASLt's in the forward (flag-ab --small-gemm-tokens 64 / 96). Stage as call1.sh.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
bash scripts/device/flag-ab "$B/layad-dev" --small-gemm-tokens 64 96 1x70,1x83,1x90 2>&1 | tee "$OUT/flag-ab.txt"
echo "flag-ab $((SECONDS-t0)) s"
tm=(); [ -x /usr/bin/time ] && tm=(/usr/bin/time -v)
for c in split vs_cpu backend; do
  left=$((570 - (SECONDS - t0))); lim=150; [ $c = backend ] && lim=$left; [ $lim -le $left ] || lim=$left
  [ $lim -ge 30 ] || break
  bin=$B/gpu_kernels_rc case=$c; [ $c = backend ] && bin=$B/gpu_backend_cuda_rc case=tiny
  LAYAD_TINY=$W/tiny LAYAD_TEST_NO_TUNE=1 CK_RUN_CASE=$case "${tm[@]}" timeout $lim "$cs" --tool racecheck \
    "$bin" > "$W/rc-$c.log" 2>&1
  echo "racecheck $c exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks|rror|Maximum resident' "$W/rc-$c.log" | head -5 | tr '\n' ' ')"
done
for l in rc-split.log rc-vs_cpu.log rc-backend.log; do [ -f "$W/$l" ] && head -c 30000 "$W/$l" > "$W/$l.head"; done
(cd "$W" && tar czf "$OUT/logs.tgz" rc-*.head)
