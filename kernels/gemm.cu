/*
 * gemm.cu - Y[M,N] = epi(X[M,K] . W[N,K]^T + bias) on the GPU, fp32 accumulation.
 *
 * Two paths behind one launcher (kn_gemm):
 *   - cuBLASLt for 16-bit X and W whose epilogue it has exactly: none, ReLU,
 *     bias, bias + ReLU (cuBLASLt's GELU epilogue is the tanh approximation, not
 *     the erf form the model needs, so GELU never goes there). Row-major Y is
 *     computed as the column-major Y^T = W . X^T (W with op T, X with op N).
 *     Each context owns its workspace; the algorithm of each shape is chosen
 *     once by the heuristic and cached with its descriptors (a plan), so the
 *     forward allocates nothing, graph capture never queries heuristics and
 *     results are bit-identical run to run.
 *   - our own tiled kernel for the rest (the head's GELU layers, fp32 X for the
 *     scorer, unaligned or odd shapes): output tiles of 64 x 64 like the CPU
 *     specialization (kernels/gemm_cpu.c), K walked in chunks, predicated loads
 *     that fill zeros past M, N and K (zero products add nothing, so any M, N,
 *     K works and nothing is read out of bounds), epilogue after the last chunk:
 *     + bias, GELU/ReLU, rounding to the output dtype, predicated stores.
 *     16-bit X runs on the tensor cores (WMMA 16x16x16, four warps of 32 x 32);
 *     fp32 X runs on the CUDA cores in fp32 (a 4 x 4 register micro-tile per
 *     thread), W promoted exactly.
 * The own kernel serves the head's small-M GEMMs (scorer, act head: tens to a
 * few thousand rows), where it is bandwidth-bound like cuBLAS; it is not meant
 * to replace cuBLASLt on the encoder's large GEMMs (bench/bench_kernels.cu
 * measures both).
 */
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <mma.h>

#include "kernels/cuda_util.cuh"

#define GEMM_TM 64 /* block tile rows (M), as the CPU */
#define GEMM_TN 64 /* block tile columns (N), as the CPU */
#define GEMM_TK 32 /* K chunk staged in shared memory (tensor-core kernel) */
#define GEMM_SK 16 /* K chunk of the fp32 kernel */
#define GEMM_PAD 8 /* 16-bit elements of row padding (keeps 32-byte WMMA alignment) */

#define KN_CUBLAS(call)                                                        \
    do {                                                                       \
        cublasStatus_t kn_st_ = (call);                                        \
        if (kn_st_ != CUBLAS_STATUS_SUCCESS)                                   \
            return kn_fail(__FILE__, __LINE__, #call, cublasLtGetStatusString(kn_st_)); \
    } while (0)

__device__ __forceinline__ float gemm_epi(float v, int epi)
{
    if (epi == KN_EPI_GELU)
        return kn_gelu_erf(v);
    if (epi == KN_EPI_RELU)
        return v > 0.0f ? v : 0.0f;
    return v;
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

template <typename T, typename TY, bool VEC>
__global__ void __launch_bounds__(128) gemm_tc_kernel(const T *__restrict__ X, const T *__restrict__ W,
                                                      const float *__restrict__ bias, TY *__restrict__ Y,
                                                      int M, int N, int K, int epi)
{
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
                v += bias[n0 + c];
            Y[(size_t)(m0 + r) * N + n0 + c] = kn_from<TY>(gemm_epi(v, epi));
        }
    }
}

/* ---- own kernel, fp32 X: CUDA cores ------------------------------------------ */

/* 256 threads as 16 x 16; thread (tx, ty) owns rows ty + 16i and columns
 * tx + 16j (i, j < 4) of the 64 x 64 tile; K in chunks of 16, summed in k order. */
