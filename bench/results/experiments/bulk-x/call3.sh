# run from the repository root on the lent H200, carrying .carry as staged by `./stage.sh 3`. Why this tree
# is 0.9% slower than 35b31ac at 1x30 (call2): the split kernel's X rows by bulk copies from warp 0 (this
# tree), from all four warps (-spread), or by cp.async at 17-32 rows (-cp32). The tree's backend suite,
# each build's small-kernel suite and memcheck, then the forward A/B/C twice at 16-40 tokens; then
# Wi + GeGLU fused alone up to 32 and 48 tokens (-wi-only); then buckets 8 (-step8) or 4 (-step4)
# tokens apart from 64 to 128; then the mmBERT geometry with the fused projections off / on at 16
# tokens, Wi in 20- or 16-pair blocks (-wi-pairs-by-f); last, both geometries with the paths of the
# buckets up to 64 tokens timed at warm-up (path_tune_tokens) against the thresholds alone. The backend
# suite includes that choice's check (timed_paths); then bench_kernels' fused projections against
# cuBLASLt + our kernel (proj_small, proj_chain). Everything lands in results.tgz.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 200 $BIN/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"
grep -E "Checks|one per forward|F:" $OUT/gpu_backend_cuda.log | tail -4
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for v in "" -spread -cp32; do
  CK_RUN_CASE=split timeout 100 $BIN/gpu_kernels$v > $OUT/gpu_kernels$v-split.log 2>&1
  echo "gpu_kernels$v (split case) exit $? $((SECONDS-t0)) s"
  grep -E "Checks|F:" $OUT/gpu_kernels$v-split.log | tail -3
  [ -n "$cs" ] && CK_RUN_CASE=split timeout 150 "$cs" --tool memcheck --error-exitcode 9 $BIN/gpu_kernels$v \
    > $OUT/memcheck-split$v.log 2>&1
  echo "memcheck$v exit $? $((SECONDS-t0)) s"; tail -1 $OUT/memcheck-split$v.log
done
[ -f "$W/english/model.safetensors" ] || $BIN/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
for v in main spread cp32 main2 spread2 cp322; do
  b=$BIN/layad-dev; case $v in spread*) b=$BIN/layad-dev-spread ;; cp32*) b=$BIN/layad-dev-cp32 ;; esac
  timeout 75 $b bench --model $W/english --shapes 1x16,1x30,1x40 --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
# Wi + GeGLU fused alone at 17-32 and 33-48 tokens (Wqkv + RoPE fused only up to 16), against the defaults
for v in wi32 wi48 wi32b wi48b; do
  n=32; case $v in wi48*) n=48 ;; esac
  timeout 75 $BIN/layad-dev-wi-only bench --model $W/english --shapes 1x16,1x30,1x40 --fused-proj-tokens $n \
    --commit "$LAYAD_COMMIT + wi-only.patch ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
# buckets 8 or 4 tokens apart from 64 to 128 (-step8: 1x70 in 72, 1x83 in 88, 1x100 in 104; -step4: 1x83 in
# 84, 1x70 in 72, 1x100 and 1x120 exact) against 16
for v in main16 step8 step4 main16b step8b step4b; do
  b=$BIN/layad-dev; case $v in step8*) b=$BIN/layad-dev-step8 ;; step4*) b=$BIN/layad-dev-step4 ;; esac
  timeout 75 $b bench --model $W/english --shapes 1x60,1x70,1x83,1x100,1x120 --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
# the mmBERT-base geometry (random weights, the ModernBERT tokenizer; F = 1152): the fused projections off /
# on at 16 tokens, with Wi in 20-pair blocks (58 of them: the tree) or 16-pair ones (72: -wi-pairs-by-f,
# which takes 20 only where F / 16 blocks outnumber the SMs), A/B/C/A/B/C; the English 1x16 with each
$BIN/layad-dev mkmodel --preset mmbert-base --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/mmbert \
  > $W/mk.log 2>&1
cat > $W/mmbert/tokenizer/tokenizer_config.json <<'JSON'
{"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]", "model_max_length": 8192, "tokenizer_class": "PreTrainedTokenizerFast"}
JSON
sed -i 's/"pad_token_id": 0/"pad_token_id": 50283/; s/"eos_token_id": 1/"eos_token_id": 50282/; s/"bos_token_id": 2/"bos_token_id": 50281/; s/"cls_token_id": 2/"cls_token_id": 50281/; s/"sep_token_id": 1/"sep_token_id": 50282/' $W/mmbert/encoder/config.json
for v in mm0 mm16 mmpf16 mm0b mm16b mmpf16b; do
  b=$BIN/layad-dev; case $v in mmpf*) b=$BIN/layad-dev-wi-pairs-by-f ;; esac
  n=16; case $v in mm0*) n=0 ;; esac
  timeout 60 $b bench --model $W/mmbert --shapes 1x16,1x40 --fused-proj-tokens $n \
    --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-mmbert-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
CK_RUN_CASE=split timeout 100 $BIN/gpu_kernels-wi-pairs-by-f > $OUT/gpu_kernels-wi-pairs-by-f-split.log 2>&1
echo "gpu_kernels-wi-pairs-by-f (split case) exit $?"
grep -E "Checks|F:" $OUT/gpu_kernels-wi-pairs-by-f-split.log | tail -3
for v in en pf en2 pf2; do
  b=$BIN/layad-dev; case $v in pf*) b=$BIN/layad-dev-wi-pairs-by-f ;; esac
  timeout 60 $b bench --model $W/english --shapes 1x16 --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-pf-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
# the paths timed at warm-up (path_tune_tokens 64: the buckets of 16-64 tokens time cuBLASLt, the small
# split kernel, the fused projections and both) against the thresholds alone, English then mmBERT, A/B/A/B
# (each step below only while the call has time left for it and the packing: the 10-minute limit)
left() { [ $((SECONDS - t0 + $1)) -lt 570 ]; }
for m in english mmbert; do
  for v in fixed tuned fixed2 tuned2; do
    left 40 || { echo "skipped: paths $m $v (time)"; continue; }
    n=0; case $v in tuned*) n=64 ;; esac
    timeout 90 $BIN/layad-dev bench --model $W/$m --shapes 1x16,1x30,1x40,1x60 --path-tune-tokens $n \
      --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-paths-$m-$v.json | grep -E "^ +[0-9]+x|paths of" |
      sed "s/^/$m $v /"
  done
done
# the fused projections alone next to cuBLASLt + kn_rope / kn_geglu, 16-64 rows, both geometries
if left 60; then
  timeout $((560 - (SECONDS - t0))) $BIN/bench_kernels $OUT/kernels-proj.json --only=proj_small \
    > $OUT/kernels-proj.log 2>&1
  echo "bench_kernels proj_small exit $? $((SECONDS-t0)) s"; grep -E "^proj_" $OUT/kernels-proj.log
else
  echo "skipped: bench_kernels proj_small (time)"
fi
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz * && find . -type f ! -name results.tgz -delete
