# bench/results/experiments/l2-hints/call1.sh - GeGLU reading u with cache-streaming loads (geglu-cs.patch: __ldcs,
# ld.global.cs, evict first), so that reading the 43 MB of u at 8x512 does not push its own output g (21 MB, read
# next by the MLP-out GEMM) out of the L2 (u itself comes from DRAM anyway: 0.23% read hits,
# rows-last-first/call2-h100/). Same bits by construction (a cache hint). scripts/device/binary-ab geglu.
# Stage: build/base/{layad-dev,bench_kernels}-base (the tree's build), apply the patch, make build/layad-dev
# build/bench/bench_kernels, scripts/device/prep build/bench/bench_kernels build/base/layad-dev-base
# build/base/bench_kernels-base; carry .carry.
export OUT
AB_SHAPES=1x83,1x512,8x512,64x512 bash scripts/device/binary-ab geglu
