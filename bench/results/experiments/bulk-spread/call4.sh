# bench/results/experiments/bulk-spread/call4.sh - call 3 put the kept changes at -2.7% at 1x16 and -2.2% at 1x40 but
# +0.8% at 1x30 (0.825 / 0.829 against 0.819 / 0.822 ms, the same sign in call 1). Is the weights' spread (before the
# wait) what costs at 32 tokens? The tree (W and X rows round the warps) against w0.patch (W rows by warp 0's lanes as
# before, X still spread), A/B/A/B at 16-48 tokens. Stage: build/base/layad-dev-w0 (the tree with w0.patch),
# scripts/device/prep build/base/layad-dev-w0; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
bench_abab 1x16,1x24,1x30,1x40,1x48 tree "$B/layad-dev" w0 "$B/layad-dev-w0"
echo "done $((SECONDS-t0)) s"
