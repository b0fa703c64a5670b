/*
 * gemm_lt.cu - the cuBLASLt path of kn_gemm (kernels/gemm.cu decides which
 * calls take it): per-shape plans, the heuristic, tuning, and the tuning file.
 *
 * Epilogues none, ReLU, bias, bias + ReLU (an erf-GELU GEMM is a plan with
 * bias followed by gemm.cu's GELU pass), and the accumulating one (KN_EPI_ACC:
 * beta = 1 with C = D = Y, cuBLASLt's in-place form, so the residual add
 * rides in the GEMM's epilogue instead of one more pass over the stream).
 * Timing an accumulating plan overwrites Y many times, so it is timed only
 * by kn_gemm_prepare (warm-up, whose Y holds nothing yet); a first launch
 * takes the heuristic's first, as no request's Y may be clobbered.
 * Row-major Y is computed as the column-major Y^T = W . X^T (W with op T, X
 * with op N).
 * Each context owns its workspace; the algorithm of each shape is chosen once
 * and cached with its descriptors (a plan), so the forward allocates nothing,
 * graph capture never queries heuristics and results are bit-identical run to
 * run within a context. The choice is the heuristic's first, or with tuning on
 * (kn_gemm_ctx_set_tuning; the GPU backend's default) the fastest of up to 8
 * candidates, timed as CUDA graphs on the shape's first launch outside a
 * capture (gemm_tune; -4.5% at 64x512 on the H200, bench/results/experiments/).
 * cuBLASLt's bias must have the output's dtype when the output is 16-bit (an
 * fp32 bias with fp16/bf16 D is rejected as an invalid value on the H200's
 * cuBLAS 13, measured): a bias of another dtype is converted into the
 * context's bias scratch on the stream first (one tiny launch; pass the bias
 * in the output dtype through kn_gemm_ex to avoid it, as PyTorch's fp16 Linear
 * does).
 *
 * The tuning file (kn_gemm_ctx_save_tuning / _load_tuning; format and
 * environment key in kernels/gemm_cache.h) carries the timed choices over a
 * restart: the context keeps every timed algorithm in a record set, and a plan
 * built after a load takes its shape's recorded algorithm instead of querying
 * and timing, once cublasLtMatmulAlgoCheck accepts it for the plan's
 * descriptors (gemm_plan_seed). A plan never changes once built, so a load
 * cannot alter a shape already in use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "kernels/cuda_util.cuh"
#include "kernels/gemm_cache.h"
#include "kernels/gemm_internal.cuh"

#define KN_CUBLAS(call)                                                        \
    do {                                                                       \
        cublasStatus_t kn_st_ = (call);                                        \
        if (kn_st_ != CUBLAS_STATUS_SUCCESS)                                   \
            return kn_fail(__FILE__, __LINE__, #call, cublasLtGetStatusString(kn_st_)); \
    } while (0)

#define GEMM_TUNE_MAX 8   /* heuristic candidates timed per shape when tuning is on */
#define GEMM_TUNE_REPS 10 /* launches per candidate in its timing graph */
/* Split-K partial sums only in fp32 (never reduced in a 16-bit output type). */
#define GEMM_REDUCTIONS (CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)

static_assert(sizeof(cublasLtMatmulAlgo_t) == KN_GEMM_ALGO_WORDS * sizeof(uint64_t),
              "a tuning record holds a cublasLtMatmulAlgo_t");

typedef struct gemm_plan {
    kn_dtype wdt, ydt;
    int M, N, K, epi, has_bias;
    int parts;  /* > 1: K split into this many fp32 partial products (kn_gemm_split) */
    int ok; /* 0: the heuristic found nothing; the own kernel runs this shape */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;  /* what every launch uses once chosen (the heuristic's first until timed) */
    int chosen; /* 1 once algo is final (timed, loaded, or the heuristic's first when tuning is off) */
} gemm_plan;

