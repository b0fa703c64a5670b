/*
 * sm90.cuh - Hopper primitives, kept apart from any kernel: shared-memory
 * barriers with transaction counts and bulk copies into one CTA by the TMA
 * engine. Used by the split product's own kernel (kernels/gemm_small.cu) and the
 * probes; the multicast and the cluster barrier, which only bench/mcast_probe.cu
 * uses, live there.
 */
#ifndef LAYAD_KERNELS_SM90_CUH
#define LAYAD_KERNELS_SM90_CUH

#include <stdint.h>

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t *b, uint32_t c)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(b)), "r"(c) : "memory");
}

/* Makes initialized barriers visible to the async proxy and, after a cluster
 * barrier, to the cluster's other CTAs. */
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive_tx(uint64_t *b, uint32_t tx)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(b)), "r"(tx) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t parity)
{
    uint32_t done = 0, polls = 0;
    do {
        if (++polls > (1u << 28))
            __trap(); /* a hang becomes an error, not a lost device call */
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(smem_addr(b)), "r"(parity)
                     : "memory");
    } while (!done);
}

/* bytes (a multiple of 16, both addresses 16-byte aligned) from global src to
 * this CTA's shared dst; completes that many bytes of b's transaction count. */
__device__ __forceinline__ void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *b)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(b))
                 : "memory");
}

#endif
