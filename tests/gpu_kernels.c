/*
 * gpu_kernels.c - every CUDA kernel (kernels/cuda.h) against its CPU fp32
 * specialization (kernels/cpu.h) on identical inputs, for fp16 and bf16.
 *
 * Inputs are drawn at random in fp32, rounded on the device to the dtype under
 * test (kn_convert) and read back, so the CPU computes in fp32 on exactly the
 * values the GPU sees. Each case runs twice: once with seed 1234 and once with
 * a fresh seed (printed; set LAYAD_TEST_SEED to replay it). Every output is
 * poisoned with 0xFF bytes (NaN in all three dtypes) before each launch, so an
 * unwritten element fails, and slots a kernel must leave alone (attention's
 * padding slots) must still hold the poison. Sizes are odd on purpose (partial
 * tiles, unaligned K, the scalar fallback paths) next to the model's aligned
 * ones. Attention and the head ops run on packed (varlen) batches: rows of 1,
 * 17, 63, 64, 65, 200, 511 tokens (and empty ones) in mixed orders, starting off
 * the 64-slot grid, with padding slots after them, the query-tile list shuffled
 * and padded with spare entries, selections grouped by row or interleaved.
 *
 * Tolerances, with e the unit roundoff of the output dtype (fp16 2^-11 =
 * 4.9e-4, bf16 2^-8 = 3.9e-3; for fp32 outputs e = 2^-24 and the fp32
 * arithmetic terms below dominate); a check passes when
 * |gpu - cpu| <= tol for every element (NaN or Inf never passes):
 *   GEMM        2e|ref| + 1e-5 S, S = sum_k |x||w| (fp32 summation-order noise;
 *               products are exact in fp32), + 2e|bias| when cuBLASLt adds the
 *               bias rounded to a 16-bit Y, + 1.2e|v| for the erf GELU applied
 *               after cuBLASLt to a pre-activation v rounded to a 16-bit Y
 *   GeGLU       2e|ref| + 1e-6
 *   LayerNorm   y: 2e|ref| + 1e-5 (fp32 y: 1e-5|ref| + 1e-5); the residual r
 *               must equal the CPU's bit for bit (plain fp32 adds)
 *   RoPE        2e|ref| + 1e-6 max|x|; tables: |gpu - cpu| <= 2e-7 (angle
 *               error of one fp32 ulp at most); V columns bit for bit untouched
 *   attention   2e|ref| + 2e max|v| + 1e-5 (P is rounded to the dtype before
 *               P V, the flash-attention trade; the fp32 softmax is exact-ish)
 *   attention + out-projection: each head's fp32 part against kn_attention's
 *               output times that head's slice of Wo in double, 1e-5 (S + 1),
 *               S = sum |o w|; the LayerNorm over the parts as above
 *   head ops    gathers, type embedding, act input: exact (fp32) or one
 *               rounding (16-bit); scorer 1e-5 S; features 1e-5 absolute
 * Bit for bit, GPU against GPU: a selected query equals the full attention's
 * output of its slot; the attention's two launch forms (one group of warps or
 * two a block) agree; each row of a packed batch equals the same row alone at
 * slot 0 of its own buffer; each kernel run twice on the same inputs gives the
 * same outputs (cuBLASLt algorithms are cached per shape); RoPE + attention
 * launched with PDL on a stream equal the plain launches on the legacy stream;
 * the confidence features over a row's slots equal those over the same slots
 * padded with masked ones.
 *
 * Without a CUDA device the program prints SKIP and exits 0.
 */
#include <stdio.h>

#if !LAYAD_CUDA
int main(void)
{
    printf("SKIP: gpu_kernels: built without CUDA (no nvcc)\n");
    return 0;
}
#else

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "kernels/cpu.h"
#include "kernels/cuda.h"

/* ---- small harness --------------------------------------------------------- */

#include "tests/lib/gpu_check.h" /* CU, OK */

static uint64_t g_fresh_seed;
/* LAYAD_TEST_NO_TUNE=1: cuBLASLt's heuristic choice only, no candidates timed (for racecheck,
 * whose host memory the tuner's many candidate kernels outgrow) */
static int g_tune = 1;
static const kn_dtype DTS[2] = {KN_F16, KN_BF16};
static const kn_stream KS0 = {NULL, 0}; /* the legacy stream, plain launches */

typedef struct rng { uint64_t s; } rng;
static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [lo, hi). */
static float rng_unif(rng *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)((rng_next(r) >> 40) * (1.0 / 16777216.0));
}
static int rng_int(rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }

static float unit_roundoff(kn_dtype dt)
{
    return dt == KN_F16 ? 0x1p-11f : dt == KN_BF16 ? 0x1p-8f : 0x1p-24f;
}

/* Device allocations of one test, freed together. */
#define MAX_BUFS 512
static void *g_bufs[MAX_BUFS];
static int g_nbufs;
static void *dalloc(size_t bytes)
{
    void *p = NULL;
    ck_assert_int_lt(g_nbufs, MAX_BUFS);
    CU(cudaMalloc(&p, bytes ? bytes : 16));
    g_bufs[g_nbufs++] = p;
    return p;
}
static void dfree_all(void)
{
    for (int i = 0; i < g_nbufs; i++)
        cudaFree(g_bufs[i]);
    g_nbufs = 0;
}

static float *hrand(rng *r, size_t n, float lo, float hi)
{
    float *h = malloc(n * sizeof *h + 1);
    ck_assert_ptr_nonnull(h);
    for (size_t i = 0; i < n; i++)
        h[i] = rng_unif(r, lo, hi);
    return h;
}

/* Uploads h[n] as dtype dt and rounds h in place to the values the GPU holds. */
static void *upload(float *h, size_t n, kn_dtype dt)
{
    float *tmp = dalloc(n * sizeof(float));
    void *d = dalloc(n * kn_dtype_size(dt));
    CU(cudaMemcpy(tmp, h, n * sizeof(float), cudaMemcpyHostToDevice));
    OK(kn_convert(KS0, tmp, KN_F32, d, dt, n));
    OK(kn_convert(KS0, d, dt, tmp, KN_F32, n));
    CU(cudaMemcpy(h, tmp, n * sizeof(float), cudaMemcpyDeviceToHost));
    return d;
}
static void *upload_raw(const void *h, size_t bytes)
{
    void *d = dalloc(bytes);
    CU(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}
/* An output buffer of n elements, poisoned. */
static void *dout(size_t n, kn_dtype dt)
{
    void *d = dalloc(n * kn_dtype_size(dt));
    CU(cudaMemset(d, 0xff, n * kn_dtype_size(dt)));
    return d;
}
static void poison(void *d, size_t n, kn_dtype dt) { CU(cudaMemset(d, 0xff, n * kn_dtype_size(dt))); }

/* Device buffer (dtype dt) -> new host fp32 array. */
static float *download(const void *d, size_t n, kn_dtype dt)
{
    float *h = malloc(n * sizeof *h + 1);
    ck_assert_ptr_nonnull(h);
    CU(cudaDeviceSynchronize());
    if (dt == KN_F32) {
        CU(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    } else {
        float *tmp = NULL;
        CU(cudaMalloc((void **)&tmp, n * sizeof(float) + 16));
        OK(kn_convert(KS0, d, dt, tmp, KN_F32, n));
        CU(cudaMemcpy(h, tmp, n * sizeof(float), cudaMemcpyDeviceToHost));
        cudaFree(tmp);
    }
    return h;
}

/* Checks |g - r| <= rel |r| + abs_i (abs_i = abs + absv[i] if absv) for all i. */
static void expect_close(const char *what, const float *g, const float *r, size_t n, float rel,
                         float abs, const float *absv)
{
    size_t bad = 0, first = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double tol = rel * fabs(r[i]) + abs + (absv ? absv[i] : 0.0f);
        const double err = fabs((double)g[i] - (double)r[i]);
        if (!isfinite(g[i]) || !(err <= tol)) {
            if (!bad)
                first = i;
            bad++;
        }
        if (isfinite(g[i]) && tol > 0 && err / tol > worst)
            worst = err / tol;
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu outside tolerance; first [%zu] gpu %.8g cpu %.8g\n", what, bad, n,
                first, g[first], r[first]);
    ck_assert_msg(bad == 0, "%s: %zu elements outside tolerance", what, bad);
    printf("  %-48s ok  (max err/tol %.3f, n=%zu)\n", what, worst, n);
}

static void expect_equal(const char *what, const float *g, const float *r, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += memcmp(&g[i], &r[i], sizeof(float)) != 0;
    ck_assert_msg(bad == 0, "%s: %zu of %zu elements differ", what, bad, n);
    printf("  %-48s ok  (bit-exact, n=%zu)\n", what, n);
}

static uint64_t seed_of(int pass) { return pass == 0 ? 1234u : g_fresh_seed; }

/* ---- GEMM ------------------------------------------------------------------ */


typedef struct gemm_case { int M, N, K, epi, bias; kn_dtype xdt, ydt; int want_lt, b16; } gemm_case;

/* Y's starting contents for KN_EPI_ACC (y0, in ydt), else poison. */
static void gemm_reset_y(void *dY, void *dY0, size_t n, kn_dtype ydt)
{
    if (dY0)
        CU(cudaMemcpy(dY, dY0, n * kn_dtype_size(ydt), cudaMemcpyDeviceToDevice));
    else
        poison(dY, n, ydt);
}

/* One case against the CPU. prepare_first: the shape is first prepared on its own
 * operands (with tuning on its candidates are timed there, and an accumulating
 * GEMM's Y is clobbered), then Y is restored and the GEMM runs. */
static void run_gemm_case(kn_gemm_ctx *ctx, kn_dtype dt, const gemm_case *c, int prepare_first, rng *r)
{
    const kn_dtype xdt = c->xdt == KN_F32 ? KN_F32 : dt;
    const kn_dtype ydt = c->ydt == KN_F32 ? KN_F32 : dt;
    const size_t MN = (size_t)c->M * c->N;
    float *X = hrand(r, (size_t)c->M * c->K, -1, 1), *W = hrand(r, (size_t)c->N * c->K, -1, 1);
    float *bias = hrand(r, (size_t)c->N, -0.5f, 0.5f);
    void *dX = xdt == KN_F32 ? upload_raw(X, sizeof(float) * c->M * c->K) : upload(X, (size_t)c->M * c->K, dt);
    void *dW = upload(W, (size_t)c->N * c->K, dt);
    /* b16: the bias in the weights' dtype through kn_gemm_ex (rounded here too); else fp32. */
    void *db = c->b16 ? upload(bias, (size_t)c->N, dt) : upload_raw(bias, sizeof(float) * c->N);
    /* ACC adds into a random Y0 (rounded to ydt here as on the device) */
    float *Y0 = c->epi == KN_EPI_ACC ? hrand(r, MN, -4, 4) : NULL;
    void *dY0 = !Y0 ? NULL : ydt == KN_F32 ? upload_raw(Y0, sizeof(float) * MN) : upload(Y0, MN, ydt);
    void *dY = dout(MN, ydt);
    gemm_reset_y(dY, dY0, MN, ydt);
    ck_assert_int_eq(kn_gemm_uses_cublaslt(xdt, dt, ydt, dX, dW, dY, c->N, c->K, c->epi), c->want_lt);
    if (prepare_first) {
        OK(kn_gemm_prepare(ctx, xdt, dt, ydt, c->M, c->N, c->K, c->epi, c->bias, KS0, dX, dW, dY));
        gemm_reset_y(dY, dY0, MN, ydt);
    }
    OK(kn_gemm_ex(ctx, KS0, dX, xdt, dW, dt, c->bias ? db : NULL, c->b16 ? dt : KN_F32, dY, ydt, c->M, c->N, c->K,
                  c->epi));
    float *g = download(dY, MN, ydt);

    float *ref = malloc(sizeof(float) * c->M * c->N + 1), *S = malloc(sizeof(float) * c->M * c->N + 1);
    if (Y0)
        memcpy(ref, Y0, sizeof(float) * MN);
    float *aX = malloc(sizeof(float) * c->M * c->K + 1), *aW = malloc(sizeof(float) * c->N * c->K + 1);
    for (size_t i = 0; i < (size_t)c->M * c->K; i++)
        aX[i] = fabsf(X[i]);
    for (size_t i = 0; i < (size_t)c->N * c->K; i++)
        aW[i] = fabsf(W[i]);
    kn_cpu_gemm(X, W, c->bias ? bias : NULL, ref, c->M, c->N, c->K, c->epi);
    kn_cpu_gemm(aX, aW, NULL, S, c->M, c->N, c->K, KN_EPI_NONE);
    /* fp32 summation noise; with a 16-bit Y cuBLASLt adds the bias rounded to Y's dtype,
     * GELU after cuBLASLt reads the pre-activation v rounded to Y's dtype (|gelu'| <= 1.13),
     * and cuBLASLt's beta = 1 rounds the product to Y's dtype before adding Y (measured on the
     * H200: up to 4 ulps of the sum where it cancels) */
    float *pre = NULL;
    if ((c->epi == KN_EPI_GELU || (c->epi == KN_EPI_ACC && c->want_lt)) && ydt != KN_F32) {
        pre = malloc(sizeof(float) * c->M * c->N + 1);
        kn_cpu_gemm(X, W, c->bias ? bias : NULL, pre, c->M, c->N, c->K, KN_EPI_NONE);
    }
    for (size_t i = 0; i < (size_t)c->M * c->N; i++)
        S[i] = 1e-5f * (S[i] + 1.0f) + (c->bias ? 2 * unit_roundoff(ydt) * fabsf(bias[i % c->N]) : 0.0f) +
               (pre ? (c->epi == KN_EPI_ACC ? 2.0f : 1.2f) * unit_roundoff(ydt) * fabsf(pre[i]) : 0.0f);
    free(pre);
    char what[160];
    snprintf(what, sizeof what, "gemm %s M%d N%d K%d epi%d bias%d%s x%s y%s %s", kn_dtype_name(dt), c->M, c->N,
             c->K, c->epi, c->bias, c->b16 ? "(16-bit)" : "", kn_dtype_name(xdt), kn_dtype_name(ydt),
             c->want_lt ? "cublasLt" : "own");
    expect_close(what, g, ref, (size_t)c->M * c->N, 2 * unit_roundoff(ydt), 0, S);
    if (c->b16) {
        free(X), free(W), free(bias), free(g), free(ref), free(S), free(aX), free(aW), free(Y0);
        return;
    }
    /* The own kernel on the same inputs agrees too (whatever path kn_gemm took). */
    gemm_reset_y(dY, dY0, MN, ydt);
    OK(kn_gemm_own(KS0, dX, xdt, dW, dt, c->bias ? db : NULL, dY, ydt, c->M, c->N, c->K, c->epi));
    float *g2 = download(dY, (size_t)c->M * c->N, ydt);
    strncat(what, " [own]", sizeof what - strlen(what) - 1);
    expect_close(what, g2, ref, (size_t)c->M * c->N, 2 * unit_roundoff(ydt), 0, S);
    free(X), free(W), free(bias), free(g), free(g2), free(ref), free(S), free(aX), free(aW), free(Y0);
}

START_TEST(test_gemm)
{
    const kn_dtype dt = DTS[_i];
    kn_gemm_ctx *ctx = kn_gemm_ctx_create(0, 0);
    ck_assert_ptr_nonnull(ctx);
    const gemm_case cases[] = {
        /* cuBLASLt: aligned K and N, epilogues it has */
        {130, 264, 520, KN_EPI_NONE, 0, KN_F16, KN_F16, 1, 0},
        {130, 264, 520, KN_EPI_NONE, 1, KN_F16, KN_F32, 1, 0},
        {130, 264, 520, KN_EPI_NONE, 1, KN_F16, KN_F16, 1, 0}, /* fp32 bias converted to Y's dtype */
        {83, 256, 1024, KN_EPI_RELU, 1, KN_F16, KN_F16, 1, 0},
        {83, 256, 1024, KN_EPI_RELU, 1, KN_F16, KN_F16, 1, 1}, /* 16-bit bias, no conversion */
        {40, 136, 64, KN_EPI_NONE, 1, KN_F16, KN_F32, 1, 1},   /* 16-bit bias converted to fp32 */
        {7, 64, 72, KN_EPI_RELU, 0, KN_F16, KN_F32, 1, 0},
        /* own kernels: K not a multiple of 8 (tiled tensor-core kernel above 64 rows,
         * row-streaming kernel up to 64 rows), scalar loads */
        {77, 67, 131, KN_EPI_GELU, 1, KN_F16, KN_F16, 0, 0},
        {77, 67, 131, KN_EPI_GELU, 1, KN_F16, KN_F16, 0, 1},
        {5, 200, 96, KN_EPI_GELU, 1, KN_F16, KN_F32, 1, 0},    /* GELU: cuBLASLt + erf pass */
        {130, 264, 520, KN_EPI_GELU, 1, KN_F16, KN_F16, 1, 1},
        {65, 129, 260, KN_EPI_NONE, 0, KN_F16, KN_F16, 0, 0},
        {3, 33, 1028, KN_EPI_GELU, 1, KN_F16, KN_F32, 0, 0},
        {1, 1, 1, KN_EPI_RELU, 1, KN_F16, KN_F16, 0, 0},
        {9, 17, 0, KN_EPI_GELU, 1, KN_F16, KN_F32, 0, 0}, /* K = 0: epi(bias) */
        /* own row-streaming kernel with fp32 X (the scorer, the act head), any M */
        {33, 129, 257, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0},
        {33, 129, 257, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 1},
        {16, 64, 1024, KN_EPI_NONE, 0, KN_F32, KN_F16, 0, 0},
        {64, 300, 1024, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0}, /* 64 rows, partial column block */
        {9, 1024, 1024, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0}, /* the scorer at 1 x (CLS + 8) */
        {200, 96, 64, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0},   /* 25 row groups */
        {80, 1024, 1024, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0}, /* the scorer at a small bucket */
        {2053, 70, 1028, KN_EPI_NONE, 1, KN_F32, KN_F16, 0, 0}, /* many groups, 4-byte loads */
        {8, 256, 1028, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0},  /* the act head's first layer */
        {5, 40, 2600, KN_EPI_NONE, 1, KN_F32, KN_F32, 0, 0},   /* X staged in three chunks */
        {11, 70, 4100, KN_EPI_RELU, 0, KN_F32, KN_F16, 0, 0},  /* five chunks, 8-byte loads */
        {3, 33, 2049, KN_EPI_GELU, 1, KN_F16, KN_F32, 0, 0},   /* 16-bit X, odd K: scalar staging */
        /* accumulating (the residual add in the epilogue): cuBLASLt's beta = 1, each own kernel */
        {130, 264, 520, KN_EPI_ACC, 0, KN_F16, KN_F32, 1, 0},  /* the encoder's branch GEMMs */
        {83, 256, 1024, KN_EPI_ACC, 0, KN_F16, KN_F32, 1, 0},
        {5, 200, 96, KN_EPI_ACC, 1, KN_F16, KN_F32, 1, 0},
        {130, 264, 520, KN_EPI_ACC, 0, KN_F16, KN_F16, 1, 0},  /* 16-bit Y: the sum rounded once */
        {77, 67, 131, KN_EPI_ACC, 1, KN_F16, KN_F32, 0, 0},    /* tiled tensor-core kernel */
        {3, 33, 1028, KN_EPI_ACC, 0, KN_F16, KN_F16, 0, 0},    /* row-streaming kernel */
        {33, 129, 257, KN_EPI_ACC, 1, KN_F32, KN_F32, 0, 0},   /* fp32 X kernel */
    };
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_gemm_case(ctx, dt, &cases[i], 0, &r);
        dfree_all();
    }
    /* Plans are cached: a warm-up call adds nothing for a known shape. */
    OK(kn_gemm_prepare(ctx, dt, dt, dt, 130, 264, 520, KN_EPI_NONE, 0, KS0, NULL, NULL, NULL));
    kn_gemm_ctx_destroy(ctx);
    /* With tuning on, timed at the first launch or at a prepare on the operands (an
     * accumulating GEMM is timed only there), the timed choice is as accurate (same bounds)
     * on every cuBLASLt case. */
    for (int at_prepare = 0; at_prepare < 2; at_prepare++) {
        kn_gemm_ctx *tctx = kn_gemm_ctx_create(0, 0);
        ck_assert_ptr_nonnull(tctx);
        kn_gemm_ctx_set_tuning(tctx, g_tune);
        rng r = {seed_of(1)};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (cases[i].want_lt)
                run_gemm_case(tctx, dt, &cases[i], at_prepare, &r);
        dfree_all();
        kn_gemm_ctx_destroy(tctx);
    }
}
END_TEST

