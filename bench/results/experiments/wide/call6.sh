# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/mcast_probe: the library's small split kernel (X by cp.async) with 8 warps along K
# against 4 and cuBLASLt, 16-128 rows (PROBE_WARPS=1)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
PROBE_WARPS=1 timeout 120 $BIN/mcast_probe 16 32 48 64 96 128 > $OUT/probe-warps.jsonl 2> $W/probe.err; echo "probe exit $? $((SECONDS-t0)) s"; grep -v check $OUT/probe-warps.jsonl; grep -c '"rerun_bitwise": true' $OUT/probe-warps.jsonl; grep -c check $OUT/probe-warps.jsonl; grep check $OUT/probe-warps.jsonl | head -4; tail -3 $W/probe.err
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
