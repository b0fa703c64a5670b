# run from the repository root on the lent H200, carrying .carry as staged by `./stage.sh 2`: this tree's
# binaries (the small kernels' X by bulk copies, Wi's blocks of 40 rows), the -nt24 ones (Wqkv's blocks
# of 24 rows) and the session start's layad-dev (35b31ac). Both trees' suites, their small kernels under
# compute-sanitizer memcheck, English fp16 parity of both, the forward of the three binaries at the
# defaults (A/B/C twice), both trees with the fused projections up to 32 and 48 tokens, and this tree's
# forward on the issue's shapes. Everything lands in results.tgz.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
for v in "" -nt24; do
  for s in gpu_kernels gpu_backend_cuda; do
    timeout 200 $BIN/$s$v > $OUT/$s$v.log 2>&1; echo "$s$v exit $? $((SECONDS-t0)) s"
    grep -E "Checks|fused projections|F:" $OUT/$s$v.log | tail -4
  done
done
[ -f "$W/english/model.safetensors" ] || $BIN/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
for v in start main nt24 start2 main2 nt242; do
  b=$BIN/layad-dev; case $v in start*) b=$BIN/layad-dev-start ;; nt24*) b=$BIN/layad-dev-nt24 ;; esac
  timeout 75 $b bench --model $W/english --shapes 1x16,1x30,1x40,1x83 --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "A/B/C $((SECONDS-t0)) s"
grep -h -o '"graph_nodes": [0-9]*' $OUT/forward-main.json | paste -sd' '
for v in main32 nt24_32 main48 nt24_48 main32b nt24_32b; do
  b=$BIN/layad-dev; case $v in nt24*) b=$BIN/layad-dev-nt24 ;; esac
  n=32; case $v in *48*) n=48 ;; esac
  timeout 75 $b bench --model $W/english --shapes 1x16,1x30,1x40 --fused-proj-tokens $n \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-fp-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "fused thresholds $((SECONDS-t0)) s"
timeout 120 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x40,1x83,1x512,8x512,64x512 \
  --commit "$LAYAD_COMMIT" --out $OUT/forward-issue-shapes.json | grep -E "^ +[0-9]+x"
echo "bench $((SECONDS-t0)) s"
for v in "" -nt24; do
  timeout 120 $BIN/layad-dev$v parity-fast --model $W/english --label english --ref .carry/ref/english.ref \
    --dtype fp16 --out $OUT/parity-english-fp16$v.json > $OUT/parity$v.log 2>&1
  echo "parity$v exit $? $((SECONDS-t0)) s"; grep -E "gates|PASS|FAIL" $OUT/parity$v.log | head -3
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for v in "" -nt24; do
  [ -n "$cs" ] && CK_RUN_CASE=split timeout 150 "$cs" --tool memcheck --error-exitcode 9 $BIN/gpu_kernels$v \
    > $OUT/memcheck-split$v.log 2>&1
  echo "memcheck$v (split and small kernels) exit $? $((SECONDS-t0)) s"; tail -2 $OUT/memcheck-split$v.log
done
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
