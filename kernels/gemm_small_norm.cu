/*
 * gemm_small_norm.cu - the small split product (kernels/gemm_small.cu) and the
 * LayerNorm over its parts (kn_layernorm_parts) in one launch
 * (kn_gemm_split_small_norm).
 *
 * Why: at small packs a layer is nine short launches, and the LayerNorm over a
 * branch's parts costs ~2.8 us a launch inside the forward's graph (62 launches,
 * 17% of a 1x83 forward; bench/results/experiments/, the ablation), most of it the
 * launch and the round trip to its first load, not its bytes. Here every block
 * computes its part as the small kernel does, the grid meets at a barrier in global
 * memory (kernels/grid_sync.cuh; ~0.8 us measured for such a barrier on the H200,
 * experiments/persistent/), and then block b normalizes rows b, b + blocks, ...
 * with the LayerNorm kernel's own row body (kernels/layernorm_parts.cuh), its 256
 * threads played by the block's 128. The outputs are the two launches' bits.
 *
 * The grid (N / 32 x S blocks of 128 threads) must be resident at once for the
 * barrier, and twice over (KN_GRID_SYNC_SHARERS): kn_gemm_split_small_norm_ok asks
 * the occupancy calculator, and a refused shape takes the two launches. By the
 * sizes (nvcc 13.0 -Xptxas -v, not measured): English MLP out, 128 blocks, fits
 * up to 48 rows (~104 KB of shared memory a block, two a SM) and not from 49 (one
 * a SM); attention out (~45 KB at 48 rows, three a SM by 159 registers) further.
 * The LayerNorm's scale and the branch bias are read before the programmatic wait
 * with the weights.
 */
#include <atomic>

#include "kernels/gemm_small.cuh"
#include "kernels/grid_sync.cuh"
#include "kernels/layernorm_parts.cuh"

#define SN_VT 2 /* LayerNorm threads a thread plays: rows of up to 1024 columns */

template <typename T, int MT>
__global__ void __launch_bounds__(32 * SO_WARPS, 1)
split_small_norm_kernel(const T *__restrict__ X, const T *__restrict__ W, float *P, int M, int K, kn_parts_norm ln,
                        unsigned *sync)
{
    extern __shared__ __align__(128) unsigned char sm[];
    __shared__ double red[2][32];
    const int D = gridDim.x * SO_NT, nb = gridDim.x * gridDim.y;
    float4 ww[SN_VT], pb[SN_VT];
    lnp_consts<SN_VT>(ln.w, ln.bb, D, ww, pb);
    const double inv_d = 1.0 / (double)D;
    so_split_block<T, MT>(sm, W, P, M, K, [&](unsigned char *x, int Ks, int s) { so_load_x<T>(X, x, M, K, Ks, s); });
    kn_grid_sync(sync);
    for (int m = blockIdx.y * gridDim.x + blockIdx.x; m < M; m += nb) {
        const size_t off = (size_t)m * D;
        float4 v[SN_VT];
#pragma unroll
        for (int j = 0; j < SN_VT; j++)
            if (lnp_in<SN_VT>(j, D))
                v[j] = lnp_ld4<true>(ln.r + off + lnp_col<SN_VT>(j));
        lnp_row<T, SN_VT, true>(v, ww, pb, ln.bb, P, (int)gridDim.y, (long)M * D, ln.r, ln.b,
                                reinterpret_cast<T *>(ln.y16), ln.y32, off, D, inv_d, ln.eps, red);
    }
}

#define SN_MEMO 8 /* shared-memory sizes remembered per kernel (a forward has 2-3 a kernel) */

/* Blocks of kernel MT an SM holds with smem bytes of dynamic shared memory each, or 0 when the
 * runtime cannot say. Asked of the runtime once per size and remembered (entries smem << 8 |
 * blocks + 1, set once by compare-and-swap; a race asks twice and keeps one of two equal
 * answers), so that a launch inside a graph capture asks nothing of it but the launch: the
 * backend prepares every shape before it captures. The answer is the same on every device of
 * one architecture. */
