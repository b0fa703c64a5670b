# bench/results/experiments/early-trigger/call2.sh - with the early trigger up to 128 rows (-DKN_EARLY_TRIGGER=128),
# do the own small kernels now pay in larger buckets than the thresholds give them (split products up to 48 tokens,
# fused projections up to 16)? The forward: the 48-row build with the default paths, the 128-row build with the
# default paths, then the 128-row build with every bucket up to 128 tokens timing its paths at warm-up
# (--path-tune-tokens 128: cuBLASLt, the split products on the own kernel, the fused projections, both), twice.
# Carry .carry as call.sh (the early binaries renamed *-early, *-early128).
export OUT; source scripts/device/run-env.sh
S=1x16,1x30,1x40,1x48,1x60,1x83,1x120,1x150
for v in early48 early128 tune128 tune128b early48b; do
  bin=$B/layad-dev-early128; args=""
  case $v in early48*) bin=$B/layad-dev-early ;; tune*) args="--path-tune-tokens 128" ;; esac
  echo "== $v $args"
  timeout 110 $bin bench --model $W/english --shapes $S --tuning-cache $W/tuning.txt $args \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"
done
python3 - $OUT <<'PY' | tee $OUT/paths.txt
import json, os, sys
for v in ("tune128", "tune128b"):
    for w in json.load(open(os.path.join(sys.argv[1], "forward-%s.json" % v)))["warm_buckets"]:
        print("%s bucket %4d: %-24s %s" % (v, w["tokens"], w["path"],
              " ".join("%s %.4f" % kv for kv in sorted(w["path_ms"].items()))))
PY