#define GEMM_BIAS_MAX 65536 /* elements of the bias scratch (largest N with a converted bias) */

struct kn_gemm_ctx {
    cublasLtHandle_t lt;
    void *ws;           /* device workspace, owned */
    size_t ws_bytes;
    void *bias;         /* device bias scratch [GEMM_BIAS_MAX] fp32-sized, owned; stream-ordered use */
    gemm_plan *plans;   /* host array [cap], owned */
    int n, cap;
    int tune;           /* 1: time the heuristic's candidates at a shape's first launch */
    cublasLtMatmulAlgo_t cand[GEMM_TUNE_MAX]; /* the shape being built or tuned: its candidates */
    kn_gemm_cache tuned; /* timed and loaded algorithms: seeds of new plans, what save writes */
    int n_seeded, n_rejected; /* plans that took a loaded algorithm; loaded ones refused */
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
    if (ctx->bias)
        cudaFree(ctx->bias);
    if (ctx->lt)
        cublasLtDestroy(ctx->lt);
    kn_gemm_cache_free(&ctx->tuned);
    free(ctx);
}

/* The environment key of the current device (kernels/gemm_cache.h): a tuning
 * file's algorithms are trusted only under the same one. The driver is known
 * by the CUDA version it supports (cudaDriverGetVersion: the driver's build
 * string needs NVML, which only the daemon's telemetry loads), so two builds of
 * one driver branch share a file; the algorithms are cuBLASLt's, and each is
 * checked again (gemm_plan_seed) before use. */
static int gemm_env(kn_gemm_env *e)
{
    int dev = 0;
    cudaDeviceProp pr;
    KN_CUDA(cudaGetDevice(&dev));
    KN_CUDA(cudaGetDeviceProperties(&pr, dev));
    KN_CUDA(cudaDriverGetVersion(&e->driver));
    KN_CUDA(cudaRuntimeGetVersion(&e->runtime));
    e->cublaslt = (uint64_t)cublasLtGetVersion();
    snprintf(e->gpu, sizeof e->gpu, "%s", pr.name);
    const unsigned char *u = (const unsigned char *)pr.uuid.bytes;
    int any = 0;
    for (int i = 0; i < 16; i++)
        any |= u[i];
    if (any)
        snprintf(e->id, sizeof e->id, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                 u[15]);
    else
        snprintf(e->id, sizeof e->id, "pci-%04x:%02x:%02x", pr.pciDomainID, pr.pciBusID, pr.pciDeviceID);
    return 0;
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
    if (e == cudaSuccess) {
        e = cudaMalloc(&ctx->bias, GEMM_BIAS_MAX * sizeof(float));
        if (e != cudaSuccess) {
            cudaFree(ctx->ws);
            ctx->bias = NULL;
        }
    }
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
    kn_gemm_env env;
    memset(&env, 0, sizeof env);
    if (gemm_env(&env)) {
        kn_gemm_ctx_destroy(ctx);
        return NULL;
    }
    kn_gemm_cache_init(&ctx->tuned, &env);
    return ctx;
}

extern "C" size_t kn_gemm_ctx_workspace_bytes(const kn_gemm_ctx *ctx) { return ctx ? ctx->ws_bytes : 0; }

/* The descriptors of p's shape: the operation (transposes, epilogue, a dummy
 * bias pointer) and the three layouts. -1 on API errors. */
