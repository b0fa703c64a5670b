# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/bench_kernels: why the own small-pack split kernel loses from 48 rows (Nsight Compute's
# full set and SASS source counters at 1x16 and 1x83 with --small-gemm-tokens 128, so it runs at
# buckets 16 and 96); bench_kernels' split family (cuBLASLt's and the own kernel's records at
# 16-128 rows); the default forward shapes with 64x512; English parity fp16 and bf16
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
timeout 60 $BIN/layad-dev bench --model $W/english --commit "$LAYAD_COMMIT" --out $OUT/forward.json | grep -E "^ +[0-9]+x"; echo "bench $((SECONDS-t0)) s"
timeout 120 $BIN/bench_kernels $OUT/kernels-split.json --only=gemm_split > $W/bk.log 2>&1; echo "bench_kernels exit $? $((SECONDS-t0)) s"; tail -n 2 $W/bk.log
python3 - $OUT/kernels-split.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); recs=d.get("records",d) if isinstance(d,dict) else d
for r in recs:
    if isinstance(r,dict) and "split" in str(r.get("kernel",r.get("name",""))): print({k:r[k] for k in list(r)[:9]})
PY
NCU_SKIP=120 NCU_BENCH_ARGS="--small-gemm-tokens 128" timeout 300 scripts/device/ncu-profile split_small 4 1x16 1x83 > /dev/null 2>&1; echo "ncu exit $? $((SECONDS-t0)) s"
for s in 1x16 1x83; do grep -E "split_small_kernel|^    Duration|Registers Per|Achieved Occupancy|Memory Throughput|DRAM Throughput|L2 Hit|Executed Ipc A" $OUT/ncu-$s.txt | head -40; done
for dt in fp16 bf16; do timeout 80 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype $dt --out $OUT/parity-english-$dt.json > $W/parity-$dt.log 2>&1; echo "parity $dt exit $? $((SECONDS-t0)) s"; grep -E "gates|max" $W/parity-$dt.log | head -4; done
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
