# run on the lent H200 (carry .carry and bench/mixed/wheels); its --no-copy-timing and edges benches passed
# the option before the subcommand and printed nothing: call.sh made those runs again
# session end: forward at 3b37a4b (copy timing on / off), the programmatic-edges bound (throwaway build), then the four systems
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english >/dev/null || echo mkmodel failed
b() { local name=$1 shapes=$2; shift 2; echo "== $name"; timeout 150 "$@" bench --model $W/english --label "english $name" --shapes $shapes --commit "$LAYAD_COMMIT" --out $OUT/forward-$name.json 2>$W/$name.err | grep -E "^ +[0-9]+x"; grep -m1 'exp edges' $W/$name.err; }
b end 1x16,1x83,1x150,1x512,8x512,64x512 $BIN/layad-dev
b nocopytiming 1x16,1x83,1x512 $BIN/layad-dev --no-copy-timing
LAYAD_EXP_EDGES=1 b edges 1x16,1x83,1x512,8x512 $BIN/layad-dev-exp --no-copy-timing
b nocopytiming2 1x16,1x83,1x512 $BIN/layad-dev --no-copy-timing
b end2 1x16,1x83,1x512 $BIN/layad-dev
echo "benches done $((SECONDS-t0)) s"
timeout $((560-(SECONDS-t0))) bench/mixed/peers.sh > /dev/null 2>&1; echo "peers exit $? $((SECONDS-t0)) s"
python3 - <<'PY'
import json, os
O=os.environ['OUT']
try:
    d=json.load(open(f'{O}/peers-h200.json'))
    print(json.dumps(d.get('summary', d), indent=None)[:3000])
except Exception as e: print('no peers json', e)
PY
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt --exclude=peers-h200.json * && find . -type f ! -name results.tgz ! -name log.txt ! -name peers-h200.json -delete
