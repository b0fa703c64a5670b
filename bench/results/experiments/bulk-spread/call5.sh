# bench/results/experiments/bulk-spread/call5.sh - the kept form (X rows round the warps, W rows by warp 0 as before:
# w0.patch, machine code byte for byte call 4's w0 binary) with the fused projections up to 48 tokens, against the
# tree at the session's start (build/base/layad-dev-base): the suites, English fp16 parity with the fused
# projections up to 48 tokens, then the forward A/B/A/B at 16-83 tokens. Stage: scripts/device/prep
# build/tests/gpu_kernels build/tests/gpu_backend_cuda build/base/layad-dev-base; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_suites
run_parity parity-fused48.json parity.log "english fused 48" --fused-proj-tokens 48
bench_abab 1x16,1x24,1x30,1x40,1x48,1x83 base "$B/layad-dev-base" new "$B/layad-dev"
echo "done $((SECONDS-t0)) s"