/* ---- GeGLU ----------------------------------------------------------------- */

START_TEST(test_geglu)
{
    const kn_dtype dt = DTS[_i];
    /* 1000 x 2624 and 500 x 2624 run the 4- and 2-vector-per-thread paths (>= 2 blocks per SM
     * on 132 SMs) with a partial last block; the small ones one vector per thread or the
     * scalar path (F % 8 != 0). */
    const int shapes[][2] = {{33, 264}, {17, 37}, {1, 2624}, {1000, 2624}, {500, 2624}};
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (int s = 0; s < 5; s++) {
            const int M = shapes[s][0], F = shapes[s][1];
            float *U = hrand(&r, (size_t)M * 2 * F, -4, 4);
            void *dU = upload(U, (size_t)M * 2 * F, dt);
            void *dO = dout((size_t)M * F, dt);
            OK(kn_geglu(KS0, dt, dU, dO, M, F));
            float *g = download(dO, (size_t)M * F, dt), *ref = malloc(sizeof(float) * M * F);
            kn_cpu_geglu(U, ref, M, F);
            char what[96];
            snprintf(what, sizeof what, "geglu %s M%d F%d", kn_dtype_name(dt), M, F);
            expect_close(what, g, ref, (size_t)M * F, 2 * unit_roundoff(dt), 1e-6f, NULL);
            free(U), free(g), free(ref);
        }
        dfree_all();
    }
}
END_TEST

/* ---- LayerNorm ---------------------------------------------------------------- */

static void run_ln_case(kn_dtype dt, int M, int D, int xmode /* 0 none, 1 dt, 2 f32 */, int has_b,
                        float base, rng *r)
{
    const kn_dtype xdt = xmode == 2 ? KN_F32 : dt;
    float *R = hrand(r, (size_t)M * D, -1, 1), *X = hrand(r, (size_t)M * D, -2, 2);
    float *w = hrand(r, D, 0.5f, 1.5f), *b = hrand(r, D, -0.5f, 0.5f);
    for (size_t i = 0; i < (size_t)M * D; i++) /* large residuals: some rows offset, some channels outliers */
        R[i] += (i / D) % 2 ? base : (i % D) % 7 == 0 ? -base : 0.0f;
    float *dR = upload_raw(R, sizeof(float) * M * D);
    void *dX = xmode == 0 ? NULL : xmode == 1 ? upload(X, (size_t)M * D, dt) : upload_raw(X, sizeof(float) * M * D);
    float *dw = upload_raw(w, sizeof(float) * D), *db = upload_raw(b, sizeof(float) * D);
    void *y16 = dout((size_t)M * D, dt);
    float *y32 = dout((size_t)M * D, KN_F32);
    OK(kn_layernorm(KS0, dR, dX, xdt, dw, has_b ? db : NULL, y16, dt, y32, M, D, 1e-5f));
    float *gr = download(dR, (size_t)M * D, KN_F32), *g16 = download(y16, (size_t)M * D, dt);
    float *g32 = download(y32, (size_t)M * D, KN_F32), *ref = malloc(sizeof(float) * M * D);
    kn_cpu_layernorm(R, xmode ? X : NULL, w, has_b ? b : NULL, ref, M, D, 1e-5f);
    char what[128];
    snprintf(what, sizeof what, "layernorm %s M%d D%d x%d b%d |r|~%g: r", kn_dtype_name(dt), M, D, xmode, has_b,
             base);
    expect_equal(what, gr, R, (size_t)M * D);
    what[strlen(what) - 1] = 'y';
    expect_close(what, g16, ref, (size_t)M * D, 2 * unit_roundoff(dt), 1e-5f, NULL);
    strncat(what, "32", sizeof what - strlen(what) - 1);
    expect_close(what, g32, ref, (size_t)M * D, 1e-5f, 1e-5f, NULL);
    /* In place (y32 = r) and y32 only. */
    CU(cudaMemcpy(dR, gr, sizeof(float) * M * D, cudaMemcpyHostToDevice));
    for (size_t i = 0; i < (size_t)M * D; i++)
        gr[i] = R[i];
    OK(kn_layernorm(KS0, dR, NULL, dt, dw, has_b ? db : NULL, NULL, dt, dR, M, D, 1e-5f));
    float *gi = download(dR, (size_t)M * D, KN_F32);
    kn_cpu_layernorm(gr, NULL, w, has_b ? b : NULL, ref, M, D, 1e-5f);
    strncat(what, " in place", sizeof what - strlen(what) - 1);
    expect_close(what, gi, ref, (size_t)M * D, 1e-5f, 1e-5f, NULL);
    free(R), free(X), free(w), free(b), free(gr), free(g16), free(g32), free(ref), free(gi);
}

START_TEST(test_layernorm)
{
    const kn_dtype dt = DTS[_i];
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (int xmode = 0; xmode < 3; xmode++)
            for (int has_b = 0; has_b < 2; has_b++) {
                run_ln_case(dt, 37, 1024, xmode, has_b, 0.0f, &r); /* fast path */
                run_ln_case(dt, 13, 200, xmode, has_b, 0.0f, &r);  /* general path */
            }
        run_ln_case(dt, 29, 768, 1, 0, 1e4f, &r);
        run_ln_case(dt, 29, 768, 2, 1, 3e4f, &r);  /* D 768 and 1024: unrolled fast paths */
        run_ln_case(dt, 29, 1024, 2, 1, 3e4f, &r);
        run_ln_case(dt, 19, 512, 1, 1, 1e4f, &r);  /* other multiples of 128: predicated path */
        run_ln_case(dt, 11, 100, 1, 1, 1e5f, &r);
        dfree_all();
    }
}
END_TEST

/* ---- a residual branch as split-K partial products ------------------------------------ */

/* Rows m of the [M, K] matrix A restricted to columns [k0, k0 + n), into a fresh [M, n]. */
static float *cols(const float *A, int M, int K, int k0, int n)
{
    float *o = malloc(sizeof(float) * M * n + 1);
    for (int m = 0; m < M; m++)
        memcpy(o + (size_t)m * n, A + (size_t)m * K + k0, sizeof(float) * n);
    return o;
}

/* The split product on ctx's cuBLASLt plan, or with ctx NULL on the own small-pack kernel. */
static void split_product(kn_gemm_ctx *ctx, kn_dtype dt, const void *dX, const void *dW, float *dP, int M, int D,
                          int K, int S)
{
    if (ctx)
        OK(kn_gemm_split(ctx, KS0, dX, dW, dt, dP, M, D, K, S));
    else
        OK(kn_gemm_split_small(KS0, dX, dW, dt, dP, M, D, K, S));
}

/* kn_gemm_split's S parts (ctx NULL: kn_gemm_split_small's), each against the CPU product of
 * its K slice (tuned on its own operands first), a second run into poisoned parts
 * bit-identical; then (D % 128 == 0) kn_layernorm_parts over those parts: the residual bit
 * for bit r + (((p0 + p1) + ...) + p[S-1]) (+ the branch's bias when biased) as the CPU forms
 * it from the same parts, the outputs as kn_cpu_layernorm's (with the LayerNorm's own bias
 * when biased: the head's layers). */
