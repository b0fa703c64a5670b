# run from the repository root on the lent H200 (carry .carry and .whl) after scripts/device/prep with
# build/loadgen and 1d871ce's layad (-before)
# the session's start (1d871ce) against its end on the serving path, then the English parity sweep
# with the official PyTorch model under bf16 autocast on the same rows (the bf16 gate's other side)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W/raw
t0=$SECONDS
timeout 260 bash scripts/device/serving-ab base=layad-before new=layad base2=layad-before new2=layad > $W/serving.log 2>&1; echo "serving-ab exit $? $((SECONDS-t0)) s"
grep -vE "^==|^ *$" $W/serving.log | tail -n 12
env -u LD_LIBRARY_PATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/laya-*.whl; export PYTHONPATH=/tmp/site
timeout 140 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dump-rows $W/english.rows.json --out $W/raw/parity-layad.json > $W/parity1.log 2>&1; echo "parity-fast exit $? $((SECONDS-t0)) s"
PYTHONUNBUFFERED=1 timeout 150 env -u LD_LIBRARY_PATH python3 scripts/torch_rows.py --model $W/english --rows $W/english.rows.json --dtype bf16 --device cuda --out $W/raw/torch-bf16.json > $W/torch.log 2>&1; echo "torch_rows exit $? $((SECONDS-t0)) s"; tail -n 3 $W/torch.log
rem=$((585-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --external $W/raw/torch-bf16.json --out $OUT/parity-english-torch-bf16.json > $W/parity2.log 2>&1; echo "parity-fast with torch exit $? $((SECONDS-t0)) s"; grep -E "gates|external|torch" $W/parity2.log | head; }
cp $W/serving.log $W/parity1.log $W/parity2.log $W/torch.log $OUT/ 2>/dev/null
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
