/*
 * gemm_skinny.cu - Y = epi(X[M,K] . W[N,K]^T) for at most 128 rows of 16-bit X:
 * the encoder's and the head's GEMMs at small batch (one question of 83 tokens
 * runs in a 96-token bucket), with the two element-wise ops that follow them
 * fused into the epilogue.
 *
 * Why: at 96 rows a layer's four GEMMs stream 24 MB of weights for 0.1 MB of
 * activations, so they are bound by how fast the weights arrive, and cuBLASLt's
 * tiles (128 rows x 128 or 256 columns) give the 1024-column projections 4-8
 * blocks on 132 SMs: measured 4.8-7.3 us per GEMM on the H200, 0.4-1.7 TB/s
 * (bench/results/kernels-h200.md). Here every block owns only 64 output
 * columns and K is split over a thread-block cluster of S blocks (S = 1, 2, 4,
 * 8, chosen so the grid covers the SMs), so all SMs stream weights. The S
 * partial tiles are summed through distributed shared memory in rank order:
 * no atomics, so results are bit-identical run to run and between graph replay
 * and eager launches.
 *
 * Layout: 8 warps own 16 rows each (rows past M are zero-filled and never
 * stored; warps whose 16 rows all lie past M skip the math). K is walked in
 * chunks of 64 through SK_STAGES cp.async stages (X: 128 x 64, W: 64 x 64, rows
 * padded to 72 elements so ldmatrix is conflict-free); mma.sync m16n8k16 with
 * fp32 accumulators, fragments by ldmatrix. After the last chunk each block
 * writes its fp32 partial tile to shared memory, the cluster synchronizes, and
 * block q of the cluster finishes rows [q M / S, (q + 1) M / S): sum of the S
 * partials in rank order, then the epilogue, one rounding to the output dtype.
 *
 * Epilogues (each thread handles column c and c + 32 of the block's 64, which
 * is what RoPE and GeGLU pair up):
 *   SK_PLAIN  + bias (fp32 or the weights' dtype), optional ReLU; Y in the
 *             16-bit dtype or fp32 (the residual branches).
 *   SK_ROPE   W = Wqkv [3D, K]; a block's 64 columns are one head of Q, K or V
 *             (head_dim 64); Q and K heads are rotated (NeoX rotate-half, the
 *             fp32 tables of kn_rope, the CPU's products and sums) before the
 *             one rounding. Replaces GEMM + kn_rope: one launch and one
 *             rounding of Q and K fewer.
 *   SK_GEGLU  W = Wi [2F, K]; a block computes 32 columns j of the activated
 *             half and the same 32 of the gate half (F + j) and writes
 *             g[M, F] = GELU_erf(a) * b. Replaces GEMM + kn_geglu: the [M, 2F]
 *             intermediate is never stored and is not rounded.
 * The CPU sibling of each mode is kn_cpu_gemm followed by nothing,
 * kn_cpu_rope or kn_cpu_geglu on the fp32 result (tests/gpu_kernels.c compares
 * them); the rounding differs from the unfused GPU path only by the
 * intermediate rounding that fusion removes.
 *
 * Requirements (kn_gemm_skinny_ok): 1 <= M <= 128, K % 64 == 0, N % 64 == 0
 * (GeGLU: F % 32 == 0), 16-byte aligned X, W and Y, 16-bit X and W of one dtype.
 */
#include <cooperative_groups.h>

#include "kernels/mma.cuh"

namespace cg = cooperative_groups;

#define SK_BM 128     /* rows per block (8 warps x 16) */
#define SK_BN 64      /* output columns per block */
#define SK_BK 64      /* K chunk per stage */
#define SK_LD 72      /* padded shared row, elements (144 bytes: conflict-free ldmatrix) */
#define SK_STAGES 4   /* cp.async pipeline depth */
#define SK_THREADS 256
#define SK_PLD 68     /* fp32 partial tile row (floats) */
#define SK_SMEM ((size_t)SK_STAGES * (SK_BM + SK_BN) * SK_LD * 2)
#define SK_MAX_CLUSTER 8

enum { SK_PLAIN = 0, SK_ROPE = 1, SK_GEGLU = 2 };

struct sk_args {
    const void *X, *W, *bias;
    void *Y;
    int M, N, K;  /* N: W's rows (2F for GeGLU) */
    int S;        /* cluster size: blocks splitting K */
    int relu, b16;
    int D;        /* ROPE: hidden size (columns < 2D are Q and K) */
    int F;        /* GEGLU: intermediate size */
    const int32_t *pos;
    const float *cos_tab, *sin_tab;
};

