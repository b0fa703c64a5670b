/*
 * prefetch.cu - warms the L2 with the weights the forward's next GEMM will
 * stream. At small batch a cuBLASLt GEMM moves its weights at 0.4-1.7 TB/s:
 * each of its few CTAs waits on DRAM round trips. Run on a side stream of the
 * forward (forked just before the GEMM before it), this kernel issues
 * fire-and-forget L2 prefetches (one per 128-byte line, normal eviction
 * priority: evict_last lines of 28 layers would crowd out everything else)
 * for the next GEMM's weights and exits without waiting for them, so nothing
 * on the forward's own stream waits for it; the GEMM then finds its weights
 * in L2.
 */
#include "kernels/cuda_util.cuh"

#define PF_LINE 128
#define PF_THREADS 256

__global__ void __launch_bounds__(PF_THREADS) l2_prefetch_kernel(const char *p, size_t bytes)
{
    const size_t step = (size_t)gridDim.x * PF_THREADS * PF_LINE;
    for (size_t off = ((size_t)blockIdx.x * PF_THREADS + threadIdx.x) * PF_LINE; off < bytes; off += step)
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p + off));
}

extern "C" int kn_l2_prefetch(kn_stream ks, const void *p, size_t bytes)
{
    if (bytes == 0)
        return 0;
    KN_REQUIRE(p, "NULL prefetch range");
    const unsigned blocks = kn_blocks((bytes + PF_LINE - 1) / PF_LINE, PF_THREADS, 32);
    l2_prefetch_kernel<<<blocks, PF_THREADS, 0, ks.s>>>((const char *)p, bytes);
    KN_LAUNCHED();
    return 0;
}
