/*
 * gemm_wg.cu - a warpgroup (wgmma) GEMM for large packs on Hopper, with the
 * epilogues cuBLASLt cannot run: GeGLU over Wi's two halves, and the fp32
 * residual add.
 *
 * Why: at 8 x 512 tokens and beyond, the GeGLU pass after the Wi GEMM reads
 * Wi's whole 16-bit output back from memory (8.6% of the forward at 8 x 512
 * under Nsight Compute); computing it from the accumulators saves that pass
 * and Wi's output store, if the GEMM itself keeps pace with cuBLASLt.
 *
 * Design (the warp-specialized ping-pong Hopper GEMM of CUTLASS's sm90
 * kernels, kept to one tile shape): a persistent grid of one CTA per SM walks
 * 64 x 256 output tiles; warpgroup 0 is the producer, one thread of it issuing
 * TMA loads of X's 64 x 64 and W's 256 x 64 slices (128-byte swizzle) into a
 * ring of 5 stages on mbarriers; warpgroups 1 and 2 take the CTA's tiles in
 * turn, each issuing four m64n256k16 wgmmas a stage from shared memory with
 * fp32 accumulators in registers and releasing a stage once the wgmmas after
 * it were issued, so one stores its tile while the other's wgmmas run. A
 * tile's 256 W rows are two boxes of 128: consecutive rows for a plain
 * product, rows f.. and F + f.. of Wi for GeGLU (so the pair f, F + f is in
 * one thread's registers, columns j and j + 128).
 *
 * Numerics: every output is its K-long fp32 dot product summed in wgmma's
 * order, which depends on K only (not on M or the tile), so a row's bits do not
 * depend on its pack within this kernel. GeGLU rounds both halves to the
 * 16-bit dtype first, then gelu_erf(g) * u in fp32, rounded once: the same
 * operations as the Wi GEMM's 16-bit output followed by kn_geglu.
 */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "kernels/cuda.h"
#include "kernels/cuda_util.cuh"
#include "kernels/hopper.cuh"

#define WG_BM 64        /* tile rows (tokens): one consumer warpgroup's m64 */
#define WG_BN 256       /* tile columns (W rows): two TMA boxes of 128 */
#define WG_HALF 128
#define WG_BK 64        /* k per stage: one 128-byte swizzled row of 16-bit values */
#define WG_STAGES 5
#define WG_THREADS 384
#define WG_A_BYTES (WG_BM * WG_BK * 2)
#define WG_B_BYTES (WG_BN * WG_BK * 2)
#define WG_STAGE_BYTES (WG_A_BYTES + WG_B_BYTES)
#define WG_SMEM (WG_STAGES * WG_STAGE_BYTES + (2 * WG_STAGES + 2) * 8 + 1024)

struct wg_params {
    void *Y;
    int M, ncols;  /* output rows, columns (= Y's row stride) */
    int off1;      /* W row of a tile's second box, relative to its first */
    int step;      /* W rows between the first boxes of neighbouring tile columns */
    int m_pairs, tiles, k_blocks; /* tiles: pairs of 64-row tiles (one per CTA of a cluster) x columns */
};

#if KN_HOPPER

/* The CTA's part of cluster tile t: its 64 rows and the tile's first W row. */
__device__ __forceinline__ void wg_tile(const wg_params &p, int t, uint32_t rank, int *m0, int *n0)
{
    *m0 = (2 * (t % p.m_pairs) + (int)rank) * WG_BM;
    *n0 = (t / p.m_pairs) * p.step;
}

/* One elected thread of the producer warpgroup: the ring's loads for every
 * tile this CTA takes, in order, waiting for a stage to be released (by both
 * CTAs of the cluster: each writes half of W's slice into the other's ring)
 * before refilling it. */
