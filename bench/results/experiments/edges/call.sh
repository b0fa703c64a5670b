# run on the lent H200 (carry .carry) after scripts/device/prep <layad-dev built with programmatic-edges.patch, as layad-dev-exp>
# copy timing on / off and the programmatic-edges bound (throwaway build), same call
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english >/dev/null || echo mkmodel failed
b() { local name=$1 shapes=$2 bin=$3; shift 3; echo "== $name"; timeout 150 $bin bench --model $W/english --label "english $name" --shapes $shapes --commit "$LAYAD_COMMIT" --out $OUT/forward-$name.json "$@" 2>$W/$name.err | grep -E "^ +[0-9]+x"; grep -m1 'exp edges' $W/$name.err; tail -2 $W/$name.err; }
b default 1x16,1x83,1x512,8x512 $BIN/layad-dev
b nocopytiming 1x16,1x83,1x512,8x512 $BIN/layad-dev --no-copy-timing
LAYAD_EXP_EDGES=1 b edges 1x16,1x83,1x512,8x512 $BIN/layad-dev-exp --no-copy-timing
b nocopytiming2 1x16,1x83,1x512,8x512 $BIN/layad-dev --no-copy-timing
b default2 1x16,1x83,1x512,8x512 $BIN/layad-dev
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