static int gemm_plan_descs(kn_gemm_ctx *ctx, gemm_plan *p)
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
    if (p->has_bias) { /* bias in D's dtype (the default bias type) */
        const void *dummy = ctx->bias; /* 256-byte aligned: the heuristic reads only its alignment */
        KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dummy,
                                                 sizeof dummy));
    }
    /* Column-major view: A = W as [K, N] (op T), B = X as [K, M], C = Y^T [N, M]. A split
     * is a strided batch over K: part s reads columns [s Ks, (s + 1) Ks) of W and X (the
     * same leading dimension K, offset Ks) and writes its own [N, M] block of C. */
    const int Ks = p->K / p->parts;
    KN_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, wt, Ks, p->N, p->K));
    KN_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, wt, Ks, p->M, p->K));
    KN_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, yt, p->N, p->M, p->N));
    if (p->parts > 1) {
        const int32_t n = p->parts;
        const int64_t sk = Ks, sc = (int64_t)p->N * p->M;
        cublasLtMatrixLayout_t l[3] = {p->a, p->b, p->c};
        const int64_t stride[3] = {sk, sk, sc};
        for (int i = 0; i < 3; i++) {
            KN_CUBLAS(cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n));
            KN_CUBLAS(cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                       &stride[i], sizeof stride[i]));
        }
    }
    return 0;
}

/* Up to want of the heuristic's algorithms for p's descriptors, best first,
 * into ctx->cand; returns how many (0 when cuBLASLt supports nothing for the
 * shape), -1 on API errors. Deterministic: tuning asks again for what the
 * plan was built from (keeping the list instead saved no measurable start-up
 * time: 13.03 s against 12.95 s, bench/results/experiments/README.md). */
static int gemm_heuristic(kn_gemm_ctx *ctx, const gemm_plan *p, int want)
{
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
    const uint32_t red = GEMM_REDUCTIONS;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red,
                                                  sizeof red);
    cublasLtMatmulHeuristicResult_t res[GEMM_TUNE_MAX];
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS) {
        cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->a, p->b, p->c, p->c, pref,
                                                           want < GEMM_TUNE_MAX ? want : GEMM_TUNE_MAX,
                                                           res, &found);
        if (hs != CUBLAS_STATUS_SUCCESS && hs != CUBLAS_STATUS_NOT_SUPPORTED && hs != CUBLAS_STATUS_INVALID_VALUE)
            st = hs; /* not supported / refused combination: the own kernel runs it */
    }
    cublasLtMatmulPreferenceDestroy(pref);
    KN_CUBLAS(st);
    int n = 0;
    for (int i = 0; i < found; i++)
        if (res[i].state == CUBLAS_STATUS_SUCCESS)
            ctx->cand[n++] = res[i].algo;
    return n;
}

/* Whether algo runs p's shape within the workspace, reducing split-K sums
 * only as GEMM_REDUCTIONS allows. */
static bool gemm_algo_fits(kn_gemm_ctx *ctx, const gemm_plan *p, const cublasLtMatmulAlgo_t *algo)
{
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    uint32_t red = ~0u;
    size_t got = 0;
    return cublasLtMatmulAlgoCheck(ctx->lt, p->op, p->a, p->b, p->c, p->c, algo, &res) == CUBLAS_STATUS_SUCCESS &&
           res.state == CUBLAS_STATUS_SUCCESS && res.workspaceSize <= ctx->ws_bytes &&
           cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red,
                                                &got) == CUBLAS_STATUS_SUCCESS &&
           got == sizeof red && (red & ~(uint32_t)GEMM_REDUCTIONS) == 0;
}

/* The heuristic's first algorithm for p (final unless tuning is on and there
 * is more than one candidate). Leaves p->ok = 0 (own kernel) when cuBLASLt
 * supports nothing for the shape; -1 on API errors. */
static int gemm_plan_heuristic(kn_gemm_ctx *ctx, gemm_plan *p)
{
    const int n = gemm_heuristic(ctx, p, ctx->tune ? GEMM_TUNE_MAX : 1);
    if (n < 0)
        return -1;
    p->ok = n > 0;
    if (p->ok)
        p->algo = ctx->cand[0];
    p->chosen = !ctx->tune || n <= 1;
    return 0;
}

/* A split plan's key carries its part count in epi's high byte (kernels/
 * gemm_cache.h), so its record never seeds an unsplit plan of the shape. */
