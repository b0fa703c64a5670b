/*
 * gemm.cu - Y[M,N] = epi(X[M,K] . W[N,K]^T + bias) on the GPU, fp32 accumulation:
 * the launcher (kn_gemm) and our own kernels. The cuBLASLt path (plans,
 * heuristics, tuning, the tuning file) is kernels/gemm_lt.cu, reached through
 * kernels/gemm_internal.cuh.
 *
 * Two paths behind one launcher (kn_gemm):
 *   - cuBLASLt for 16-bit X and W with aligned K, N and pointers
 *     (kn_gemm_uses_cublaslt; gemm_lt.cu says how each shape's algorithm is
 *     chosen). cuBLASLt's GELU epilogue is the tanh approximation, not the erf
 *     form the model needs, so an erf-GELU GEMM runs cuBLASLt with bias, then
 *     one in-place pass of erf GELU over Y (gelu_pass; what
 *     F.gelu(F.linear(x)) does in PyTorch: with a 16-bit Y the pre-activation is
 *     rounded once more than in a fused epilogue). A shape that cuBLASLt
 *     refuses falls back to the own kernel.
 *   - our own kernels for the rest (fp32 X for the head's scorer and act head,
 *     K not a multiple of 8 such as the act head's d + 4, shapes cuBLASLt
 *     refuses). Every fp32-X product, and 16-bit X up to 64 rows (the head's
 *     gathered rows at small batch), runs a row-streaming kernel: each warp
 *     owns 2 output columns and one of up to 8 slices of K, streams their
 *     weight rows once per 8 rows of X with 16-byte loads (8-, 4- or 2-byte
 *     when K or the alignment does not allow them), lanes split the slice, a
 *     fixed xor tree and then the slices in order sum them, and blocks along y
 *     walk groups of 8 rows; this keeps all SMs streaming weights where 64 x 64
 *     tiles would leave most idle, and a row's bits do not depend on M. 16-bit
 *     X beyond 64 rows: output tiles of 64 x 64 like the CPU specialization
 *     (kernels/gemm_cpu.c) on the tensor cores (WMMA 16x16x16, four warps of
 *     32 x 32), K walked in chunks, predicated loads that fill zeros past M, N
 *     and K (zero products add nothing, so any M, N, K works and nothing is
 *     read out of bounds), epilogue after the last chunk: + bias, GELU/ReLU,
 *     rounding to the output dtype, predicated stores (or, with KN_EPI_ACC,
 *     the fp32 add into what Y holds: cuBLASLt's beta = 1). W is promoted to
 *     fp32 exactly.
 * The own kernels serve the head's small GEMMs; they are not meant to replace
 * cuBLASLt on the encoder's large GEMMs (bench/bench_kernels.cu measures both:
 * the tiled tensor-core kernel reaches ~14% of the bf16 ceiling, measured).
 */
#include <stdlib.h>
#include <string.h>

#include <mma.h>

#include "kernels/cuda_util.cuh"
#include "kernels/gemm_internal.cuh"

#define GEMM_TM 64 /* block tile rows (M), as the CPU */
#define GEMM_TN 64 /* block tile columns (N), as the CPU */
#define GEMM_TK 32 /* K chunk staged in shared memory (tensor-core kernel) */
#define GEMM_PAD 8 /* 16-bit elements of row padding (keeps 32-byte WMMA alignment) */

__device__ __forceinline__ float gemm_epi(float v, int epi)
{
    if (epi == KN_EPI_GELU)
        return kn_gelu_erf(v);
    if (epi == KN_EPI_RELU)
        return v > 0.0f ? v : 0.0f;
    return v;
}

/* Stores one output (v has its bias): epi(v), or for KN_EPI_ACC *y + v in
 * fp32 (Y read only then), as the CPU's epilogue. */
template <typename TY> __device__ __forceinline__ void gemm_put(TY *y, float v, int epi)
{
    *y = kn_from<TY>(epi == KN_EPI_ACC ? kn_f(*y) + v : gemm_epi(v, epi));
}

/* ---- own kernel, 16-bit X: tensor cores ------------------------------------ */

