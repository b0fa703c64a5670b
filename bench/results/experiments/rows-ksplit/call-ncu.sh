# Nsight Compute on the three row-streaming products at 1x83; run on the lent H200 (carry .carry) after scripts/device/prep
export OUT; t0=$SECONDS
NCU_SKIP=30 timeout 300 scripts/device/ncu-profile 'gemm_rows' 3 1x83 > /dev/null 2>&1; echo "ncu exit $? $((SECONDS-t0)) s"
grep -E 'gemm_rows_kernel|Duration|Achieved Occupancy|Registers Per|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Block Limit|Grid Size|Warp Cycles Per Issued|Issued Warp|L2 Hit|Mem Busy|Max Bandwidth|Elapsed Cycles|SM Frequency' $OUT/ncu-1x83.txt | head -80
