# run from the repository root on the lent H200, carrying .carry as staged by ../xcopy/stage.sh
# (main's layad-dev, gpu_kernels and gpu_backend_cuda). The small split product and the LayerNorm
# over its parts in one launch (kn_gemm_split_small_norm, option small_norm_tokens, off by
# default): its kernel test (the same bits as the two launches, three launches reusing the
# barrier words, two of them programmatic) and backend test (the same logits as without it,
# graph == eager, fewer graph nodes), the split kernels' tests under compute-sanitizer memcheck, the
# forward A/B/A/B with it off and on (--small-norm-tokens 0 / 48; 1x83 runs a 96-token bucket,
# which it never touches: the control), the same with fused-proj.patch's Wqkv + RoPE and Wi + GeGLU
# (5 launches a layer against 9, when that binary is staged), the own kernel with the fusion at 60 and 83
# tokens against the defaults, and English fp16 parity with it on. Prepared on
# 2026-12-04 (night); not yet run (no device was lent that session).
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
for s in gpu_kernels gpu_backend_cuda; do
  timeout 150 $BIN/$s > $OUT/$s.log 2>&1; echo "$s exit $? $((SECONDS-t0)) s"
  grep -E "Checks|small_norm|F:" $OUT/$s.log | tail -12
done
LAYAD_COMMIT="$LAYAD_COMMIT (small_norm_tokens)" scripts/device/flag-ab $BIN/layad-dev --small-norm-tokens 0 48 \
  1x16,1x30,1x40,1x83
echo "bench $((SECONDS-t0)) s"
grep -h -o '"graph_nodes": [0-9]*' $OUT/forward-off.json $OUT/forward-on.json | paste -sd' '
# with fused-proj.patch's binary (staged as layad-dev-fused): the 5-launch layer (both fusions) against
# the 9-launch one, same binary, A/B/A/B
if [ -x $BIN/layad-dev-fused ]; then
  for v in nine five nine2 five2; do
    n=0; case $v in five*) n=48 ;; esac
    timeout 75 $BIN/layad-dev-fused bench --model $W/english --shapes 1x16,1x30,1x40 --fused-proj-tokens $n \
      --small-norm-tokens $n --commit "$LAYAD_COMMIT + fused-proj.patch ($v)" --out $OUT/forward-layer-$v.json |
      grep -E "^ +[0-9]+x" | sed "s/^/$v /"
  done
  grep -h -o '"graph_nodes": [0-9]*' $OUT/forward-layer-nine.json $OUT/forward-layer-five.json | paste -sd' '
fi
# the own kernel (and the fusion where the grid fits twice: attention out, not MLP out past 48 rows) in the
# 64- and 96-token buckets of 1x60 and 1x83, against the defaults (cuBLASLt's split there), A/B/A/B
for v in base wide base2 wide2; do
  o=""; case $v in wide*) o="--small-gemm-tokens 96 --small-norm-tokens 96" ;; esac
  timeout 75 $BIN/layad-dev bench --model $W/english --shapes 1x60,1x83 $o --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-wide-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
timeout 120 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 \
  --small-norm-tokens 48 --out $OUT/parity-english-fp16-small-norm.json > $W/parity.log 2>&1
echo "parity (small_norm on) exit $? $((SECONDS-t0)) s"; grep -E "gates|max|PASS|FAIL" $W/parity.log | head -6
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$cs" ] && CK_RUN_CASE=split timeout 200 "$cs" --tool memcheck --error-exitcode 9 $BIN/gpu_kernels \
  > $OUT/memcheck-split.log 2>&1
echo "memcheck (split kernels) exit $? $((SECONDS-t0)) s"; tail -3 $OUT/memcheck-split.log
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
