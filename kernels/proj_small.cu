/*
 * proj_small.cu - the encoder's two projections of the smallest packs with the
 * elementwise step after them in their epilogue: Wqkv with RoPE
 * (kn_proj_small_rope) and Wi with GeGLU (kn_proj_small_geglu), on the
 * small split kernel's pieces (kernels/gemm_small.cuh) over the whole of K.
 *
 * Each saves the forward a launch and a round trip of the projection's output
 * through memory. A block's weight rows are pairs, read in place (no reordered
 * copy of the weights), the pairs' first rows then their second: for Wqkv, dims
 * j and j + 32 of one head, so RoPE rotates inside the block; for Wi, gate row f
 * and up row F + f, so GeGLU forms one output a pair. Wi takes 20 pairs a block,
 * not 16: ceil(F / 20) blocks make one wave on the H200's 132 SMs where F / 16
 * (164) made two once a block's X no longer let two share an SM (the forward
 * with both fused up to 64 tokens, X by bulk copies: -5% at 16 tokens, -9% at 40;
 * Wqkv in 12-pair blocks, 128 of them against 96, was 2.5% slower at 16 tokens:
 * bench/results/experiments/bulk-x/). For mmBERT's F = 1152 it makes 58 blocks
 * where 16 pairs made 72, not yet timed. X arrives by bulk copies, as in the
 * split kernel.
 *
 * Numerics: the block's fp32 product is rounded to the serving dtype first,
 * exactly as a GEMM writes it and as kn_rope and kn_geglu read it, then RoPE's
 * rotation (kn_rope_rot's operations: no FMA contraction) or gelu(x1) x2 in fp32,
 * rounded once. So the outputs equal kn_rope / kn_geglu of this kernel's own
 * product; against cuBLASLt's product they differ only by its fp32 summation
 * order. The RoPE angles (positions staged before the forward's first kernel,
 * tables made at start-up) are read before the programmatic wait, like the
 * weights.
 *
 * Rows: at most KN_PROJ_SMALL_MAXM and as many as the shared memory holds
 * (K = 1024: 64).
 */
#include "kernels/gemm_small.cuh"
#include "kernels/rope.cuh"

#define PS_THREADS (32 * SO_WARPS)
/* Weight rows a Wi block: 40 (20 pairs), ceil(F / 20) blocks (132 for the English model);
 * 32 made 164, a second wave from 32 rows of X, when two blocks no longer fit an SM. */
#define PS_GEGLU_NT 40
#define PS_GEGLU_P (PS_GEGLU_NT / 2)
/* Weight rows a Wqkv block: 32 (16 pairs), 3 D / 32 blocks (96 for the English model);
 * 24 (12 pairs, 128 blocks) was slower. Any multiple of 8 whose half is a multiple of 4. */
#define PS_ROPE_NT 32
#define PS_ROPE_P (PS_ROPE_NT / 2)
/* Epilogue groups (a row's 4 pairs) a thread takes at most. */
#define PS_ROPE_G ((KN_PROJ_SMALL_MAXM * (PS_ROPE_P / 4) + PS_THREADS - 1) / PS_THREADS)

enum { PS_ROPE, PS_GEGLU };

/* The W rows of a block: pairs p = P b + r % P of Q, K and V together (dims j and
 * j + 32 of head p / 32, j = p % 32), the first rows then the second. */
__device__ __forceinline__ int ps_rope_col(int p) { return (p / KN_ROPE_HALF) * KN_HEAD_DIM + p % KN_ROPE_HALF; }
struct ps_rope_rows {
    int b;
    __device__ __forceinline__ int operator()(int r) const
    {
        return ps_rope_col(PS_ROPE_P * b + r % PS_ROPE_P) + KN_ROPE_HALF * (r / PS_ROPE_P);
    }
};
struct ps_geglu_rows { /* pairs past F (the last block) read row F - 1's pair; their outputs are not stored */
    int b, F;
    __device__ __forceinline__ int operator()(int r) const
    {
        const int f = PS_GEGLU_P * b + r % PS_GEGLU_P;
        return (f < F ? f : F - 1) + F * (r / PS_GEGLU_P);
    }
};

/* This thread's epilogue groups g = thread + 128 k: row g / (P / 4), pairs
 * p = P b + 4 (g % (P / 4)) .. + 3, which never straddle a head (P % 4 == 0). */
struct ps_angles {
    float4 c[PS_ROPE_G], s[PS_ROPE_G];
};

__device__ __forceinline__ void ps_load_angles(ps_angles &a, const int32_t *pos, const float *ct, const float *st,
                                               int M, int b)
{
    constexpr int Q = PS_ROPE_P / 4;
#pragma unroll
    for (int k = 0; k < PS_ROPE_G; k++) {
        const int g = threadIdx.x + PS_THREADS * k;
        if (g < Q * M) {
            const size_t o = (size_t)pos[g / Q] * KN_ROPE_HALF + (PS_ROPE_P * b + 4 * (g % Q)) % KN_ROPE_HALF;
            a.c[k] = *reinterpret_cast<const float4 *>(ct + o);
            a.s[k] = *reinterpret_cast<const float4 *>(st + o);
        }
    }
}