static_assert(SK_BM * SK_PLD * 4 <= SK_SMEM, "partial tile must fit in the pipeline's shared memory");

/* Stages chunk kc of X (rows < Mr, zero past M) and of the block's 64 W rows. */
template <typename T, int MODE>
__device__ __forceinline__ void sk_stage(T *xs, T *ws, const sk_args &a, int tile, int kc, int Mr)
{
    const T *X = static_cast<const T *>(a.X), *W = static_cast<const T *>(a.W);
    const int k0 = kc * SK_BK;
    /* X: Mr rows x 8 vectors of 16 bytes */
    for (int e = threadIdx.x; e < Mr * 8; e += SK_THREADS) {
        const int r = e >> 3, v = (e & 7) * 8;
        const bool in = r < a.M;
        cp_async16(xs + r * SK_LD + v, X + (size_t)(in ? r : 0) * a.K + k0 + v, in);
    }
    /* W: 64 rows x 8 vectors, 2 per thread */
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const int e = threadIdx.x + i * SK_THREADS, r = e >> 3, v = (e & 7) * 8;
        int n;
        if (MODE == SK_GEGLU)
            n = r < 32 ? tile * 32 + r : a.F + tile * 32 + (r - 32);
        else
            n = tile * SK_BN + r;
        cp_async16(ws + r * SK_LD + v, W + (size_t)n * a.K + k0 + v, true);
    }
}

/* p[0..4) = v rounded; p 16-byte (fp32) or 8-byte (16-bit) aligned. */
__device__ __forceinline__ void sk_store4(float *p, const float v[4])
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
template <typename T> __device__ __forceinline__ void sk_store4(T *p, const float v[4])
{
    typename kn_pair<T>::type h[2] = {kn_pack<T>(v[0], v[1]), kn_pack<T>(v[2], v[3])};
    *reinterpret_cast<uint2 *>(p) = *reinterpret_cast<const uint2 *>(h);
}

