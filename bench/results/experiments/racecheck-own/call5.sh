# bench/results/experiments/racecheck-own/call5.sh - what call 4 left: initcheck (never run before) over both suites,
# every case, then racecheck over the backend case that call 4 cut first (packing_order_and_k) with the rest of the
# call. Stage and carry as call4.sh.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS; DL=${DL:-480}
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
"$cs" --version | tail -1 | tee -a "$OUT/gpu.txt"
# sanitize TOOL BINARY CASE CAP: one case (all: every case) under the tool, at most CAP seconds and what is left before DL.
sanitize() {
  local tool=$1 bin=$2 case=$3 cap=$4 left log
  left=$((DL - (SECONDS - t0))); [ "$cap" -le "$left" ] || cap=$left
  [ "$cap" -ge 20 ] || { echo "$tool $case: not run (time)"; return; }
  log=$W/$tool-$(basename "$bin")-$case.log
  local sel=(CK_RUN_CASE="$case"); [ "$case" = all ] && sel=()
  env LAYAD_TINY="$W/tiny" LAYAD_TEST_NO_TUNE=1 "${sel[@]}" timeout "$cap" "$cs" --tool "$tool" "$bin" > "$log" 2>&1
  echo "$tool $(basename "$bin") $case: exit $? at $((SECONDS-t0)) s (cap $cap): $(grep -hE 'SUMMARY|Checks:' "$log" | tr '\n' ' ')"
  awk '/Race reported between/ { sub(/.* access at /, ""); sub(/\+0x.*/, ""); print; next }
       /Uninitialized __global__ memory read/ { u = 1; next }
       u && / at / { sub(/.* at /, ""); sub(/\+0x.*/, ""); print "uninitialized read in " $0; u = 0 }' "$log" |
    sed 's/(.*//' | sort | uniq -c | sort -rn > "${log%.log}.kernels"
  grep -v nvjet "${log%.log}.kernels" | sed 's/^/    not cuBLASLt: /' | head -8
  grep -c nvjet "${log%.log}.kernels" | sed 's/^/    cuBLASLt kernels named: /'
  tail -c 20000 "$log" > "$log.tail"
}
sanitize initcheck "$B/gpu_kernels" all 150
sanitize initcheck "$B/gpu_backend_cuda" all 150
sanitize racecheck "$B/gpu_backend_cuda_rc" packing_order_and_k 300
(cd "$W" && tar czf "$OUT/logs.tgz" ./*.kernels ./*.log.tail)