#define GEMM_KEY_PARTS 0x100
static_assert(GEMM_KEY_PARTS * KN_GEMM_SPLIT_MAX + KN_EPI_ACC <= KN_GEMM_EPI_MAX, "a split plan's key fits the file");

static kn_gemm_key gemm_key(const gemm_plan *p)
{
    const int32_t epi = p->epi + (p->parts > 1 ? GEMM_KEY_PARTS * p->parts : 0);
    kn_gemm_key k = {(int32_t)p->wdt, (int32_t)p->ydt, p->M, p->N, p->K, epi, p->has_bias};
    return k;
}

/* Gives p the recorded algorithm of its shape (final: it is not timed again)
 * when cuBLASLt accepts it for p's descriptors, it fits the workspace and it
 * reduces split-K sums only as GEMM_REDUCTIONS allows. Returns 1 when p took
 * it. A refused record is dropped, so the shape is chosen (and, with tuning
 * on, timed and recorded) afresh. */
static int gemm_plan_seed(kn_gemm_ctx *ctx, gemm_plan *p)
{
    const kn_gemm_key k = gemm_key(p);
    const kn_gemm_rec *r = kn_gemm_cache_find(&ctx->tuned, &k);
    if (!r)
        return 0;
    cublasLtMatmulAlgo_t algo;
    memcpy(algo.data, r->algo, sizeof algo.data);
    if (!gemm_algo_fits(ctx, p, &algo)) {
        kn_gemm_cache_remove(&ctx->tuned, &k);
        ctx->n_rejected++;
        return 0;
    }
    p->algo = algo;
    p->ok = 1;
    p->chosen = 1;
    ctx->n_seeded++;
    return 1;
}

/* Builds p's descriptors and chooses its algorithm: a loaded one
 * (gemm_plan_seed), else the heuristic's. -1 on API errors. */
static int gemm_plan_build(kn_gemm_ctx *ctx, gemm_plan *p)
{
    if (gemm_plan_descs(ctx, p))
        return -1;
    return gemm_plan_seed(ctx, p) ? 0 : gemm_plan_heuristic(ctx, p);
}

/* The plan of a shape: found in the cache or built and added. NULL on failure. */
static gemm_plan *gemm_plan_get(kn_gemm_ctx *ctx, kn_dtype wdt, kn_dtype ydt, int M, int N, int K,
                                int epi, int has_bias, int parts)
{
    for (int i = 0; i < ctx->n; i++) {
        gemm_plan *p = &ctx->plans[i];
        if (p->wdt == wdt && p->ydt == ydt && p->M == M && p->N == N && p->K == K && p->epi == epi &&
            p->has_bias == has_bias && p->parts == parts)
            return p;
    }
    if (ctx->n == ctx->cap) {
        kn_fail(__FILE__, __LINE__, "gemm_plan_get", "GEMM plan cache full (raise max_plans)");
        return NULL;
    }
    gemm_plan *p = &ctx->plans[ctx->n];
    memset(p, 0, sizeof *p);
    p->wdt = wdt, p->ydt = ydt, p->M = M, p->N = N, p->K = K, p->epi = epi, p->has_bias = has_bias;
    p->parts = parts;
    if (gemm_plan_build(ctx, p)) {
        gemm_plan_release(p);
        return NULL;
    }
    ctx->n++;
    return p;
}

/* Times each candidate of p on the call's real operands and keeps the fastest;
 * the heuristic's first is among them, so tuning never keeps a slower choice
 * than the heuristic's beyond timing noise. Each candidate runs as a CUDA graph
 * of GEMM_TUNE_REPS launches (replayed once to warm up, then timed between
 * events), as the forward runs: back-to-back eager launches would time the host
 * for the small GEMMs (at 96 rows a launch costs as much host time as the GEMM
 * takes; a first version that timed eager launches picked algorithms 5% slower
 * there). The graphs run on a private stream after s has drained (s may be the
 * legacy stream, which cannot capture). Runs once per shape: from
 * kn_gemm_prepare given the operands (the backend prepares every shape of a
 * bucket before capturing it), else at the shape's first launch outside graph
 * capture (eager use). Inside a capture nothing can be timed: the
 * heuristic's first is kept for good, so a shape never changes algorithm once
 * launched and graph replay stays bit-identical to eager launches. */
