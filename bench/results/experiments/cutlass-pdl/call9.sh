# the session's last code (66523c1): suites, English fp16 parity, both CUTLASS probes at 96 rows
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; W=/tmp/layad-run; mkdir -p $W; t0=$SECONDS
timeout 120 scripts/device/run suites > /dev/null 2>&1; echo "suites exit $? $((SECONDS-t0)) s"; grep -E 'Checks|exit' $OUT/gpu-suites.log | head
$BIN/layad-dev mkmodel --preset english-large --tokenizer .carry/shared/modernbert-tokenizer.json --out $W/english > /dev/null
timeout 90 $BIN/layad-dev parity-fast --model $W/english --label english --ref .carry/ref/english.ref --dtype fp16 --out $OUT/parity-english-fp16.json > $W/parity.log 2>&1; echo "parity exit $? $((SECONDS-t0)) s"; grep -E "gates" $W/parity.log
timeout 60 $BIN/cutlass_probe 96 > $OUT/cutlass-probe-96.txt 2>&1; echo "probe exit $?"; tail -4 $OUT/cutlass-probe-96.txt
timeout 60 $BIN/cutlass_epilogue_probe 96 > $OUT/cutlass-epilogue-probe-96.txt 2>&1; echo "epilogue probe exit $?"; tail -4 $OUT/cutlass-epilogue-probe-96.txt
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