template <typename T, typename TY, int MODE>
__global__ void __launch_bounds__(SK_THREADS) sk_kernel(const sk_args a)
{
    extern __shared__ __align__(16) unsigned char sk_smem[];
    T *stage = reinterpret_cast<T *>(sk_smem);
    float *part = reinterpret_cast<float *>(sk_smem); /* reused after the main loop */
    cg::cluster_group cluster = cg::this_cluster();
    const int q = (int)cluster.block_rank(), S = a.S;
    const int tile = blockIdx.x / S;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int Mr = (a.M + 15) & ~15;
    const int nch = a.K / SK_BK, c0 = q * nch / S, c1 = (q + 1) * nch / S;
    const bool active = warp * 16 < a.M;

    float acc[8][4];
#pragma unroll
    for (int i = 0; i < 8; i++)
        acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

#pragma unroll
    for (int s = 0; s < SK_STAGES - 1; s++) {
        if (c0 + s < c1) {
            T *xs = stage + (size_t)s * (SK_BM + SK_BN) * SK_LD;
            sk_stage<T, MODE>(xs, xs + SK_BM * SK_LD, a, tile, c0 + s, Mr);
        }
        cp_async_commit();
    }
    for (int c = c0; c < c1; c++) {
        cp_async_wait<SK_STAGES - 2>();
        __syncthreads(); /* chunk c landed for all; the stage read at c - 1 is free */
        const int pf = c + SK_STAGES - 1;
        if (pf < c1) {
            T *xs = stage + (size_t)((pf - c0) % SK_STAGES) * (SK_BM + SK_BN) * SK_LD;
            sk_stage<T, MODE>(xs, xs + SK_BM * SK_LD, a, tile, pf, Mr);
        }
        cp_async_commit();
        if (!active)
            continue;
        const T *xs = stage + (size_t)((c - c0) % SK_STAGES) * (SK_BM + SK_BN) * SK_LD;
        const T *ws = xs + SK_BM * SK_LD;
#pragma unroll
        for (int kk = 0; kk < SK_BK; kk += 16) {
            uint32_t af[4];
            ldmatrix_x4(af, xs + (warp * 16 + (lane & 15)) * SK_LD + kk + (lane >> 4) * 8);
#pragma unroll
            for (int jj = 0; jj < 4; jj++) { /* n8 tiles 2 jj and 2 jj + 1 */
                uint32_t bf[4];
                ldmatrix_x4(bf, ws + (jj * 16 + (lane & 7) + (lane >> 4) * 8) * SK_LD + kk +
                                    ((lane >> 3) & 1) * 8);
                const uint32_t b0[2] = {bf[0], bf[1]}, b1[2] = {bf[2], bf[3]};
                mma16816<T>(acc[2 * jj], af, b0);
                mma16816<T>(acc[2 * jj + 1], af, b1);
            }
        }
    }
    cp_async_wait<0>();
    __syncthreads(); /* every warp is done with the stages: reuse them for the partial tile */
    if (active) {
        const int r = warp * 16 + (lane >> 2), cc = (lane & 3) * 2;
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            *reinterpret_cast<float2 *>(part + r * SK_PLD + nt * 8 + cc) = make_float2(acc[nt][0], acc[nt][1]);
            *reinterpret_cast<float2 *>(part + (r + 8) * SK_PLD + nt * 8 + cc) =
                make_float2(acc[nt][2], acc[nt][3]);
        }
    }
    cluster.sync(); /* every block's partial is visible to the cluster */

    /* Block q finishes rows [r0, r1); a thread takes 4 columns c..c+3 and their
     * mates c+32..c+35 of one row. All 2 S remote loads are issued before the
     * first add (distributed shared memory costs a round trip each), then summed
     * in rank order. */
    const int r0 = q * a.M / S, r1 = (q + 1) * a.M / S;
    for (int e = threadIdx.x; e < (r1 - r0) * 8; e += SK_THREADS) {
        const int m = r0 + (e >> 3), c = (e & 7) * 4;
        float4 pl[SK_MAX_CLUSTER], ph[SK_MAX_CLUSTER];
#pragma unroll
        for (int s = 0; s < SK_MAX_CLUSTER; s++)
            if (s < S) {
                const float *p = cluster.map_shared_rank(part, s) + m * SK_PLD + c;
                pl[s] = *reinterpret_cast<const float4 *>(p);
                ph[s] = *reinterpret_cast<const float4 *>(p + 32);
            }
        float lo[4] = {0.0f, 0.0f, 0.0f, 0.0f}, hi[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int s = 0; s < SK_MAX_CLUSTER; s++)
            if (s < S) { /* fixed order: deterministic */
                lo[0] += pl[s].x, lo[1] += pl[s].y, lo[2] += pl[s].z, lo[3] += pl[s].w;
                hi[0] += ph[s].x, hi[1] += ph[s].y, hi[2] += ph[s].z, hi[3] += ph[s].w;
            }
        if (MODE == SK_GEGLU) {
            float g[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                g[i] = kn_gelu_erf(lo[i]) * hi[i];
            sk_store4(static_cast<TY *>(a.Y) + (size_t)m * a.F + tile * 32 + c, g);
            continue;
        }
        const int n = tile * SK_BN + c;
        if (MODE == SK_ROPE && n < 2 * a.D) { /* the CPU's products and sums (kn_cpu_rope) */
            const float *ct = a.cos_tab + (size_t)a.pos[m] * KN_ROPE_HALF + c;
            const float *st = a.sin_tab + (size_t)a.pos[m] * KN_ROPE_HALF + c;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float x1 = lo[i], x2 = hi[i], cs = ct[i], sn = st[i];
                lo[i] = __fsub_rn(__fmul_rn(x1, cs), __fmul_rn(x2, sn));
                hi[i] = __fadd_rn(__fmul_rn(x2, cs), __fmul_rn(x1, sn));
            }
        }
        if (MODE == SK_PLAIN && a.bias) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                lo[i] += a.b16 ? kn_f(static_cast<const T *>(a.bias)[n + i])
                               : static_cast<const float *>(a.bias)[n + i];
                hi[i] += a.b16 ? kn_f(static_cast<const T *>(a.bias)[n + 32 + i])
                               : static_cast<const float *>(a.bias)[n + 32 + i];
            }
        }
        if (MODE == SK_PLAIN && a.relu) {
#pragma unroll
            for (int i = 0; i < 4; i++)
                lo[i] = fmaxf(lo[i], 0.0f), hi[i] = fmaxf(hi[i], 0.0f);
        }
        TY *y = static_cast<TY *>(a.Y) + (size_t)m * a.N + n;
        sk_store4(y, lo);
        sk_store4(y + 32, hi);
    }
    cluster.sync(); /* no block leaves while another still reads its partial */
}

static int sk_sms(void)
{
    static int sms = 0; /* the device's SM count, read once (same on every device we serve) */
    if (!sms) {
        int dev = 0, v = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0)
            v = 132;
        sms = v;
    }
    return sms;
}

static int sk_forced_split; /* the benchmark's override (kn_gemm_skinny_force_split); 0: automatic */

extern "C" void kn_gemm_skinny_force_split(int S) { sk_forced_split = S; }

/* Cluster size: the smallest power of two (<= 8, <= the K chunks) whose grid
 * covers the SMs. */
