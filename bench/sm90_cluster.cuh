/*
 * sm90_cluster.cuh - Hopper's cluster primitives that only the probes use (the library's
 * kernels copy into one CTA: kernels/sm90.cuh): a bulk copy multicast to a cluster's CTAs,
 * the CTA's rank in its cluster, the cluster's size and the cluster barrier. bench/mcast_probe.cu and
 * bench/ingest_probe.cu share them.
 */
#ifndef LAYAD_BENCH_SM90_CLUSTER_CUH
#define LAYAD_BENCH_SM90_CLUSTER_CUH

#include "kernels/sm90.cuh" /* smem_addr */

/* bulk_load into the same shared offset of every CTA of the cluster in mask
 * (bit = rank), completing bytes on the barrier at b's offset in each; the multicast exists
 * only in the sm_90a pass (the probes' only one). */
__device__ __forceinline__ void bulk_load_multicast(void *dst, const void *src, uint32_t bytes, uint64_t *b,
                                                    uint16_t mask)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], "
                 "%2, [%3], %4;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(b)), "h"(mask)
                 : "memory");
#else
    (void)dst, (void)src, (void)bytes, (void)b, (void)mask;
    __trap();
#endif
}

__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

__device__ __forceinline__ uint32_t cluster_size()
{
    uint32_t n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
    return n;
}

/* The cluster barrier in two halves (every thread of every CTA of the cluster,
 * arrive then wait, alternating). */
__device__ __forceinline__ void cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }

#endif
