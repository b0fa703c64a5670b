# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites, build/bench/mcast_probe, HEAD's probe as mcast_probe-base and HEAD's layad-dev as
# layad-dev-head: the small split kernel's X in two commit groups (each warp's first half of
# k-steps, then the second; the MMAs on the first half while the second lands) against one group;
# probe base / new at 16-96 rows, forward head / new / head / new, new at 64 and 96 tokens; suites
# (call 11: the same script on the second form, each half range copied by its own loop)
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
for v in base new; do p=$BIN/mcast_probe; [ $v = base ] && p=$BIN/mcast_probe-base
  timeout 90 $p 16 32 48 64 96 > $OUT/probe-$v.jsonl 2> $W/probe.err; echo "probe $v exit $? $((SECONDS-t0)) s"; grep -v check $OUT/probe-$v.jsonl | grep -E '"cl": (0|2), "pdl": true' | grep -v "tensor boxes"; done
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
for v in head new head2 new2 new64 new96; do b=$BIN/layad-dev; x=""; case $v in head*) b=$BIN/layad-dev-head;; new64) x="--small-gemm-tokens 64";; new96) x="--small-gemm-tokens 96";; esac
  echo "== $v"; timeout 60 $b bench --model $W/english --shapes 1x16,1x40,1x60,1x83 $x --commit "$LAYAD_COMMIT ($v)" --out $OUT/forward-$v.json | grep -E "^ +[0-9]+x"; done
echo "bench $((SECONDS-t0)) s"
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
