# run from the repository root on the lent H200, carrying .carry as staged by stage.sh (this folder):
# main's mcast_probe, fused_probe, gpu_kernels, bench_kernels and layad-dev, and the last three built
# with xcopy.patch applied (layad-dev-xcopy, gpu_kernels-xcopy, bench_kernels-xcopy).
# First the probe's X copy forms side by side (PROBE_XCOPY=1: the library's loop, the loop of
# xcopy.patch, no X copy at all as a bound, tensor boxes on one barrier without a cluster), each
# product alone and a layer's chain, with Wqkv and Wi
# on the own kernel too where its shared memory holds them; bitwise checks of the replica against the
# library. Then bench/fused_probe.cu: Wqkv + RoPE and Wi + GeGLU in the own kernel's epilogue, a layer's
# chain of 7 launches against the forward's 9, 16-64 rows. Then the small split kernel's X copy loop without a division a chunk (xcopy.patch) against main's: its GPU
# kernel suite (bit-exact parts, the N = 96 case), the products alone (bench_kernels gemm_split), the
# forward A/B/A/B at the default 48 tokens, and the patched kernel up to 64 and 128 tokens (where the
# old loop lost to cuBLASLt), and up to 96 with the LayerNorm fused too (small_norm_tokens, ../small-norm/). Prepared on
# 2026-12-04; not yet run (no device was lent that session, nor the next).
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
PROBE_XCOPY=1 timeout 150 $BIN/mcast_probe 16 32 48 64 96 128 > $OUT/probe-xcopy.jsonl 2> $W/probe.err; echo "probe exit $? $((SECONDS-t0)) s"; cat $OUT/probe-xcopy.jsonl; tail -3 $W/probe.err
timeout 120 $BIN/fused_probe 16 32 48 64 > $OUT/probe-fused.jsonl 2> $W/fused.err; echo "fused probe exit $? $((SECONDS-t0)) s"; cat $OUT/probe-fused.jsonl; tail -3 $W/fused.err
timeout 90 $BIN/gpu_kernels-xcopy > $OUT/gpu-kernels-xcopy.log 2>&1; echo "xcopy kernel suite exit $? $((SECONDS-t0)) s"; grep -E "Checks|gemm_split_small.*(N96|fail)" $OUT/gpu-kernels-xcopy.log | head -8
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in base xcopy; do b=$BIN/bench_kernels; [ $v = xcopy ] && b=$BIN/bench_kernels-xcopy
  timeout 60 $b $OUT/kernels-split-$v.json --only=gemm_split > $W/k-$v.log 2>&1; echo "bench_kernels $v exit $?"; done
python3 scripts/kernels_ab.py $OUT/kernels-split-base.json $OUT/kernels-split-xcopy.json | head -40
for v in base xcopy base2 xcopy2 xcopy64 xcopy128 xcopy96norm; do b=$BIN/layad-dev-xcopy; x=""
  case $v in base*) b=$BIN/layad-dev;; xcopy64) x="--small-gemm-tokens 64";; xcopy128) x="--small-gemm-tokens 128";;
    xcopy96norm) x="--small-gemm-tokens 96 --small-norm-tokens 96";; esac
  echo "== $v"; timeout 60 $b bench --model $W/english --shapes 1x16,1x40,1x60,1x83,1x120 $x --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "done $((SECONDS-t0)) s"
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