static void run_split_case(kn_gemm_ctx *ctx, kn_dtype dt, int M, int D, int K, int S, float base, int biased,
                           rng *r)
{
    const int Ks = K / S;
    const size_t MD = (size_t)M * D;
    float *X = hrand(r, (size_t)M * K, -1, 1), *W = hrand(r, (size_t)D * K, -1, 1);
    void *dX = upload(X, (size_t)M * K, dt), *dW = upload(W, (size_t)D * K, dt);
    float *dP = dout(S * MD, KN_F32);
    if (ctx)
        OK(kn_gemm_prepare_split(ctx, dt, M, D, K, S, KS0, dX, dW, dP) == 1 ? 0 : -1);
    poison(dP, S * MD, KN_F32);
    split_product(ctx, dt, dX, dW, dP, M, D, K, S);
    float *g = download(dP, S * MD, KN_F32), *ref = malloc(sizeof(float) * MD + 1), *tol = malloc(sizeof(float) * MD + 1);
    char what[128];
    for (int k = 0; k < S; k++) {
        float *xs = cols(X, M, K, k * Ks, Ks), *ws = cols(W, D, K, k * Ks, Ks);
        kn_cpu_gemm(xs, ws, NULL, ref, M, D, Ks, KN_EPI_NONE);
        for (size_t i = 0; i < (size_t)Ks * M; i++)
            xs[i] = fabsf(xs[i]);
        for (size_t i = 0; i < (size_t)Ks * D; i++)
            ws[i] = fabsf(ws[i]);
        kn_cpu_gemm(xs, ws, NULL, tol, M, D, Ks, KN_EPI_NONE);
        for (size_t i = 0; i < MD; i++)
            tol[i] = 1e-5f * (tol[i] + 1.0f);
        snprintf(what, sizeof what, "gemm_split%s %s M%d N%d K%d S%d part %d", ctx ? "" : "_small", kn_dtype_name(dt), M,
                 D, K, S, k);
        expect_close(what, g + k * MD, ref, MD, 2 * unit_roundoff(KN_F32), 0, tol);
        free(xs), free(ws);
    }
    poison(dP, S * MD, KN_F32);
    split_product(ctx, dt, dX, dW, dP, M, D, K, S);
    float *g2 = download(dP, S * MD, KN_F32);
    snprintf(what, sizeof what, "gemm_split%s %s M%d K%d S%d rerun", ctx ? "" : "_small", kn_dtype_name(dt), M, K, S);
    expect_equal(what, g2, g, S * MD);
    if (D % 128 != 0) { /* the product alone: a LayerNorm over parts needs D % 128 == 0 */
        free(X), free(W), free(g), free(g2), free(ref), free(tol);
        return;
    }

    float *R = hrand(r, MD, -1, 1), *w = hrand(r, D, 0.5f, 1.5f), *sum = malloc(sizeof(float) * MD + 1);
    float *bb = hrand(r, D, -1, 1), *lb = hrand(r, D, -0.5f, 0.5f);
    for (size_t i = 0; i < MD; i++) {
        R[i] += (i / D) % 2 ? base : 0.0f;
        sum[i] = g[i];
        for (int k = 1; k < S; k++)
            sum[i] += g[k * MD + i];
        if (biased)
            sum[i] += bb[i % D];
    }
    float *dR = upload_raw(R, sizeof(float) * MD), *dw = upload_raw(w, sizeof(float) * D);
    float *dbb = upload_raw(bb, sizeof(float) * D), *dlb = upload_raw(lb, sizeof(float) * D);
    void *y16 = dout(MD, dt);
    OK(kn_layernorm_parts(KS0, dR, dP, S, (long)MD, biased ? dbb : NULL, dw, biased ? dlb : NULL, y16, dt, NULL, M,
                          D, 1e-5f));
    float *gr = download(dR, MD, KN_F32), *gy = download(y16, MD, dt);
    kn_cpu_layernorm(R, sum, w, biased ? lb : NULL, ref, M, D, 1e-5f); /* R += sum, ref = LN(R) */
    snprintf(what, sizeof what, "layernorm_parts %s M%d D%d S%d |r|~%g%s: r", kn_dtype_name(dt), M, D, S, base,
             biased ? " biased" : "");
    expect_equal(what, gr, R, MD);
    what[strlen(what) - 1] = 'y';
    expect_close(what, gy, ref, MD, 2 * unit_roundoff(dt), 1e-5f, NULL);
    free(X), free(W), free(g), free(g2), free(ref), free(tol), free(R), free(w), free(sum), free(gr), free(gy), free(bb), free(lb);
}

/* The own kernel's parts of a row do not depend on M: rows [0, m) of an [M, K] product equal
 * the product of those m rows alone, bit for bit. */
static void check_small_rows(kn_dtype dt, int M, int m, int D, int K, int S, rng *r)
{
    float *X = hrand(r, (size_t)M * K, -1, 1), *W = hrand(r, (size_t)D * K, -1, 1);
    void *dX = upload(X, (size_t)M * K, dt), *dW = upload(W, (size_t)D * K, dt);
    float *dP = dout((size_t)S * M * D, KN_F32), *dp = dout((size_t)S * m * D, KN_F32);
    OK(kn_gemm_split_small(KS0, dX, dW, dt, dP, M, D, K, S));
    OK(kn_gemm_split_small(KS0, dX, dW, dt, dp, m, D, K, S));
    float *g = download(dP, (size_t)S * M * D, KN_F32), *h = download(dp, (size_t)S * m * D, KN_F32);
    char what[96];
    for (int k = 0; k < S; k++) {
        snprintf(what, sizeof what, "gemm_split_small %s rows 0..%d of M%d == M%d, part %d", kn_dtype_name(dt), m, M, m,
                 k);
        expect_equal(what, h + (size_t)k * m * D, g + (size_t)k * M * D, (size_t)m * D);
    }
    free(X), free(W), free(g), free(h);
}

START_TEST(test_gemm_small)
{
    const kn_dtype dt = DTS[_i];
    void *p = (void *)256;
    if (!kn_gemm_split_small_ok(dt, p, p, p, 16, 1024, 1024, 4)) {
        fprintf(stderr, "test_gemm_small: skipped (the small split product needs a compute capability 9 GPU)\n");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        run_split_case(NULL, dt, 1, 1024, 1024, 4, 0.0f, 0, &r);
        run_split_case(NULL, dt, 16, 1024, 2624, 4, 1e4f, 0, &r); /* the MLP-out shape, large residuals */
        run_split_case(NULL, dt, 33, 1024, 1024, 4, 0.0f, 0, &r);
        run_split_case(NULL, dt, 48, 768, 1152, 2, 0.0f, 0, &r); /* mmBERT's MLP out */
        run_split_case(NULL, dt, 12, 1024, 4096, 4, 0.0f, 1, &r); /* the head FFN's second product */
        run_split_case(NULL, dt, 128, 1024, 1024, 8, 3e4f, 1, &r);
        run_split_case(NULL, dt, 21, 96, 640, 4, 0.0f, 0, &r); /* N % 64 != 0: three blocks of 32 */
        run_split_case(NULL, dt, 96, 1024, 2624, 4, 0.0f, 0, &r); /* a 96-token bucket's MLP out */
        run_split_case(NULL, dt, 83, 1024, 1024, 4, 1e4f, 0, &r);
        check_small_rows(dt, 37, 12, 1024, 2624, 4, &r);
        check_small_rows(dt, 96, 37, 1024, 2624, 4, &r); /* X by bulk copies at 96 rows, maybe not at 37 */
        dfree_all();
    }
    /* refused: N not a multiple of 32, K not a multiple of 16 S, M out of range, misaligned */
    float *f = (float *)256;
    ck_assert_int_eq(kn_gemm_split_small(KS0, p, p, dt, f, 4, 1000, 1024, 4), -1);
    ck_assert_int_eq(kn_gemm_split_small(KS0, p, p, dt, f, 4, 1024, 1000, 4), -1);
    ck_assert_int_eq(kn_gemm_split_small(KS0, p, p, dt, f, 0, 1024, 1024, 4), -1);
    ck_assert_int_eq(kn_gemm_split_small(KS0, p, p, dt, f, KN_GEMM_SMALL_MAXM + 1, 1024, 1024, 4), -1);
    ck_assert_int_eq(kn_gemm_split_small(KS0, (char *)p + 2, p, dt, f, 4, 1024, 1024, 4), -1);
    ck_assert_int_eq(kn_gemm_split_small(KS0, p, p, dt, f, 128, 1024, 16384, 1), -1); /* the tiles do not fit */
}
END_TEST

/* ---- the projections with RoPE / GeGLU in their epilogue --------------------- */

/* Per element of P [M, N] (rows of X [M, K] times W [N, K]^T): 1e-5 of sum |x w| + 1, the
 * fp32 summation-order allowance. */
static float *product_slack(const float *X, const float *W, int M, int N, int K)
{
    float *ax = malloc(sizeof(float) * M * K + 1), *aw = malloc(sizeof(float) * N * K + 1);
    float *s = malloc(sizeof(float) * M * N + 1);
    ck_assert(ax && aw && s);
    for (size_t i = 0; i < (size_t)M * K; i++)
        ax[i] = fabsf(X[i]);
    for (size_t i = 0; i < (size_t)N * K; i++)
        aw[i] = fabsf(W[i]);
    kn_cpu_gemm(ax, aw, NULL, s, M, N, K, KN_EPI_NONE);
    for (size_t i = 0; i < (size_t)M * N; i++)
        s[i] = 1e-5f * (s[i] + 1.0f);
    free(ax), free(aw);
    return s;
}

/* kn_proj_small_rope against the CPU: P = X Wqkv^T rounded to dt, kn_cpu_rope of it, rounded.
 * The kernel's fp32 sum may round P to the neighbouring value, so an output is allowed an ulp
 * and a half of its pair's values plus the summation slack, and an ulp of its own. Rows [0, m)
 * equal an m-row call's bit for bit. */
static void run_proj_rope(kn_dtype dt, int M, int m, int D, rng *r)
{
    const int N = 3 * D, P = 2048;
    const float u = unit_roundoff(dt);
    float *X = hrand(r, (size_t)M * D, -1, 1), *W = hrand(r, (size_t)N * D, -0.2f, 0.2f);
    void *dX = upload(X, (size_t)M * D, dt), *dW = upload(W, (size_t)N * D, dt);
    float *ct = malloc(sizeof(float) * P * KN_ROPE_HALF), *st = malloc(sizeof(float) * P * KN_ROPE_HALF);
    int32_t *pos = malloc(sizeof(int32_t) * M);
    ck_assert(ct && st && pos);
    kn_rope_tables(ct, st, P, 160000.0);
    for (int i = 0; i < M; i++)
        pos[i] = i % 2 ? rng_int(r, P) : i;
    int32_t *dpos = upload_raw(pos, sizeof(int32_t) * M);
    float *dct = upload_raw(ct, sizeof(float) * P * KN_ROPE_HALF);
    float *dst = upload_raw(st, sizeof(float) * P * KN_ROPE_HALF);
    void *dY = dout((size_t)M * N, dt), *dy = dout((size_t)m * N, dt);
    OK(kn_proj_small_rope(KS0, dX, dW, dt, dY, M, D, D, dpos, dct, dst));
    OK(kn_proj_small_rope(KS0, dX, dW, dt, dy, m, D, D, dpos, dct, dst));
    float *g = download(dY, (size_t)M * N, dt), *h = download(dy, (size_t)m * N, dt);
    float *ref = malloc(sizeof(float) * M * N + 1), *tol = product_slack(X, W, M, N, D);
    kn_cpu_gemm(X, W, NULL, ref, M, N, D, KN_EPI_NONE);
    (void)upload(ref, (size_t)M * N, dt); /* P rounded to dt, as a GEMM writes it */
    for (int i = 0; i < M; i++)
        for (int c = 0; c < N; c++) {
            const size_t k = (size_t)i * N + c;
            const size_t p = c < 2 * D ? (c % KN_HEAD_DIM < KN_ROPE_HALF ? k + KN_ROPE_HALF : k - KN_ROPE_HALF) : k;
            tol[k] = 3 * u * (fabsf(ref[k]) + fabsf(ref[p])) + tol[k] + tol[p];
        }
    kn_cpu_rope(ref, M, D, pos, ct, st);
    (void)upload(ref, (size_t)M * N, dt);
    char what[96];
    snprintf(what, sizeof what, "proj_small_rope %s M%d D%d", kn_dtype_name(dt), M, D);
    expect_close(what, g, ref, (size_t)M * N, 2 * u, 0, tol);
    snprintf(what, sizeof what, "proj_small_rope %s rows 0..%d of M%d == M%d", kn_dtype_name(dt), m, M, m);
    expect_equal(what, h, g, (size_t)m * N);
    free(X), free(W), free(ct), free(st), free(pos), free(g), free(h), free(ref), free(tol);
}

/* kn_proj_small_geglu against the CPU: gate and up products rounded to dt, kn_cpu_geglu of
 * them, rounded; allowed what an ulp of the products (and the summation slack) moves
 * gelu(x) y by (|gelu'| <= 1.13), plus an ulp of the output. */
