# run from the repository root on the lent GPU machine, carrying .carry as staged by
# `bench/results/experiments/bulk-x/stage.sh 3` (as .carry/call4.sh): `bash .carry/call4.sh tests`, then
# `bash .carry/call4.sh perf` (two calls: together they pass the 10-minute limit). The attention's key
# tiles in two interleaved halves combined at the end, walked side by side by two groups of warps in small
# packs (attention-halves.patch, the -halves binaries).
#   tests: the attention cases (both launch forms equal bit for bit, against the CPU, each row alone ==
#          packed, selections == full); both suites whole; then the attention cases under memcheck,
#          synccheck and racecheck, as long as time is left
#   perf:  English parity (fp16 for the tree and -halves, bf16 for -halves); the forward A/B/A/B against
#          the tree; the kernel in both launch forms (bench_kernels attention_form) and the attention family
# Everything lands in results.tgz.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
case ${1:-} in
tests)
CK_RUN_CASE=attention timeout 120 $BIN/gpu_kernels-halves > $OUT/gpu_kernels-halves-attention.log 2>&1
echo "gpu_kernels-halves (attention) exit $? $((SECONDS-t0)) s"
grep -E "Checks|F:|differ" $OUT/gpu_kernels-halves-attention.log | head -5
timeout 200 $BIN/gpu_backend_cuda-halves > $OUT/gpu_backend_cuda-halves.log 2>&1
echo "gpu_backend_cuda-halves exit $? $((SECONDS-t0)) s"
grep -E "Checks|F:|max\|dp\|" $OUT/gpu_backend_cuda-halves.log | tail -4
timeout 150 $BIN/gpu_kernels-halves > $OUT/gpu_kernels-halves.log 2>&1
echo "gpu_kernels-halves exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:" $OUT/gpu_kernels-halves.log | tail -3
# the sanitizers last, each only while the call has time left for it (the 10-minute limit)
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in memcheck synccheck racecheck; do
  rem=$((570 - (SECONDS - t0)))
  [ -n "$cs" ] && [ $rem -gt 30 ] || { echo "skipped: $tool"; continue; }
  CK_RUN_CASE=attention timeout $rem "$cs" --tool $tool --error-exitcode 9 $BIN/gpu_kernels-halves \
    > $OUT/$tool-attention-halves.log 2>&1
  echo "$tool exit $? $((SECONDS-t0)) s"; tail -2 $OUT/$tool-attention-halves.log
done
;;
perf)
[ -f "$W/english/model.safetensors" ] || $BIN/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
for v in "" -halves; do
  for dt in fp16 bf16; do
    [ "$v$dt" = bf16 ] && continue # the tree's bf16 figure stands (3.221e-2, experiments/serving-session-11/)
    timeout 120 $BIN/layad-dev$v parity-fast --model $W/english --label english --ref .carry/ref/english.ref \
      --dtype $dt --out $OUT/parity-english-$dt$v.json > $OUT/parity-$dt$v.log 2>&1
    echo "parity $dt$v exit $? $((SECONDS-t0)) s"; grep -E "gates|PASS|FAIL|max" $OUT/parity-$dt$v.log | head -3
  done
done
for v in main halves main2 halves2; do
  b=$BIN/layad-dev; case $v in halves*) b=$BIN/layad-dev-halves ;; esac
  timeout 150 $b bench --model $W/english --shapes 1x16,1x83,1x150,1x512,8x512 \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
timeout 200 $BIN/bench_kernels-halves $OUT/kernels-attention-halves.json --only=attention_form,attention \
  > $OUT/kernels-attention-halves.log 2>&1
echo "bench_kernels-halves exit $? $((SECONDS-t0)) s"; grep -E "^attention" $OUT/kernels-attention-halves.log
timeout 120 $BIN/bench_kernels $OUT/kernels-attention-main.json --only=attention > $OUT/kernels-attention-main.log 2>&1
echo "bench_kernels (tree) exit $? $((SECONDS-t0)) s"; grep -E "^attention" $OUT/kernels-attention-main.log
;;
*) echo "usage: $0 tests|perf" >&2; exit 2 ;;
esac
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
