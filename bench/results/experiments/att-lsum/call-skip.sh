# run from the repository root on the lent GPU machine, carrying .carry (scripts/device/prep with
# build/tests/gpu_kernels, build/tests/gpu_backend_cuda of the working tree and /tmp/keep/layad-dev-head:
# 5581da9). The working tree ("skip"): a one-group walk with an empty half skips the combination and the
# state's trip through shared memory; the two-group walk picks its half by selects (no local memory). Same
# bits as 5581da9 by design: the attention cases and the backend suite, English fp16 parity of both binaries
# (their JSON compared: identical shows it; a difference may be the GEMM tuning's), then the forward head / skip twice.
source bench/results/experiments/att-lsum/prelude.sh
for v in head skip; do
  b=$B/layad-dev; [ $v = head ] && b=$B/layad-dev-head
  timeout 60 $b parity-fast --model $W/english --ref .carry/ref/english.ref --label english --dtype fp16 \
    --out $OUT/parity-english-$v.json > $OUT/parity-english-$v.log 2>&1
  echo "parity $v exit $? $((SECONDS-t0)) s"; grep gates $OUT/parity-english-$v.log
done
python3 -c "import json,sys; a,b=(json.load(open(f))['dtypes'] for f in sys.argv[1:]); print('parity JSON', \
  'identical' if a == b else 'differs (GEMM tuning may pick other algorithms a process)')" \
  $OUT/parity-english-head.json $OUT/parity-english-skip.json
for v in head skip head2 skip2; do
  b=$B/layad-dev; case $v in head*) b=$B/layad-dev-head ;; esac
  timeout 60 $b bench --model $W/english --shapes 1x83,1x150,1x512,8x512 --groups 3 \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
