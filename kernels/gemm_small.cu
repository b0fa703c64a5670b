/*
 * gemm_small.cu - kn_gemm_split's fp32 partial products for the smallest packs
 * on a kernel of our own (kn_gemm_split_small).
 *
 * Block (x, s) computes features [32 x, 32 x + 32) of part s over K slice s. Its
 * weight tile (32 rows x K / S) is bulk-copied into shared memory before the
 * programmatic-launch wait, so those bytes move while the kernel before still
 * runs; cuBLASLt's kernels never wait programmatically and start their loads only
 * after their predecessor has finished and flushed. After the wait the X slice's
 * rows follow by the TMA engine onto the same barrier, one bulk copy a row.
 * Four warps split the slice's k-steps (mma.sync m16n8k16, fp32 accumulators)
 * and their tiles are summed in shared memory in warp order: a row's bits depend
 * on neither M nor the launch, nor on how X arrived.
 *
 * Measured in a layer's chain on the H200 (bench/mcast_probe.cu,
 * bench/results/experiments/wide/): X by cp.async from 128 threads took a layer
 * from 23.90 to 22.6 us at 16 rows and 25.2 to 23.8 at 32 against the earlier
 * form (one bulk copy a row, multicast in clusters of two), and beats cuBLASLt's
 * strided-batched split up to 48 rows (25.6 against 26.45 us); from 64 rows
 * cuBLASLt's pipelined tiles win (27.3 against 26.8). So the backend uses it for
 * buckets of at most 48 tokens (cuda_backend_opts.small_gemm_tokens). Bulk
 * copies without clusters then beat cp.async alone (MLP out 3.18 against 3.57 us
 * at 16 rows, 7.15 against 8.44 at 96) and in the forward at 16 tokens (-1.5%;
 * even at 40 and 60), though at 32 rows attention out is slower (2.96 against
 * 2.84 us; the forward at 1x30 +0.9%), and they still lose to cuBLASLt at 96
 * rows (1x83 +7%; bench/results/experiments/bulk-x/). 64-feature blocks over 8 parts, and the
 * same kernel for Wqkv and Wi in fp32 parts summed by the next kernel, were
 * slower and are not built.
 *
 * kn_gemm_split_small_geglu is the same product of X = GeGLU(U) taking U: each
 * block copies both halves' slices and forms its X slice in shared memory by
 * kn_geglu's formula (kn_geglu8), so the parts are the two launches' bit for
 * bit with one launch fewer; but the 32 column blocks of a slice each form it
 * again (32x kn_geglu's arithmetic). In clusters of 4 or 8 along N the blocks
 * share it instead: each forms every 4th (8th) row and copies the others from
 * its neighbours' shared memory between two cluster barriers, which cost more
 * than they saved in the multicast forms (bench/results/experiments/wide/).
 * Which of the three pays, if any, is for their kernel records to say.
 */
#include <cooperative_groups.h>

#include "kernels/gemm_small.cuh"

namespace cg = cooperative_groups;

template <typename T, int MT>
__global__ void __launch_bounds__(32 * SO_WARPS, 1)
split_small_kernel(const T *__restrict__ X, const T *__restrict__ W, float *__restrict__ P, int M, int K)
{
    extern __shared__ __align__(128) unsigned char sm[];
    so_split_block<T, MT, true>(sm, W, P, M, K, [&](unsigned char *x, uint64_t *bar, int Ks, int s) {
        so_load_x_bulk<T>(X, x, bar, M, K, Ks, s);
    });
}

/* Rows m = q, q + CL, ... of the X slice, formed by cluster rank q, copied from its shared memory
 * into this block's (every rank's slice sits at the same offset), 16 bytes a thread at a time. */
template <int CL>
__device__ __forceinline__ void sg_gather(cg::cluster_group &cl, unsigned char *xs, int q, int M, int Ks)
{
    const int rb = so_row_bytes(Ks), cpr = Ks / 8, n = so_rank_rows<CL>(q, M) * cpr;
    const unsigned char *src = cl.map_shared_rank(xs, q);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const int m = q + CL * (i / cpr), c = i % cpr;
        *reinterpret_cast<uint4 *>(xs + m * rb + 16 * c) = *reinterpret_cast<const uint4 *>(src + m * rb + 16 * c);
    }
}

/* Block (x, s) with GeGLU in its X load: both halves' slices of U's rows (gate columns s Ks..,
 * value columns K + s Ks..) by the TMA engine onto the W tile's barrier, X's slice formed from
 * them in place (so_geglu_slice), then the same k-steps and parts as split_small_kernel. With
 * CL > 1 the blocks of a cluster along N share the work: rank r copies and forms rows r, r + CL,
 * ... only, and after a cluster barrier takes the other rows from the other ranks' shared memory
 * (the second barrier keeps every rank's rows in place until all have copied them), so a slice's
 * GeGLU is formed N / 32 / CL times instead of N / 32. */