template <typename TW, typename TY>
__global__ void __launch_bounds__(256) gemm_f32_kernel(const float *__restrict__ X, const TW *__restrict__ W,
                                                       const float *__restrict__ bias, TY *__restrict__ Y,
                                                       int M, int N, int K, int epi)
{
    __shared__ float xs[GEMM_SK][GEMM_TM + 1];
    __shared__ float ws[GEMM_SK][GEMM_TN + 1];
    const int m0 = blockIdx.y * GEMM_TM, n0 = blockIdx.x * GEMM_TN;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += GEMM_SK) {
        for (int e = threadIdx.x; e < GEMM_TM * GEMM_SK; e += 256) {
            const int r = e / GEMM_SK, c = e % GEMM_SK;
            const bool kin = k0 + c < K;
            xs[c][r] = (m0 + r < M && kin) ? X[(size_t)(m0 + r) * K + k0 + c] : 0.0f;
            ws[c][r] = (n0 + r < N && kin) ? kn_f(W[(size_t)(n0 + r) * K + k0 + c]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < GEMM_SK; k++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                a[i] = xs[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; j++)
                b[j] = ws[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int r = m0 + ty + 16 * i, c = n0 + tx + 16 * j;
            if (r < M && c < N) {
                float v = acc[i][j];
                if (bias)
                    v += bias[c];
                Y[(size_t)r * N + c] = kn_from<TY>(gemm_epi(v, epi));
            }
        }
}

static int gemm_args_ok(const void *X, kn_dtype xdt, const void *W, kn_dtype wdt, void *Y,
                        kn_dtype ydt, int M, int N, int K, int epi)
{
    KN_REQUIRE(M >= 0 && N >= 0 && K >= 0, "negative GEMM dimension");
    KN_REQUIRE(kn_isdt(xdt) && kn_is16(wdt) && kn_isdt(ydt), "GEMM dtypes: X any, W 16-bit, Y any");
    KN_REQUIRE(xdt == KN_F32 || xdt == wdt, "16-bit X must have W's dtype");
    KN_REQUIRE(epi == KN_EPI_NONE || epi == KN_EPI_GELU || epi == KN_EPI_RELU, "unknown epilogue");
    KN_REQUIRE((M == 0 || N == 0) || (Y && (K == 0 || (X && W))), "NULL GEMM operand");
    return 0;
}

extern "C" int kn_gemm_own(cudaStream_t s, const void *X, kn_dtype xdt, const void *W, kn_dtype wdt,
                           const float *bias, void *Y, kn_dtype ydt, int M, int N, int K, int epi)
{
    if (gemm_args_ok(X, xdt, W, wdt, Y, ydt, M, N, K, epi))
        return -1;
    if (M == 0 || N == 0)
        return 0;
    KN_REQUIRE((N + GEMM_TN - 1) / GEMM_TN <= 0x7fffffff && (M + GEMM_TM - 1) / GEMM_TM <= 65535,
               "GEMM grid too large (M > 4194240)");
    const dim3 grid((N + GEMM_TN - 1) / GEMM_TN, (M + GEMM_TM - 1) / GEMM_TM);
    if (xdt == KN_F32) {
        KN_DISPATCH16(wdt, TW, KN_DISPATCH(ydt, TY,
            gemm_f32_kernel<TW, TY><<<grid, 256, 0, s>>>((const float *)X, (const TW *)W, bias,
                                                         (TY *)Y, M, N, K, epi)));
    } else {
        const bool vec = K % 8 == 0 && kn_aligned16(X) && kn_aligned16(W);
        KN_DISPATCH16(wdt, T, KN_DISPATCH(ydt, TY,
            if (vec)
                gemm_tc_kernel<T, TY, true><<<grid, 128, 0, s>>>((const T *)X, (const T *)W, bias,
                                                                 (TY *)Y, M, N, K, epi);
            else
                gemm_tc_kernel<T, TY, false><<<grid, 128, 0, s>>>((const T *)X, (const T *)W, bias,
                                                                  (TY *)Y, M, N, K, epi)));
    }
    KN_LAUNCHED();
    return 0;
}

/* ---- cuBLASLt path --------------------------------------------------------- */

typedef struct gemm_plan {
    kn_dtype wdt, ydt;
    int M, N, K, epi, has_bias;
    int ok; /* 0: the heuristic found nothing; the own kernel runs this shape */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} gemm_plan;

struct kn_gemm_ctx {
    cublasLtHandle_t lt;
    void *ws;           /* device workspace, owned */
    size_t ws_bytes;
    gemm_plan *plans;   /* host array [cap], owned */
    int n, cap;
};

static cudaDataType_t gemm_cuda_type(kn_dtype dt)
{
    return dt == KN_F16 ? CUDA_R_16F : dt == KN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static void gemm_plan_release(gemm_plan *p)
{
    if (p->op)
        cublasLtMatmulDescDestroy(p->op);
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->c)
        cublasLtMatrixLayoutDestroy(p->c);
    memset(p, 0, sizeof *p);
}

extern "C" void kn_gemm_ctx_destroy(kn_gemm_ctx *ctx)
{
    if (!ctx)
        return;
    for (int i = 0; i < ctx->n; i++)
        gemm_plan_release(&ctx->plans[i]);
    free(ctx->plans);
    if (ctx->ws)
        cudaFree(ctx->ws);
    if (ctx->lt)
        cublasLtDestroy(ctx->lt);
    free(ctx);
}

extern "C" kn_gemm_ctx *kn_gemm_ctx_create(size_t workspace_bytes, int max_plans)
{
    kn_gemm_ctx *ctx = (kn_gemm_ctx *)calloc(1, sizeof *ctx);
    if (!ctx) {
        kn_fail(__FILE__, __LINE__, "calloc", "out of memory");
        return NULL;
    }
    ctx->ws_bytes = workspace_bytes ? workspace_bytes : (size_t)32 << 20;
    ctx->cap = max_plans > 0 ? max_plans : 256;
    ctx->plans = (gemm_plan *)calloc((size_t)ctx->cap, sizeof *ctx->plans);
    cublasStatus_t st = cublasLtCreate(&ctx->lt);
    cudaError_t e = cudaMalloc(&ctx->ws, ctx->ws_bytes);
    if (!ctx->plans || st != CUBLAS_STATUS_SUCCESS || e != cudaSuccess) {
        kn_fail(__FILE__, __LINE__, "kn_gemm_ctx_create",
                !ctx->plans ? "out of memory"
                : st != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(st)
                                              : cudaGetErrorString(e));
        if (st != CUBLAS_STATUS_SUCCESS)
            ctx->lt = NULL;
        if (e != cudaSuccess)
            ctx->ws = NULL;
        kn_gemm_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

extern "C" size_t kn_gemm_ctx_workspace_bytes(const kn_gemm_ctx *ctx) { return ctx ? ctx->ws_bytes : 0; }

/* Builds descriptors and asks the heuristic for one algorithm. Leaves p->ok = 0
 * (own kernel) when cuBLASLt supports nothing for the shape; -1 on API errors. */
static int gemm_plan_build(kn_gemm_ctx *ctx, gemm_plan *p)
{
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = p->epi == KN_EPI_RELU ? (p->has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                                        : CUBLASLT_EPILOGUE_RELU)
                                                         : (p->has_bias ? CUBLASLT_EPILOGUE_BIAS
                                                                        : CUBLASLT_EPILOGUE_DEFAULT);
    const cudaDataType_t wt = gemm_cuda_type(p->wdt), yt = gemm_cuda_type(p->ydt);
    KN_CUBLAS(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (p->has_bias) {
        const int32_t bt = CUDA_R_32F;
        const void *dummy = ctx->ws; /* 256-byte aligned: the heuristic reads only its alignment */
        KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dummy,
                                                 sizeof dummy));
    }
    /* Column-major view: A = W as [K, N] (op T), B = X as [K, M], C = Y^T [N, M]. */
    KN_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, wt, p->K, p->N, p->K));
    KN_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, wt, p->K, p->M, p->K));
    KN_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, yt, p->N, p->M, p->N));

    cublasLtMatmulPreference_t pref;
    KN_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const uint32_t align = 16;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx->ws_bytes, sizeof ctx->ws_bytes);
    const cublasLtMatmulPreferenceAttributes_t al[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = cublasLtMatmulPreferenceSetAttribute(pref, al[i], &align, sizeof align);
    /* Split-K partial sums only in fp32 (never reduced in a 16-bit output type). */
    const uint32_t red = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red,
                                                  sizeof red);
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS) {
        cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->a, p->b, p->c, p->c,
                                                           pref, 1, &res, &found);
        if (hs != CUBLAS_STATUS_SUCCESS && hs != CUBLAS_STATUS_NOT_SUPPORTED)
            st = hs;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    KN_CUBLAS(st);
    p->ok = found > 0 && res.state == CUBLAS_STATUS_SUCCESS;
    if (p->ok)
        p->algo = res.algo;
    return 0;
}

