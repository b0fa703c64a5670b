# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/bench_kernels, the GPU suites and e03bef4's layad-dev, bench_kernels (-base)
# the own split GEMM, second version (K over 8 warps): kernels + forward A/B, suites, fp16 parity
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
AB_SHAPES=1x16,1x40,1x83,1x120,1x512 timeout 120 scripts/device/binary-ab gemm_split > /dev/null 2>&1; echo "binary-ab exit $? $((SECONDS-t0)) s"
grep -hE "^ +[0-9]+x|== bench" $OUT/log.txt
python3 - <<'PY'
import json, os
O=os.environ['OUT']; b={}
for v in ['base','new']:
    for r in json.load(open(f'{O}/kernels-{v}.json'))['results']:
        if r['dtype']=='fp16' and r['op'] in ('en.attn.Wo','en.mlp.Wo') and r['split']==4: b.setdefault((r['op'],r['shape']['M']),{})[v]=r['ours_us']
for k,v in sorted(b.items()): print(k, v)
PY
timeout 60 $BIN/gpu_kernels > $OUT/gpu-kernels.log 2>&1; echo "gpu_kernels exit $? $((SECONDS-t0)) s"; grep -E "Checks|Fail" $OUT/gpu-kernels.log | head -5
timeout 40 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