static void run_proj_geglu(kn_dtype dt, int M, int D, int F, rng *r)
{
    const float u = unit_roundoff(dt);
    float *X = hrand(r, (size_t)M * D, -1, 1), *W = hrand(r, (size_t)2 * F * D, -0.2f, 0.2f);
    void *dX = upload(X, (size_t)M * D, dt), *dW = upload(W, (size_t)2 * F * D, dt);
    void *dG = dout((size_t)M * F, dt);
    OK(kn_proj_small_geglu(KS0, dX, dW, dt, dG, M, F, D));
    float *g = download(dG, (size_t)M * F, dt);
    float *U = malloc(sizeof(float) * M * 2 * F + 1), *ref = malloc(sizeof(float) * M * F + 1);
    float *sl = product_slack(X, W, M, 2 * F, D), *tol = malloc(sizeof(float) * M * F + 1);
    ck_assert(U && ref && tol);
    kn_cpu_gemm(X, W, NULL, U, M, 2 * F, D, KN_EPI_NONE);
    (void)upload(U, (size_t)M * 2 * F, dt);
    kn_cpu_geglu(U, ref, M, F);
    (void)upload(ref, (size_t)M * F, dt);
    for (int i = 0; i < M; i++)
        for (int f = 0; f < F; f++) {
            const size_t a = (size_t)i * 2 * F + f, b = a + F, k = (size_t)i * F + f;
            const float x = U[a], y = U[b], gx = fabsf(x) + 1.0f; /* |gelu(x)| <= |x| + 1 */
            tol[k] = 1.2f * (2 * u * fabsf(x) + sl[a]) * fabsf(y) + gx * (2 * u * fabsf(y) + sl[b]) + 1e-6f;
        }
    char what[96];
    snprintf(what, sizeof what, "proj_small_geglu %s M%d D%d F%d", kn_dtype_name(dt), M, D, F);
    expect_close(what, g, ref, (size_t)M * F, 2 * u, 0, tol);
    free(X), free(W), free(g), free(U), free(ref), free(sl), free(tol);
}

START_TEST(test_proj_small)
{
    const kn_dtype dt = DTS[_i];
    if (!kn_proj_small_ok(dt, 16, 1024)) {
        fprintf(stderr, "test_proj_small: skipped (the small projections need a compute capability 9 GPU)\n");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        run_proj_rope(dt, 1, 1, 128, &r);
        run_proj_rope(dt, 37, 21, 128, &r);
        run_proj_rope(dt, 64, 48, 768, &r);
        run_proj_rope(dt, 16, 5, 1024, &r);
        run_proj_geglu(dt, 1, 128, 192, &r);
        run_proj_geglu(dt, 33, 768, 1152, &r);
        run_proj_geglu(dt, 64, 1024, 2624, &r);
        dfree_all();
    }
    /* refused: M out of range, K not a multiple of 16, D not a multiple of 64, F not of 16 */
    void *p = (void *)256;
    const int32_t *ip = (const int32_t *)256;
    const float *fp = (const float *)256;
    ck_assert_int_eq(kn_proj_small_rope(KS0, p, p, dt, p, 0, 128, 128, ip, fp, fp), -1);
    ck_assert_int_eq(kn_proj_small_rope(KS0, p, p, dt, p, KN_PROJ_SMALL_MAXM + 1, 128, 128, ip, fp, fp), -1);
    ck_assert_int_eq(kn_proj_small_rope(KS0, p, p, dt, p, 4, 128, 120, ip, fp, fp), -1);
    ck_assert_int_eq(kn_proj_small_rope(KS0, p, p, dt, p, 4, 96, 128, ip, fp, fp), -1);
    ck_assert_int_eq(kn_proj_small_rope(KS0, p, p, dt, p, 4, 128, 128, NULL, fp, fp), -1);
    ck_assert_int_eq(kn_proj_small_geglu(KS0, p, p, dt, p, 4, 100, 128), -1);
    ck_assert_int_eq(kn_proj_small_geglu(KS0, (char *)p + 2, p, dt, p, 4, 192, 128), -1);
}
END_TEST

START_TEST(test_split_branch)
{
    const kn_dtype dt = DTS[_i];
    kn_gemm_ctx *ctx = kn_gemm_ctx_create(0, 0);
    ck_assert_ptr_nonnull(ctx);
    kn_gemm_ctx_set_tuning(ctx, g_tune);
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        run_split_case(ctx, dt, 37, 1024, 1024, 4, 0.0f, 0, &r);
        run_split_case(ctx, dt, 96, 1024, 2624, 4, 1e4f, 0, &r); /* the MLP-out shape, large residuals */
        run_split_case(ctx, dt, 1, 768, 1152, 2, 0.0f, 0, &r);   /* mmBERT's MLP out, one row */
        run_split_case(ctx, dt, 129, 1024, 1024, 8, 3e4f, 0, &r);
        run_split_case(ctx, dt, 12, 1024, 4096, 4, 0.0f, 1, &r); /* the head FFN's second product */
        run_split_case(ctx, dt, 96, 1024, 1024, 4, 1e3f, 1, &r); /* the head's attention out-proj */
        dfree_all();
    }
    /* refused: K not a multiple of 8 S, D not a multiple of 128, too many parts */
    float *p = (float *)256;
    ck_assert_int_eq(kn_gemm_split(ctx, KS0, p, p, dt, p, 4, 1024, 1000, 4), -1);
    ck_assert_int_eq(kn_gemm_split(ctx, KS0, p, p, dt, p, 4, 1024, 1024, KN_GEMM_SPLIT_MAX + 1), -1);
    ck_assert_int_eq(kn_layernorm_parts(KS0, p, p, 2, 4096, NULL, p, NULL, p, dt, NULL, 4, 200, 1e-5f), -1);
    ck_assert_int_eq(kn_layernorm_parts(KS0, p, p, 2, 1024, NULL, p, NULL, p, dt, NULL, 4, 1024, 1e-5f), -1);
    kn_gemm_ctx_destroy(ctx);
}
END_TEST

START_TEST(test_embed_layernorm)
{
    const kn_dtype dt = DTS[_i];
    const int V = 50, shapes[][2] = {{29, 256}, {7, 100}, {9, 1024}, {9, 768}};
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (int s = 0; s < 4; s++) {
            const int M = shapes[s][0], D = shapes[s][1];
            float *T = hrand(&r, (size_t)V * D, -1, 1), *w = hrand(&r, D, 0.5f, 1.5f);
            int32_t *ids = malloc(sizeof(int32_t) * M);
            for (int m = 0; m < M; m++)
                ids[m] = rng_int(&r, V);
            void *dT = upload(T, (size_t)V * D, dt);
            int32_t *dids = upload_raw(ids, sizeof(int32_t) * M);
            float *dw = upload_raw(w, sizeof(float) * D);
            float *dR = dout((size_t)M * D, KN_F32);
            void *y16 = dout((size_t)M * D, dt);
            OK(kn_embed_layernorm(KS0, dids, dT, dt, V, dw, NULL, dR, y16, dt, NULL, M, D, 1e-5f));
            float *gr = download(dR, (size_t)M * D, KN_F32), *gy = download(y16, (size_t)M * D, dt);
            float *er = malloc(sizeof(float) * M * D), *ref = malloc(sizeof(float) * M * D);
            kn_cpu_embed(T, ids, er, M, D);
            kn_cpu_layernorm(er, NULL, w, NULL, ref, M, D, 1e-5f);
            char what[96];
            snprintf(what, sizeof what, "embed+layernorm %s M%d D%d: r", kn_dtype_name(dt), M, D);
            expect_equal(what, gr, er, (size_t)M * D);
            what[strlen(what) - 1] = 'y';
            expect_close(what, gy, ref, (size_t)M * D, 2 * unit_roundoff(dt), 1e-5f, NULL);
            free(T), free(w), free(ids), free(gr), free(gy), free(er), free(ref);
        }
        dfree_all();
    }
}
END_TEST

/* ---- RoPE -------------------------------------------------------------------- */

START_TEST(test_rope)
{
    const kn_dtype dt = DTS[_i];
    const int max_pos = 8192, M = 45, D = 128;
    const double thetas[2] = {160000.0, 10000.0};
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (int t = 0; t < 2; t++) {
            float *ct = malloc(sizeof(float) * max_pos * KN_ROPE_HALF), *st = malloc(sizeof(float) * max_pos * KN_ROPE_HALF);
            kn_rope_tables(ct, st, max_pos, thetas[t]);
            float *dct = dout((size_t)max_pos * KN_ROPE_HALF, KN_F32), *dst = dout((size_t)max_pos * KN_ROPE_HALF, KN_F32);
            OK(kn_rope_tables_gpu(KS0, dct, dst, max_pos, thetas[t]));
            float *gct = download(dct, (size_t)max_pos * KN_ROPE_HALF, KN_F32);
            float *gst = download(dst, (size_t)max_pos * KN_ROPE_HALF, KN_F32);
            char what[96];
            snprintf(what, sizeof what, "rope tables theta %.0f cos", thetas[t]);
            expect_close(what, gct, ct, (size_t)max_pos * KN_ROPE_HALF, 0, 2e-7f, NULL);
            snprintf(what, sizeof what, "rope tables theta %.0f sin", thetas[t]);
            expect_close(what, gst, st, (size_t)max_pos * KN_ROPE_HALF, 0, 2e-7f, NULL);

            float *Q = hrand(&r, (size_t)M * 3 * D, -2, 2);
            int32_t *pos = malloc(sizeof(int32_t) * M);
            for (int m = 0; m < M; m++) /* small, large (angles wrap many times) and the last position */
                pos[m] = m % 3 == 0 ? m : m % 3 == 1 ? rng_int(&r, max_pos) : max_pos - 1;
            void *dq = upload(Q, (size_t)M * 3 * D, dt);
            int32_t *dpos = upload_raw(pos, sizeof(int32_t) * M);
            float *before = download(dq, (size_t)M * 3 * D, dt);
            /* Both sides apply the CPU tables (the GPU tables were checked above). */
            float *dct2 = upload_raw(ct, sizeof(float) * max_pos * KN_ROPE_HALF);
            float *dst2 = upload_raw(st, sizeof(float) * max_pos * KN_ROPE_HALF);
            OK(kn_rope(KS0, dt, dq, M, D, dpos, dct2, dst2));
            float *g = download(dq, (size_t)M * 3 * D, dt);
            kn_cpu_rope(Q, M, D, pos, ct, st);
            float mx = 0;
            for (size_t i = 0; i < (size_t)M * 3 * D; i++)
                mx = fmaxf(mx, fabsf(before[i]));
            snprintf(what, sizeof what, "rope %s M%d D%d theta %.0f", kn_dtype_name(dt), M, D, thetas[t]);
            expect_close(what, g, Q, (size_t)M * 3 * D, 2 * unit_roundoff(dt), 1e-6f * mx, NULL);
            for (int m = 0; m < M; m++) /* V block untouched, bit for bit */
                ck_assert_msg(memcmp(g + (size_t)m * 3 * D + 2 * D, before + (size_t)m * 3 * D + 2 * D,
                                     sizeof(float) * D) == 0, "rope wrote the V block of row %d", m);
            free(ct), free(st), free(gct), free(gst), free(Q), free(pos), free(before), free(g);
            dfree_all();
        }
    }
}
END_TEST

/* ---- attention ----------------------------------------------------------------- */

/* A packed batch: R rows of lens back to back (empty rows allowed), then pad
 * padding slots (T = sum lens + pad). */
typedef struct att_case { int D, window, pad, R; int lens[8]; } att_case;

/* The batch's cu and query-tile list, host and device. The list has 3 spare
 * entries (row -1) past kn_attention_tiles_cap and all of them are launched;
 * with shuffle the entries are permuted, spares among the live tiles. */
typedef struct att_batch {
    int R, T, used, cap;
    int32_t cu[9];
    int32_t *tiles; /* host, 2 * cap */
    int32_t *dcu, *dtiles;
} att_batch;

static void att_batch_make(att_batch *b, const att_case *c, int shuffle, rng *r)
{
    b->R = c->R;
    b->cu[0] = 0;
    int want = 0;
    for (int i = 0; i < c->R; i++) {
        b->cu[i + 1] = b->cu[i] + c->lens[i];
        want += (c->lens[i] + KN_ATT_TQ - 1) / KN_ATT_TQ;
    }
    b->used = b->cu[c->R];
    b->T = b->used + c->pad;
    b->cap = kn_attention_tiles_cap(b->T, b->R) + 3;
    b->tiles = malloc(sizeof(int32_t) * 2 * b->cap);
    ck_assert_ptr_nonnull(b->tiles);
    ck_assert_int_eq(kn_attention_tiles(b->cu, b->R, b->tiles, b->cap), want);
    for (int i = b->cap - 1; shuffle && i > 0; i--) {
        const int j = rng_int(r, i + 1);
        const int32_t t0 = b->tiles[2 * i], t1 = b->tiles[2 * i + 1];
        b->tiles[2 * i] = b->tiles[2 * j], b->tiles[2 * i + 1] = b->tiles[2 * j + 1];
        b->tiles[2 * j] = t0, b->tiles[2 * j + 1] = t1;
    }
    b->dcu = upload_raw(b->cu, sizeof(int32_t) * (c->R + 1));
    b->dtiles = upload_raw(b->tiles, sizeof(int32_t) * 2 * b->cap);
}