/* The plan of a shape: found in the cache or built and added. NULL on failure. */
static gemm_plan *gemm_plan_get(kn_gemm_ctx *ctx, kn_dtype wdt, kn_dtype ydt, int M, int N, int K,
                                int epi, int has_bias)
{
    for (int i = 0; i < ctx->n; i++) {
        gemm_plan *p = &ctx->plans[i];
        if (p->wdt == wdt && p->ydt == ydt && p->M == M && p->N == N && p->K == K && p->epi == epi &&
            p->has_bias == has_bias)
            return p;
    }
    if (ctx->n == ctx->cap) {
        kn_fail(__FILE__, __LINE__, "gemm_plan_get", "GEMM plan cache full (raise max_plans)");
        return NULL;
    }
    gemm_plan *p = &ctx->plans[ctx->n];
    memset(p, 0, sizeof *p);
    p->wdt = wdt, p->ydt = ydt, p->M = M, p->N = N, p->K = K, p->epi = epi, p->has_bias = has_bias;
    if (gemm_plan_build(ctx, p)) {
        gemm_plan_release(p);
        return NULL;
    }
    ctx->n++;
    return p;
}

extern "C" int kn_gemm_uses_cublaslt(kn_dtype xdt, kn_dtype wdt, kn_dtype ydt, const void *X,
                                     const void *W, const void *Y, int N, int K, int epi)
{
    const size_t ysz = kn_dtype_size(ydt);
    return kn_is16(xdt) && xdt == wdt && kn_isdt(ydt) && epi != KN_EPI_GELU && K > 0 &&
           K % 8 == 0 && ((size_t)N * ysz) % 16 == 0 && kn_aligned16(X) && kn_aligned16(W) &&
           kn_aligned16(Y);
}

