# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# /tmp/layad-dev-abl: d5b3406's layad-dev with ablation.patch (launches named in LAYAD_ABLATE
# are skipped: results are garbage, only the time counts)
# what each family of kernels costs inside the forward's graph: the forward with it left out
export OUT; source .carry/env.sh; BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
ENC="kn_rope,kn_attention,kn_geglu,kn_layernorm_parts,kn_layernorm"
HEAD="kn_attention_select,kn_gather_rows,kn_decision_tail,kn_type_emb_layernorm,kn_embed_layernorm"
i=0
for v in "" kn_rope kn_attention kn_geglu kn_layernorm_parts,kn_layernorm $ENC gemm "gemm,$ENC,$HEAD" ""; do
  i=$((i+1)); echo "== $i ablate: ${v:-nothing}"
  LAYAD_ABLATE="$v" timeout 60 $BIN/layad-dev-abl bench --model $W/english --shapes 1x16,1x83,1x512,8x512 \
    --commit "d5b3406+ablation (${v:-none})" --out $OUT/forward-$i.json 2>&1 | grep -E "^ +[0-9]+x|rror"
done
echo "bench $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
