/*
 * gemm_small.cu - kn_gemm_split's fp32 partial products for the smallest packs
 * on a kernel of our own (kn_gemm_split_small).
 *
 * Block (x, s) computes features [32 x, 32 x + 32) of part s over K slice s. Its
 * weight tile (32 rows x K / S) is bulk-copied into shared memory before the
 * programmatic-launch wait, so those bytes move while the kernel before still
 * runs; cuBLASLt's kernels never wait programmatically and start their loads only
 * after their predecessor has finished and flushed. After the wait the X slice's
 * rows follow by the TMA engine onto the same barrier, one bulk copy a row, the rows
 * round the warps (see below).
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
 * rows (1x83 +7%; bench/results/experiments/bulk-x/). So 17-32 rows took cp.async
 * again: 1x30 0.899 / 0.899 against 0.905 / 0.911 ms on an H100, 1x16 and 1x40
 * unchanged (bulk-x/run3/). A warp's bulk copies leave one after another; with the
 * rows round the four warps, not all from warp 0, bulk copies beat cp.async there
 * too: 1x20-1x30 -1.5% on an H100 (bulk-spread/call6-h100/). 64-feature blocks over
 * 8 parts, and the same kernel for Wqkv and Wi in fp32 parts summed by the next
 * kernel, were slower and are not built.
 */
#include "kernels/gemm_small.cuh"

template <typename T, int MT>
__global__ void __launch_bounds__(32 * SO_WARPS, 1)
split_small_kernel(const T *__restrict__ X, const T *__restrict__ W, float *__restrict__ P, int M, int K)
{
    extern __shared__ __align__(128) unsigned char sm[];
    so_split_block<T, MT, true>(sm, W, P, M, K, [&](unsigned char *x, uint64_t *bar, int Ks, int s) {
        so_load_x_bulk<T>(X, x, bar, M, K, Ks, s);
    });
}

template <typename T, int MT>
static int so_launch(kn_stream ks, const void *X, const void *W, float *Y, int M, int N, int K, int S)
{
    const size_t smem = so_smem(MT, K / S);
    KN_CUDA(cudaFuncSetAttribute(split_small_kernel<T, MT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchAttribute at[2];
    const cudaLaunchConfig_t cfg = so_config(at, dim3((unsigned)(N / SO_NT), (unsigned)S), dim3(32 * SO_WARPS), smem,
                                             ks.s, 1, ks.s && ks.pdl);
    KN_CUDA(cudaLaunchKernelEx(&cfg, split_small_kernel<T, MT>, (const T *)X, (const T *)W, Y, M, K));
    return 0;
}

extern "C" int kn_gemm_split_small_ok(kn_dtype wdt, const void *X, const void *W, const void *Y, int M, int N, int K,
                                      int S)
{
    kn_dev d;
    if (!kn_is16(wdt) || M < 1 || M > KN_GEMM_SMALL_MAXM || N < 1 || N % SO_NT != 0 || S < 1 ||
        S > KN_GEMM_SPLIT_MAX || K < 1 || K % (16 * S) != 0 || !kn_aligned16(X) || !kn_aligned16(W) ||
        !kn_aligned16(Y) || !X || !W || !Y || kn_dev_info(&d))
        return 0;
    return d.major == 9 && so_smem((M + 15) / 16, K / S) <= (size_t)d.smem_optin;
}

extern "C" int kn_gemm_split_small(kn_stream ks, const void *X, const void *W, kn_dtype wdt, float *Y, int M, int N,
                                   int K, int S)
{
    KN_REQUIRE(kn_gemm_split_small_ok(wdt, X, W, Y, M, N, K, S),
               "small split product: needs a compute capability 9 device, 16-bit W, 1 <= M <= 128, N % 32 == 0, "
               "K % (16 S) == 0, 16-byte aligned operands and the shared memory");
    int rc;
    KN_DISPATCH16(wdt, T, rc = so_on_mt(M, [&](auto mt) {
        return so_launch<T, decltype(mt)::value>(ks, X, W, Y, M, N, K, S);
    }));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}