/* Bytes [off, off + n) of device buffer d still hold the 0xFF poison. */
static void expect_poisoned(const char *what, const void *d, size_t off, size_t n)
{
    unsigned char *h = malloc(n + 1);
    ck_assert_ptr_nonnull(h);
    CU(cudaDeviceSynchronize());
    CU(cudaMemcpy(h, (const char *)d + off, n, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += h[i] != 0xff;
    free(h);
    ck_assert_msg(bad == 0, "%s: %zu of %zu poisoned bytes were written", what, bad, n);
    printf("  %-48s ok  (untouched, %zu bytes)\n", what, n);
}

/* A selection over the batch: per row (last row first) its first slot, its last
 * slot and 0..8 random slots, one qrow -1 entry for an empty row; then random
 * slots of random rows up to 70 queries (more than one tile of 64), two spare
 * entries at the end; with interleave the whole list is permuted (runs of one
 * query, rows mixed in every tile of 64). Returns G (at most 82 for 8 rows). */
static int att_selection(const att_batch *b, int interleave, rng *r, int32_t *qrow, int32_t *qpos)
{
    int G = 0;
    for (int i = b->R - 1; i >= 0; i--) {
        const int s = b->cu[i], len = b->cu[i + 1] - s;
        if (len == 0) {
            qrow[G] = -1, qpos[G++] = 0;
            continue;
        }
        const int n = 2 + rng_int(r, 9);
        for (int t = 0; t < n; t++) {
            qrow[G] = i;
            qpos[G++] = t == 0 ? s : t == 1 ? s + len - 1 : s + rng_int(r, len);
        }
    }
    while (b->used > 0 && G < 70) {
        const int i = rng_int(r, b->R), len = b->cu[i + 1] - b->cu[i];
        if (len > 0)
            qrow[G] = i, qpos[G++] = b->cu[i] + rng_int(r, len);
    }
    qrow[G] = -1, qpos[G++] = 0;
    qrow[G] = -1, qpos[G++] = 0;
    for (int i = G - 1; interleave && i > 0; i--) {
        const int j = rng_int(r, i + 1);
        const int32_t a = qrow[i], p = qpos[i];
        qrow[i] = qrow[j], qpos[i] = qpos[j];
        qrow[j] = a, qpos[j] = p;
    }
    return G;
}

static void att_name(char *what, size_t n, kn_dtype dt, const att_case *c, int shuffle)
{
    int k = snprintf(what, n, "attention %s D%d w%d pad%d%s lens", kn_dtype_name(dt), c->D, c->window, c->pad,
                     shuffle ? " shuffled" : "");
    for (int i = 0; i < c->R && k > 0 && (size_t)k < n; i++)
        k += snprintf(what + k, n - (size_t)k, "%s%d", i ? "," : " ", c->lens[i]);
}

static void run_att_case(kn_dtype dt, const att_case *c, int shuffle, rng *r)
{
    att_batch b;
    att_batch_make(&b, c, shuffle, r);
    const int D = c->D;
    const size_t es = kn_dtype_size(dt), n_qkv = (size_t)b.T * 3 * D;
    float *Q = hrand(r, n_qkv, -2, 2);
    void *dq = upload(Q, n_qkv, dt);
    void *dO = dout((size_t)b.T * D, dt);
    OK(kn_attention(KS0, dt, dq, dO, b.T, D, b.dcu, b.dtiles, b.cap, c->window));
    float *g = download(dO, (size_t)b.T * D, dt), *ref = malloc(sizeof(float) * b.T * D + 1);
    kn_cpu_attention(Q, ref, b.T, D, b.cu, b.tiles, b.cap, c->window);
    float vmax = 0;
    for (size_t i = 0; i < (size_t)b.used; i++)
        for (int d = 0; d < D; d++)
            vmax = fmaxf(vmax, fabsf(Q[i * 3 * D + 2 * D + d]));
    const float e = unit_roundoff(dt);
    char what[160], sub[200];
    att_name(what, sizeof what, dt, c, shuffle);
    expect_close(what, g, ref, (size_t)b.used * D, 2 * e, 2 * e * vmax + 1e-5f, NULL);
    snprintf(sub, sizeof sub, "%s: padding", what);
    expect_poisoned(sub, dO, (size_t)b.used * D * es, (size_t)(b.T - b.used) * D * es);

    /* Both launch forms (one group of warps walking the two key halves in turn, two side by side):
     * the same bits as the form kn_attention chose, and the padding untouched. */
    for (int groups = 1; groups <= 2; groups++) {
        void *dF = dout((size_t)b.T * D, dt);
        OK(kn_attention_grouped(KS0, dt, dq, dF, b.T, D, b.dcu, b.dtiles, b.cap, c->window, groups));
        float *f = download(dF, (size_t)b.used * D, dt);
        ck_assert_msg(memcmp(f, g, sizeof(float) * b.used * D) == 0, "%s: %d group(s) a block differ", what, groups);
        snprintf(sub, sizeof sub, "%s: %d group(s): padding", what, groups);
        expect_poisoned(sub, dF, (size_t)b.used * D * es, (size_t)(b.T - b.used) * D * es);
        free(f);
    }

    /* The selection: against the CPU, and bit for bit against the full output of its slot. */
    int32_t qrow[128], qpos[128];
    const int G = att_selection(&b, shuffle, r, qrow, qpos);
    int32_t *dqrow = upload_raw(qrow, sizeof(int32_t) * G), *dqpos = upload_raw(qpos, sizeof(int32_t) * G);
    void *dS = dout((size_t)G * D, dt);
    OK(kn_attention_select(KS0, dt, dq, dS, D, b.dcu, c->window, dqrow, dqpos, G));
    float *gs = download(dS, (size_t)G * D, dt), *rs = malloc(sizeof(float) * G * D + 1);
    kn_cpu_attention_select(Q, rs, D, b.cu, c->window, qrow, qpos, G);
    snprintf(sub, sizeof sub, "%s: select G%d", what, G);
    expect_close(sub, gs, rs, (size_t)G * D, 2 * e, 2 * e * vmax + 1e-5f, NULL);
    for (int i = 0; i < G; i++) {
        const float *x = gs + (size_t)i * D;
        if (qrow[i] < 0) {
            for (int d = 0; d < D; d++)
                ck_assert_msg(x[d] == 0.0f, "selected query %d (no row) gave %g", i, x[d]);
        } else {
            ck_assert_msg(memcmp(x, g + (size_t)qpos[i] * D, sizeof(float) * D) == 0,
                          "selected query %d (slot %d) differs from the full output", i, qpos[i]);
        }
    }
    free(b.tiles), free(Q), free(g), free(ref), free(gs), free(rs);
}

static const att_case ATT_CASES[] = {
    {128, -1, 3, 4, {65, 1, 511, 17}},             /* starts 0, 65, 66, 577: off the 64 grid */
    {128, 64, 3, 4, {65, 1, 511, 17}},             /* sliding |i - j| <= 64 */
    {64, 64, 0, 5, {200, 63, 64, 0, 130}},         /* an empty row, no padding */
    {64, -1, 71, 5, {200, 63, 64, 0, 130}},        /* more than a tile of padding */
    {192, 5, 7, 3, {83, 40, 1}},                   /* narrow window: masks inside tiles */
    {64, -1, 0, 7, {511, 200, 65, 64, 63, 17, 1}},
    {64, 64, 2, 7, {1, 17, 63, 64, 65, 200, 511}},
    {64, -1, 5, 1, {1}},                           /* one token */
    {64, 64, 1, 3, {0, 64, 0}},                    /* empty rows around a full tile */
};

START_TEST(test_attention)
{
    const kn_dtype dt = DTS[_i];
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (size_t i = 0; i < sizeof ATT_CASES / sizeof ATT_CASES[0]; i++)
            for (int shuffle = 0; shuffle < 2; shuffle++) {
                run_att_case(dt, &ATT_CASES[i], shuffle, &r);
                dfree_all();
            }
    }
}
END_TEST

/* Each row of a packed batch, copied alone to slot 0 of its own buffer (with
 * padding after it), gives the outputs it had in the batch bit for bit: key
 * tiles start at the row start, so neither its place nor its neighbours count. */
static void run_att_alone(kn_dtype dt, const att_case *c, rng *r)
{
    att_batch b;
    att_batch_make(&b, c, 1, r);
    const int D = c->D;
    const size_t es = kn_dtype_size(dt), n_qkv = (size_t)b.T * 3 * D;
    float *Q = hrand(r, n_qkv, -2, 2);
    void *dq = upload(Q, n_qkv, dt);
    void *dO = dout((size_t)b.T * D, dt);
    OK(kn_attention(KS0, dt, dq, dO, b.T, D, b.dcu, b.dtiles, b.cap, c->window));
    float *g = download(dO, (size_t)b.T * D, dt);
    for (int i = 0; i < b.R; i++) {
        const int len = b.cu[i + 1] - b.cu[i], T1 = len + 5;
        if (len == 0)
            continue;
        const int32_t cu1[2] = {0, len};
        const int cap1 = kn_attention_tiles_cap(T1, 1);
        int32_t *tiles1 = malloc(sizeof(int32_t) * 2 * cap1);
        ck_assert_ptr_nonnull(tiles1);
        ck_assert_int_ge(kn_attention_tiles(cu1, 1, tiles1, cap1), 1);
        void *dq1 = dalloc((size_t)T1 * 3 * D * es);
        CU(cudaMemset(dq1, 0xff, (size_t)T1 * 3 * D * es)); /* NaN after the row */
        CU(cudaMemcpy(dq1, (const char *)dq + (size_t)b.cu[i] * 3 * D * es, (size_t)len * 3 * D * es,
                      cudaMemcpyDeviceToDevice));
        void *dO1 = dout((size_t)T1 * D, dt);
        OK(kn_attention(KS0, dt, dq1, dO1, T1, D, upload_raw(cu1, sizeof cu1),
                        upload_raw(tiles1, sizeof(int32_t) * 2 * cap1), cap1, c->window));
        float *g1 = download(dO1, (size_t)len * D, dt);
        char what[200];
        att_name(what, sizeof what, dt, c, 1);
        ck_assert_msg(memcmp(g1, g + (size_t)b.cu[i] * D, sizeof(float) * len * D) == 0,
                      "%s: row %d alone differs from the row packed", what, i);
        free(tiles1), free(g1);
    }
    char what[200];
    att_name(what, sizeof what, dt, c, 1);
    printf("  %-48s ok  (each row alone == packed, bit-exact)\n", what);
    free(b.tiles), free(Q), free(g);
}

START_TEST(test_attention_alone)
{
    const kn_dtype dt = DTS[_i];
    const att_case cases[] = {
        {64, -1, 0, 7, {511, 200, 65, 64, 63, 17, 1}},
        {64, 64, 9, 7, {17, 65, 1, 511, 63, 200, 64}},
        {128, 5, 3, 4, {65, 1, 130, 17}},
    };
    rng r = {g_fresh_seed};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_att_alone(dt, &cases[i], &r);
        dfree_all();
    }
}
END_TEST

/* ---- the attention with its out-projection -------------------------------------- */

/* Part h of kn_attention_wo at slot i, column n: O[i, 64h : 64h + 64] . W[n, 64h : 64h + 64]
 * in double over kn_attention's output O (the same bits as the fused kernel's), and the
 * tolerance 1e-5 (sum |o w| + 1) (fp32 summation order). */
static void att_wo_ref(const float *O, const float *W, int used, int D, int h, float *ref, float *tol)
{
    for (int i = 0; i < used; i++)
        for (int n = 0; n < D; n++) {
            double acc = 0, mag = 0;
            for (int k = 64 * h; k < 64 * h + 64; k++) {
                acc += (double)O[(size_t)i * D + k] * W[(size_t)n * D + k];
                mag += fabs((double)O[(size_t)i * D + k] * W[(size_t)n * D + k]);
            }
            ref[(size_t)i * D + n] = (float)acc;
            tol[(size_t)i * D + n] = (float)(1e-5 * (mag + 1.0));
        }
}

/* The LayerNorm over the per-head parts of the used slots: r bit for bit as the CPU sums
 * them (((p0 + p1) + ...) + p[S-1], then into r), y as kn_cpu_layernorm's. */
static void check_att_wo_norm(kn_dtype dt, const char *what, const float *g, float *dP, int used, int T, int D,
                              int S, rng *r)
{
    const size_t UD = (size_t)used * D, TD = (size_t)T * D;
    float *R = hrand(r, UD, -1, 1), *w = hrand(r, D, 0.5f, 1.5f), *sum = malloc(sizeof(float) * UD + 1);
    float *ref = malloc(sizeof(float) * UD + 1);
    for (size_t i = 0; i < UD; i++) {
        sum[i] = g[i];
        for (int k = 1; k < S; k++)
            sum[i] += g[k * TD + i];
    }
    float *dR = upload_raw(R, sizeof(float) * UD), *dw = upload_raw(w, sizeof(float) * D);
    void *y16 = dout(UD, dt);
    OK(kn_layernorm_parts(KS0, dR, dP, S, (long)TD, NULL, dw, NULL, y16, dt, NULL, used, D, 1e-5f));
    float *gr = download(dR, UD, KN_F32), *gy = download(y16, UD, dt);
    kn_cpu_layernorm(R, sum, w, NULL, ref, used, D, 1e-5f);
    char sub[200];
    snprintf(sub, sizeof sub, "%s: layernorm over %d parts: r", what, S);
    expect_equal(sub, gr, R, UD);
    sub[strlen(sub) - 1] = 'y';
    expect_close(sub, gy, ref, UD, 2 * unit_roundoff(dt), 1e-5f, NULL);
    free(R), free(w), free(sum), free(ref), free(gr), free(gy);
}

/* kn_attention_wo against kn_attention's output times each head's slice of W (CPU, double),
 * every part's padding slots untouched, a rerun into poisoned parts bit for bit, then the
 * LayerNorm that sums the parts. */
