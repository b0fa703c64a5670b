/*
 * hopper.cuh - the sm_90a primitives of the weight-streaming GEMM, kept apart
 * from it: shared-memory barriers (mbarrier) with transaction counts, the bulk
 * (TMA engine) copy of a contiguous block and the TMA load of a 2-D tensor-map
 * box into shared memory, and the warpgroup MMA (wgmma) with its shared-memory
 * matrix descriptors.
 *
 * Only the sm_90a pass compiles them (wgmma does not exist in the portable
 * compute_90 PTX the build also embeds): KN_HOPPER is 1 there, 0 elsewhere,
 * and a kernel that uses them traps when KN_HOPPER is 0. The host checks the
 * device before launching one (kernels/gemm_ws.cu).
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

/* Makes the initialized barriers visible to the async proxy (bulk copies). */
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

/* Blocks until the barrier's phase of this parity has completed. */
__device__ __forceinline__ void kn_mbar_wait(uint64_t *bar, uint32_t parity)
{
    const uint32_t a = kn_smem_addr(bar);
    uint32_t done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
}

/* ---- copies into shared memory ---- */

/* bytes (a multiple of 16) from global src to shared dst by the TMA engine;
 * completes bytes of the barrier's transaction count. */
__device__ __forceinline__ void kn_bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     kn_smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(kn_smem_addr(bar))
                 : "memory");
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

/* ---- warpgroup MMA ---- */

/* Descriptor of a K-major operand without swizzle: 8 x 16-byte core matrices,
 * lbo bytes between the two core matrices along K of one k16 step, sbo bytes
 * between core matrices 8 rows apart. */
__device__ __forceinline__ uint64_t kn_wg_desc(const void *smem, uint32_t lbo, uint32_t sbo)
{
    const uint64_t a = kn_smem_addr(smem);
    return ((a & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) | ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32);
}

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

#define KN_WG_D32                                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
    "%23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define KN_WG_OUT32(d)                                                                                          \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),  \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

/* d[64 x 64] += A[64 x 16] . B[64 x 16]^T, both K-major in shared memory, fp32
 * accumulators (thread t of the warpgroup holds rows 16 (t / 32) + (t % 32) / 4
 * (+ 8), columns 8 j + 2 (t % 4) (+ 1): d[4 j + {0, 1, 2, 3}]). */
template <typename T> __device__ __forceinline__ void kn_wg_mma64(float (&d)[32], uint64_t a, uint64_t b);
template <> __device__ __forceinline__ void kn_wg_mma64<__half>(float (&d)[32], uint64_t a, uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " KN_WG_D32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : KN_WG_OUT32(d)
                 : "l"(a), "l"(b));
}
template <> __device__ __forceinline__ void kn_wg_mma64<__nv_bfloat16>(float (&d)[32], uint64_t a, uint64_t b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " KN_WG_D32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : KN_WG_OUT32(d)
                 : "l"(a), "l"(b));
}

#endif /* KN_HOPPER */
#endif
