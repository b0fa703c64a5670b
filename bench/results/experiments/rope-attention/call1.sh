# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites and bench_kernels: RoPE inside the attention (kn_attention_rope) against RoPE's own launch,
# same binary (--rope-attention-tokens 0 / 1000000, A/B/A/B, every bucket); the kernels alone;
# suites (the new bit-exact tests), English fp16 parity, memcheck. Prepared on 2026-12-04; not yet
# run (no device was lent that session).
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6; grep -iE 'outside|F:' $OUT/gpu-suites.log | head -5; grep -c "rotating == rope" $OUT/gpu-suites.log
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in off on off2 on2; do x="--rope-attention-tokens 0"; case $v in on*) x="--rope-attention-tokens 1000000";; esac
  echo "== $v"; timeout 75 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x40,1x83,1x150,1x512,8x512 $x --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 60 $BIN/bench_kernels $OUT/kernels.json --only=attention,rope > $W/kern.log 2>&1; echo "kernels exit $? $((SECONDS-t0)) s"; grep -E "attention|rope" $W/kern.log | head -40
timeout 80 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates|max" $W/parity.log | head -5
rem=$((560-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
