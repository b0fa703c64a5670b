# run from the repository root on the lent GPU machine, carrying .carry (scripts/device/prep at the landed
# commit with /tmp/keep/layad-dev-main and -lsum: 7d98a16 alone and with lsum.patch) and bench/mixed/wheels:
# first the forward of 7d98a16 / lsum.patch alone / the landed tree, A/B/C twice, at the shapes where the tree
# was slower (8x512, 64x512) and at 1x512; then bench/mixed/peers.sh (four systems, fixed requests) on the
# landed tree while the call is under 200 s.
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
B=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
[ -f "$W/english/model.safetensors" ] || $B/layad-dev mkmodel --preset english-large \
  --tokenizer .carry/shared/modernbert-tokenizer.json --out "$W/english" > /dev/null
for v in main lsum tree main2 lsum2 tree2; do
  b=$B/layad-dev; case $v in main*) b=$B/layad-dev-main ;; lsum*) b=$B/layad-dev-lsum ;; esac
  timeout 90 $b bench --model $W/english --shapes 1x512,8x512,64x512 --groups 3 --commit "$LAYAD_COMMIT ($v)" \
    --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x" | sed "s/^/$v /"
done
echo "forward done $((SECONDS-t0)) s"
if [ $((SECONDS - t0)) -lt 200 ]; then
  PEERS_RUN_DIR=$W bench/mixed/peers.sh > /dev/null 2>&1
  echo "peers exit $? $((SECONDS-t0)) s"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d.get('table_p50_ms'), indent=1))" \
    $OUT/peers-h200.json
else echo "skipped (time): peers"; fi
echo "done $((SECONDS-t0)) s"
