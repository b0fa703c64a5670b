# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/mcast_probe: the probe's second form (X by tensor-map boxes, a barrier per box)
# beside the first (row copies, now also without a cluster) at 16-128 rows, then Nsight Compute
# on both forms at 96 rows (clusters of 1 and 2; the probe's checks launch them eagerly)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
echo "== mcast_probe"; timeout 240 $BIN/mcast_probe 16 32 48 64 96 128 > $OUT/mcast-probe.jsonl 2> $W/probe.err; echo "probe exit $? $((SECONDS-t0)) s"; cat $OUT/mcast-probe.jsonl; tail -5 $W/probe.err
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for k in parts_kernel parts_tma_kernel; do
  timeout 150 $NCU --set full --import-source no --kernel-name "regex:^$k" --launch-count 8 -f -o $W/ncu-$k $BIN/mcast_probe 96 > $W/ncu-$k.log 2>&1
  echo "ncu $k exit $? $((SECONDS-t0)) s"; tail -2 $W/ncu-$k.log
  $NCU -i $W/ncu-$k.ncu-rep --page details --print-details all > $OUT/ncu-$k-96.txt 2>&1
  grep -E "^  [a-z_]+<|Duration|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|Warp Cycles Per Issued|Cluster Size" $OUT/ncu-$k-96.txt | head -80
done
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
