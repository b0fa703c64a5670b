# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites and build/bench/mcast_probe: the small split product's 64-feature blocks (8 parts, slices a
# k-step apart) at 32-128 rows in the probe, the forward with --wide-gemm-tokens 128 against 0
# (A/B/A/B, one binary), the suites (the final kn_dev_info included), memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6; grep -iE 'outside|F:' $OUT/gpu-suites.log | head -5
timeout 90 $BIN/mcast_probe 32 48 64 96 128 > $OUT/probe.jsonl 2> $W/probe.err; echo "probe exit $? $((SECONDS-t0)) s"; grep -v check $OUT/probe.jsonl | grep -v "tensor boxes"; grep check $OUT/probe.jsonl | grep '"parts": 8'; grep -c '"rerun_bitwise": true' $OUT/probe.jsonl; grep -c check $OUT/probe.jsonl; tail -2 $W/probe.err
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in w0 w128 w0b w128b; do n=${v#w}; n=${n%b}
  echo "== $v"; timeout 60 $BIN/layad-dev bench --model $W/english --shapes 1x16,1x40,1x60,1x83,1x120,1x150 --wide-gemm-tokens $n --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
rem=$((560-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