/* Stages rows [r0, r0+64) x cols [k0, k0+32) of A[rows, K] into s (zero-filled
 * past rows/K). VEC: 16-byte loads (K % 8 == 0 and A 16-byte aligned). */
template <typename T, bool VEC>
__device__ __forceinline__ void gemm_stage(T (*s)[GEMM_TK + GEMM_PAD], const T *__restrict__ A,
                                           int rows, int K, int r0, int k0)
{
    if (VEC) {
        for (int e = threadIdx.x; e < GEMM_TM * GEMM_TK / 8; e += blockDim.x) {
            const int r = e / (GEMM_TK / 8), c = (e % (GEMM_TK / 8)) * 8;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (r0 + r < rows && k0 + c < K)
                v = *reinterpret_cast<const uint4 *>(A + (size_t)(r0 + r) * K + k0 + c);
            *reinterpret_cast<uint4 *>(&s[r][c]) = v;
        }
    } else {
        for (int e = threadIdx.x; e < GEMM_TM * GEMM_TK; e += blockDim.x) {
            const int r = e / GEMM_TK, c = e % GEMM_TK;
            T v = kn_from<T>(0.0f);
            if (r0 + r < rows && k0 + c < K)
                v = A[(size_t)(r0 + r) * K + k0 + c];
            s[r][c] = v;
        }
    }
}

/* bias[n] as fp32: an fp32 vector, or (b16) one in the weights' 16-bit dtype. */
template <typename T> __device__ __forceinline__ float gemm_bias(const void *bias, int b16, int n)
{
    return b16 ? kn_f(static_cast<const T *>(bias)[n]) : static_cast<const float *>(bias)[n];
}

template <typename T, typename TY, bool VEC>
__global__ void __launch_bounds__(128) gemm_tc_kernel(const T *__restrict__ X, const T *__restrict__ W,
                                                      const void *__restrict__ bias, int b16, TY *__restrict__ Y,
                                                      int M, int N, int K, int epi)
{
    kn_pdl_wait();
    using namespace nvcuda;
    __shared__ __align__(32) T xs[GEMM_TM][GEMM_TK + GEMM_PAD];
    __shared__ __align__(32) T ws[GEMM_TN][GEMM_TK + GEMM_PAD];
    __shared__ __align__(32) float cs[GEMM_TM][GEMM_TN + 4];
    const int m0 = blockIdx.y * GEMM_TM, n0 = blockIdx.x * GEMM_TN;
    const int warp = threadIdx.x / 32, wm = (warp / 2) * 32, wn = (warp % 2) * 32;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += GEMM_TK) {
        gemm_stage<T, VEC>(xs, X, M, K, m0, k0);
        gemm_stage<T, VEC>(ws, W, N, K, n0, k0);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < GEMM_TK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[2];
#pragma unroll
            for (int i = 0; i < 2; i++)
                wmma::load_matrix_sync(a[i], &xs[wm + 16 * i][kk], GEMM_TK + GEMM_PAD);
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::load_matrix_sync(b[j], &ws[wn + 16 * j][kk], GEMM_TK + GEMM_PAD);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&cs[wm + 16 * i][wn + 16 * j], acc[i][j], GEMM_TN + 4,
                                    wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < GEMM_TM * GEMM_TN; e += blockDim.x) {
        const int r = e / GEMM_TN, c = e % GEMM_TN;
        if (m0 + r < M && n0 + c < N) {
            float v = cs[r][c];
            if (bias)
                v += gemm_bias<T>(bias, b16, n0 + c);
            gemm_put(&Y[(size_t)(m0 + r) * N + n0 + c], v, epi);
        }
    }
}

/* ---- own kernel: weight streaming, every fp32-X product and 16-bit X up to 64 rows ---- */

/* Each warp owns ROWS_NC output columns and one of S slices of K (S warps per
 * column pair, S from K alone); each lane sums its strided share of the slice
 * for ROWS_MG rows at a time, the warp's butterfly adds the lanes, and the S
 * partial sums are added in slice order through shared memory. A row's bits
 * depend on K and V only, never on M or on which block ran it, so a row scored
 * alone and the same row in any pack agree. Blocks along y walk separate groups
 * of rows, so a few hundred rows still fill the GPU.
 * Why K is split: under Nsight Compute the scorer's 16 x 1024 x 1024 product
 * with one warp per column pair over all of K ran ~2,000 instructions a warp
 * at 12.6 cycles each (2 warps per scheduler, stalled on their own loads:
 * latency, not bytes; bench/results/experiments/README.md, "row-streaming
 * GEMM"). Splitting K gives S times the warps, each with a chain S times
 * shorter. */