static void run_att_wo_case(kn_dtype dt, const att_case *c, int shuffle, rng *r)
{
    att_batch b;
    att_batch_make(&b, c, shuffle, r);
    const int D = c->D, S = D / 64;
    const size_t TD = (size_t)b.T * D, UD = (size_t)b.used * D, n_qkv = (size_t)b.T * 3 * D;
    float *Q = hrand(r, n_qkv, -2, 2), *W = hrand(r, (size_t)D * D, -1, 1);
    void *dq = upload(Q, n_qkv, dt), *dW = upload(W, (size_t)D * D, dt);
    float *Wr = download(dW, (size_t)D * D, dt);
    void *dO = dout(TD, dt);
    OK(kn_attention(KS0, dt, dq, dO, b.T, D, b.dcu, b.dtiles, b.cap, c->window));
    float *O = download(dO, UD, dt);
    float *dP = dout((size_t)S * TD, KN_F32);
    OK(kn_attention_wo(KS0, dt, dq, dW, dP, (long)TD, b.T, D, b.dcu, b.dtiles, b.cap, c->window));
    float *g = download(dP, (size_t)S * TD, KN_F32);
    float *ref = malloc(sizeof(float) * UD + 1), *tol = malloc(sizeof(float) * UD + 1);
    char what[160], sub[200];
    att_name(what, sizeof what, dt, c, shuffle);
    memcpy(what, "attn + wo", 9);
    for (int h = 0; h < S; h++) {
        att_wo_ref(O, Wr, b.used, D, h, ref, tol);
        snprintf(sub, sizeof sub, "%s: part %d", what, h);
        expect_close(sub, g + h * TD, ref, UD, 2 * unit_roundoff(KN_F32), 0, tol);
        snprintf(sub, sizeof sub, "%s: part %d padding", what, h);
        expect_poisoned(sub, dP, (h * TD + UD) * sizeof(float), (TD - UD) * sizeof(float));
    }
    poison(dP, (size_t)S * TD, KN_F32);
    OK(kn_attention_wo(KS0, dt, dq, dW, dP, (long)TD, b.T, D, b.dcu, b.dtiles, b.cap, c->window));
    float *g2 = download(dP, (size_t)S * TD, KN_F32);
    for (int h = 0; h < S; h++) {
        snprintf(sub, sizeof sub, "%s: part %d rerun", what, h);
        expect_equal(sub, g2 + h * TD, g + h * TD, UD);
    }
    if (b.used > 0)
        check_att_wo_norm(dt, what, g, dP, b.used, b.T, D, S, r);
    free(b.tiles), free(Q), free(W), free(Wr), free(O), free(g), free(g2), free(ref), free(tol);
}

START_TEST(test_attention_wo)
{
    const kn_dtype dt = DTS[_i];
    const att_case cases[] = {
        {256, -1, 3, 4, {65, 1, 511, 17}},  /* starts off the 64 grid */
        {512, 64, 5, 3, {83, 40, 1}},       /* sliding */
        {1024, -1, 13, 1, {83}},            /* the English 1x83 bucket of 96 */
        {768, 128, 0, 2, {100, 20}},        /* the multilingual width, its window */
        {1024, 5, 2, 3, {130, 0, 64}},      /* a narrow window, an empty row */
        {128, -1, 3, 2, {83, 17}},          /* the tiny geometry: blocks of 128 columns */
    };
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            run_att_wo_case(dt, &cases[i], pass, &r);
            dfree_all();
        }
    }
}
END_TEST

/* ---- head ops ------------------------------------------------------------------ */

/* The decision tail's logits gl [G] against the CPU's, within 1e-5 of the sum of
 * |x w| (+ 1) per slot, and its features, the act input ga's last four columns of
 * each row, copied into gf [4 R]. */
static void check_tail_logits(const char *what, const float *gl, const float *ga, const float *X, const float *w,
                              float bias, const uint8_t *mask, int G, int R, int D, float *gf)
{
    float *lref = malloc(sizeof(float) * G + 1), *S = malloc(sizeof(float) * G + 1);
    ck_assert_ptr_nonnull(lref);
    ck_assert_ptr_nonnull(S);
    kn_cpu_scorer_tail(X, w, bias, mask, lref, G, D);
    for (int k = 0; k < G; k++) {
        S[k] = 0;
        for (int d = 0; d < D; d++)
            S[k] += fabsf(X[(size_t)k * D + d] * w[d]);
        S[k] = 1e-5f * (S[k] + 1);
    }
    expect_close(what, gl, lref, G, 0, 0, S);
    for (int i = 0; i < R; i++)
        memcpy(gf + 4 * i, ga + (size_t)i * (D + 4) + D, sizeof(float) * 4);
    free(lref), free(S);
}

/* kn_type_emb_layernorm: the residual r += te[tt[m]] bit for bit the CPU's add, and y16 bit for bit
 * kn_layernorm's of that residual. H is left holding the sum. */
static void check_type_emb_layernorm(rng *r, float *H, const float *te, const int32_t *tt, int M, int D,
                                     kn_dtype dt)
{
    char what[96];
    float *w = hrand(r, D, 0.5f, 1.5f), *b = hrand(r, D, -0.5f, 0.5f);
    float *dR = upload_raw(H, sizeof(float) * M * D), *dw = upload_raw(w, sizeof(float) * D);
    float *db = upload_raw(b, sizeof(float) * D), *dte = upload_raw(te, sizeof(float) * 3 * D);
    int32_t *dtt = upload_raw(tt, sizeof(int32_t) * M);
    void *y = dout((size_t)M * D, dt), *yref = dout((size_t)M * D, dt);
    OK(kn_type_emb_layernorm(KS0, dR, dte, dtt, dw, db, y, dt, NULL, M, D, 1e-5f));
    float *g = download(dR, (size_t)M * D, KN_F32);
    kn_cpu_add_type_emb(H, te, tt, M, D);
    snprintf(what, sizeof what, "type_emb_layernorm residual D=%d", D);
    expect_equal(what, g, H, (size_t)M * D);
    float *dR2 = upload_raw(H, sizeof(float) * M * D);
    OK(kn_layernorm(KS0, dR2, NULL, dt, dw, db, yref, dt, NULL, M, D, 1e-5f));
    float *gy = download(y, (size_t)M * D, dt), *gr = download(yref, (size_t)M * D, dt);
    snprintf(what, sizeof what, "type_emb_layernorm %s D=%d == layernorm", kn_dtype_name(dt), D);
    expect_equal(what, gy, gr, (size_t)M * D);
    free(w);
    free(b);
    free(g);
    free(gy);
    free(gr);
}

/* kn_layernorm_parts_gather: r and y bit for bit kn_gather_rows (fp32) + kn_layernorm_parts, the
 * source rows untouched; G of M rows (repeats allowed), S parts at D = 1024. */
static void check_parts_gather(rng *r, kn_dtype dt, int M, int G, int S, int biased)
{
    enum { D = 1024 };
    char what[96];
    float *H = hrand(r, (size_t)M * D, -3, 3), *P = hrand(r, (size_t)S * G * D, -1, 1);
    float *w = hrand(r, D, 0.5f, 1.5f), *bb = hrand(r, D, -1, 1), *lb = hrand(r, D, -0.5f, 0.5f);
    int32_t *idx = malloc(sizeof(int32_t) * G);
    ck_assert_ptr_nonnull(idx);
    for (int g = 0; g < G; g++)
        idx[g] = rng_int(r, M);
    float *dH = upload_raw(H, sizeof(float) * M * D), *dP = upload_raw(P, sizeof(float) * S * G * D);
    float *dw = upload_raw(w, sizeof(float) * D), *dbb = upload_raw(bb, sizeof(float) * D);
    float *dlb = upload_raw(lb, sizeof(float) * D);
    int32_t *didx = upload_raw(idx, sizeof(int32_t) * G);
    float *r1 = dout((size_t)G * D, KN_F32), *r2 = dout((size_t)G * D, KN_F32);
    void *y1 = dout((size_t)G * D, dt), *y2 = dout((size_t)G * D, dt);
    const long st = (long)G * D;
    OK(kn_layernorm_parts_gather(KS0, r1, dH, didx, dP, S, st, biased ? dbb : NULL, dw, biased ? dlb : NULL, y1, dt,
                                 NULL, G, D, 1e-5f));
    OK(kn_gather_rows(KS0, KN_F32, dH, didx, r2, G, D));
    OK(kn_layernorm_parts(KS0, r2, dP, S, st, biased ? dbb : NULL, dw, biased ? dlb : NULL, y2, dt, NULL, G, D,
                          1e-5f));
    float *g1 = download(r1, (size_t)G * D, KN_F32), *g2 = download(r2, (size_t)G * D, KN_F32);
    float *gy1 = download(y1, (size_t)G * D, dt), *gy2 = download(y2, (size_t)G * D, dt);
    float *gh = download(dH, (size_t)M * D, KN_F32);
    snprintf(what, sizeof what, "layernorm_parts_gather %s G%d S%d%s: r", kn_dtype_name(dt), G, S, biased ? " biased" : "");
    expect_equal(what, g1, g2, (size_t)G * D);
    what[strlen(what) - 1] = 'y';
    expect_equal(what, gy1, gy2, (size_t)G * D);
    expect_equal("layernorm_parts_gather source untouched", gh, H, (size_t)M * D);
    ck_assert_int_eq(kn_layernorm_parts_gather(KS0, dH, dH, didx, dP, S, st, NULL, dw, NULL, y1, dt, NULL, G, D, 1e-5f),
                     -1);
    free(H), free(P), free(w), free(bb), free(lb), free(idx), free(g1), free(g2), free(gy1), free(gy2), free(gh);
}

/* The head's kernels on a packed batch of HO_R rows (one empty, one of a single
 * slot) and 5 padding slots; hc holds what the steps below hand each other. */
enum { HO_R = 5, HO_D = 100, HO_DV = 1024, HO_KP = 7 };
static const int HO_LENS[HO_R] = {17, 1, 30, 0, 9};

typedef struct {
    kn_dtype dt;
    int M, G;
    int32_t cu[HO_R + 1], goff[HO_R + 1], idx[HO_R * 6];
    float *H, *gref;    /* host: the slots, their gathered rows by the CPU */
    float *dG;          /* device: the gathered rows by the GPU */
    int32_t *dgoff;     /* device: goff */
    uint8_t mask[HO_R * 6];
    float *X, *w, bias; /* the tail's scorer inputs */
    float *ga;          /* the tail's act input by the GPU */
} head_case;

/* Type embedding and LayerNorm: every slot its row's type, padding slots type 0;
 * then at D = 1024 (the vector path), each slot of a random type. */
static void head_type_emb(rng *r, head_case *hc)
{
    const int M = hc->M;
    float *te = hrand(r, 3 * HO_D, -1, 1);
    int32_t *tt = calloc(M, sizeof *tt);
    ck_assert_ptr_nonnull(tt);
    for (int i = 0; i < HO_R; i++) {
        const int t = rng_int(r, 3);
        for (int m = hc->cu[i]; m < hc->cu[i + 1]; m++)
            tt[m] = t;
    }
    check_type_emb_layernorm(r, hc->H, te, tt, M, HO_D, hc->dt);
    float *HV = hrand(r, (size_t)M * HO_DV, -3, 3), *teV = hrand(r, 3 * HO_DV, -1, 1);
    for (int m = 0; m < M; m++)
        tt[m] = rng_int(r, 3);
    check_type_emb_layernorm(r, HV, teV, tt, M, HO_DV, hc->dt);
    free(HV), free(teV), free(te), free(tt);
}

/* The gather: each non-empty row's first slot (its CLS), then 1..5 slots of the row
 * (its markers; none for the single-slot row), goff the per-row ranges; fp32 and
 * 16-bit rows against the CPU's gather, bit for bit. */
static void head_gather(rng *r, head_case *hc)
{
    const int M = hc->M, D = HO_D;
    int G = 0;
    for (int i = 0; i < HO_R; i++) {
        if (HO_LENS[i] > 0) {
            hc->idx[G++] = hc->cu[i];
            const int nm = HO_LENS[i] == 1 ? 0 : 1 + rng_int(r, 5);
            for (int k = 0; k < nm; k++)
                hc->idx[G++] = hc->cu[i] + 1 + rng_int(r, HO_LENS[i] - 1);
        }
        hc->goff[i + 1] = G;
    }
    hc->G = G;
    int32_t *didx = upload_raw(hc->idx, sizeof(int32_t) * G);
    hc->dgoff = upload_raw(hc->goff, sizeof hc->goff);
    hc->gref = malloc(sizeof(float) * G * D);
    ck_assert_ptr_nonnull(hc->gref);
    kn_cpu_gather_rows(hc->H, hc->idx, hc->gref, G, D);
    float *dH = upload_raw(hc->H, sizeof(float) * M * D);
    hc->dG = dout((size_t)G * D, KN_F32);
    OK(kn_gather_rows(KS0, KN_F32, dH, didx, hc->dG, G, D));
    float *g = download(hc->dG, (size_t)G * D, KN_F32);
    expect_equal("gather_rows fp32", g, hc->gref, (size_t)G * D);
    free(g);
    float *ref16 = malloc(sizeof(float) * G * D); /* H's last use: rounded in place below */
    ck_assert_ptr_nonnull(ref16);
    void *dH16 = upload(hc->H, (size_t)M * D, hc->dt), *dG16 = dout((size_t)G * D, hc->dt);
    OK(kn_gather_rows(KS0, hc->dt, dH16, didx, dG16, G, D));
    g = download(dG16, (size_t)G * D, hc->dt);
    kn_cpu_gather_rows(hc->H, hc->idx, ref16, G, D); /* H as upload rounded it: the GPU's rows */
    char what[96];
    snprintf(what, sizeof what, "gather_rows %s", kn_dtype_name(hc->dt));
    expect_equal(what, g, ref16, (size_t)G * D);
    free(g), free(ref16);
}

/* The decision tail in one launch: scorer outputs of every slot (the CLS slots
 * masked), each row's features from them, each row's act input. */
