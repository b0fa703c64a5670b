# bench/results/experiments/bulk-spread/call3.sh - the session's kept changes together (the spread bulk copies and
# the fused projections up to 48 tokens) against the tree at the session's start (build/base: ee5cba0's library):
# the suites, English fp16 parity with the default forward (fused projections off in parity-fast) and with them up
# to 48 tokens, then the forward A/B/A/B at 16-512 tokens and 8x512. Stage: scripts/device/prep
# build/tests/gpu_kernels build/tests/gpu_backend_cuda build/base/layad-dev-base; carry .carry.
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
run_suites
for f in 0 48; do run_parity parity-fused$f.json parity$f.log "english fused $f" --fused-proj-tokens $f; done
bench_abab 1x16,1x30,1x40,1x83,1x150,1x512,8x512 base "$B/layad-dev-base" new "$B/layad-dev"
echo "done $((SECONDS-t0)) s"