#define ROWS_MAXM 64 /* 16-bit X that cuBLASLt does not take: up to this many rows here, beyond the tiled kernel */
#define ROWS_MG 8    /* rows per pass over the weights */
#define ROWS_NC 2    /* output columns per warp */
#define ROWS_WARPS 8 /* warps per block: ROWS_WARPS / S column pairs x S slices of K */
#define ROWS_BLOCKS_PER_SM 8 /* blocks at most, unless one row of blocks already has more */

/* v[0..V) = p[0..V) as fp32 (p aligned to V elements). */
template <int V, typename T> __device__ __forceinline__ void ldv(const T *p, float v[V])
{
    if constexpr (V == 8) {
        if constexpr (sizeof(T) == 4) {
            const float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
            v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
        } else {
            kn_load8(p, v);
        }
    } else if constexpr (V == 4) {
        if constexpr (sizeof(T) == 4) {
            const float4 a = *reinterpret_cast<const float4 *>(p);
            v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
        } else {
            struct __align__(8) pairs { typename kn_pair<T>::type lo, hi; };
            const pairs u = *reinterpret_cast<const pairs *>(p); /* one 8-byte load */
            const float2 a = kn_f2(u.lo), b = kn_f2(u.hi);
            v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
        }
    } else if constexpr (V == 2) {
        if constexpr (sizeof(T) == 4) {
            const float2 a = *reinterpret_cast<const float2 *>(p);
            v[0] = a.x, v[1] = a.y;
        } else {
            const float2 a = kn_f2(*reinterpret_cast<const typename kn_pair<T>::type *>(p));
            v[0] = a.x, v[1] = a.y;
        }
    } else {
        v[0] = kn_f(p[0]);
    }
}

/* acc += the lane's share of slice s: steps of 32 V from k = (s + S i) 32 V + lane V. */
template <typename TX, typename TW, int V>
__device__ __forceinline__ void rows_slice(float (&acc)[ROWS_MG][ROWS_NC], const TX *const (&xr)[ROWS_MG],
                                           const TW *const (&wr)[ROWS_NC], int K, int s, int S, int lane)
{
#pragma unroll 2
    for (int k = (s * 32 + lane) * V; k < K; k += S * 32 * V) {
        float w[ROWS_NC][V];
#pragma unroll
        for (int j = 0; j < ROWS_NC; j++)
            ldv<V>(wr[j] + k, w[j]);
#pragma unroll
        for (int i = 0; i < ROWS_MG; i++) {
            float x[V];
            ldv<V>(xr[i] + k, x);
#pragma unroll
            for (int j = 0; j < ROWS_NC; j++)
#pragma unroll
                for (int v = 0; v < V; v++)
                    acc[i][j] = fmaf(x[v], w[j][v], acc[i][j]);
        }
    }
}

