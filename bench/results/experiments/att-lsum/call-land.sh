# run from the repository root on the lent GPU machine, carrying .carry (scripts/device/prep at the landed
# commit with /tmp/keep/layad-dev-main, -lsum and -tf: 7d98a16 alone and with lsum.patch, the landed tree
# with main's grid order (tiles fastest); and the backend suite) and bench/mixed/wheels: the backend suite
# (tiny checkpoint); the forward of 7d98a16 / lsum.patch alone / the landed tree / tf, in turn twice, at
# 1x512 and where the tree was slower (8x512, 64x512); then bench/mixed/peers.sh (four systems, fixed
# requests) on the landed tree while the call is under 260 s.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
[ -f "$W/english/model.safetensors" ] || $B/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
[ -f build/tiny/model.safetensors ] || $B/layad-dev mkmodel --preset tiny --out build/tiny > /dev/null
timeout 80 $B/gpu_backend_cuda > $OUT/gpu_backend_cuda.log 2>&1
echo "gpu_backend_cuda exit $? $((SECONDS-t0)) s"
grep -E "Checks|F:|attention forms|timed paths" $OUT/gpu_backend_cuda.log
for v in main lsum tree tf main2 lsum2 tree2 tf2; do
  b=$B/layad-dev
  case $v in main*) b=$B/layad-dev-main ;; lsum*) b=$B/layad-dev-lsum ;; tf*) b=$B/layad-dev-tf ;; esac
  timeout 90 $b bench --model $W/english --shapes 1x512,8x512,64x512 --groups 3 --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "forward done $((SECONDS-t0)) s"
if [ $((SECONDS - t0)) -lt 260 ]; then
  PEERS_RUN_DIR=$W bench/mixed/peers.sh > /dev/null 2>&1
  echo "peers exit $? $((SECONDS-t0)) s"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d.get('table_p50_ms'), indent=1))" \
    $OUT/peers-h200.json
else echo "skipped (time): peers"; fi
echo "done $((SECONDS-t0)) s"
