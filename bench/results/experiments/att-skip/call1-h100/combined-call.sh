export OUT; t0=$SECONDS
bash bench/results/experiments/att-skip/call.sh
echo "att-skip done $((SECONDS - t0)) s"
source .carry/env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout $((590 - (SECONDS - t0))) .carry/bin/lt_enum "$OUT/lt-enum-large.json" 4096,32768 | tee "$OUT/lt-enum-log.txt"
echo "lt_enum exit ${PIPESTATUS[0]} $((SECONDS - t0)) s"
