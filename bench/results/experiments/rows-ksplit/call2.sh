# the grid cap: bench_kernels of bf68742 (-ks) against 0e897c6's, forward against 514bb75 (-base)
# run on the lent H200 (carry .carry) after scripts/device/prep
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit); BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/bench_kernels-ks $OUT/kernels-ks.json --only=gemm_head > /dev/null 2>&1; $BIN/bench_kernels $OUT/kernels-cap.json --only=gemm_head > /dev/null 2>&1; echo "kernels $((SECONDS-t0)) s"
python3 - <<'PY'
import json, os
O=os.environ['OUT']; b={}
for v in ['ks','cap']:
    for r in json.load(open(f'{O}/kernels-{v}.json'))['results']:
        if r.get('xdt')=='fp32' and r['dtype']=='fp16': b.setdefault((r['op'],r['shape']['M']),{})[v]=r['ours_us']
for k,v in sorted(b.items()): print(k, v)
PY
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english >/dev/null
for v in base new base2; do b=$BIN/layad-dev; [ $v != new ] && b=$BIN/layad-dev-base; echo "== $v"; timeout 100 $b bench --model $W/english --shapes 1x16,1x83,1x512,8x512 --commit "$LAYAD_COMMIT" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
timeout 100 $BIN/gpu_kernels > $OUT/gpu-kernels.log 2>&1; echo "gpu_kernels exit $? $((SECONDS-t0)) s"; grep Checks $OUT/gpu-kernels.log
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
