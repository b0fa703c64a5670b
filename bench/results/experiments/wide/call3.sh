# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/mcast_probe: the layer chain with Wqkv and Wi also on the own small-pack kernel, in
# 1, 2 or 4 fp32 parts that stand-ins of the RoPE / attention glue and of GeGLU sum (PROBE_PROJ=1),
# at 16-64 rows; then English bf16 parity (the last call's ran out of time)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
PROBE_PROJ=1 timeout 120 $BIN/mcast_probe 16 32 48 64 > $OUT/probe-proj.jsonl 2> $W/probe.err; echo "probe exit $? $((SECONDS-t0)) s"; cat $OUT/probe-proj.jsonl; tail -3 $W/probe.err
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
timeout 240 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype bf16 --out $OUT/parity-english-bf16.json > $W/parity-bf16.log 2>&1; echo "parity bf16 exit $? $((SECONDS-t0)) s"; grep -E "gates|vs" $W/parity-bf16.log | head -6; tail -3 $W/parity-bf16.log
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