static void head_tail(head_case *hc, float *dw, float *dbias, float *dA)
{
    const int G = hc->G, D = HO_D, R = HO_R;
    for (int i = 0; i < R; i++)
        for (int k = hc->goff[i]; k < hc->goff[i + 1]; k++)
            hc->mask[k] = k > hc->goff[i];
    float *dX = upload_raw(hc->X, sizeof(float) * G * D);
    uint8_t *dmask = upload_raw(hc->mask, G);
    float *dlog = dout(G, KN_F32);
    OK(kn_decision_tail(KS0, dX, dw, dbias, dmask, hc->dG, hc->dgoff, dlog, dA, G, R, D));
    float fref[4 * R], gf[4 * R];
    float *gl = download(dlog, G, KN_F32);
    hc->ga = download(dA, (size_t)R * (D + 4), KN_F32);
    check_tail_logits("decision_tail logits", gl, hc->ga, hc->X, hc->w, hc->bias, hc->mask, G, R, D, gf);
    for (int i = 0; i < G; i++)
        if (!hc->mask[i])
            ck_assert_float_eq(gl[i], -1e4f);
    /* the features of the GPU's own logits, as the CPU computes them */
    kn_cpu_conf_features(gl, hc->mask, hc->goff, fref, R);
    expect_close("decision_tail features", gf, fref, 4 * R, 1e-5f, 1e-5f, NULL);
    for (int i = 0; i < R; i++)
        if (hc->goff[i] == hc->goff[i + 1])
            for (int k = 0; k < 4; k++)
                ck_assert_msg(gf[4 * i + k] == 0.0f, "empty row %d: feature %d = %g", i, k, gf[4 * i + k]);
    float *aref = malloc(sizeof(float) * R * (D + 4));
    ck_assert_ptr_nonnull(aref);
    kn_cpu_act_input(hc->gref, gf, hc->goff, aref, R, D);
    expect_equal("decision_tail act input", hc->ga, aref, (size_t)R * (D + 4));
    free(gl), free(aref);
}

/* The same rows padded to HO_KP slots with masked slots: features and act input bit
 * for bit (a row with a live marker; with none, every p would change), and the
 * padded slots' logits -1e4. */
static void head_tail_padded(const head_case *hc, float *dw, float *dbias, float *dA)
{
    const int D = HO_D, R = HO_R;
    uint8_t mpad[HO_R * HO_KP];
    int32_t gpad[HO_R + 1] = {0}, gmap[HO_R * HO_KP];
    for (int i = 0; i < R; i++) {
        const int n = hc->goff[i + 1] - hc->goff[i], k0 = gpad[i], np = n >= 2 ? HO_KP : n;
        gpad[i + 1] = k0 + np;
        for (int k = 0; k < np; k++) {
            gmap[k0 + k] = k < n ? hc->goff[i] + k : hc->goff[i];
            mpad[k0 + k] = k < n ? hc->mask[hc->goff[i] + k] : 0;
        }
    }
    const int GP = gpad[R];
    float *XP = malloc(sizeof(float) * GP * D), *HP = malloc(sizeof(float) * GP * D);
    ck_assert_ptr_nonnull(XP);
    ck_assert_ptr_nonnull(HP);
    for (int k = 0; k < GP; k++) {
        memcpy(XP + (size_t)k * D, hc->X + (size_t)gmap[k] * D, sizeof(float) * D);
        memcpy(HP + (size_t)k * D, hc->gref + (size_t)gmap[k] * D, sizeof(float) * D);
    }
    float *dXP = upload_raw(XP, sizeof(float) * GP * D), *dHP = upload_raw(HP, sizeof(float) * GP * D);
    uint8_t *dmp = upload_raw(mpad, GP);
    int32_t *dgp = upload_raw(gpad, sizeof gpad);
    float *dlp = dout(GP, KN_F32);
    poison(dA, (size_t)R * (D + 4), KN_F32);
    OK(kn_decision_tail(KS0, dXP, dw, dbias, dmp, dHP, dgp, dlp, dA, GP, R, D));
    float *g = download(dA, (size_t)R * (D + 4), KN_F32);
    expect_equal("decision_tail act input == over padded slots", g, hc->ga, (size_t)R * (D + 4));
    free(g);
    g = download(dlp, GP, KN_F32);
    for (int k = 0; k < GP; k++)
        if (!mpad[k])
            ck_assert_float_eq(g[k], -1e4f);
    free(g), free(XP), free(HP);
}

START_TEST(test_head_ops)
{
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        head_case hc = {.dt = DTS[_i]};
        for (int i = 0; i < HO_R; i++)
            hc.cu[i + 1] = hc.cu[i] + HO_LENS[i];
        hc.M = hc.cu[HO_R] + 5;
        hc.H = hrand(&r, (size_t)hc.M * HO_D, -3, 3);
        head_type_emb(&r, &hc);
        check_parts_gather(&r, hc.dt, 150, 16, 4, 1);
        check_parts_gather(&r, hc.dt, 37, 5, 2, 0);
        head_gather(&r, &hc);
        hc.X = hrand(&r, (size_t)hc.G * HO_D, -1, 1);
        hc.w = hrand(&r, HO_D, -1, 1);
        hc.bias = 0.25f;
        float *dw = upload_raw(hc.w, sizeof(float) * HO_D), *dbias = upload_raw(&hc.bias, sizeof hc.bias);
        float *dA = dout((size_t)HO_R * (HO_D + 4), KN_F32);
        head_tail(&hc, dw, dbias, dA);
        head_tail_padded(&hc, dw, dbias, dA);
        free(hc.H), free(hc.gref), free(hc.X), free(hc.w), free(hc.ga);
        dfree_all();
    }
}
END_TEST

/* kn_copy between mapped pinned host memory and the device, both ways, at odd
 * sizes (tails of 1-15 bytes, more words than one block holds); the byte past
 * the end stays untouched. */
/* The decision tail at widths its main test does not reach: D past the 1024
 * elements a thread holds in registers, D not a multiple of 4 (the scalar-load
 * path), and one D run both ways (x 16-byte aligned, then shifted by one
 * float): the two load paths add the same products in the same order, so
 * their logits and act inputs agree bit for bit. */
START_TEST(test_decision_tail_widths)
{
    const int widths[] = {1030, 1024, 8};
    for (size_t t = 0; t < sizeof widths / sizeof widths[0]; t++) {
        rng r = {seed_of((int)t + 7)};
        enum { R = 3 };
        const int D = widths[t];
        const int32_t goff[R + 1] = {0, 4, 4, 9}; /* row 1 empty */
        const int G = goff[R];
        uint8_t mask[9];
        for (int k = 0; k < G; k++)
            mask[k] = k != 0 && k != 4 && k != 6; /* each row's CLS, and one masked marker */
        float *X = hrand(&r, (size_t)G * D + 1, -1, 1), *w = hrand(&r, D, -1, 1), *H = hrand(&r, (size_t)G * D, -2, 2);
        const float bias = -0.5f;
        float *dX = upload_raw(X, sizeof(float) * ((size_t)G * D + 1)), *dw = upload_raw(w, sizeof(float) * D);
        float *dH = upload_raw(H, sizeof(float) * G * D), *db = upload_raw(&bias, sizeof bias);
        uint8_t *dm = upload_raw(mask, G);
        int32_t *dg = upload_raw(goff, sizeof goff);
        float *dlog = dout(G, KN_F32), *dA = dout((size_t)R * (D + 4), KN_F32);
        OK(kn_decision_tail(KS0, dX, dw, db, dm, dH, dg, dlog, dA, G, R, D));
        float *gl = download(dlog, G, KN_F32), *ga = download(dA, (size_t)R * (D + 4), KN_F32);
        float fref[4 * R], gf[4 * R];
        char what[96];
        snprintf(what, sizeof what, "decision_tail D=%d logits", D);
        check_tail_logits(what, gl, ga, X, w, bias, mask, G, R, D, gf);
        kn_cpu_conf_features(gl, mask, goff, fref, R);
        snprintf(what, sizeof what, "decision_tail D=%d features", D);
        expect_close(what, gf, fref, 4 * R, 1e-5f, 1e-5f, NULL);
        float *aref = malloc(sizeof(float) * R * (D + 4));
        ck_assert_ptr_nonnull(aref);
        for (int i = 0; i < R; i++) /* a row's act input: its CLS slot's h, then its features */
            for (int c = 0; c < D + 4; c++)
                aref[(size_t)i * (D + 4) + c] = goff[i] == goff[i + 1] ? 0.0f
                                                : c < D ? H[(size_t)goff[i] * D + c] : gf[4 * i + c - D];
        snprintf(what, sizeof what, "decision_tail D=%d act input", D);
        expect_equal(what, ga, aref, (size_t)R * (D + 4));
        /* the same x one float further on: the scalar path, the same bits */
        CU(cudaMemcpy(dX + 1, X, sizeof(float) * G * D, cudaMemcpyHostToDevice));
        poison(dlog, G, KN_F32), poison(dA, (size_t)R * (D + 4), KN_F32);
        OK(kn_decision_tail(KS0, dX + 1, dw, db, dm, dH, dg, dlog, dA, G, R, D));
        float *gl2 = download(dlog, G, KN_F32), *ga2 = download(dA, (size_t)R * (D + 4), KN_F32);
        snprintf(what, sizeof what, "decision_tail D=%d unaligned x == aligned", D);
        expect_equal(what, gl2, gl, G);
        expect_equal(what, ga2, ga, (size_t)R * (D + 4));
        free(X), free(w), free(H), free(gl), free(ga), free(gl2), free(ga2), free(aref);
        dfree_all();
    }
}
END_TEST

START_TEST(test_copy)
{
    rng r = {seed_of(_i)};
    const size_t sizes[] = {1, 15, 16, 17, 4096, 5000, 70001};
    unsigned char *host, *back;
    CU(cudaHostAlloc((void **)&host, 70016, cudaHostAllocMapped));
    CU(cudaHostAlloc((void **)&back, 70016, cudaHostAllocMapped));
    void *host_dev, *back_dev;
    CU(cudaHostGetDevicePointer(&host_dev, host, 0));
    CU(cudaHostGetDevicePointer(&back_dev, back, 0));
    unsigned char *dev = dalloc(70016);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const size_t n = sizes[k];
        for (size_t i = 0; i < n; i++)
            host[i] = (unsigned char)rng_next(&r);
        memset(back, 0xa5, n + 1);
        CU(cudaMemset(dev, 0x5a, n + 1));
        OK(kn_copy(KS0, dev, host_dev, n));
        OK(kn_copy(KS0, back_dev, dev, n));
        CU(cudaDeviceSynchronize());
        ck_assert_msg(memcmp(back, host, n) == 0, "copy of %zu bytes: host -> device -> host differs", n);
        ck_assert_msg(back[n] == 0xa5, "copy of %zu bytes wrote past the end of the host buffer", n);
        unsigned char past;
        CU(cudaMemcpy(&past, dev + n, 1, cudaMemcpyDeviceToHost));
        ck_assert_msg(past == 0x5a, "copy of %zu bytes wrote past the end of the device buffer", n);
    }
    ck_assert_int_eq(kn_copy(KS0, dev, dev + 8, 64), -1);   /* misaligned */
    ck_assert_int_eq(kn_copy(KS0, dev, dev + 16, 64), -1);  /* overlapping */
    ck_assert_int_eq(kn_copy(KS0, NULL, dev, 16), -1);
    ck_assert_int_eq(kn_copy(KS0, NULL, NULL, 0), 0);
    CU(cudaFreeHost(host));
    CU(cudaFreeHost(back));
}
END_TEST

/* ---- bit-identical run to run ------------------------------------------------------- */

static void *dcopy(const void *src, size_t bytes)
{
    void *d = dalloc(bytes);
    CU(cudaMemcpy(d, src, bytes, cudaMemcpyDeviceToDevice));
    return d;
}

/* Runs fn twice (output poisoned before each) and compares the bytes. */
static void expect_repeatable(const char *what, void *out, size_t bytes, void (*fn)(void *), void *arg)
{
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    CU(cudaMemset(out, 0xff, bytes));
    fn(arg);
    CU(cudaDeviceSynchronize());
    CU(cudaMemcpy(a, out, bytes, cudaMemcpyDeviceToHost));
    CU(cudaMemset(out, 0xff, bytes));
    fn(arg);
    CU(cudaDeviceSynchronize());
    CU(cudaMemcpy(b, out, bytes, cudaMemcpyDeviceToHost));
    ck_assert_msg(memcmp(a, b, bytes) == 0, "%s: outputs differ between runs", what);
    printf("  %-48s ok  (bit-identical, %zu bytes)\n", what, bytes);
    free(a), free(b);
}

typedef struct det_args {
    kn_gemm_ctx *ctx;
    kn_dtype dt;
    kn_stream ks; /* where det_chain launches */
    void *X, *W, *Y, *qkv, *qkv0, *att, *U, *G, *x16, *y16;
    float *bias, *r, *r0, *w, *ct, *st;
    int32_t *cu, *tiles, *pos;
    int M, N, K, T, n_tiles, D, F, lt;
} det_args;

static void det_gemm(void *p)
{
    det_args *a = p;
    switch (a->lt) {
    case 1: /* cuBLASLt, bias + ReLU */
        OK(kn_gemm(a->ctx, KS0, a->X, a->dt, a->W, a->dt, a->bias, a->Y, a->dt, a->M, a->N, a->K, KN_EPI_RELU));
        break;
    case 2: /* cuBLASLt + erf-GELU pass */
        OK(kn_gemm(a->ctx, KS0, a->X, a->dt, a->W, a->dt, a->bias, a->Y, a->dt, a->M, a->N, a->K, KN_EPI_GELU));
        break;
    case 3: /* own tiled kernel */
        OK(kn_gemm_own(KS0, a->X, a->dt, a->W, a->dt, a->bias, a->Y, KN_F32, a->M, a->N, a->K, KN_EPI_GELU));
        break;
    default: /* own row-streaming kernel, fp32 X (the scorer) */
        OK(kn_gemm_own(KS0, a->r0, KN_F32, a->W, a->dt, a->bias, a->Y, KN_F32, 9, a->N, a->K, KN_EPI_GELU));
        break;
    }
}
static void det_att_global(void *p)
{
    det_args *a = p;
    OK(kn_attention(KS0, a->dt, a->qkv, a->att, a->T, a->D, a->cu, a->tiles, a->n_tiles, -1));
}
static void det_att_local(void *p)
{
    det_args *a = p;
    OK(kn_attention(KS0, a->dt, a->qkv, a->att, a->T, a->D, a->cu, a->tiles, a->n_tiles, 64));
}
static void det_rope(void *p)
{
    det_args *a = p;
    CU(cudaMemcpy(a->qkv, a->qkv0, (size_t)a->T * 3 * a->D * kn_dtype_size(a->dt), cudaMemcpyDeviceToDevice));
    OK(kn_rope(KS0, a->dt, a->qkv, a->T, a->D, a->pos, a->ct, a->st));
}
static void det_ln(void *p)
{
    det_args *a = p;
    CU(cudaMemcpy(a->r, a->r0, (size_t)a->M * a->D * sizeof(float), cudaMemcpyDeviceToDevice));
    OK(kn_layernorm(KS0, a->r, a->x16, a->dt, a->w, a->bias, a->y16, a->dt, NULL, a->M, a->D, 1e-5f));
}
static void det_geglu(void *p)
{
    det_args *a = p;
    OK(kn_geglu(KS0, a->dt, a->U, a->G, a->M, a->F));
}
/* RoPE then both attentions on a->ks: with PDL each kernel may start before its
 * predecessor ends (the attention while RoPE runs, in small packs) and waits for
 * it before reading what it writes. */
