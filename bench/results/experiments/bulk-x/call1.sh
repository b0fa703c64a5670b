# run from the repository root on the lent H200, carrying .carry as staged by `./stage.sh 1`: main's
# binaries (fused-proj landed with fused_proj_tokens 16; the bulk X copy compiled in but never taken) and
# the -bulk ones (SO_BULK_X_ROWS 1: the small split kernel copies X's slice by one bulk copy a row at
# every M). In order of what matters: both suites of main, the bulk build's small-kernel suite, the
# forward with fused-proj 0 / 16 (A/B/A/B), the forward with the small split kernel up to 48 or 96
# tokens in each build (cuBLASLt's split in the 64- and 96-token buckets, or the own kernel by cp.async
# or by bulk copies), main's forward on the shapes, English fp16 parity at the defaults,
# the fused projections up to 64 tokens in each build (Wi's blocks of 32 or 40 rows), bench_kernels
# gemm_split of both builds, and the bulk build's small-kernel suite under memcheck.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
for s in gpu_kernels gpu_backend_cuda; do
  timeout 200 $BIN/$s > $OUT/$s.log 2>&1; echo "$s exit $? $((SECONDS-t0)) s"
  grep -E "Checks|proj_small|fused projections|F:" $OUT/$s.log | tail -8
done
for v in bulk nt40 nt40bulk; do
  CK_RUN_CASE=split timeout 120 $BIN/gpu_kernels-$v > $OUT/gpu_kernels-$v-split.log 2>&1
  echo "gpu_kernels-$v (split case) exit $? $((SECONDS-t0)) s"; grep -E "Checks|F:" $OUT/gpu_kernels-$v-split.log | tail -5
done
scripts/device/flag-ab $BIN/layad-dev --fused-proj-tokens 0 16 1x16,1x30,1x83
echo "flag-ab $((SECONDS-t0)) s"
grep -h -o '"graph_nodes": [0-9]*' $OUT/forward-off.json $OUT/forward-on.json | paste -sd' '
for v in cp48 bulk48 cp96 bulk96 cp48b bulk48b cp96b bulk96b; do
  b=$BIN/layad-dev; case $v in bulk*) b=$BIN/layad-dev-bulk ;; esac
  n=48; case $v in *96*) n=96 ;; esac
  timeout 75 $b bench --model $W/english --shapes 1x16,1x40,1x60,1x83 --small-gemm-tokens $n \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-x-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "x forms $((SECONDS-t0)) s"
# the fused projections (Wqkv + RoPE, Wi + GeGLU) up to 64 tokens with X by cp.async or by bulk copies,
# and Wi's blocks of 32 or 40 rows
for v in fpcp fpbulk fpnt40 fpnt40bulk fpcp2 fpbulk2 fpnt40_2 fpnt40bulk2; do
  b=$BIN/layad-dev
  case $v in fpbulk*) b=$BIN/layad-dev-bulk ;; fpnt40bulk*) b=$BIN/layad-dev-nt40bulk ;; fpnt40*) b=$BIN/layad-dev-nt40 ;; esac
  timeout 75 $b bench --model $W/english --shapes 1x16,1x30,1x40,1x60 --fused-proj-tokens 64 \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-fp-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "fused forms $((SECONDS-t0)) s"
timeout 120 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x40,1x83,1x512,8x512,64x512 \
  --commit "$LAYAD_COMMIT" --out $OUT/forward-main.json | grep -E "^ +[0-9]+x"
echo "bench $((SECONDS-t0)) s"
timeout 120 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 \
  --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1
echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates|max|PASS|FAIL" $W/parity.log | head -6
for v in "" -bulk; do
  timeout 120 $BIN/bench_kernels$v $OUT/kernels-gemm-split$v.json --only=gemm_split > $OUT/bench_kernels$v.log 2>&1
  echo "bench_kernels$v exit $? $((SECONDS-t0)) s"
done
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$cs" ] && CK_RUN_CASE=split timeout 150 "$cs" --tool memcheck --error-exitcode 9 $BIN/gpu_kernels-bulk \
  > $OUT/memcheck-split-bulk.log 2>&1
echo "memcheck (bulk build, split and small kernels) exit $? $((SECONDS-t0)) s"; tail -3 $OUT/memcheck-split-bulk.log
echo "done $((SECONDS-t0)) s"
