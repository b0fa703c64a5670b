# run from the repository root on the lent GPU machine, carrying .carry as staged by
# `bench/results/experiments/bulk-x/stage.sh 3` (as .carry/call5.sh): `bash .carry/call5.sh`.
# First, GeGLU in the small split MLP-out product's X load (split_geglu_tokens 48: one launch fewer a
# layer in buckets of 17-48 tokens) against kn_geglu first, A/B/A/B; at 16 tokens against the fused
# projections; its kernel records (bench_kernels --only=split_geglu). Then:
# Why cuBLASLt's encoder GEMMs stream the weights at only 0.4-1.3 TB/s at 83 tokens (and where the
# 512-token ones stand): Nsight Compute's full section set on one layer's four GEMMs (Wqkv, attention
# out, Wi, MLP out) of the last forward, at 1x83 and 1x512, with the algorithms the production warm-up
# picks. A first bench without the profiler writes them to a tuning cache; the profiled runs read it, so
# their warm-up times nothing (timing under the profiler would pick other algorithms), and a counting
# pass (durations only) finds where the last forward's GEMMs start. Everything lands in results.tgz:
# ncu-<shape>.txt (details), ncu-source.tgz (SASS-line counters), count-<shape>.csv.gz, log.txt.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -f "$W/english/model.safetensors" ] || $BIN/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
left() { [ $((SECONDS - t0 + $1)) -lt 570 ]; }
for v in off on off2 on2; do
  n=0; case $v in on*) n=48 ;; esac
  timeout 60 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x30,1x40 --split-geglu-tokens $n \
    --commit "$LAYAD_COMMIT (split-geglu $v)" --out $OUT/forward-sgeglu-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
for v in fused gx fused2 gx2; do # 16 tokens: Wi + GeGLU fused (the default) or Wi on cuBLASLt, GeGLU in Wo2's X
  a="--fused-proj-tokens 16"; case $v in gx*) a="--fused-proj-tokens 0 --split-geglu-tokens 48" ;; esac
  timeout 60 $BIN/layad-dev bench --model $W/english --shapes 1x16 $a --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-sgeglu16-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
# mmBERT (F = 1152: 24 column blocks a slice, a cheaper GeGLU a block), when call3 made its checkpoint on this
# machine
[ -f $W/mmbert/model.safetensors ] && for v in mmoff mmon mmoff2 mmon2; do
  left 60 || { echo "skipped: split-geglu $v (time)"; continue; }
  n=0; case $v in mmon*) n=48 ;; esac
  timeout 60 $BIN/layad-dev bench --model $W/mmbert --shapes 1x16,1x30,1x40 --split-geglu-tokens $n \
    --commit "$LAYAD_COMMIT (split-geglu $v)" --out $OUT/forward-sgeglu-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
timeout 90 $BIN/bench_kernels $OUT/kernels-split-geglu.json --only=split_geglu > $OUT/kernels-split-geglu.log 2>&1
echo "bench_kernels split_geglu exit $? $((SECONDS-t0)) s"; grep -E "^split_geglu" $OUT/kernels-split-geglu.log
# a forward's cuBLASLt launches: 4 a layer, then the head's (read off the count, not assumed)
for s in 1x83 1x512; do
  cache=$W/tune-$s.cache; rm -f $cache
  timeout 90 $BIN/layad-dev bench --model $W/english --shapes $s --groups 1 --per-group 1 --tuning-cache $cache \
    --out $W/bench-$s.json | grep -E "tuning cache|^ +[0-9]+x"
  timeout 90 $BIN/layad-dev bench --model $W/english --shapes $s --groups 1 --per-group 1 --tuning-cache $cache \
    --out $W/bench-$s.json | grep -E "tuning cache"
  timeout 150 "$NCU" --metrics gpu__time_duration.sum --kernel-name regex:nvjet --csv --page raw \
    --print-units base $BIN/layad-dev bench --model $W/english --shapes $s --groups 1 --per-group 1 \
    --tuning-cache $cache --out $W/bench-$s.json > $W/count-$s.csv 2> $W/count-$s.err
  echo "count $s exit $? $((SECONDS-t0)) s"; tail -2 $W/count-$s.err
  n=$(grep -c '^"[0-9]' $W/count-$s.csv)
  # the last forward's launches: 28 layers x 4 + the head's; its first layer's four are at n - per
  per=$(python3 - "$W/count-$s.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0].isdigit()]
names = [r[4] for r in rows]
# a forward repeats: the period is the smallest p with the last p names equal to the p before them
for p in range(100, len(names) // 2 + 1):
    if names[-p:] == names[-2 * p:-p]:
        print(p); break
else:
    print(0)
PY
)
  echo "$s: $n cuBLASLt launches, $per a forward"
  gzip -c $W/count-$s.csv > $OUT/count-$s.csv.gz
  [ "$per" -gt 0 ] || { echo "skipped: ncu $s (no period)"; continue; }
  [ $((SECONDS - t0)) -lt 420 ] || { echo "skipped: ncu $s (time)"; continue; }
  NCU_SKIP=$((n - per)) NCU_BENCH_ARGS="--tuning-cache $cache" timeout $((560 - (SECONDS - t0))) \
    bash scripts/device/ncu-profile nvjet 4 $s
  echo "ncu $s exit $? $((SECONDS-t0)) s"
done
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
