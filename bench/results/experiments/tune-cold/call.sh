# bench/results/experiments/tune-cold/call.sh - does cuBLASLt's warm-up tuning pick better algorithms for the
# forward when each candidate is timed with W streamed from DRAM (copies of W beyond the L2: --gemm-tune-cold),
# as the forward reads every layer's weights, instead of from the L2 its first timed launch filled? Run from the
# repository root on the lent GPU machine, carrying .carry (scripts/device/prep build/tests/gpu_gemm_tuning;
# `git rev-parse --short HEAD > .carry/commit`). ~4 minutes: the tuning suite (cold_tuning_records), then the
# forward hot / cold / hot / cold, each tuning afresh into its own file, and how many shapes' algorithms differ
# between the files (hot against hot: the tuning's own noise).
export OUT; source scripts/device/run-env.sh
timeout 120 $B/gpu_gemm_tuning > $OUT/gpu_gemm_tuning.log 2>&1
echo "gpu_gemm_tuning exit $?"; grep -E "Checks|:F:|:E:" $OUT/gpu_gemm_tuning.log
for v in hot cold hot2 cold2; do
  flag=""; case $v in cold*) flag=--gemm-tune-cold ;; esac
  echo "== $v $flag"
  timeout 110 $B/layad-dev bench --model $W/english --shapes 1x16,1x40,1x83,1x150,1x512,8x512 $flag \
    --tuning-cache $W/tuning-$v.txt --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"
  cp $W/tuning-$v.txt $OUT/
done
python3 - $OUT <<'PY' | tee $OUT/algorithms.txt
import sys, os
def recs(v):
    d = {}
    for l in open(os.path.join(sys.argv[1], "tuning-%s.txt" % v)):
        f = l.split()
        if f and f[0] == "rec":
            d[tuple(f[1:8])] = (" ".join(f[9:]), int(f[8]))
    return d
r = {v: recs(v) for v in ("hot", "cold", "hot2", "cold2")}
for a, b in (("hot", "hot2"), ("cold", "cold2"), ("hot", "cold"), ("hot2", "cold2")):
    keys = sorted(set(r[a]) & set(r[b]), key=lambda k: (int(k[2]), int(k[3]), int(k[4])))
    diff = [k for k in keys if r[a][k][0] != r[b][k][0]]
    print("%s vs %s: %d shapes, %d with another algorithm" % (a, b, len(keys), len(diff)))
    for k in diff:
        print("   M %5s N %5s K %5s epi %s: %s %.2f us, %s %.2f us" % (k[2], k[3], k[4], k[5], a, r[a][k][1] / 1e3,
                                                                     b, r[b][k][1] / 1e3))
PY