static void det_chain(void *p)
{
    det_args *a = p;
    CU(cudaMemcpyAsync(a->qkv, a->qkv0, (size_t)a->T * 3 * a->D * kn_dtype_size(a->dt), cudaMemcpyDeviceToDevice,
                       a->ks.s));
    OK(kn_rope(a->ks, a->dt, a->qkv, a->T, a->D, a->pos, a->ct, a->st));
    OK(kn_attention(a->ks, a->dt, a->qkv, a->att, a->T, a->D, a->cu, a->tiles, a->n_tiles, 64));
    OK(kn_attention(a->ks, a->dt, a->qkv, (char *)a->att + (size_t)a->T * a->D * kn_dtype_size(a->dt), a->T,
                    a->D, a->cu, a->tiles, a->n_tiles, -1));
    CU(cudaStreamSynchronize(a->ks.s));
}

/* det_chain on the legacy stream (plain launches), then on a stream with PDL:
 * the same bytes. */
static void expect_pdl_equal(det_args *a)
{
    const size_t bytes = 2 * (size_t)a->T * a->D * kn_dtype_size(a->dt);
    unsigned char *x = malloc(bytes), *y = malloc(bytes);
    ck_assert(x && y);
    cudaStream_t s = NULL;
    CU(cudaStreamCreate(&s));
    for (int k = 0; k < 2; k++) {
        a->ks = k ? (kn_stream){s, 1} : KS0;
        CU(cudaMemset(a->att, 0xff, bytes));
        det_chain(a);
        CU(cudaDeviceSynchronize());
        CU(cudaMemcpy(k ? y : x, a->att, bytes, cudaMemcpyDeviceToHost));
    }
    CU(cudaStreamDestroy(s));
    a->ks = KS0;
    char what[64];
    snprintf(what, sizeof what, "rope + attention with PDL %s", kn_dtype_name(a->dt));
    ck_assert_msg(memcmp(x, y, bytes) == 0, "%s: differs from plain launches", what);
    printf("  %-48s ok  (== plain launches, %zu bytes)\n", what, bytes);
    free(x), free(y);
}

START_TEST(test_repeatable)
{
    det_args a = {0};
    a.dt = DTS[_i];
    a.ks = KS0;
    a.ctx = kn_gemm_ctx_create(0, 0);
    ck_assert_ptr_nonnull(a.ctx);
    rng r = {g_fresh_seed};
    /* attention and RoPE: rows of 512 and 301 tokens packed in T = 1024 slots */
    a.M = 512, a.N = 1024, a.K = 1024, a.T = 1024, a.D = 1024, a.F = 2624;
    float *h = hrand(&r, (size_t)4 << 20, -1, 1); /* large enough for every input */
    a.X = upload(h, (size_t)a.M * a.K, a.dt);
    a.W = upload(h + 7, (size_t)a.N * a.K, a.dt);
    a.bias = upload_raw(h, sizeof(float) * a.N);
    a.Y = dalloc((size_t)a.M * a.N * 4);
    a.qkv0 = upload(h, (size_t)a.T * 3 * a.D, a.dt);
    a.qkv = dcopy(a.qkv0, (size_t)a.T * 3 * a.D * kn_dtype_size(a.dt));
    a.att = dalloc(2 * (size_t)a.T * a.D * kn_dtype_size(a.dt));
    const int32_t cu[3] = {0, 512, 813};
    const int cap = kn_attention_tiles_cap(a.T, 2);
    int32_t *tiles = malloc(sizeof(int32_t) * 2 * cap), pos[1024];
    ck_assert_ptr_nonnull(tiles);
    ck_assert_int_eq(kn_attention_tiles(cu, 2, tiles, cap), 8 + 5);
    for (int i = 0; i < a.T; i++)
        pos[i] = i < 512 ? i : i - 512;
    a.cu = upload_raw(cu, sizeof cu);
    a.tiles = upload_raw(tiles, sizeof(int32_t) * 2 * cap);
    a.n_tiles = cap;
    a.pos = upload_raw(pos, sizeof pos);
    a.ct = dalloc(sizeof(float) * 1024 * KN_ROPE_HALF);
    a.st = dalloc(sizeof(float) * 1024 * KN_ROPE_HALF);
    OK(kn_rope_tables_gpu(KS0, a.ct, a.st, 1024, 160000.0));
    a.r0 = upload_raw(h, sizeof(float) * a.M * a.D);
    a.r = dalloc(sizeof(float) * a.M * a.D);
    a.x16 = upload(h + 3, (size_t)a.M * a.D, a.dt);
    a.w = upload_raw(h + 11, sizeof(float) * a.D);
    a.y16 = dalloc((size_t)a.M * a.D * 2);
    a.U = upload(h, (size_t)a.M * 2 * a.F, a.dt);
    a.G = dalloc((size_t)a.M * a.F * 2);
    char what[64];
    const char *paths[4] = {"own rows", "cuBLASLt", "cuBLASLt+GELU", "own tiled"};
    for (a.lt = 0; a.lt < 4; a.lt++) {
        snprintf(what, sizeof what, "repeatable gemm %s %s", paths[a.lt], kn_dtype_name(a.dt));
        expect_repeatable(what, a.Y, (size_t)a.M * a.N * (a.lt == 1 || a.lt == 2 ? 2 : 4), det_gemm, &a);
    }
    snprintf(what, sizeof what, "repeatable attention global %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.att, (size_t)a.T * a.D * 2, det_att_global, &a);
    snprintf(what, sizeof what, "repeatable attention sliding %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.att, (size_t)a.T * a.D * 2, det_att_local, &a);
    snprintf(what, sizeof what, "repeatable rope %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.qkv, (size_t)a.T * 3 * a.D * 2, det_rope, &a);
    snprintf(what, sizeof what, "repeatable layernorm %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.y16, (size_t)a.M * a.D * 2, det_ln, &a);
    snprintf(what, sizeof what, "repeatable geglu %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.G, (size_t)a.M * a.F * 2, det_geglu, &a);
    expect_pdl_equal(&a);
    free(h), free(tiles);
    dfree_all();
    kn_gemm_ctx_destroy(a.ctx);
}
END_TEST

/* ---- argument validation --------------------------------------------------------------- */

/* A row of an fp32-X product (the scorer, the act head) has the same bits
 * whatever M is and wherever the row sits: a row scored alone equals the same
 * row in any pack, on every path of the row-streaming kernel (V = 8, 2, 1). */
START_TEST(test_gemm_f32_rows_invariant)
{
    const kn_dtype dt = DTS[_i];
    const int N = 300, Ks[3] = {1024, 1028, 1027}, M = 2100, at = 1337, n = 9;
    rng r = {seed_of(1)};
    for (int v = 0; v < 3; v++) {
        const int K = Ks[v];
        float *X = hrand(&r, (size_t)M * K, -1, 1), *W = hrand(&r, (size_t)N * K, -1, 1);
        float *bias = hrand(&r, (size_t)N, -0.5f, 0.5f);
        float *dX = upload_raw(X, sizeof(float) * (size_t)M * K);
        void *dW = upload(W, (size_t)N * K, dt);
        float *db = upload_raw(bias, sizeof(float) * N);
        float *all = dout((size_t)M * N, KN_F32), *few = dout((size_t)n * N, KN_F32);
        OK(kn_gemm_own(KS0, dX, KN_F32, dW, dt, db, all, KN_F32, M, N, K, KN_EPI_GELU));
        OK(kn_gemm_own(KS0, dX + (size_t)at * K, KN_F32, dW, dt, db, few, KN_F32, n, N, K, KN_EPI_GELU));
        float *ga = download(all + (size_t)at * N, (size_t)n * N, KN_F32);
        float *gf = download(few, (size_t)n * N, KN_F32);
        ck_assert_msg(!memcmp(ga, gf, sizeof(float) * n * N), "fp32-X GEMM K %d: rows %d..%d of %d differ "
                      "from the same rows alone", K, at, at + n, M);
        printf("  %-48s ok  (K %d: rows of 2100 == the same 9 alone)\n", "gemm fp32 X row invariance", K);
        free(X), free(W), free(bias), free(ga), free(gf);
        dfree_all();
    }
}
END_TEST

START_TEST(test_rejects_bad_shapes)
{
    int32_t *p = (int32_t *)256;
    ck_assert_int_eq(kn_attention(KS0, KN_F16, (void *)256, (void *)256, 8, 100, p, p, 1, -1), -1);
    ck_assert_int_eq(kn_attention(KS0, KN_F16, (void *)258, (void *)256, 8, 64, p, p, 1, -1), -1);
    ck_assert_int_eq(kn_attention(KS0, KN_F32, (void *)256, (void *)256, 8, 64, p, p, 1, -1), -1);
    ck_assert_int_eq(kn_attention_select(KS0, KN_F16, (void *)256, (void *)256, 100, p, -1, p, p, 3), -1);
    ck_assert_int_eq(kn_attention_select(KS0, KN_BF16, (void *)256, (void *)256, 64, p, -1, NULL, p, 3), -1);
    ck_assert_int_eq(kn_rope(KS0, KN_F16, (void *)256, 4, 96, p, (float *)256, (float *)256), -1);
    ck_assert_int_eq(kn_geglu(KS0, KN_F32, (void *)256, (void *)256, 4, 8), -1);
    ck_assert_int_eq(kn_gemm_own(KS0, (void *)256, KN_BF16, (void *)256, KN_F16, NULL, (void *)256, KN_F16, 4, 4, 4,
                                 KN_EPI_NONE), -1);
    ck_assert_int_eq(kn_layernorm(KS0, (float *)256, NULL, KN_F16, (float *)256, NULL, NULL, KN_F16, NULL, 4, 8, 1e-5f), -1);
    float *f = (float *)256;
    ck_assert_int_eq(kn_decision_tail(KS0, f, f, f, (uint8_t *)256, f, NULL, f, f, 4, 2, 8), -1);
    ck_assert_int_eq(kn_decision_tail(KS0, f, f, f, (uint8_t *)256, f, p, f, f, 4, 0, 8), -1);
    ck_assert_str_ne(kn_cuda_last_error(), "");
}
END_TEST

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: gpu_kernels: no CUDA device\n");
        return 0;
    }
    g_tune = !getenv("LAYAD_TEST_NO_TUNE");
    const char *env = getenv("LAYAD_TEST_SEED");
    g_fresh_seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        printf("gpu_kernels on %s (sm_%d%d), seeds 1234 and %llu (LAYAD_TEST_SEED replays)\n", prop.name,
               prop.major, prop.minor, (unsigned long long)g_fresh_seed);

    Suite *s = suite_create("gpu_kernels");
    TCase *tc = tcase_create("vs_cpu");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, NULL, dfree_all); /* a failed test leaves no buffers behind */
    tcase_add_loop_test(tc, test_gemm, 0, 2);
    tcase_add_loop_test(tc, test_gemm_f32_rows_invariant, 0, 2);
    tcase_add_loop_test(tc, test_geglu, 0, 2);
    tcase_add_loop_test(tc, test_layernorm, 0, 2);
    tcase_add_loop_test(tc, test_embed_layernorm, 0, 2);
    tcase_add_loop_test(tc, test_rope, 0, 2);
    tcase_add_loop_test(tc, test_head_ops, 0, 2);
    tcase_add_test(tc, test_decision_tail_widths);
    tcase_add_loop_test(tc, test_copy, 0, 2);
    tcase_add_loop_test(tc, test_repeatable, 0, 2);
    tcase_add_test(tc, test_rejects_bad_shapes);
    suite_add_tcase(s, tc);
    /* the split branch's and the small packs' kernels apart, a case each (CK_RUN_CASE=split, small or
     * proj runs one alone, e.g. under a sanitizer: racecheck's host memory outgrew a 128 GB machine's
     * on the split branch) */
    static const char *const own_names[] = {"split", "small", "proj"};
    const TTest *own_tests[] = {test_split_branch, test_gemm_small, test_proj_small};
    for (int i = 0; i < 3; i++) {
        TCase *ts = tcase_create(own_names[i]);
        tcase_set_timeout(ts, 300);
        tcase_add_checked_fixture(ts, NULL, dfree_all);
        tcase_add_loop_test(ts, own_tests[i], 0, 2);
        suite_add_tcase(s, ts);
    }
    /* the attention apart (CK_RUN_CASE=attention), for the race and barrier checkers */
    TCase *ta = tcase_create("attention");
    tcase_set_timeout(ta, 300);
    tcase_add_checked_fixture(ta, NULL, dfree_all);
    tcase_add_loop_test(ta, test_attention, 0, 2);
    tcase_add_loop_test(ta, test_attention_alone, 0, 2);
    tcase_add_loop_test(ta, test_attention_wo, 0, 2);
    suite_add_tcase(s, ta);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* CUDA does not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}

#endif /* LAYAD_CUDA */
