# bench/results/experiments/gemm-pick/call.sh - do the small buckets' cuBLASLt algorithms, chosen by timing each
# shape's heuristic candidates inside the bucket's forward (gemm_pick_tokens), beat tuning's choices, timed alone
# with W in L2? (Timed with W cold instead, the forward got 4-13% slower: tune-cold/.) Run from the repository root
# on the lent GPU machine, carrying .carry (scripts/device/prep build/tests/gpu_backend_cuda;
# `git rev-parse --short HEAD > .carry/commit`). ~5 minutes: the backend suite (gemm_picks), then the forward
# off / on / off / on at 16-512 tokens; each bench report's warm-up records say what the picks gained there.
export OUT; source scripts/device/run-env.sh
LAYAD_TINY=$W/tiny timeout 120 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $?"; grep -E "Checks|:F:|:E:|GEMM picks" $OUT/gpu_backend_cuda.log
for v in off on off2 on2; do
  n=0; case $v in on*) n=512 ;; esac
  echo "== $v (gemm_pick_tokens $n)"
  timeout 170 $B/layad-dev bench --model $W/english --shapes 1x16,1x40,1x83,1x150,1x512 --gemm-pick-tokens $n \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"
done
python3 - $OUT <<'PY' | tee $OUT/picks.txt
import json, os, sys
for v in ("on", "on2"):
    for w in json.load(open(os.path.join(sys.argv[1], "forward-%s.json" % v)))["warm_buckets"]:
        print("%s bucket %5d: %2d shapes timed, warm-up %.0f ms, forward -%.4f ms by the picks" % (
            v, w["tokens"], w["gemm_pick_shapes"], w["warm_ms"], w["gemm_pick_gain_ms"]))
PY