__device__ __forceinline__ void wg_produce(const CUtensorMap *xmap, const CUtensorMap *wmap, const wg_params &p,
                                           unsigned char *ring, uint64_t *full, uint64_t *empty, uint32_t rank)
{
    int s = 0;
    uint32_t ph = 0;
    for (int t = blockIdx.x / 2; t < p.tiles; t += gridDim.x / 2) {
        int m0, n0;
        wg_tile(p, t, rank, &m0, &n0);
        for (int kb = 0; kb < p.k_blocks; kb++) {
            kn_mbar_wait(&empty[s], ph ^ 1);
            unsigned char *a = ring + (size_t)s * WG_STAGE_BYTES, *b = a + WG_A_BYTES;
            kn_mbar_arrive_tx(&full[s], WG_STAGE_BYTES);
            kn_tma_load_2d(a, xmap, kb * WG_BK, m0, &full[s]);
            kn_tma_load_2d_mc(b + rank * (WG_B_BYTES / 2), wmap, kb * WG_BK, n0 + (int)rank * p.off1, &full[s], 3);
            if (++s == WG_STAGES)
                s = 0, ph ^= 1;
        }
    }
}

/* acc = one 64 x 256 tile, X . W^T over all of K, from the ring's stages
 * g0, g0 + 1, ... (g counts the CTA's stage loads from 0); each stage is
 * released in both CTAs of the cluster (threads 0 and 1 arrive at rank 0's
 * and rank 1's barrier). */
template <typename T>
__device__ __forceinline__ void wg_mainloop(float (&acc)[128], const wg_params &p, unsigned char *ring,
                                            uint64_t *full, uint64_t *empty, unsigned g0)
{
#pragma unroll
    for (int i = 0; i < 128; i++)
        acc[i] = 0.0f;
    int prev = -1;
    for (int kb = 0; kb < p.k_blocks; kb++) {
        const unsigned g = g0 + kb;
        const int s = g % WG_STAGES;
        kn_mbar_wait(&full[s], (g / WG_STAGES) & 1);
        const unsigned char *a = ring + (size_t)s * WG_STAGE_BYTES, *b = a + WG_A_BYTES;
        kn_wg_fence();
#pragma unroll
        for (int j = 0; j < WG_BK / 16; j++)
            kn_wg_mma256<T>(acc, kn_wg_desc_sw128(a + 32 * j), kn_wg_desc_sw128(b + 32 * j));
        kn_wg_commit();
        /* the stage before this one is read once its wgmmas are done */
        kn_wg_wait<1>();
        if (prev >= 0 && threadIdx.x % 128 < 2)
            kn_mbar_arrive_cluster(&empty[prev], threadIdx.x % 128);
        prev = s;
    }
    kn_wg_wait<0>();
    if (prev >= 0 && threadIdx.x % 128 < 2)
        kn_mbar_arrive_cluster(&empty[prev], threadIdx.x % 128);
}

/* Y[m, n..n+1] += d[0..1] for 8 column pairs at once: the loads are issued
 * before the first add, so their round trips overlap. */
__device__ __forceinline__ void wg_acc8(float *y, int stride_j, const float *d, int stride_d, int n, int ncols)
{
    float2 v[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (n + 8 * j < ncols)
            v[j] = *reinterpret_cast<const float2 *>(y + stride_j * j);
#pragma unroll
    for (int j = 0; j < 8; j++)
        if (n + 8 * j < ncols)
            *reinterpret_cast<float2 *>(y + stride_j * j) =
                make_float2(v[j].x + d[stride_d * j], v[j].y + d[stride_d * j + 1]);
}

/* The epilogues; thread (w, l) of a warpgroup holds rows 16 w + l / 4 (+ 8),
 * columns 8 j + 2 (l % 4) (+ 1) as acc[4 j + {0, 1}] ({2, 3}: the row 8 below). */
template <typename T, int KIND>
__device__ __forceinline__ void wg_store(const float (&acc)[128], const wg_params &p, int m0, int n_tile)
{
    const int l = threadIdx.x % 32, w = (threadIdx.x % 128) / 32;
    const int c0 = 2 * (l % 4);
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int m = m0 + 16 * w + l / 4 + 8 * h;
        if (m >= p.M)
            continue;
        if (KIND == KN_WG_GEGLU) {
            T *y = static_cast<T *>(p.Y) + (size_t)m * p.ncols;
#pragma unroll
            for (int j = 0; j < 16; j++) {
                const int f = n_tile * WG_HALF + 8 * j + c0;
                const float *g = &acc[4 * j + 2 * h], *u = &acc[4 * (j + 16) + 2 * h];
                const float r0 = kn_gelu_erf(kn_f(kn_from<T>(g[0]))) * kn_f(kn_from<T>(u[0]));
                const float r1 = kn_gelu_erf(kn_f(kn_from<T>(g[1]))) * kn_f(kn_from<T>(u[1]));
                if (f < p.ncols)
                    *reinterpret_cast<typename kn_pair<T>::type *>(y + f) = kn_pack<T>(r0, r1);
            }
        } else if (KIND == KN_WG_ACC) {
            const int n0 = n_tile * WG_BN + c0;
            float *y = static_cast<float *>(p.Y) + (size_t)m * p.ncols + n0;
#pragma unroll
            for (int q = 0; q < 4; q++)
                wg_acc8(y + 64 * q, 8, &acc[32 * q + 2 * h], 4, n0 + 64 * q, p.ncols);
        } else {
#pragma unroll
            for (int j = 0; j < 32; j++) {
                const int n = n_tile * WG_BN + 8 * j + c0;
                T *y = static_cast<T *>(p.Y) + (size_t)m * p.ncols + n;
                if (n < p.ncols)
                    *reinterpret_cast<typename kn_pair<T>::type *>(y) = kn_pack<T>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
            }
        }
    }
}