template <typename T> __device__ __forceinline__ float ps_round(float x) { return kn_f(kn_from<T>(x)); }

/* Pairs [c, c + 4) of row m from the warps' tiles in red (a block of NT rows: P = NT / 2
 * pairs, first rows at column c, second at c + P), each product rounded to T as a GEMM
 * writes it. */
template <typename T, int MT, int NT>
__device__ __forceinline__ void ps_pairs4(const float *red, int m, int c, float (&x1)[4], float (&x2)[4])
{
    const float4 a = so_sum4<MT, NT>(red, m, c), z = so_sum4<MT, NT>(red, m, c + NT / 2);
    x1[0] = ps_round<T>(a.x), x1[1] = ps_round<T>(a.y), x1[2] = ps_round<T>(a.z), x1[3] = ps_round<T>(a.w);
    x2[0] = ps_round<T>(z.x), x2[1] = ps_round<T>(z.y), x2[2] = ps_round<T>(z.z), x2[3] = ps_round<T>(z.w);
}

template <typename T> __device__ __forceinline__ void ps_store4(T *p, const float v[4])
{
    typename kn_pair<T>::type h[2] = {kn_pack<T>(v[0], v[1]), kn_pack<T>(v[2], v[3])};
    *reinterpret_cast<uint2 *>(p) = *reinterpret_cast<const uint2 *>(h);
}

/* Block b's outputs from the warps' tiles in red to Y [M, 3 D]: pair p's dims at
 * ps_rope_col(p) and 32 more, rotated when p < D (Q and K, not V). */
template <typename T, int MT>
__device__ __forceinline__ void ps_epilogue_rope(const float *red, T *Y, int M, int b, int D, const ps_angles &an)
{
    constexpr int P = PS_ROPE_P, Q = P / 4;
#pragma unroll
    for (int k = 0; k < PS_ROPE_G; k++) {
        const int g = threadIdx.x + PS_THREADS * k;
        if (g >= Q * M)
            break;
        const int m = g / Q, c = 4 * (g % Q), p = P * b + c;
        float x1[4], x2[4];
        ps_pairs4<T, MT, PS_ROPE_NT>(red, m, c, x1, x2);
        if (p < D) {
            const float cc[4] = {an.c[k].x, an.c[k].y, an.c[k].z, an.c[k].w};
            const float ss[4] = {an.s[k].x, an.s[k].y, an.s[k].z, an.s[k].w};
#pragma unroll
            for (int e = 0; e < 4; e++)
                kn_rope_rot(x1[e], x2[e], cc[e], ss[e], &x1[e], &x2[e]);
        }
        T *y = Y + (size_t)m * 3 * D + ps_rope_col(p);
        ps_store4<T>(y, x1);
        ps_store4<T>(y + KN_ROPE_HALF, x2);
    }
}

/* Block b's GeGLU outputs, columns [P b, P b + P) of G [M, F] (P = PS_GEGLU_P pairs),
 * from the warps' tiles in red (gate f at column f - P b, up f at P more). */
template <typename T, int MT>
__device__ __forceinline__ void ps_epilogue_geglu(const float *red, T *G, int M, int b, int F)
{
    constexpr int P = PS_GEGLU_P;
    for (int g = threadIdx.x; g < M * (P / 4); g += PS_THREADS) {
        const int m = g / (P / 4), c = 4 * (g % (P / 4));
        if (P * b + c >= F)
            continue;
        float x1[4], x2[4];
        ps_pairs4<T, MT, PS_GEGLU_NT>(red, m, c, x1, x2);
        float o[4];
#pragma unroll
        for (int e = 0; e < 4; e++)
            o[e] = kn_gelu_erf(x1[e]) * x2[e];
        ps_store4<T>(G + (size_t)m * F + P * b + c, o);
    }
}

template <typename T, int MT>
__global__ void __launch_bounds__(PS_THREADS, 1)
proj_rope_kernel(const T *__restrict__ X, const T *__restrict__ W, T *__restrict__ Y, int M, int K, int D,
                 const int32_t *__restrict__ pos, const float *__restrict__ ct, const float *__restrict__ st)
{
    extern __shared__ __align__(128) unsigned char sm[];
    const int b = blockIdx.x;
    ps_angles an;
    if (PS_ROPE_P * b < D) /* a block with Q or K pairs */
        ps_load_angles(an, pos, ct, st, M, b);
    float acc[MT][PS_ROPE_NT / 8][4];
    unsigned char *xs = so_block<T, MT, true, PS_ROPE_NT>(
        sm, W, M, K, K, ps_rope_rows{b}, 0,
        [&](unsigned char *x, uint64_t *bar) { so_load_x_bulk<T>(X, x, bar, M, K, K, 0); }, acc);
    float *red = reinterpret_cast<float *>(xs);
    so_tiles<MT, PS_ROPE_NT>(red, acc);
    ps_epilogue_rope<T, MT>(red, Y, M, b, D, an);
}

