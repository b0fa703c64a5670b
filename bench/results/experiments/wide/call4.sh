# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites and build/bench/mcast_probe: the small split product with X by cp.async from every thread
# (no cluster) against the library's multicast row copies and cuBLASLt, 16-128 rows (PROBE_LDG=1);
# the suites at the session's library code (as at 5a2ed78)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
PROBE_LDG=1 timeout 120 $BIN/mcast_probe 16 32 48 64 96 128 > $OUT/probe-ldg.jsonl 2> $W/probe.err; echo "probe exit $? $((SECONDS-t0)) s"; cat $OUT/probe-ldg.jsonl; tail -3 $W/probe.err
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
