# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep: the
# mmBERT-base geometry on the GPU (random weights, the ModernBERT tokenizer: hidden 768, 22
# layers, 12 heads, inner 1152): fp16 parity against the CPU fp32 forward, and the forward with
# the small split kernel off / on up to 48 tokens (A/B/A/B)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset mmbert-base --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/mmbert > $W/mk.log 2>&1; echo "mkmodel exit $? $((SECONDS-t0)) s"; tail -1 $W/mk.log
# the preset names mmBERT's special tokens; with the ModernBERT tokenizer, its own (as english-large writes them)
cat > $W/mmbert/tokenizer/tokenizer_config.json <<'JSON'
{"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]", "unk_token": "[UNK]", "model_max_length": 8192, "tokenizer_class": "PreTrainedTokenizerFast"}
JSON
sed -i 's/"pad_token_id": 0/"pad_token_id": 50283/; s/"eos_token_id": 1/"eos_token_id": 50282/; s/"bos_token_id": 2/"bos_token_id": 50281/; s/"cls_token_id": 2/"cls_token_id": 50281/; s/"sep_token_id": 1/"sep_token_id": 50282/' $W/mmbert/encoder/config.json
for v in s0 s48 s0b s48b; do n=${v#s}; n=${n%b}
  echo "== $v"; timeout 60 $BIN/layad-dev bench --model $W/mmbert --shapes 1x16,1x40,1x83,1x512,8x512 --small-gemm-tokens $n --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-mmbert-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 330 $BIN/layad-dev parity-fast --model $W/mmbert --label mmbert-geometry --dtype fp16 --out $OUT/parity-mmbert-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates|all|noul" $W/parity.log | head -8
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