template <typename T, int MT>
__global__ void __launch_bounds__(PS_THREADS, 1)
proj_geglu_kernel(const T *__restrict__ X, const T *__restrict__ W, T *__restrict__ G, int M, int K, int F)
{
    extern __shared__ __align__(128) unsigned char sm[];
    const int b = blockIdx.x;
    float acc[MT][PS_GEGLU_NT / 8][4];
    unsigned char *xs = so_block<T, MT, true, PS_GEGLU_NT>(
        sm, W, M, K, K, ps_geglu_rows{b, F}, 0,
        [&](unsigned char *x, uint64_t *bar) { so_load_x_bulk<T>(X, x, bar, M, K, K, 0); }, acc);
    float *red = reinterpret_cast<float *>(xs);
    so_tiles<MT, PS_GEGLU_NT>(red, acc);
    ps_epilogue_geglu<T, MT>(red, G, M, b, F);
}

template <typename T, int MT, int EPI>
static int ps_launch(kn_stream ks, const void *X, const void *W, void *Y, int M, int K, int D, int F,
                     const int32_t *pos, const float *ct, const float *st)
{
    if constexpr (EPI == PS_ROPE) {
        const size_t smem = so_smem(MT, K, PS_ROPE_NT);
        auto kern = proj_rope_kernel<T, MT>;
        KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        KN_CUDA(kn_launch(kern, dim3((unsigned)(3 * D / 2 / PS_ROPE_P)), dim3(PS_THREADS), smem, ks, (const T *)X,
                          (const T *)W, (T *)Y, M, K, D, pos, ct, st));
    } else {
        const size_t smem = so_smem(MT, K, PS_GEGLU_NT);
        auto kern = proj_geglu_kernel<T, MT>;
        KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        KN_CUDA(kn_launch(kern, dim3((unsigned)((F + PS_GEGLU_P - 1) / PS_GEGLU_P)), dim3(PS_THREADS), smem, ks,
                          (const T *)X, (const T *)W, (T *)Y, M, K, F));
    }
    return 0;
}

template <typename T, int EPI>
static int ps_dispatch(kn_stream ks, const void *X, const void *W, void *Y, int M, int K, int D, int F,
                       const int32_t *pos, const float *ct, const float *st)
{
    switch ((M + 15) / 16) {
    case 1: return ps_launch<T, 1, EPI>(ks, X, W, Y, M, K, D, F, pos, ct, st);
    case 2: return ps_launch<T, 2, EPI>(ks, X, W, Y, M, K, D, F, pos, ct, st);
    case 3: return ps_launch<T, 3, EPI>(ks, X, W, Y, M, K, D, F, pos, ct, st);
    default: return ps_launch<T, 4, EPI>(ks, X, W, Y, M, K, D, F, pos, ct, st);
    }
}

extern "C" int kn_proj_small_ok(kn_dtype wdt, int M, int K)
{
    kn_dev d;
    if (!kn_is16(wdt) || M < 1 || M > KN_PROJ_SMALL_MAXM || K < 16 || K % 16 != 0 || kn_dev_info(&d))
        return 0;
    const int nt = PS_GEGLU_NT > PS_ROPE_NT ? PS_GEGLU_NT : PS_ROPE_NT;
    return d.major == 9 && so_smem((M + 15) / 16, K, nt) <= (size_t)d.smem_optin;
}

static int ps_check(kn_dtype wdt, const void *X, const void *W, const void *Y, int M, int K)
{
    KN_REQUIRE(kn_proj_small_ok(wdt, M, K),
               "small projection: needs a compute capability 9 device, 16-bit W, 1 <= M <= 64, K % 16 == 0 and "
               "the shared memory");
    KN_REQUIRE(X && W && Y && kn_aligned16(X) && kn_aligned16(W) && kn_aligned16(Y),
               "small projection: NULL or misaligned operand");
    return 0;
}

extern "C" int kn_proj_small_rope(kn_stream ks, const void *X, const void *W, kn_dtype wdt, void *Y, int M, int D,
                                  int K, const int32_t *pos, const float *cos_tab, const float *sin_tab)
{
    if (ps_check(wdt, X, W, Y, M, K))
        return -1;
    KN_REQUIRE(D > 0 && D % KN_HEAD_DIM == 0, "small projection with RoPE: D must be a positive multiple of 64");
    KN_REQUIRE(pos && cos_tab && sin_tab && kn_aligned16(cos_tab) && kn_aligned16(sin_tab),
               "small projection with RoPE: NULL positions or misaligned tables");
    int rc;
    KN_DISPATCH16(wdt, T, rc = ps_dispatch<T, PS_ROPE>(ks, X, W, Y, M, K, D, 0, pos, cos_tab, sin_tab));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_proj_small_geglu(kn_stream ks, const void *X, const void *W, kn_dtype wdt, void *G, int M, int F,
                                   int K)
{
    if (ps_check(wdt, X, W, G, M, K))
        return -1;
    KN_REQUIRE(F > 0 && F % 16 == 0, "small projection with GeGLU: F must be a positive multiple of 16");
    int rc;
    KN_DISPATCH16(wdt, T, rc = ps_dispatch<T, PS_GEGLU>(ks, X, W, G, M, K, 0, F, NULL, NULL, NULL));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}