extern "C" int kn_gemm_prepare(kn_gemm_ctx *ctx, kn_dtype xdt, kn_dtype wdt, kn_dtype ydt, int M, int N,
                               int K, int epi, int has_bias)
{
    KN_REQUIRE(ctx, "NULL GEMM context");
    static const char a16[16] __attribute__((aligned(16))) = {0};
    if (M <= 0 || N <= 0 || !kn_gemm_uses_cublaslt(xdt, wdt, ydt, a16, a16, a16, N, K, epi))
        return 0; /* the own kernel needs no plan */
    return gemm_plan_get(ctx, wdt, ydt, M, N, K, epi, has_bias != 0) ? 0 : -1;
}

extern "C" int kn_gemm(kn_gemm_ctx *ctx, cudaStream_t s, const void *X, kn_dtype xdt, const void *W,
                       kn_dtype wdt, const float *bias, void *Y, kn_dtype ydt, int M, int N, int K,
                       int epi)
{
    KN_REQUIRE(ctx, "NULL GEMM context");
    if (gemm_args_ok(X, xdt, W, wdt, Y, ydt, M, N, K, epi))
        return -1;
    if (M == 0 || N == 0)
        return 0;
    if (!kn_gemm_uses_cublaslt(xdt, wdt, ydt, X, W, Y, N, K, epi) || (bias && !kn_aligned16(bias)))
        return kn_gemm_own(s, X, xdt, W, wdt, bias, Y, ydt, M, N, K, epi);
    gemm_plan *p = gemm_plan_get(ctx, wdt, ydt, M, N, K, epi, bias != NULL);
    if (!p)
        return -1;
    if (!p->ok)
        return kn_gemm_own(s, X, xdt, W, wdt, bias, Y, ydt, M, N, K, epi);
    if (bias)
        KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                 sizeof bias));
    const float one = 1.0f, zero = 0.0f;
    KN_CUBLAS(cublasLtMatmul(ctx->lt, p->op, &one, W, p->a, X, p->b, &zero, Y, p->c, Y, p->c, &p->algo,
                             ctx->ws, ctx->ws_bytes, s));
    KN_LAUNCHED();
    return 0;
}
