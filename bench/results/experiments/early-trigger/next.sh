# bench/results/experiments/early-trigger/next.sh - prepared, not run: the next device session's first call
# (~9 minutes). (1) The kernel suite under compute-sanitizer memcheck with the early triggers (the backend suite
# ran clean: memcheck-h100/). (2) Why the own split products, which now pay up to 64 tokens, lose to cuBLASLt's
# path at 96 (0.992 against 0.932 ms, call2-h100/paths.txt): Nsight Compute's full section set on split_small_kernel
# inside the 1x83 forward with --small-gemm-tokens 128, and at 1x60 where it wins (scripts/device/ncu-profile).
# Carry .carry (scripts/device/prep build/tests/gpu_kernels; `git rev-parse --short HEAD > .carry/commit`).
export OUT; source scripts/device/run-env.sh; t0=$SECONDS
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 330 "$cs" --tool memcheck "$B/gpu_kernels" > "$OUT/memcheck-kernels.log" 2>&1
echo "memcheck kernels exit $? $((SECONDS-t0)) s"; grep -hE "ERROR SUMMARY|Checks|:F:" "$OUT/memcheck-kernels.log"
# the bench's warm-up captures launch it first with no rows: skip past them (56 launches a forward)
NCU_SKIP=300 NCU_BENCH_ARGS="--small-gemm-tokens 128" LAYAD_RUN_DIR=$W \
  timeout $((580 - (SECONDS - t0))) bash scripts/device/ncu-profile split_small 4 1x83 1x60
echo "done $((SECONDS-t0)) s"
