# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/mcast_probe: Wqkv and Wi also on the small split kernel in fp32 parts (PROBE_PROJ=1),
# now that the kernel copies X by cp.async (call 3 ran the multicast form), 16-48 rows
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
PROBE_PROJ=1 timeout 120 $BIN/mcast_probe 16 32 48 > $OUT/probe-proj.jsonl 2> $W/probe.err; echo "probe exit $?"; cat $OUT/probe-proj.jsonl; tail -3 $W/probe.err
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
