# run from the repository root on the lent GPU machine, carrying .carry (scripts/device/prep with
# build/tests/gpu_kernels, build/tests/gpu_backend_cuda, build/bench/bench_kernels of the working tree and
# /tmp/keep/layad-dev-head, bench_kernels-head: 5581da9). The working tree ("seq"): a sliding window's key
# tiles walked in one sequence by one group, a one-group walk with an empty half without the state's round
# trip. Its attention cases and backend suite; parity tiny and English fp16; the forward head / seq twice;
# the kernel's two forms, head / seq.
source bench/results/experiments/att-lsum/prelude.sh
for m in tiny english; do
  ref=""; [ $m = english ] && ref="--ref .carry/ref/english.ref"
  timeout 60 $B/layad-dev parity-fast --model $([ $m = tiny ] && echo build/tiny || echo $W/english) $ref \
    --label $m-seq --dtype fp16 --out $OUT/parity-$m-fp16.json > $OUT/parity-$m-fp16.log 2>&1
  echo "parity $m exit $? $((SECONDS-t0)) s"; grep gates $OUT/parity-$m-fp16.log
done
for v in head seq head2 seq2; do
  b=$B/layad-dev; case $v in head*) b=$B/layad-dev-head ;; esac
  timeout 90 $b bench --model $W/english --shapes 1x83,1x150,1x512,8x512,64x512 --groups 3 \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
for v in head seq; do
  b=$B/bench_kernels; [ $v = head ] && b=$B/bench_kernels-head
  timeout 60 $b $OUT/kernels-$v.json --only=attention_form > $OUT/kernels-$v.log 2>&1
  echo "bench_kernels $v exit $?"; grep -E "^attention" $OUT/kernels-$v.log |
    sed -E 's/\{"B": ([0-9]+), "L": ([0-9]+).*"T": [0-9]+\}/\1x\2/; s/TFLOP.*"groups"/groups/; s/  +/ /g'
done
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