template <typename TX, typename TW, typename TY, int V>
__global__ void __launch_bounds__(32 * ROWS_WARPS)
gemm_rows_kernel(const TX *__restrict__ X, const TW *__restrict__ W, const void *__restrict__ bias, int b16,
                 TY *__restrict__ Y, int M, int N, int K, int epi, int S)
{
    __shared__ float part[ROWS_WARPS][ROWS_MG * ROWS_NC];
    kn_pdl_wait();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, s = warp % S, pair = warp / S;
    const int n0 = (blockIdx.x * (ROWS_WARPS / S) + pair) * ROWS_NC;
    const TW *wr[ROWS_NC];
#pragma unroll
    for (int j = 0; j < ROWS_NC; j++) /* predicate: clamp past N, discard at the store */
        wr[j] = W + (size_t)(n0 + j < N ? n0 + j : N - 1) * K;
    for (int m0 = blockIdx.y * ROWS_MG; m0 < M; m0 += ROWS_MG * gridDim.y) {
        const TX *xr[ROWS_MG];
#pragma unroll
        for (int i = 0; i < ROWS_MG; i++)
            xr[i] = X + (size_t)(m0 + i < M ? m0 + i : M - 1) * K;
        float acc[ROWS_MG][ROWS_NC];
#pragma unroll
        for (int i = 0; i < ROWS_MG; i++)
#pragma unroll
            for (int j = 0; j < ROWS_NC; j++)
                acc[i][j] = 0.0f;
        if (n0 < N)
            rows_slice<TX, TW, V>(acc, xr, wr, K, s, S, lane);
        /* the butterfly leaves every lane with the warp's sums; lane i NC + j keeps (i, j) */
        float mine = 0.0f;
#pragma unroll
        for (int i = 0; i < ROWS_MG; i++)
#pragma unroll
            for (int j = 0; j < ROWS_NC; j++) {
                float a = acc[i][j];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1)
                    a += __shfl_xor_sync(0xffffffffu, a, o);
                if (lane == i * ROWS_NC + j)
                    mine = a;
            }
        if (lane < ROWS_MG * ROWS_NC)
            part[warp][lane] = mine;
        __syncthreads();
        const int m = m0 + lane / ROWS_NC, n = n0 + lane % ROWS_NC;
        if (s == 0 && lane < ROWS_MG * ROWS_NC && m < M && n < N) {
            float a = part[warp][lane];
            for (int t = 1; t < S; t++)
                a += part[warp + t][lane];
            if (bias)
                a += gemm_bias<TW>(bias, b16, n);
            gemm_put(&Y[(size_t)m * N + n], a, epi);
        }
        __syncthreads(); /* part is reused by the next group of rows */
    }
}

/* Elements per load of the row-streaming kernel: 16-, 8- or 4-byte weight loads
 * where K and both operands' alignment allow. */
static int rows_width(const void *X, kn_dtype xdt, const void *W, kn_dtype wdt, int K)
{
    const size_t xs = kn_dtype_size(xdt), ws = kn_dtype_size(wdt);
    for (int V = 8; V > 1; V /= 2)
        if (K % V == 0 && (uintptr_t)X % (V * xs) == 0 && (uintptr_t)W % (V * ws) == 0)
            return V;
    return 1;
}

/* Slices of K, one warp each: enough for every warp to take one or two steps
 * of 32 V, a power of two up to ROWS_WARPS. */
static int rows_slices(int K, int V)
{
    const int steps = (K + 32 * V - 1) / (32 * V);
    int S = 1;
    while (S < steps && S < ROWS_WARPS)
        S *= 2;
    return S;
}

template <typename TX, typename TW, typename TY>
static cudaError_t rows_launch(int V, int S, dim3 blocks, kn_stream ks, const void *X, const void *W,
                               const void *bias, int b16, void *Y, int M, int N, int K, int epi)
{
    const dim3 threads(32 * ROWS_WARPS);
    const TX *x = (const TX *)X;
    const TW *w = (const TW *)W;
    TY *y = (TY *)Y;
    if (V == 8)
        return kn_launch(gemm_rows_kernel<TX, TW, TY, 8>, blocks, threads, 0, ks, x, w, bias, b16, y, M, N, K, epi, S);
    if (V == 4)
        return kn_launch(gemm_rows_kernel<TX, TW, TY, 4>, blocks, threads, 0, ks, x, w, bias, b16, y, M, N, K, epi, S);
    if (V == 2)
        return kn_launch(gemm_rows_kernel<TX, TW, TY, 2>, blocks, threads, 0, ks, x, w, bias, b16, y, M, N, K, epi, S);
    return kn_launch(gemm_rows_kernel<TX, TW, TY, 1>, blocks, threads, 0, ks, x, w, bias, b16, y, M, N, K, epi, S);
}

