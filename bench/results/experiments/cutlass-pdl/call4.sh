# run from the repository root on the lent H200 (carry .carry) after scripts/device/prep with
# build/bench/cutlass_epilogue_probe (with the large-pack tiles co128x128 / co128x256)
# RoPE / GeGLU in a CUTLASS epilogue at large packs (8x512 = 4096 rows, 64x512 = 32768), where they
# are bytes rather than launches, and 96 rows again for the drift
export OUT; source .carry/env.sh; BIN=$PWD/.carry/bin; t0=$SECONDS
timeout 400 $BIN/cutlass_epilogue_probe 96 4096 32768 > $OUT/cutlass-epilogue-probe-large.txt 2>&1; echo "probe exit $? $((SECONDS-t0)) s"; cat $OUT/cutlass-epilogue-probe-large.txt
