# bench/results/experiments/early-trigger/call6.sh - on whatever card comes (asked with an H200 in mind: call2 ran on
# an H100): do the own small kernels pay beyond 64 tokens there? The forward with the default paths (buckets up to
# 64 tokens time their paths at warm-up) against every bucket up to 128 tokens timing them, A/B/A/B, and the paths
# the timed buckets chose. Carry .carry (scripts/device/prep; `git rev-parse --short HEAD > .carry/commit`).
export OUT; source scripts/device/run-env.sh; nvidia-smi --query-gpu=name --format=csv,noheader
for v in base tune128 base2 tune128b; do
  args=""; case $v in tune*) args="--path-tune-tokens 128" ;; esac
  echo "== $v $args"
  timeout 60 "$B/layad-dev" bench --model "$W/english" --shapes 1x60,1x83,1x120 --tuning-cache "$W/tuning.txt" $args \
    --commit "$LAYAD_COMMIT ($v)" --out "$OUT/forward-$v.json" | grep -E "^ +[0-9]+x"
done
python3 - "$OUT" <<'PY' | tee "$OUT/paths.txt"
import json, os, sys
for v in ("tune128", "tune128b"):
    for w in json.load(open(os.path.join(sys.argv[1], "forward-%s.json" % v)))["warm_buckets"]:
        print("%s bucket %4d: %-24s %s" % (v, w["tokens"], w["path"],
              " ".join("%s %.4f" % kv for kv in sorted(w["path_ms"].items()))))
PY
