# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/cutlass_probe and build/bench/cutlass_epilogue_probe
# RoPE / GeGLU in a CUTLASS GEMM's epilogue against cuBLAS + our kernels; the first probe again
# after its shared parts moved to bench/cutlass_common.cuh; the launch table of a 1x83 forward
export OUT; source .carry/env.sh; export LAYAD_COMMIT=$(cat .carry/commit)
BIN=$PWD/.carry/bin; t0=$SECONDS
timeout 200 $BIN/cutlass_epilogue_probe 16 96 128 > $OUT/cutlass-epilogue-probe.txt 2>&1; echo "epilogue probe exit $? $((SECONDS-t0)) s"; cat $OUT/cutlass-epilogue-probe.txt
timeout 60 $BIN/cutlass_probe 96 > $OUT/cutlass-probe-96.txt 2>&1; echo "probe exit $? $((SECONDS-t0)) s"; cat $OUT/cutlass-probe-96.txt
rem=$((560-(SECONDS-t0))); [ $rem -gt 120 ] && { timeout $rem bash scripts/device/launch-table 1x83 > /dev/null 2>&1; echo "launch-table exit $? $((SECONDS-t0)) s"; head -40 $OUT/launch-1x83.txt; }
cd $OUT && tar czf results.tgz --exclude=results.tgz --exclude=log.txt * && find . -type f ! -name results.tgz ! -name log.txt -delete
