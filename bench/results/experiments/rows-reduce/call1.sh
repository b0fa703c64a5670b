# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/bench_kernels, the GPU suites and 1d871ce's layad-dev, bench_kernels (-base)
# row GEMM's lane sums halving per level, decision tail without its features buffer:
# kernels + forward A/B against 1d871ce, suites, memcheck of both suites, then Nsight Compute's
# launch and DRAM figures for every kernel of a 1x83 forward (what cuBLASLt's GEMMs occupy)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
AB_SHAPES=1x16,1x83,1x150,1x512,8x512 timeout 220 scripts/device/binary-ab gemm_head > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
python3 - <<'PY'
import json, os
O=os.environ['OUT']; b={}
for v in ['base','new']:
    for r in json.load(open(f'{O}/kernels-{v}.json'))['results']:
        if r.get('xdt')=='fp32' and r['dtype']=='fp16': b.setdefault((r['op'],r['shape']['M']),{})[v]=r['ours_us']
for k,v in sorted(b.items()): print(k, v)
PY
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head
rem=$((400-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
rem=$((585-(SECONDS-t0))); [ $rem -gt 40 ] && { timeout $rem $NCU --cache-control none --clock-control none \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_size,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,launch__shared_mem_per_block_dynamic \
  --csv --page raw --print-units base $BIN/layad-dev bench --model $W/english --shapes 1x83 --groups 1 --per-group 2 --out $W/bench-ncu.json > $OUT/ncu-launch-1x83.csv 2> $W/ncu.err; echo "ncu exit $? $((SECONDS-t0)) s"; tail -n 2 $W/ncu.err; wc -l $OUT/ncu-launch-1x83.csv; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
