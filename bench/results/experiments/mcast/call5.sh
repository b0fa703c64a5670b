# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with the GPU
# suites and 1aa9dbf's layad-dev as layad-dev-split (the own kernel for the split products only):
# the encoder's Wqkv and Wi on the own kernel too (kn_gemm_small) against that and against no own
# kernel (same binary, --small-gemm-tokens 0), A/B/C/A/B; 48 tokens once; suites, parity, memcheck
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W
t0=$SECONDS
timeout 100 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head -6; grep -E 'gemm_small ' $OUT/gpu-suites.log | head -12; grep -iE 'outside|fail' $OUT/gpu-suites.log | head -5
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
run() { echo "== $1"; timeout 60 $2 bench --model $W/english --shapes ${4:-1x16,1x30,1x40,1x83} $3 --commit "$LAYAD_COMMIT ($1)" --out $OUT/forward-$1.json | grep -E "^ +[0-9]+x"; }
run split $BIN/layad-dev-split ""
run all $BIN/layad-dev ""
run none $BIN/layad-dev "--small-gemm-tokens 0"
run split2 $BIN/layad-dev-split ""
run all2 $BIN/layad-dev ""
run all48 $BIN/layad-dev "--small-gemm-tokens 48" 1x40
echo "bench $((SECONDS-t0)) s"
timeout 80 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
rem=$((560-(SECONDS-t0))); [ $rem -gt 30 ] && { timeout $rem scripts/device/run memcheck > /dev/null 2>&1; echo "memcheck exit $? $((SECONDS-t0)) s"; tail -n 3 $OUT/memcheck-kernels.log; tail -n 3 $OUT/memcheck-backend.log; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
