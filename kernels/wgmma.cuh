/*
 * wgmma.cuh - Hopper's warpgroup MMA (wgmma) for 64 x 64 tiles of 16-bit
 * elements in shared memory with the 128-byte swizzle, kept apart from any
 * kernel: the swizzled place of an element, the matrix descriptors (K-major,
 * and MN-major for a B read transposed), and m64n64k16 with A from shared
 * memory or from registers, fp32 accumulators.
 *
 * Only the sm_90a pass compiles the instructions (wgmma does not exist in the
 * portable compute_90 PTX the build also embeds): KN_WGMMA is 1 there, 0
 * elsewhere, and a kernel that uses them must not run where it is 0.
 *
 * Tiles: 64 rows of 64 elements (128 bytes a row), the tile 1024-byte aligned;
 * 16-byte chunk c of row r sits at chunk c ^ (r % 8) (the swizzle TMA writes
 * and wgmma reads). The accumulator of m64nN is laid out as mma.sync m16n8's C
 * repeated along N: thread t of the warpgroup holds rows 16 (t / 32) + (t % 32)
 * / 4 (+ 8), columns 8 j + 2 (t % 4) (+ 1) in d[4 j + {0, 1, 2, 3}]; an A in
 * registers is mma.sync m16n8k16's A fragment of the warp's 16 rows.
 */
#ifndef LAYAD_KERNELS_WGMMA_CUH
#define LAYAD_KERNELS_WGMMA_CUH

#include <stdint.h>

#include "kernels/cuda_util.cuh"
#include "kernels/sm90.cuh" /* smem_addr */

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KN_WGMMA 1
#else
#define KN_WGMMA 0
#endif

/* Byte offset of element (r, c) (c < 64) in a swizzled 64-column tile; a
 * 16-byte chunk (c % 8 == 0) stays contiguous. */
__host__ __device__ __forceinline__ uint32_t kn_sw128(int r, int c)
{
    return (uint32_t)(r * 128 + ((((c >> 3) ^ r) & 7) << 4) + (c & 7) * 2);
}

#if KN_WGMMA

/* Descriptor of a swizzled tile at smem: 8-row groups 1024 bytes apart. K-major
 * (the row is K): the k16 step j starts at smem + 32 j. MN-major (the row is N,
 * a B read transposed): the k16 step j starts at smem + 2048 j; the leading
 * offset (between 64-wide atoms along N) is never used at N = 64, set to the
 * same 1024 so that either reading of the two offsets gives the one layout. */
__device__ __forceinline__ uint64_t kn_wg_desc_sw128(const void *smem)
{
    const uint64_t a = smem_addr(smem);
    return ((a & 0x3FFFF) >> 4) | ((uint64_t)(1024 >> 4) << 16) | ((uint64_t)(1024 >> 4) << 32) |
           ((uint64_t)1 << 62);
}

/* The descriptor of the same layout `bytes` further on (a k-step inside the
 * tile, or another tile): the start address sits in the low 14 bits, in 16-byte
 * units, and cannot carry out of them since shared addresses stay below 2^18.
 * One add where kn_wg_desc_sw128 is five operations. */
__device__ __forceinline__ uint64_t kn_wg_desc_at(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

__device__ __forceinline__ void kn_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kn_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void kn_wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Keeps the compiler from moving reads or writes of accumulators across the
 * asynchronous MMAs' fence and wait (their registers are in flight between). */
__device__ __forceinline__ void kn_wg_pin(float (&d)[32])
{
#pragma unroll
    for (int i = 0; i < 32; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

#define KN_WG_D32                                                                                               \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
    "%23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define KN_WG_OUT32(d)                                                                                          \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),  \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

#define KN_WG_SS(TY)                                                                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                              \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " KN_WG_D32                   \
                 ", %32, %33, p, 1, 1, 0, 0;\n}\n"                                                       \
                 : KN_WG_OUT32(d)                                                                        \
                 : "l"(a), "l"(b))
#define KN_WG_RS(TY)                                                                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                              \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " KN_WG_D32                   \
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                                         \
                 : KN_WG_OUT32(d)                                                                        \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b))

/* d[64 x 64] += A[64 x 16] . B[16 x 64], A and B K-major in shared memory. */
template <typename T> __device__ __forceinline__ void kn_wg_ss(float (&d)[32], uint64_t a, uint64_t b);
template <> __device__ __forceinline__ void kn_wg_ss<__half>(float (&d)[32], uint64_t a, uint64_t b)
{
    KN_WG_SS("f16");
}
template <> __device__ __forceinline__ void kn_wg_ss<__nv_bfloat16>(float (&d)[32], uint64_t a, uint64_t b)
{
    KN_WG_SS("bf16");
}

/* d[64 x 64] += A[64 x 16] . B[16 x 64], A this warp's fragment in registers,
 * B MN-major in shared memory (read transposed). */
template <typename T> __device__ __forceinline__ void kn_wg_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b);
template <> __device__ __forceinline__ void kn_wg_rs<__half>(float (&d)[32], const uint32_t (&a)[4], uint64_t b)
{
    KN_WG_RS("f16");
}
template <>
__device__ __forceinline__ void kn_wg_rs<__nv_bfloat16>(float (&d)[32], const uint32_t (&a)[4], uint64_t b)
{
    KN_WG_RS("bf16");
}

#endif /* KN_WGMMA */
#endif
