# run from the repository root on the lent H200, carrying .carry as staged by ../xcopy/stage.sh:
# the binaries of fused-proj.patch (layad-dev-fused, gpu_kernels-fused, gpu_backend_cuda-fused).
# Wqkv + RoPE and Wi + GeGLU in one kernel each (kn_proj_small_rope / _geglu) in buckets of at most
# 64 tokens: its kernel tests (against the CPU, rows independent of M) and backend test (graph ==
# eager, fp16 gates against the CPU fp32 forward), English fp16 parity with it on (its one-row-a-
# forward pass runs buckets of at most 64 tokens on it), and the forward
# A/B/A/B against the same binary with it off (--fused-proj-tokens 0 / 64). Prepared on 2026-12-04;
# not yet run (no device was lent that session).
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
for s in gpu_kernels gpu_backend_cuda; do timeout 150 $BIN/$s-fused > $OUT/$s-fused.log 2>&1; echo "$s-fused exit $? $((SECONDS-t0)) s"; grep -E "Checks|proj_small|fused projections|F:" $OUT/$s-fused.log | tail -8; done
LAYAD_COMMIT="$LAYAD_COMMIT + fused-proj.patch" scripts/device/flag-ab $BIN/layad-dev-fused --fused-proj-tokens 0 64 1x16,1x30,1x40,1x60,1x83
echo "bench $((SECONDS-t0)) s"
timeout 90 $BIN/layad-dev-fused parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --fused-proj-tokens 64 --out $OUT/parity-english-fp16-fused.json > $W/parity.log 2>&1; echo "parity (fused on) exit $? $((SECONDS-t0)) s"; grep -E "gates|max" $W/parity.log | head -5
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