template <typename T, int MT> static int sn_per_sm(size_t smem)
{
    static std::atomic<unsigned long long> memo[SN_MEMO];
    for (int i = 0; i < SN_MEMO; i++) {
        const unsigned long long v = memo[i].load(std::memory_order_acquire);
        if (v && v >> 8 == smem)
            return (int)(v & 0xff) - 1;
    }
    int per_sm = 0;
    if (cudaFuncSetAttribute(split_small_norm_kernel<T, MT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, split_small_norm_kernel<T, MT>, 32 * SO_WARPS,
                                                      smem) != cudaSuccess) {
        (void)cudaGetLastError(); /* a refusal, not an error: the caller takes the two launches */
        return 0;
    }
    per_sm = per_sm < 0 ? 0 : per_sm > 254 ? 254 : per_sm;
    for (int i = 0; i < SN_MEMO; i++) {
        unsigned long long none = 0;
        if (memo[i].compare_exchange_strong(none, (unsigned long long)smem << 8 | (unsigned)(per_sm + 1),
                                            std::memory_order_acq_rel) ||
            none >> 8 == smem)
            break;
    }
    return per_sm;
}

/* Whether a grid of nb blocks of kernel MT fits the device KN_GRID_SYNC_SHARERS times at once
 * (kernels/grid_sync.cuh), with smem bytes of dynamic shared memory each. */
template <typename T, int MT> static int sn_fits(size_t smem, int nb, int sms)
{
    return (long)sn_per_sm<T, MT>(smem) * sms >= (long)KN_GRID_SYNC_SHARERS * nb;
}

template <typename T, int MT>
static int sn_launch(kn_stream ks, const void *X, const void *W, float *P, int M, int N, int K, int S,
                     const kn_parts_norm *ln, unsigned *sync)
{
    const size_t smem = so_smem(MT, K / S);
    KN_CUDA(cudaFuncSetAttribute(split_small_norm_kernel<T, MT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem));
    cudaLaunchAttribute at[2];
    const cudaLaunchConfig_t cfg = so_config(at, dim3((unsigned)(N / SO_NT), (unsigned)S), dim3(32 * SO_WARPS), smem,
                                             ks.s, 1, ks.s && ks.pdl);
    KN_CUDA(cudaLaunchKernelEx(&cfg, split_small_norm_kernel<T, MT>, (const T *)X, (const T *)W, P, M, K, *ln, sync));
    return 0;
}

extern "C" int kn_gemm_split_small_norm_ok(kn_dtype wdt, const void *X, const void *W, const float *P, int M, int N,
                                           int K, int S, const kn_parts_norm *ln)
{
    kn_dev d;
    if (!ln || !ln->r || !ln->w || (!ln->y16 && !ln->y32) || (ln->y16 && ln->ydt != wdt) ||
        N > SN_VT * 4 * 32 * SO_WARPS || !kn_gemm_split_small_ok(wdt, X, W, P, M, N, K, S) ||
        !kn_layernorm_parts_ok(ln->r, P, (long)M * N, S, ln->bb, ln->w, ln->b, ln->y16, ln->y32, N) || kn_dev_info(&d))
        return 0;
    const size_t smem = so_smem((M + 15) / 16, K / S);
    int fits = 0;
    KN_DISPATCH16(wdt, T, fits = so_on_mt(M, [&](auto mt) {
        return sn_fits<T, decltype(mt)::value>(smem, (N / SO_NT) * S, d.sms);
    }));
    return fits;
}

extern "C" int kn_gemm_split_small_norm(kn_stream ks, const void *X, const void *W, kn_dtype wdt, float *P, int M,
                                        int N, int K, int S, const kn_parts_norm *ln, unsigned *sync)
{
    KN_REQUIRE(sync && kn_gemm_split_small_norm_ok(wdt, X, W, P, M, N, K, S, ln),
               "small split product with its LayerNorm: needs kn_gemm_split_small_ok, kn_layernorm_parts_ok over N "
               "<= 1024 columns, y16 in W's dtype, the sync words, and a grid that fits the device twice at once");
    int rc;
    KN_DISPATCH16(wdt, T, rc = so_on_mt(M, [&](auto mt) {
        return sn_launch<T, decltype(mt)::value>(ks, X, W, P, M, N, K, S, ln, sync);
    }));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}
