/*
 * hopper.cuh - the sm_90a primitives of the warpgroup GEMM (kernels/gemm_wg.cu),
 * kept apart from it: shared-memory barriers (mbarrier) with transaction
 * counts, the TMA load of a 2-D tensor-map box into shared memory, and the
 * warpgroup MMA (wgmma) m64n256k16 with its shared-memory matrix descriptors.
 *
 * Only the sm_90a pass compiles them (wgmma does not exist in the portable
 * compute_90 PTX the build also embeds): KN_HOPPER is 1 there, 0 elsewhere,
 * and a kernel that uses them traps when KN_HOPPER is 0. The host checks the
 * device before launching one.
 */
#ifndef LAYAD_KERNELS_HOPPER_CUH
#define LAYAD_KERNELS_HOPPER_CUH

#include "kernels/cuda_util.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KN_HOPPER 1
#else
#define KN_HOPPER 0
#endif

#if KN_HOPPER

__device__ __forceinline__ uint32_t kn_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* ---- mbarrier ---- */

__device__ __forceinline__ void kn_mbar_init(uint64_t *bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(kn_smem_addr(bar)), "r"(count) : "memory");
}

/* Makes the initialized barriers visible to the async proxy (TMA). */
__device__ __forceinline__ void kn_mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void kn_mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(kn_smem_addr(bar)) : "memory");
}

/* One arrival that also expects tx more bytes of asynchronous copies. */
__device__ __forceinline__ void kn_mbar_arrive_tx(uint64_t *bar, uint32_t tx)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(kn_smem_addr(bar)), "r"(tx)
                 : "memory");
}

__device__ __forceinline__ uint64_t kn_globaltimer_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %globaltimer;\n" : "=l"(t));
    return t;
}

/* Blocks until the barrier's phase of this parity has completed (a fresh
 * barrier counts its phase before the first as completed: parity 1 passes).
 * A wait of over ten seconds is a protocol bug, never load: it traps, so the
 * launch fails loudly instead of hanging the stream. */
__device__ __forceinline__ void kn_mbar_wait(uint64_t *bar, uint32_t parity)
{
    const uint32_t a = kn_smem_addr(bar);
    uint32_t done = 0;
    uint64_t t0 = 0;
    for (;;) {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
        if (done)
            return;
        const uint64_t t = kn_globaltimer_ns();
        if (!t0)
            t0 = t;
        else if (t - t0 > 10000000000ull)
            __trap();
    }
}

/* The box at (c0, c1) of a 2-D tensor map into shared dst (1024-byte aligned
 * for the 128-byte swizzle); completes the box's bytes on the barrier (rows
 * past the tensor's end arrive as zeros). */
__device__ __forceinline__ void kn_tma_load_2d(void *dst, const void *tmap, int c0, int c1, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(kn_smem_addr(dst)),
                 "l"(tmap), "r"(c0), "r"(c1), "r"(kn_smem_addr(bar))
                 : "memory");
}

/* The same box written to the same offset of every CTA in cta_mask of the
 * cluster, completing its bytes on each one's barrier at bar's offset. */
__device__ __forceinline__ void kn_tma_load_2d_mc(void *dst, const void *tmap, int c0, int c1, uint64_t *bar,
                                                  uint16_t cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                 "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(kn_smem_addr(dst)),
                 "l"(tmap), "r"(c0), "r"(c1), "r"(kn_smem_addr(bar)), "h"(cta_mask)
                 : "memory");
}

/* ---- clusters ---- */

__device__ __forceinline__ uint32_t kn_cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %cluster_ctarank;\n" : "=r"(r));
    return r;
}

/* Every thread of every CTA of the cluster, with release / acquire of shared
 * memory (not .aligned: a warp may arrive diverged). */
__device__ __forceinline__ void kn_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

/* One arrival on the barrier at bar's offset in CTA rank's shared memory. */
__device__ __forceinline__ void kn_mbar_arrive_cluster(uint64_t *bar, uint32_t rank)
{
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n" ::"r"(kn_smem_addr(bar)),
                 "r"(rank)
                 : "memory");
}

/* ---- warpgroup MMA ---- */

/* Descriptor of a K-major operand in the 128-byte swizzle TMA writes: rows of
 * 64 16-bit elements, 8-row atoms 1024 bytes apart; smem may point inside an
 * atom's row (k16 step j at + 32 j bytes). */
__device__ __forceinline__ uint64_t kn_wg_desc_sw128(const void *smem)
{
    const uint64_t a = kn_smem_addr(smem);
    return ((a & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

__device__ __forceinline__ void kn_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kn_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void kn_wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* The 128 accumulator operands of an m64n256 wgmma, as inline-asm text and
 * as constraints. */
#define KN_WG_R8(a) "%" #a "0, %" #a "1, %" #a "2, %" #a "3, %" #a "4, %" #a "5, %" #a "6, %" #a "7"
#define KN_WG_D128                                                                                           \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " KN_WG_R8(1) ", %18, %19, " KN_WG_R8(2) ", %28, %29, "         \
    KN_WG_R8(3) ", %38, %39, " KN_WG_R8(4) ", %48, %49, " KN_WG_R8(5) ", %58, %59, " KN_WG_R8(6) ", %68, %69, " \
    KN_WG_R8(7) ", %78, %79, " KN_WG_R8(8) ", %88, %89, " KN_WG_R8(9) ", %98, %99, " KN_WG_R8(10) ", %108, "   \
    "%109, " KN_WG_R8(11) ", %118, %119, " KN_WG_R8(12) "}"
#define KN_WG_O8(d, i)                                                                                        \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define KN_WG_O128(d)                                                                                        \
    KN_WG_O8(d, 0), KN_WG_O8(d, 8), KN_WG_O8(d, 16), KN_WG_O8(d, 24), KN_WG_O8(d, 32), KN_WG_O8(d, 40),       \
        KN_WG_O8(d, 48), KN_WG_O8(d, 56), KN_WG_O8(d, 64), KN_WG_O8(d, 72), KN_WG_O8(d, 80), KN_WG_O8(d, 88), \
        KN_WG_O8(d, 96), KN_WG_O8(d, 104), KN_WG_O8(d, 112), KN_WG_O8(d, 120)

/* d[64 x 256] += A[64 x 16] . B[256 x 16]^T, both K-major in shared memory,
 * fp32 accumulators: thread t of the warpgroup holds rows 16 (t / 32) +
 * (t % 32) / 4 (+ 8), columns 8 j + 2 (t % 4) (+ 1) as d[4 j + {0, 1, 2, 3}]
 * (j < 32; + 2 is the row 8 below). */
template <typename T> __device__ __forceinline__ void kn_wg_mma256(float (&d)[128], uint64_t a, uint64_t b);
template <> __device__ __forceinline__ void kn_wg_mma256<__half>(float (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " KN_WG_D128 ", %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : KN_WG_O128(d)
                 : "l"(a), "l"(b));
}
template <> __device__ __forceinline__ void kn_wg_mma256<__nv_bfloat16>(float (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " KN_WG_D128 ", %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : KN_WG_O128(d)
                 : "l"(a), "l"(b));
}

#endif /* KN_HOPPER */
#endif
