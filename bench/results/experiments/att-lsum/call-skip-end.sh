# bench/results/experiments/att-lsum/call-skip-end.sh - one device call carrying .carry as stage-skip.sh left
# it: call-skip.sh (suites, parity, forward head / skip), then the shapes on the staged tree with the
# kernel paths of the thresholds (fixed) and timed at warm-up (tuned, path_tune_tokens 64: the daemon's default).
export OUT; base=$OUT; t1=$SECONDS
mkdir -p $base/skip $base/end
OUT=$base/skip bash bench/results/experiments/att-lsum/call-skip.sh
OUT=$base/end; source .carry/env.sh; B=$PWD/.carry/bin; W=/tmp/layad-run
for v in tuned fixed; do
  n=0; [ $v = tuned ] && n=64
  [ $((SECONDS - t1)) -lt 430 ] || { echo "skipped $v"; continue; }
  timeout 110 $B/layad-dev bench --model $W/english --shapes 1x16,1x83,1x512,8x512,64x512 --path-tune-tokens $n \
    --commit "$(cat .carry/commit)+skip ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x|paths of" | sed "s/^/$v /"
done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.draw --format=csv > $OUT/gpu.csv
echo "end $((SECONDS-t1)) s"