/* In-place erf GELU over n elements of Y (after a cuBLASLt GEMM). */
template <typename TY, int V> __global__ void gelu_pass_kernel(TY *Y, size_t n)
{
    kn_pdl_wait();
    for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * V; i < n;
         i += (size_t)gridDim.x * blockDim.x * V) {
        if constexpr (V == 8) {
            float v[8];
            kn_load8(Y + i, v);
#pragma unroll
            for (int k = 0; k < 8; k++)
                v[k] = kn_gelu_erf(v[k]);
            kn_store8(Y + i, v);
        } else {
            Y[i] = kn_from<TY>(kn_gelu_erf(kn_f(Y[i])));
        }
    }
}

static int gelu_pass(kn_stream ks, void *Y, kn_dtype ydt, size_t n)
{
    const bool vec = kn_is16(ydt) && n % 8 == 0 && kn_aligned16(Y);
    int sms = 0;
    if (kn_sms(&sms))
        return -1;
    const unsigned blocks = kn_blocks(n / (vec ? 8 : 1), 256, (unsigned)sms * 16);
    if (vec)
        KN_DISPATCH16(ydt, TY, KN_CUDA(kn_launch(gelu_pass_kernel<TY, 8>, dim3(blocks), dim3(256), 0, ks, (TY *)Y, n)));
    else
        KN_DISPATCH(ydt, TY, KN_CUDA(kn_launch(gelu_pass_kernel<TY, 1>, dim3(blocks), dim3(256), 0, ks, (TY *)Y, n)));
    KN_LAUNCHED();
    return 0;
}

static int gemm_args_ok(const void *X, kn_dtype xdt, const void *W, kn_dtype wdt, void *Y,
                        kn_dtype ydt, int M, int N, int K, int epi)
{
    KN_REQUIRE(M >= 0 && N >= 0 && K >= 0, "negative GEMM dimension");
    KN_REQUIRE(kn_isdt(xdt) && kn_is16(wdt) && kn_isdt(ydt), "GEMM dtypes: X any, W 16-bit, Y any");
    KN_REQUIRE(xdt == KN_F32 || xdt == wdt, "16-bit X must have W's dtype");
    KN_REQUIRE(epi == KN_EPI_NONE || epi == KN_EPI_GELU || epi == KN_EPI_RELU || epi == KN_EPI_ACC,
               "unknown epilogue");
    KN_REQUIRE((M == 0 || N == 0) || (Y && (K == 0 || (X && W))), "NULL GEMM operand");
    return 0;
}

