# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/bench_kernels, the GPU suites and e03bef4's layad-dev, bench_kernels (-base)
# the split branch GEMMs of small packs on our own kernel (programmatic launch, weights in shared
# memory before the wait): kernels + forward A/B against e03bef4, suites, English fp16 parity,
# memcheck of the kernel suite
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
AB_SHAPES=1x16,1x40,1x83,1x120,1x150,1x512 timeout 150 scripts/device/binary-ab gemm_split > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
python3 - <<'PY'
import json, os
O=os.environ['OUT']; b={}
for v in ['base','new']:
    try: rs=json.load(open(f'{O}/kernels-{v}.json'))['results']
    except Exception as e: print(v, e); continue
    for r in rs:
        if r['dtype']=='fp16': b.setdefault((r['op'],str(r['shape'])),{})[v]=r.get('ours_us')
for k,v in sorted(b.items()): print(k, v)
PY
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit|Failure|failed|assert' $OUT/gpu-suites.log | head -20
timeout 60 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates|all " $W/parity.log | head -6
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
rem=$((330-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem $cs --tool memcheck $BIN/gpu_kernels > $OUT/memcheck-kernels.log 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 2 $OUT/memcheck-kernels.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