#endif /* KN_HOPPER */

/* Ping-pong: the CTA's tiles alternate between the two consumer warpgroups,
 * so one stores its tile while the other's wgmmas run. Clusters of two CTAs
 * take neighbouring 64-row tiles of the same columns and share W's slice:
 * each loads one 128-row box of it into both rings (TMA multicast), which
 * halves W's reads from L2. */
template <typename T, int KIND>
__global__ void __launch_bounds__(WG_THREADS, 1)
wg_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap, wg_params p)
{
#if KN_HOPPER
    extern __shared__ unsigned char wg_smem[];
    unsigned char *ring = reinterpret_cast<unsigned char *>(((uintptr_t)wg_smem + 1023) & ~(uintptr_t)1023);
    uint64_t *full = reinterpret_cast<uint64_t *>(ring + WG_STAGES * WG_STAGE_BYTES), *empty = full + WG_STAGES;
    uint64_t *turn = empty + WG_STAGES; /* turn[c]: warpgroup c may start its next mainloop */
    const int wg = threadIdx.x / 128;
    const uint32_t rank = kn_cluster_rank();
    if (threadIdx.x == 0) {
        for (int s = 0; s < WG_STAGES; s++) {
            kn_mbar_init(&full[s], 1);
            kn_mbar_init(&empty[s], 2); /* the consuming warpgroup of each CTA */
        }
        kn_mbar_init(&turn[0], 1);
        kn_mbar_init(&turn[1], 1);
        kn_mbar_init_fence();
    }
    kn_cluster_sync(); /* both CTAs' barriers exist before either signals the other */
    kn_pdl_wait();     /* X is the previous kernel's output; Y may be read (ACC) */
    if (wg == 0) {
        if (threadIdx.x == 0)
            wg_produce(&xmap, &wmap, p, ring, full, empty, rank);
    } else {
        /* The mainloops take turns: tile i's starts once tile i - 1's has
         * passed its last stage, so a warpgroup never waits on a stage more
         * than one phase ahead of the ring (a parity wait cannot tell phases
         * two apart). */
        float acc[128];
        const int c = wg - 1;
        unsigned i = c, j = 0; /* the CTA's i-th tile, this warpgroup's j-th */
        for (int t = blockIdx.x / 2 + i * (gridDim.x / 2); t < p.tiles; t += gridDim.x, i += 2, j++) {
            if (i > 0)
                kn_mbar_wait(&turn[c], (c ? j : j - 1) & 1);
            wg_mainloop<T>(acc, p, ring, full, empty, i * (unsigned)p.k_blocks);
            if (threadIdx.x % 128 == 0)
                kn_mbar_arrive(&turn[1 - c]);
            int m0, n0;
            wg_tile(p, t, rank, &m0, &n0);
            wg_store<T, KIND>(acc, p, m0, t / p.m_pairs);
        }
    }
    kn_cluster_sync(); /* no CTA leaves while the other may still write into its ring */
#else
    __trap();
#endif
}

