# bench/results/experiments/figures-end/call.sh - the figures at one commit in one call, on whatever card
# comes (asked for an H200): the four systems on the same checkpoint and requests (bench/mixed/peers.sh), the
# forward at the shapes (paths timed at warm-up, as the daemon runs), and English parity with the
# official PyTorch model's fp16 and bf16 logits on the same 288 questions (torch_rows.py, its package from the
# peers' site folder), the gate "layad bf16 no worse than the official bf16 path". Carry .carry (prep without
# extras; `git rev-parse --short HEAD > .carry/commit`; .carry/ref/english.ref) and
# bench/mixed/wheels/peers-site.txz, the other experiment folders out of the working tree (the 64 MiB cap).
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/peers-run; mkdir -p $W $OUT/more; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
$B/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english \
  > /dev/null
PEERS_RUN_DIR=$W OUT=$OUT/more/peers timeout 270 bash bench/mixed/peers.sh > /dev/null 2>&1
echo "peers exit $? $((SECONDS-t0)) s"; grep -A6 "p50 after" $OUT/more/peers/log.txt
cp $OUT/more/peers/peers-h200.json $OUT/ 2>/dev/null
timeout 100 $B/layad-dev bench --model $W/english --shapes 1x16,1x83,1x150,1x512,8x512,64x512 --path-tune-tokens 64 \
  --commit "$LAYAD_COMMIT" --out $OUT/forward.json | grep -E "^ +[0-9]+x"
echo "bench $((SECONDS-t0)) s"
timeout 120 $B/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref \
  --dump-rows $W/rows.json --out $OUT/more/parity-layad.json > $OUT/more/parity-layad.log 2>&1
echo "parity-fast exit $? $((SECONDS-t0)) s"; tail -4 $OUT/more/parity-layad.log
ext=()
for dt in bf16 fp16; do
  [ $((SECONDS - t0)) -lt 470 ] || break
  env -u LD_LIBRARY_PATH PYTHONPATH=$W/site PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 timeout 90 python3 \
    scripts/torch_rows.py --model $W/english --rows $W/rows.json --dtype $dt --device cuda --out $W/torch-$dt.json \
    > $OUT/more/torch-$dt.log 2>&1 &&
    ext+=(--external $W/torch-$dt.json:official-$dt)
  echo "torch_rows $dt exit $? $((SECONDS-t0)) s"
done
[ ${#ext[@]} -gt 0 ] && timeout 100 $B/layad-dev parity-fast --model $W/english --label english \
  --ref .carry/ref/english.ref "${ext[@]}" --out $OUT/parity-english.json > $OUT/more/parity-torch.log 2>&1
echo "parity with torch exit $? $((SECONDS-t0)) s"; tail -12 $OUT/more/parity-torch.log
cd $OUT && tar czf more.tgz more && rm -rf more
