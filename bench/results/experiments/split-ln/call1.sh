# bench/results/experiments/split-ln/call1.sh - the split product with the LayerNorm over its parts in one launch
# (kn_gemm_split_small_ln, cuda_backend_opts.split_ln: 1 plain, 2 cooperative): the suites (their new cases compare
# it bit for bit with the two launches); the forward at the small buckets against the same binary without it, and
# against the session's start (layad-dev-base, 5360154); s96: with it, the own split products at the 96-token bucket
# of 1x83 (5% slower than cuBLASLt there without it, racecheck-own/call2); English fp16 parity with and without it
# (the same report expected); the new kernel under memcheck and racecheck (the `small` case); racecheck's vs_cpu
# case again with every hazard's kernel counted (racecheck-own/call2 kept only its first 30 KB). Each step after the
# suites runs only if it fits what is left of DL seconds (default 360; the device time left decides). Stage: make
# racecheck-build; cp build/racecheck/tests/gpu_kernels build/rc/gpu_kernels_rc; cp /tmp/base/build/layad-dev
# build/base/layad-dev-base; scripts/device/prep build/tests/gpu_kernels build/tests/gpu_backend_cuda
# build/rc/gpu_kernels_rc build/base/layad-dev-base; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
DL=${DL:-360}; left() { echo $((DL - (SECONDS - t0))); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_suites
grep -hE 'split_ln|skipped' "$W/kernels.log" "$W/backend.log" | head -8
sh=1x16,1x30,1x40,1x60,1x83
for r in off on coop s96 off2 on2 base; do
  [ "$(left)" -ge 60 ] || break
  bin=$B/layad-dev; f=()
  case $r in
  base) bin=$B/layad-dev-base ;; off*) f=(--split-ln 0) ;; on*) f=(--split-ln 1) ;; coop*) f=(--split-ln 2) ;;
  s96) f=(--split-ln 1 --small-gemm-tokens 96) ;;
  esac
  timeout 60 "$bin" bench --model "$W/english" --shapes $sh "${f[@]}" --commit "$LAYAD_COMMIT ($r)" \
    --out "$W/forward-$r.json" 2> "$W/bench-$r.err" | grep -E "^ +[0-9]+x" | sed "s/^/$r /"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "bench $r failed"; tail -3 "$W/bench-$r.err"; }
done
echo "bench $((SECONDS-t0)) s"
if [ "$(left)" -ge 100 ]; then
  run_parity parity-on.json parity-on.log on --split-ln 1
  run_parity parity-off.json parity-off.log off
  python3 - "$OUT/parity-off.json" "$OUT/parity-on.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
keys = ("gpu_graph_vs_cpu_fp32", "gpu_graph_one_row_per_forward_vs_cpu_fp32", "gpu_graph_vs_gpu_eager")
same = all(a["dtypes"]["fp16"][k] == b["dtypes"]["fp16"][k] for k in keys)
print("parity: the three comparisons identical with and without split_ln:", same)
PY
fi
if [ "$(left)" -ge 60 ]; then
  CK_RUN_CASE=small timeout $(($(left) > 100 ? 100 : $(left))) "$cs" --tool memcheck "$B/gpu_kernels" > "$W/mc-small.log" 2>&1
  echo "memcheck small exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY|Checks' "$W/mc-small.log" | tr '\n' ' ')"
fi
for c in small vs_cpu; do
  lim=$(left); [ $lim -le 120 ] || lim=120; [ $lim -ge 30 ] || break
  LAYAD_TEST_NO_TUNE=1 CK_RUN_CASE=$c timeout $lim "$cs" --tool racecheck "$B/gpu_kernels_rc" > "$W/rc-$c.log" 2>&1
  echo "racecheck $c exit $? $((SECONDS-t0)) s: $(grep -hE 'RACECHECK SUMMARY|Checks' "$W/rc-$c.log" | tr '\n' ' ')"
  grep -oE 'Race reported between [A-Za-z]+ access at [A-Za-z0-9_<>:, ]+\+0x' "$W/rc-$c.log" | sed 's/+0x$//' |
    sort | uniq -c | sort -rn > "$W/rc-$c-kernels.txt"; head -3 "$W/rc-$c-kernels.txt"
  echo "$(grep -c . "$W/rc-$c-kernels.txt") kinds of report, not nvjet:"; grep -v nvjet "$W/rc-$c-kernels.txt" | head -5
done
for l in "$W"/rc-*.log "$W"/mc-small.log "$W"/kernels.log "$W"/backend.log; do [ -f "$l" ] && tail -c 30000 "$l" > "$l.tail"; done
(cd "$W" && tar czf "$OUT/forward.tgz" forward-*.json bench-*.err; tar czf "$OUT/logs.tgz" *.tail rc-*-kernels.txt parity-*.log 2>/dev/null)
