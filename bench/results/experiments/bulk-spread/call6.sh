# bench/results/experiments/bulk-spread/call6.sh - with X's bulk copies now round the warps, do they also beat
# cp.async in the 32-token bucket, where the split kernel still copies X by cp.async from every thread (bulk-x/run3:
# cp.async 0.899 against 0.905-0.911 ms at 1x30 with bulk copies from threads 0..31)? The tree against bulk32.patch
# (bulk copies at every row count), A/B/A/B at 17-32 tokens, 16 and 40 as controls. Stage: build/base/layad-dev-bulk32
# (the tree with bulk32.patch), scripts/device/prep build/base/layad-dev-bulk32; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
bench_abab 1x16,1x20,1x24,1x30,1x40 tree "$B/layad-dev" bulk32 "$B/layad-dev-bulk32"
echo "done $((SECONDS-t0)) s"