static int sk_split(int tiles, int K)
{
    const int sms = sk_sms(), nch = K / SK_BK;
    if (sk_forced_split > 0)
        return sk_forced_split < nch ? sk_forced_split : nch;
    int S = 1;
    while (S < SK_MAX_CLUSTER && tiles * S < sms && 2 * S <= nch)
        S *= 2;
    return S;
}

template <typename T, typename TY, int MODE> static int sk_launch(cudaStream_t s, const sk_args &a0)
{
    sk_args a = a0;
    const int tiles = MODE == SK_GEGLU ? a.F / 32 : a.N / SK_BN;
    a.S = sk_split(tiles, a.K);
    auto kern = sk_kernel<T, TY, MODE>;
    KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SK_SMEM));
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)a.S;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3((unsigned)(tiles * a.S));
    cfg.blockDim = dim3(SK_THREADS);
    cfg.dynamicSmemBytes = SK_SMEM;
    cfg.stream = s;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    KN_CUDA(cudaLaunchKernelEx(&cfg, kern, a));
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_gemm_skinny_ok(kn_dtype xdt, kn_dtype wdt, int M, int N, int K, const void *X,
                                 const void *W, const void *Y)
{
    return kn_is16(xdt) && xdt == wdt && M >= 1 && M <= SK_BM && K > 0 && K % SK_BK == 0 && N > 0 &&
           N % SK_BN == 0 && kn_aligned16(X) && kn_aligned16(W) && kn_aligned16(Y);
}

static int sk_check(kn_dtype dt, const void *X, const void *W, const void *Y, int M, int N, int K)
{
    KN_REQUIRE(X && W && Y, "NULL buffer");
    KN_REQUIRE(kn_gemm_skinny_ok(dt, dt, M, N, K, X, W, Y),
               "skinny GEMM needs 16-bit X/W, 1 <= M <= 128, K % 64 == 0, N % 64 == 0, 16-byte aligned buffers");
    return 0;
}

extern "C" int kn_gemm_skinny(cudaStream_t s, kn_dtype dt, const void *X, const void *W, const void *bias,
                              kn_dtype bdt, void *Y, kn_dtype ydt, int M, int N, int K, int relu)
{
    if (sk_check(dt, X, W, Y, M, N, K))
        return -1;
    KN_REQUIRE(ydt == dt || ydt == KN_F32, "skinny GEMM output must be the 16-bit dtype or fp32");
    KN_REQUIRE(!bias || bdt == dt || bdt == KN_F32, "bias dtype must be fp32 or the weights' dtype");
    sk_args a = {};
    a.X = X, a.W = W, a.bias = bias, a.Y = Y, a.M = M, a.N = N, a.K = K, a.relu = relu != 0;
    a.b16 = bias && bdt != KN_F32;
    if (ydt == KN_F32)
        KN_DISPATCH16(dt, T, return sk_launch<T, float, SK_PLAIN>(s, a));
    KN_DISPATCH16(dt, T, return sk_launch<T, T, SK_PLAIN>(s, a));
    return -1;
}

extern "C" int kn_gemm_skinny_rope(cudaStream_t s, kn_dtype dt, const void *X, const void *W, void *qkv, int M,
                                   int D, int K, const int32_t *pos, const float *cos_tab, const float *sin_tab)
{
    if (sk_check(dt, X, W, qkv, M, 3 * D, K))
        return -1;
    KN_REQUIRE(D % KN_HEAD_DIM == 0, "hidden size must be a multiple of the head dim (64)");
    KN_REQUIRE(pos && cos_tab && sin_tab, "NULL RoPE positions or tables");
    sk_args a = {};
    a.X = X, a.W = W, a.Y = qkv, a.M = M, a.N = 3 * D, a.K = K, a.D = D;
    a.pos = pos, a.cos_tab = cos_tab, a.sin_tab = sin_tab;
    KN_DISPATCH16(dt, T, return sk_launch<T, T, SK_ROPE>(s, a));
    return -1;
}

extern "C" int kn_gemm_skinny_geglu(cudaStream_t s, kn_dtype dt, const void *X, const void *W, void *g, int M,
                                    int F, int K)
{
    if (sk_check(dt, X, W, g, M, 2 * F, K))
        return -1;
    KN_REQUIRE(F % 32 == 0, "GeGLU width must be a multiple of 32");
    sk_args a = {};
    a.X = X, a.W = W, a.Y = g, a.M = M, a.N = 2 * F, a.K = K, a.F = F;
    KN_DISPATCH16(dt, T, return sk_launch<T, T, SK_GEGLU>(s, a));
    return -1;
}
