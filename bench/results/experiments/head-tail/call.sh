# run from the repository root on the lent H200 (device tool, carry .carry and .whl) after
# scripts/device/prep build/bench/bench_kernels build/tests/gpu_* <base layad-dev and bench_kernels>
# decision tail in one launch + row GEMM with X in shared memory: kernels + forward A/B, suites, parity, memcheck (kernels)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
t0=$SECONDS
AB_SHAPES=1x16,1x40,1x83,1x150,1x512,8x512 timeout 240 scripts/device/binary-ab gemm_head,launch_floor > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
python3 - <<'PY'
import json, os
O=os.environ['OUT']
for v in ['base','new']:
    d=json.load(open(f'{O}/kernels-{v}.json'))
    for r in d['results']:
        if r["kernel"] in ("gemm_own","launch_floor") or r["op"].startswith("head."):
            print(v, r['op'], r.get('xdt',''), r['shape'], r['ours_us'], r.get('path',''))
PY
timeout 280 scripts/device/run suites parity > /dev/null 2>&1; echo "suites+parity exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -20; grep -E 'max|gate|PASS|FAIL|exit' $OUT/log.txt | grep -v bench_kernels | tail -14
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
rem=$((570-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem $cs --tool memcheck .carry/bin/gpu_kernels > $OUT/memcheck-kernels.log 2>&1; echo "memcheck kernels exit $? $((SECONDS-t0)) s"; tail -4 $OUT/memcheck-kernels.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