/* The own kernel with a bias in bdt (KN_F32 or wdt). */
static int gemm_own(kn_stream ks, const void *X, kn_dtype xdt, const void *W, kn_dtype wdt, const void *bias,
                    kn_dtype bdt, void *Y, kn_dtype ydt, int M, int N, int K, int epi)
{
    if (gemm_args_ok(X, xdt, W, wdt, Y, ydt, M, N, K, epi))
        return -1;
    KN_REQUIRE(!bias || bdt == KN_F32 || bdt == wdt, "bias dtype must be fp32 or the weights' dtype");
    const int b16 = bias && bdt != KN_F32;
    if (M == 0 || N == 0)
        return 0;
    if (M <= ROWS_MAXM || xdt == KN_F32) { /* any M: row groups beyond 65535 blocks loop */
        const int V = rows_width(X, xdt, W, wdt, K), S = rows_slices(K, V);
        /* Blocks along y loop over the groups of rows: at most ~8 blocks a multiprocessor in all,
         * so that many rows make each block walk several groups (its weights stay in L1) rather
         * than launching tens of thousands of blocks of one group each. */
        const unsigned cols = ROWS_WARPS / S * ROWS_NC, bx = (unsigned)((N + cols - 1) / cols);
        int sms = 0;
        if (kn_sms(&sms))
            return -1;
        const unsigned most = ROWS_BLOCKS_PER_SM * (unsigned)sms, groups = (unsigned)((M + ROWS_MG - 1) / ROWS_MG);
        const unsigned cap = bx < most ? most / bx : 1;
        const dim3 blocks(bx, groups < cap ? groups : cap);
        if (xdt == KN_F32)
            KN_DISPATCH16(wdt, TW, KN_DISPATCH(ydt, TY,
                KN_CUDA((rows_launch<float, TW, TY>(V, S, blocks, ks, X, W, bias, b16, Y, M, N, K, epi)))));
        else
            KN_DISPATCH16(wdt, TW, KN_DISPATCH(ydt, TY,
                KN_CUDA((rows_launch<TW, TW, TY>(V, S, blocks, ks, X, W, bias, b16, Y, M, N, K, epi)))));
        KN_LAUNCHED();
        return 0;
    }
    KN_REQUIRE((M + GEMM_TM - 1) / GEMM_TM <= 65535, "GEMM grid too large (M > 4194240)");
    const dim3 grid((N + GEMM_TN - 1) / GEMM_TN, (M + GEMM_TM - 1) / GEMM_TM);
    const bool vec = K % 8 == 0 && kn_aligned16(X) && kn_aligned16(W);
    KN_DISPATCH16(wdt, T, KN_DISPATCH(ydt, TY,
        if (vec)
            KN_CUDA(kn_launch(gemm_tc_kernel<T, TY, true>, dim3(grid), dim3(128), 0, ks, (const T *)X, (const T *)W, bias, b16,
                                                             (TY *)Y, M, N, K, epi));
        else
            KN_CUDA(kn_launch(gemm_tc_kernel<T, TY, false>, dim3(grid), dim3(128), 0, ks, (const T *)X, (const T *)W, bias, b16,
                                                              (TY *)Y, M, N, K, epi))));
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_gemm_own(kn_stream ks, const void *X, kn_dtype xdt, const void *W, kn_dtype wdt,
                           const float *bias, void *Y, kn_dtype ydt, int M, int N, int K, int epi)
{
    return gemm_own(ks, X, xdt, W, wdt, bias, KN_F32, Y, ydt, M, N, K, epi);
}

extern "C" int kn_gemm_uses_cublaslt(kn_dtype xdt, kn_dtype wdt, kn_dtype ydt, const void *X,
                                     const void *W, const void *Y, int N, int K, int epi)
{
    const size_t ysz = kn_dtype_size(ydt);
    (void)epi; /* every epilogue: GELU as cuBLASLt + an erf-GELU pass */
    return kn_is16(xdt) && xdt == wdt && kn_isdt(ydt) && K > 0 &&
           K % 8 == 0 && ((size_t)N * ysz) % 16 == 0 && kn_aligned16(X) && kn_aligned16(W) &&
           kn_aligned16(Y);
}

extern "C" int kn_gemm_ex(kn_gemm_ctx *ctx, kn_stream ks, const void *X, kn_dtype xdt, const void *W,
                          kn_dtype wdt, const void *bias, kn_dtype bdt, void *Y, kn_dtype ydt, int M, int N,
                          int K, int epi)
{
    KN_REQUIRE(ctx, "NULL GEMM context");
    if (gemm_args_ok(X, xdt, W, wdt, Y, ydt, M, N, K, epi))
        return -1;
    KN_REQUIRE(!bias || bdt == KN_F32 || bdt == wdt, "bias dtype must be fp32 or the weights' dtype");
    if (M == 0 || N == 0)
        return 0;
    int rc = 1; /* 1: the own kernel runs it */
    if (kn_gemm_uses_cublaslt(xdt, wdt, ydt, X, W, Y, N, K, epi) && (!bias || kn_aligned16(bias)))
        rc = kn_gemm_lt_run(ctx, ks, X, W, wdt, bias, bdt, Y, ydt, M, N, K,
                            epi == KN_EPI_GELU ? KN_EPI_NONE : epi); /* GELU is a separate pass */
    if (rc > 0)
        return gemm_own(ks, X, xdt, W, wdt, bias, bdt, Y, ydt, M, N, K, epi);
    if (rc < 0)
        return -1;
    return epi == KN_EPI_GELU ? gelu_pass(ks, Y, ydt, (size_t)M * N) : 0;
}

extern "C" int kn_gemm(kn_gemm_ctx *ctx, kn_stream ks, const void *X, kn_dtype xdt, const void *W,
                       kn_dtype wdt, const float *bias, void *Y, kn_dtype ydt, int M, int N, int K, int epi)
{
    return kn_gemm_ex(ctx, ks, X, xdt, W, wdt, bias, KN_F32, Y, ydt, M, N, K, epi);
}