static float gemm_time_candidate(kn_gemm_ctx *ctx, const gemm_plan *p, int i, cudaStream_t ts, cudaEvent_t e0,
                                 cudaEvent_t e1, const void *W, const void *X, void *Y)
{
    const float one = 1.0f, beta = p->epi == KN_EPI_ACC ? 1.0f : 0.0f;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    float ms = -1.0f;
    if (cudaStreamBeginCapture(ts, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
        return -1.0f;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    for (int r = 0; r < GEMM_TUNE_REPS && st == CUBLAS_STATUS_SUCCESS; r++)
        st = cublasLtMatmul(ctx->lt, p->op, &one, W, p->a, X, p->b, &beta, Y, p->c, Y, p->c, &ctx->cand[i],
                            ctx->ws, ctx->ws_bytes, ts);
    const cudaError_t ce = cudaStreamEndCapture(ts, &g);
    if (st == CUBLAS_STATUS_SUCCESS && ce == cudaSuccess && cudaGraphInstantiate(&ge, g, 0) == cudaSuccess &&
        cudaGraphLaunch(ge, ts) == cudaSuccess && cudaEventRecord(e0, ts) == cudaSuccess &&
        cudaGraphLaunch(ge, ts) == cudaSuccess && cudaEventRecord(e1, ts) == cudaSuccess &&
        cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
        ms = -1.0f;
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    (void)cudaGetLastError(); /* a candidate that fails to run is skipped, not an error */
    return ms;
}

/* Records p's timed choice and its time per launch for kn_gemm_ctx_save_tuning;
 * when the record set is full the shape is only not saved. */
static void gemm_remember(kn_gemm_ctx *ctx, const gemm_plan *p, float ms)
{
    kn_gemm_rec r;
    memset(&r, 0, sizeof r);
    r.key = gemm_key(p);
    memcpy(r.algo, p->algo.data, sizeof r.algo);
    r.time_ns = (uint64_t)((double)ms * 1e6 / GEMM_TUNE_REPS + 0.5);
    (void)kn_gemm_cache_put(&ctx->tuned, &r);
}

static int gemm_tune(kn_gemm_ctx *ctx, gemm_plan *p, cudaStream_t s, const void *W, const void *X, void *Y)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    KN_CUDA(cudaStreamIsCapturing(s, &cs));
    p->chosen = 1;
    if (cs != cudaStreamCaptureStatusNone)
        return 0;
    KN_CUDA(cudaStreamSynchronize(s)); /* the operands are written by earlier work on s */
    cudaStream_t ts = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int rc = 0;
    if (cudaStreamCreateWithFlags(&ts, cudaStreamNonBlocking) != cudaSuccess || cudaEventCreate(&e0) != cudaSuccess ||
        cudaEventCreate(&e1) != cudaSuccess) {
        rc = kn_fail(__FILE__, __LINE__, "gemm_tune", "cannot create the tuning stream or events");
    } else {
        float best = -1.0f;
        const int n = gemm_heuristic(ctx, p, GEMM_TUNE_MAX);
        for (int i = 0; i < n; i++) {
            const float ms = gemm_time_candidate(ctx, p, i, ts, e0, e1, W, X, Y);
            if (ms >= 0.0f && (best < 0.0f || ms < best))
                best = ms, p->algo = ctx->cand[i];
        }
        if (n < 0)
            rc = -1;
        if (cudaStreamSynchronize(ts) != cudaSuccess)
            rc = kn_fail(__FILE__, __LINE__, "gemm_tune", "tuning stream failed");
        else if (best >= 0.0f)
            gemm_remember(ctx, p, best);
    }
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (ts)
        cudaStreamDestroy(ts);
    return rc;
}

extern "C" void kn_gemm_ctx_set_tuning(kn_gemm_ctx *ctx, int on)
{
    if (ctx)
        ctx->tune = on != 0;
}

extern "C" int kn_gemm_ctx_load_tuning(kn_gemm_ctx *ctx, const char *path, char *warn, size_t warn_len)
{
    if (warn && warn_len)
        warn[0] = '\0';
    KN_REQUIRE(ctx && path, "NULL GEMM context or path");
    kn_gemm_cache file;
    kn_gemm_cache_init(&file, &ctx->tuned.env);
    kn_gemm_cache_load(&file, path, warn, warn_len);
    int taken = 0;
    for (int i = 0; i < file.n; i++) /* a shape this context timed keeps its own record */
        if (!kn_gemm_cache_find(&ctx->tuned, &file.rec[i].key) && kn_gemm_cache_put(&ctx->tuned, &file.rec[i]) == 0)
            taken++;
    kn_gemm_cache_free(&file);
    return taken;
}

extern "C" int kn_gemm_ctx_save_tuning(const kn_gemm_ctx *ctx, const char *path, char *err, size_t err_len)
{
    if (err && err_len)
        snprintf(err, err_len, "%s", "NULL GEMM context or path");
    KN_REQUIRE(ctx && path, "NULL GEMM context or path");
    return kn_gemm_cache_save(&ctx->tuned, path, err, err_len);
}

extern "C" void kn_gemm_ctx_tuning_counts(const kn_gemm_ctx *ctx, int *seeded, int *rejected)
{
    if (seeded)
        *seeded = ctx ? ctx->n_seeded : 0;
    if (rejected)
        *rejected = ctx ? ctx->n_rejected : 0;
}

/* The plan of a shape, built (and with operands and tuning on, timed on them
 * before any capture, launching nothing else). 1 when cuBLASLt runs it, 0 when
 * it has no algorithm for it, -1 on failure. */
static int gemm_prepare_plan(kn_gemm_ctx *ctx, kn_dtype wdt, kn_dtype ydt, int M, int N, int K, int lt_epi,
                             int has_bias, int parts, kn_stream ks, const void *X, const void *W, void *Y)
{
    gemm_plan *p = gemm_plan_get(ctx, wdt, ydt, M, N, K, lt_epi, has_bias, parts);
    if (!p)
        return -1;
    if (X && W && Y && p->ok && !p->chosen && gemm_tune(ctx, p, ks.s, W, X, Y))
        return -1;
    return p->ok;
}

extern "C" int kn_gemm_prepare(kn_gemm_ctx *ctx, kn_dtype xdt, kn_dtype wdt, kn_dtype ydt, int M, int N,
                               int K, int epi, int has_bias, kn_stream ks, const void *X, const void *W,
                               void *Y)
{
    KN_REQUIRE(ctx, "NULL GEMM context");
    static const char a16[16] __attribute__((aligned(16))) = {0};
    const bool ops = X && W && Y;
    if (M <= 0 || N <= 0 ||
        !kn_gemm_uses_cublaslt(xdt, wdt, ydt, ops ? X : a16, ops ? W : a16, ops ? Y : a16, N, K, epi))
        return 0; /* the own kernel needs no plan */
    const int lt_epi = epi == KN_EPI_GELU ? KN_EPI_NONE : epi; /* GELU is a separate pass */
    return gemm_prepare_plan(ctx, wdt, ydt, M, N, K, lt_epi, has_bias != 0, 1, ks, X, W, Y) < 0 ? -1 : 0;
}

extern "C" int kn_gemm_split_ok(kn_dtype wdt, const void *X, const void *W, const void *Y, int N, int K, int S)
{
    return S >= 2 && S <= KN_GEMM_SPLIT_MAX && kn_is16(wdt) && N > 0 && N % 4 == 0 && K > 0 && K % (8 * S) == 0 &&
           kn_aligned16(X) && kn_aligned16(W) && kn_aligned16(Y);
}

extern "C" int kn_gemm_prepare_split(kn_gemm_ctx *ctx, kn_dtype wdt, int M, int N, int K, int S, kn_stream ks,
                                     const void *X, const void *W, float *Y)
{
    KN_REQUIRE(ctx, "NULL GEMM context");
    static const char a16[16] __attribute__((aligned(16))) = {0};
    const bool ops = X && W && Y;
    KN_REQUIRE(M > 0 && kn_gemm_split_ok(wdt, ops ? X : a16, ops ? W : a16, ops ? (const void *)Y : a16, N, K, S),
               "split GEMM shape or alignment not supported");
    return gemm_prepare_plan(ctx, wdt, KN_F32, M, N, K, KN_EPI_NONE, 0, S, ks, X, W, (void *)Y);
}

/* kn_gemm_lt_run with K split into parts (1: none). */
static int gemm_lt_launch(kn_gemm_ctx *ctx, kn_stream ks, const void *X, const void *W, kn_dtype wdt,
                          const void *bias, kn_dtype bdt, void *Y, kn_dtype ydt, int M, int N, int K, int lt_epi,
                          int parts)
{
    const bool convert = bias && bdt != ydt;
    if (convert && N > GEMM_BIAS_MAX)
        return 1;
    gemm_plan *p = gemm_plan_get(ctx, wdt, ydt, M, N, K, lt_epi, bias != NULL, parts);
    if (!p)
        return -1;
    if (!p->ok)
        return 1;
    const void *b = bias;
    if (convert) { /* cuBLASLt wants the bias in D's dtype */
        if (kn_convert(ks, bias, bdt, ctx->bias, ydt, (size_t)N))
            return -1;
        b = ctx->bias;
    }
    if (b)
        KN_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b));
    if (!p->chosen) {
        if (lt_epi == KN_EPI_ACC)
            p->chosen = 1; /* timing would clobber the Y it accumulates into */
        else if (gemm_tune(ctx, p, ks.s, W, X, Y))
            return -1;
    }
    const float one = 1.0f, beta = lt_epi == KN_EPI_ACC ? 1.0f : 0.0f;
    KN_CUBLAS(cublasLtMatmul(ctx->lt, p->op, &one, W, p->a, X, p->b, &beta, Y, p->c, Y, p->c, &p->algo,
                             ctx->ws, ctx->ws_bytes, ks.s));
    KN_LAUNCHED();
    return 0;
}

/* See kernels/gemm_internal.cuh. */
int kn_gemm_lt_run(kn_gemm_ctx *ctx, kn_stream ks, const void *X, const void *W, kn_dtype wdt,
                   const void *bias, kn_dtype bdt, void *Y, kn_dtype ydt, int M, int N, int K, int lt_epi)
{
    return gemm_lt_launch(ctx, ks, X, W, wdt, bias, bdt, Y, ydt, M, N, K, lt_epi, 1);
}

extern "C" int kn_gemm_split(kn_gemm_ctx *ctx, kn_stream ks, const void *X, const void *W, kn_dtype wdt, float *Y,
                             int M, int N, int K, int S)
{
    KN_REQUIRE(ctx, "NULL GEMM context");
    KN_REQUIRE(M >= 0 && kn_gemm_split_ok(wdt, X, W, Y, N, K, S), "split GEMM shape or alignment not supported");
    if (M == 0)
        return 0;
    const int rc = gemm_lt_launch(ctx, ks, X, W, wdt, NULL, KN_F32, Y, KN_F32, M, N, K, KN_EPI_NONE, S);
    KN_REQUIRE(rc <= 0, "cuBLASLt has no algorithm for this split GEMM");
    return rc;
}