template <typename T, int MT, int CL>
__global__ void __launch_bounds__(32 * SO_WARPS, 1)
split_small_geglu_kernel(const T *__restrict__ U, const T *__restrict__ W, float *__restrict__ P, int M, int K)
{
    extern __shared__ __align__(128) unsigned char sm[];
    const int Ks = K / gridDim.y, n0 = blockIdx.x * SO_NT, s = blockIdx.y, rb = so_row_bytes(Ks);
    const int r = CL > 1 ? (int)cg::this_cluster().block_rank() : 0;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sm);
    unsigned char *ws = sm + 128, *xs = ws + SO_NT * rb, *vs = xs + 16 * MT * rb;
    so_prologue<T, MT>(W, ws, xs, bar, M, K, Ks, so_rows{n0}, s, 2 * so_rank_rows<CL>(r, M));
    kn_pdl_wait();
    for (int m = r + CL * threadIdx.x; m < M; m += CL * blockDim.x) {
        const T *u = U + (size_t)m * 2 * K + (size_t)s * Ks;
        bulk_load(xs + m * rb, u, Ks * 2, bar);
        bulk_load(vs + m * rb, u + K, Ks * 2, bar);
    }
    kn_pdl_trigger();
    mbar_wait(bar, 0);
    if constexpr (CL == 1) {
        so_geglu_slice<T>(xs, vs, M, Ks);
    } else {
        cg::cluster_group cl = cg::this_cluster();
        so_geglu_rows<T, CL>(xs, vs, r, M, Ks);
        cl.sync(); /* every rank's rows formed */
        for (int q = 0; q < CL; q++)
            if (q != r)
                sg_gather<CL>(cl, xs, q, M, Ks);
        cl.sync(); /* every rank's copies done: its rows may be overwritten (so_store) */
    }
    float acc[MT][4][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
            acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
    so_mma<T, MT>(ws, xs, rb, Ks, acc);
    __syncthreads(); /* the slices' room now holds the warps' tiles */
    so_store<MT>(reinterpret_cast<float *>(xs), acc, P, M, gridDim.x * SO_NT, n0, s);
}

/* Either kernel over N / 32 x S blocks: G 0 the plain one (X), else the GeGLU form (U) in
 * clusters of G along N. */
template <typename T, int MT, int G>
static int so_launch(kn_stream ks, const void *X, const void *W, float *Y, int M, int N, int K, int S)
{
    const auto kern = G ? split_small_geglu_kernel<T, MT, G ? G : 1> : split_small_kernel<T, MT>;
    const size_t smem = so_smem(MT, K / S, SO_NT, G ? 2 : 1);
    KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchAttribute at[2];
    const cudaLaunchConfig_t cfg = so_config(at, dim3((unsigned)(N / SO_NT), (unsigned)S), dim3(32 * SO_WARPS), smem,
                                             ks.s, G > 1 ? G : 1, ks.s && ks.pdl);
    KN_CUDA(cudaLaunchKernelEx(&cfg, kern, (const T *)X, (const T *)W, Y, M, K));
    return 0;
}

/* The arguments both kernels take (xn: X's slices a block holds, 2 for the GeGLU form). */
static int so_ok(kn_dtype wdt, const void *X, const void *W, const void *Y, int M, int N, int K, int S, int xn)
{
    kn_dev d;
    if (!kn_is16(wdt) || M < 1 || M > KN_GEMM_SMALL_MAXM || N < 1 || N % SO_NT != 0 || S < 1 ||
        S > KN_GEMM_SPLIT_MAX || K < 1 || K % (16 * S) != 0 || !kn_aligned16(X) || !kn_aligned16(W) ||
        !kn_aligned16(Y) || !X || !W || !Y || kn_dev_info(&d))
        return 0;
    return d.major == 9 && so_smem((M + 15) / 16, K / S, SO_NT, xn) <= (size_t)d.smem_optin;
}

template <int G>
static int so_run(kn_stream ks, const void *X, const void *W, kn_dtype wdt, float *Y, int M, int N, int K, int S)
{
    int rc;
    KN_DISPATCH16(wdt, T, rc = so_on_mt(M, [&](auto mt) {
        return so_launch<T, decltype(mt)::value, G>(ks, X, W, Y, M, N, K, S);
    }));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_gemm_split_small_ok(kn_dtype wdt, const void *X, const void *W, const void *Y, int M, int N, int K,
                                      int S)
{
    return so_ok(wdt, X, W, Y, M, N, K, S, 1);
}

extern "C" int kn_gemm_split_small(kn_stream ks, const void *X, const void *W, kn_dtype wdt, float *Y, int M, int N,
                                   int K, int S)
{
    KN_REQUIRE(kn_gemm_split_small_ok(wdt, X, W, Y, M, N, K, S),
               "small split product: needs a compute capability 9 device, 16-bit W, 1 <= M <= 128, N % 32 == 0, "
               "K % (16 S) == 0, 16-byte aligned operands and the shared memory");
    return so_run<0>(ks, X, W, wdt, Y, M, N, K, S);
}

extern "C" int kn_gemm_split_small_geglu_ok(kn_dtype wdt, const void *U, const void *W, const void *Y, int M, int N,
                                            int K, int S, int cl)
{
    return (cl == 1 || cl == 4 || cl == 8) && N % (SO_NT * cl) == 0 && so_ok(wdt, U, W, Y, M, N, K, S, 2);
}

extern "C" int kn_gemm_split_small_geglu(kn_stream ks, const void *U, const void *W, kn_dtype wdt, float *Y, int M,
                                         int N, int K, int S, int cl)
{
    KN_REQUIRE(kn_gemm_split_small_geglu_ok(wdt, U, W, Y, M, N, K, S, cl),
               "small split product with GeGLU: as the small split product, with room for both halves' slices, "
               "clusters of 1, 4 or 8 dividing N / 32");
    return cl == 8 ? so_run<8>(ks, U, W, wdt, Y, M, N, K, S)
           : cl == 4 ? so_run<4>(ks, U, W, wdt, Y, M, N, K, S)
                     : so_run<1>(ks, U, W, wdt, Y, M, N, K, S);
}