/* ---- host side ------------------------------------------------------------- */

static int wg_sms(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 132;
    }
    return sms;
}

/* cuTensorMapEncodeTiled from the driver (through the runtime: no -lcuda). */
static PFN_cuTensorMapEncodeTiled_v12000 wg_encode_fn(void)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* A row-major [rows, K] 16-bit matrix as boxes of 64 k x box_rows rows in the
 * 128-byte swizzle (rows past the end read as zeros). */
static int wg_map(CUtensorMap *m, kn_dtype dt, const void *base, int rows, int K, int box_rows)
{
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = wg_encode_fn();
    KN_REQUIRE(encode != NULL, "kn_gemm_wg: the driver has no cuTensorMapEncodeTiled");
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)K * 2};
    const cuuint32_t box[2] = {WG_BK, (cuuint32_t)box_rows}, estr[2] = {1, 1};
    const CUresult rc = encode(m, dt == KN_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                               2, const_cast<void *>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    KN_REQUIRE(rc == CUDA_SUCCESS, "kn_gemm_wg: cuTensorMapEncodeTiled refused an operand");
    return 0;
}

template <typename T, int KIND>
static int wg_launch(kn_stream ks, const CUtensorMap &xm, const CUtensorMap &wm, const wg_params &p)
{
    auto kern = wg_kernel<T, KIND>;
    KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, WG_SMEM));
    const int pairs = wg_sms() / 2;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(2 * (p.tiles < pairs ? p.tiles : pairs));
    cfg.blockDim = dim3(WG_THREADS);
    cfg.dynamicSmemBytes = WG_SMEM;
    cfg.stream = ks.s;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = ks.s && ks.pdl ? 2 : 1;
    KN_CUDA(cudaLaunchKernelEx(&cfg, kern, xm, wm, p));
    return 0;
}

extern "C" int kn_gemm_wg_supported(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major == 9 && minor == 0; /* the build's sm_90a code runs on sm_90 only */
}

extern "C" int kn_gemm_wg_ok(kn_dtype dt, const void *X, const void *W, const void *Y, int M, int N, int K, int kind)
{
    return kn_is16(dt) && (kind == KN_WG_STORE || kind == KN_WG_ACC || kind == KN_WG_GEGLU) && M >= 1 &&
           N >= 8 && N % 8 == 0 && K >= WG_BK && K % WG_BK == 0 && kn_aligned16(X) && kn_aligned16(W) &&
           kn_aligned16(Y) && (size_t)M * K < ((size_t)1 << 31) && kn_gemm_wg_supported();
}

extern "C" int kn_gemm_wg(kn_stream ks, kn_dtype dt, const void *X, const void *W, void *Y, int M, int N, int K,
                          int kind)
{
    KN_REQUIRE(X && W && Y, "kn_gemm_wg: NULL operand");
    KN_REQUIRE(kn_gemm_wg_ok(dt, X, W, Y, M, N, K, kind),
               "kn_gemm_wg: needs sm_90, 16-bit operands, 16-byte alignment, N % 8 == 0, K % 64 == 0");
    const int geglu = kind == KN_WG_GEGLU;
    const int w_rows = geglu ? 2 * N : N, step = geglu ? WG_HALF : WG_BN;
    wg_params p = {Y, M, N, geglu ? N : WG_HALF, step, (M + 2 * WG_BM - 1) / (2 * WG_BM), 0, K / WG_BK};
    p.tiles = p.m_pairs * ((N + step - 1) / step);
    CUtensorMap xm, wm;
    if (wg_map(&xm, dt, X, M, K, WG_BM) || wg_map(&wm, dt, W, w_rows, K, WG_HALF))
        return -1;
    int rc = 0;
    if (kind == KN_WG_GEGLU)
        KN_DISPATCH16(dt, T, rc = (wg_launch<T, KN_WG_GEGLU>(ks, xm, wm, p)));
    else if (kind == KN_WG_ACC)
        KN_DISPATCH16(dt, T, rc = (wg_launch<T, KN_WG_ACC>(ks, xm, wm, p)));
    else
        KN_DISPATCH16(dt, T, rc = (wg_launch<T, KN_WG_STORE>(ks, xm, wm, p)));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}
