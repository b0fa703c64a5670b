# bench/results/experiments/lt-enum/call-large.sh - run once (large-h100/, nothing found): every cuBLASLt configuration at
# the large packs' GEMMs (4096 rows = 8x512, 32768 = 64x512) against the heuristic's first 8, which
# the forward times at warm-up. The skinny shapes' run (lt-enum-h200.json) found nothing beyond
# those 8; the large ones were never enumerated, and there the GEMMs are ~60% of the forward.
# Outputs are 16-bit (Wqkv's and Wi's form; the forward's attention-out and MLP-out add into fp32,
# which this does not time). ~2-4 minutes. Stage here (the device has CUDA's libraries):
#   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
#     -o .carry/lt_enum bench/results/experiments/lt-enum/lt_enum.cu -lcublasLt
# carry .carry, then `bash bench/results/experiments/lt-enum/call-large.sh`.
export OUT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
t0=$SECONDS
timeout 480 .carry/lt_enum "$OUT/lt-enum-large.json" 4096,32768 | tee "$OUT/log.txt"
echo "exit ${PIPESTATUS[0]} $((SECONDS - t0)) s"
