# bench/results/experiments/persistent/call8.sh - the probe's v5: the GEMM chain without grid barriers (late-flow,
# none-flow: each K split waits only for the tiles of its X slice, the split products summed tile by tile by the
# split that stores last) next to the barrier modes of v4, at 16-96 rows, same process; first one flow run under
# memcheck (its flags and sums index global memory by tile). Stage: scripts/device/prep build/bench/persist_probe;
# carry .carry. ~90 s.
export OUT; source .carry/env.sh; W=/tmp/layad-run; mkdir -p "$W"; B=$PWD/.carry/bin; t0=$SECONDS
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
PERSIST_MODE=5 PERSIST_SPLIT=0 timeout 120 "$cs" --tool memcheck "$B/persist_probe" 16 > "$W/memcheck.json" \
  2> "$W/memcheck.err"
echo "memcheck exit $? $((SECONDS-t0)) s: $(grep -hE 'ERROR SUMMARY' "$W/memcheck.json" "$W/memcheck.err" | head -2)"
timeout 200 "$B/persist_probe" 16 32 64 96 > "$OUT/persist_probe.json" 2> "$W/probe.err"
echo "probe exit $? $((SECONDS-t0)) s"
python3 - "$OUT/persist_probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
best = {}
for r in d["runs"]:
    k = (r["M"], r["weights"])
    if k not in best or r["persistent_us_per_layer"] < best[k]["persistent_us_per_layer"]:
        best[k] = r
for (m, w), r in sorted(best.items()):
    print(f'M {m:3d} {w:9s} {r["persistent_us_per_layer"]:7.2f} us a layer (splits {r["splits_wqkv_wo_wi_wo2"]}), '
          f'cuBLAS {r["cublas_us_per_layer"]:6.2f}, check {r["check_maxdiff"]:.3g} of {r["check_refmax"]:.3g}')
PY
(cd "$W" && tar czf "$OUT/logs.tgz" memcheck.* probe.err)
