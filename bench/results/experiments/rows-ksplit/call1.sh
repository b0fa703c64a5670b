# run on the lent H200 (carry .carry) after scripts/device/prep with the GPU suites, bench_kernels and 514bb75's layad-dev and bench_kernels (-base)
# row-streaming GEMM with K split over warps: suites, kernels + forward A/B against 514bb75, memcheck of the kernel suite
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
t0=$SECONDS
AB_SHAPES=1x16,1x83,1x150,1x512,8x512 timeout 200 scripts/device/binary-ab gemm_head > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
python3 - <<'PY'
import json, os
O=os.environ['OUT']
b={}; 
for v in ['base','new']:
    for r in json.load(open(f'{O}/kernels-{v}.json'))['results']:
        if r['kernel']=='gemm_own' and r['dtype']=='fp16': b.setdefault((r['op'],str(r['shape'])),{})[v]=r['ours_us']
for k,v in b.items(): print(k, v)
PY
timeout 150 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 100 $cs --tool memcheck .carry/bin/gpu_kernels > $OUT/memcheck-kernels.log 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -2 $OUT/memcheck-kernels.log
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
