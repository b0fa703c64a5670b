# run from the repository root on the lent GPU machine after `scripts/device/prep build/tests/gpu_backend_cuda build/tests/gpu_kernels` and
# `git rev-parse --short HEAD > .carry/commit`, carrying .carry: the tree's backend suite (on the tiny checkpoint it makes) and
# split-kernel suite, then the issue's shapes with the thresholds' paths and with the paths timed at warm-up
# (path_tune_tokens 64, the daemon's default), A/B/A/B. Prepared at the end of 2026-12-05; not run (no machine came).
export OUT; source .carry/env.sh; B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
$B/layad-dev mkmodel --preset tiny --out build/tiny > /dev/null
timeout 150 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1; echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:" $OUT/gpu_backend_cuda.log | tail -3
CK_RUN_CASE=split timeout 100 $B/gpu_kernels > $OUT/gpu_kernels-split.log 2>&1; echo "gpu_kernels split exit $?"; grep -E "Checks|F:" $OUT/gpu_kernels-split.log | tail -2
[ -f "$W/english/model.safetensors" ] || $B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
for v in fixed tuned fixed2 tuned2; do
  n=0; case $v in tuned*) n=64 ;; esac
  [ $((SECONDS - t0)) -lt 480 ] || { echo "skipped $v"; continue; }
  timeout 120 $B/layad-dev bench --model $W/english --shapes 1x16,1x30,1x40,1x83,1x512,8x512,64x512 --path-tune-tokens $n \
    --commit "$(cat .carry/commit) ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x|paths of" | sed "s/^/$v /"
done
echo "done $((SECONDS-t0)) s"; cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
