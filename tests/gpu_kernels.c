/*
 * gpu_kernels.c - every CUDA kernel (kernels/cuda.h) against its CPU fp32
 * specialization (kernels/cpu.h) on identical inputs, for fp16 and bf16.
 *
 * Inputs are drawn at random in fp32, rounded on the device to the dtype under
 * test (kn_convert) and read back, so the CPU computes in fp32 on exactly the
 * values the GPU sees. Each case runs twice: once with seed 1234 and once with
 * a fresh seed (printed; set LAYAD_TEST_SEED to replay it). Every output is
 * poisoned with 0xFF bytes (NaN in all three dtypes) before each launch, so an
 * unwritten element fails. Sizes are odd on purpose (partial tiles, unaligned
 * K, the scalar fallback paths) next to the model's aligned ones.
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
 *   head ops    gathers, type embedding, act input: exact (fp32) or one
 *               rounding (16-bit); scorer 1e-5 S; features 1e-5 absolute
 * A last test runs each kernel twice on the same inputs and requires
 * bit-identical outputs (cuBLASLt algorithms are cached per shape).
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

#define CU(call)                                                                         \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));       \
    } while (0)
#define OK(call) ck_assert_msg((call) == 0, "%s failed: %s", #call, kn_cuda_last_error())

static uint64_t g_fresh_seed;
static const kn_dtype DTS[2] = {KN_F16, KN_BF16};

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
    OK(kn_convert(0, tmp, KN_F32, d, dt, n));
    OK(kn_convert(0, d, dt, tmp, KN_F32, n));
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
        OK(kn_convert(0, d, dt, tmp, KN_F32, n));
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

static void run_gemm_case(kn_gemm_ctx *ctx, kn_dtype dt, const gemm_case *c, rng *r)
{
    const kn_dtype xdt = c->xdt == KN_F32 ? KN_F32 : dt;
    const kn_dtype ydt = c->ydt == KN_F32 ? KN_F32 : dt;
    float *X = hrand(r, (size_t)c->M * c->K, -1, 1), *W = hrand(r, (size_t)c->N * c->K, -1, 1);
    float *bias = hrand(r, (size_t)c->N, -0.5f, 0.5f);
    void *dX = xdt == KN_F32 ? upload_raw(X, sizeof(float) * c->M * c->K) : upload(X, (size_t)c->M * c->K, dt);
    void *dW = upload(W, (size_t)c->N * c->K, dt);
    /* b16: the bias in the weights' dtype through kn_gemm_ex (rounded here too); else fp32. */
    void *db = c->b16 ? upload(bias, (size_t)c->N, dt) : upload_raw(bias, sizeof(float) * c->N);
    void *dY = dout((size_t)c->M * c->N, ydt);
    ck_assert_int_eq(kn_gemm_uses_cublaslt(xdt, dt, ydt, dX, dW, dY, c->N, c->K, c->epi), c->want_lt);
    OK(kn_gemm_ex(ctx, 0, dX, xdt, dW, dt, c->bias ? db : NULL, c->b16 ? dt : KN_F32, dY, ydt, c->M, c->N, c->K,
                  c->epi));
    float *g = download(dY, (size_t)c->M * c->N, ydt);

    float *ref = malloc(sizeof(float) * c->M * c->N + 1), *S = malloc(sizeof(float) * c->M * c->N + 1);
    float *aX = malloc(sizeof(float) * c->M * c->K + 1), *aW = malloc(sizeof(float) * c->N * c->K + 1);
    for (size_t i = 0; i < (size_t)c->M * c->K; i++)
        aX[i] = fabsf(X[i]);
    for (size_t i = 0; i < (size_t)c->N * c->K; i++)
        aW[i] = fabsf(W[i]);
    kn_cpu_gemm(X, W, c->bias ? bias : NULL, ref, c->M, c->N, c->K, c->epi);
    kn_cpu_gemm(aX, aW, NULL, S, c->M, c->N, c->K, KN_EPI_NONE);
    /* fp32 summation noise; with a 16-bit Y cuBLASLt adds the bias rounded to Y's dtype, and
     * GELU after cuBLASLt reads the pre-activation v rounded to Y's dtype (|gelu'| <= 1.13) */
    float *pre = NULL;
    if (c->epi == KN_EPI_GELU && ydt != KN_F32) {
        pre = malloc(sizeof(float) * c->M * c->N + 1);
        kn_cpu_gemm(X, W, c->bias ? bias : NULL, pre, c->M, c->N, c->K, KN_EPI_NONE);
    }
    for (size_t i = 0; i < (size_t)c->M * c->N; i++)
        S[i] = 1e-5f * (S[i] + 1.0f) + (c->bias ? 2 * unit_roundoff(ydt) * fabsf(bias[i % c->N]) : 0.0f) +
               (pre ? 1.2f * unit_roundoff(ydt) * fabsf(pre[i]) : 0.0f);
    free(pre);
    char what[160];
    snprintf(what, sizeof what, "gemm %s M%d N%d K%d epi%d bias%d%s x%s y%s %s", kn_dtype_name(dt), c->M, c->N,
             c->K, c->epi, c->bias, c->b16 ? "(16-bit)" : "", kn_dtype_name(xdt), kn_dtype_name(ydt),
             c->want_lt ? "cublasLt" : "own");
    expect_close(what, g, ref, (size_t)c->M * c->N, 2 * unit_roundoff(ydt), 0, S);
    if (c->b16) {
        free(X), free(W), free(bias), free(g), free(ref), free(S), free(aX), free(aW);
        return;
    }
    /* The own kernel on the same inputs agrees too (whatever path kn_gemm took). */
    poison(dY, (size_t)c->M * c->N, ydt);
    OK(kn_gemm_own(0, dX, xdt, dW, dt, c->bias ? db : NULL, dY, ydt, c->M, c->N, c->K, c->epi));
    float *g2 = download(dY, (size_t)c->M * c->N, ydt);
    strncat(what, " [own]", sizeof what - strlen(what) - 1);
    expect_close(what, g2, ref, (size_t)c->M * c->N, 2 * unit_roundoff(ydt), 0, S);
    free(X), free(W), free(bias), free(g), free(g2), free(ref), free(S), free(aX), free(aW);
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
        /* own fp32 kernel: fp32 X (the scorer) */
        {33, 129, 257, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0},
        {33, 129, 257, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 1},
        {16, 64, 1024, KN_EPI_NONE, 0, KN_F32, KN_F16, 0, 0},
        {64, 300, 1024, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0}, /* 64 rows, partial column block */
        {9, 1024, 1024, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0}, /* the scorer at 1 x (CLS + 8) */
        {200, 96, 64, KN_EPI_GELU, 1, KN_F32, KN_F32, 0, 0},   /* > 64 rows: tiled fp32 kernel */
    };
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_gemm_case(ctx, dt, &cases[i], &r);
        dfree_all();
    }
    /* Plans are cached: a warm-up call adds nothing for a known shape. */
    OK(kn_gemm_prepare(ctx, dt, dt, dt, 130, 264, 520, KN_EPI_NONE, 0, 0, NULL, NULL, NULL));
    kn_gemm_ctx_destroy(ctx);
    /* With tuning on, the timed choice is as accurate (same bounds) on every cuBLASLt case. */
    kn_gemm_ctx *tctx = kn_gemm_ctx_create(0, 0);
    ck_assert_ptr_nonnull(tctx);
    kn_gemm_ctx_set_tuning(tctx, 1);
    rng r = {seed_of(1)};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].want_lt)
            run_gemm_case(tctx, dt, &cases[i], &r);
    dfree_all();
    kn_gemm_ctx_destroy(tctx);
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
            OK(kn_geglu(0, dt, dU, dO, M, F));
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
    OK(kn_layernorm(0, dR, dX, xdt, dw, has_b ? db : NULL, y16, dt, y32, M, D, 1e-5f));
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
    OK(kn_layernorm(0, dR, NULL, dt, dw, has_b ? db : NULL, NULL, dt, dR, M, D, 1e-5f));
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
            OK(kn_embed_layernorm(0, dids, dT, dt, V, dw, NULL, dR, y16, dt, NULL, M, D, 1e-5f));
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
            OK(kn_rope_tables_gpu(0, dct, dst, max_pos, thetas[t]));
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
            OK(kn_rope(0, dt, dq, M, D, dpos, dct2, dst2));
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

typedef struct att_case { int B, L, D, window; int lens[4]; } att_case;

static void run_att_case(kn_dtype dt, const att_case *c, rng *r, int nq_sel)
{
    const int B = c->B, L = c->L, D = c->D;
    const size_t n_qkv = (size_t)B * L * 3 * D, n_out = (size_t)B * L * D;
    float *Q = hrand(r, n_qkv, -2, 2);
    void *dq = upload(Q, n_qkv, dt);
    int32_t *dl = upload_raw(c->lens, sizeof(int32_t) * B);
    void *dO = dout(n_out, dt);
    OK(kn_attention(0, dt, dq, dO, B, L, D, dl, c->window));
    float *g = download(dO, n_out, dt), *ref = malloc(sizeof(float) * n_out);
    kn_cpu_attention(Q, ref, B, L, D, c->lens, c->window);
    float vmax = 0;
    for (size_t i = 0; i < (size_t)B * L; i++)
        for (int d = 0; d < D; d++)
            vmax = fmaxf(vmax, fabsf(Q[i * 3 * D + 2 * D + d]));
    const float e = unit_roundoff(dt);
    char what[128];
    snprintf(what, sizeof what, "attention %s B%d L%d D%d w%d lens %d,%d,%d,%d", kn_dtype_name(dt), B, L, D,
             c->window, c->lens[0], B > 1 ? c->lens[1] : -1, B > 2 ? c->lens[2] : -1, B > 3 ? c->lens[3] : -1);
    expect_close(what, g, ref, n_out, 2 * e, 2 * e * vmax + 1e-5f, NULL);
    for (int b = 0; b < B; b++) /* rows with no key: exact zeros */
        if (c->lens[b] == 0)
            for (size_t i = (size_t)b * L * D; i < (size_t)(b + 1) * L * D; i++)
                ck_assert_msg(g[i] == 0.0f, "empty row %d gave %g", b, g[i]);

    /* Query selection: CLS, the last query, and random positions per row. */
    const int nq = nq_sel;
    int32_t *sel = malloc(sizeof(int32_t) * B * nq);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < nq; t++)
            sel[b * nq + t] = t == 0 ? 0 : t == 1 ? L - 1 : rng_int(r, L);
    int32_t *dsel = upload_raw(sel, sizeof(int32_t) * B * nq);
    void *dS = dout((size_t)B * nq * D, dt);
    OK(kn_attention_select(0, dt, dq, dS, B, L, D, dl, c->window, dsel, nq));
    float *gs = download(dS, (size_t)B * nq * D, dt), *rs = malloc(sizeof(float) * B * nq * D);
    kn_cpu_attention_select(Q, rs, B, L, D, c->lens, c->window, sel, nq);
    strncat(what, " select", sizeof what - strlen(what) - 1);
    expect_close(what, gs, rs, (size_t)B * nq * D, 2 * e, 2 * e * vmax + 1e-5f, NULL);
    for (int b = 0; b < B; b++) /* same kernel, same tiles: equal to the full outputs bit for bit */
        for (int t = 0; t < nq; t++)
            ck_assert_msg(memcmp(gs + ((size_t)b * nq + t) * D, g + ((size_t)b * L + sel[b * nq + t]) * D,
                                 sizeof(float) * D) == 0, "selected query %d of row %d differs from full", t, b);
    free(Q), free(g), free(ref), free(sel), free(gs), free(rs);
}

START_TEST(test_attention)
{
    const kn_dtype dt = DTS[_i];
    const att_case cases[] = {
        {3, 150, 128, -1, {150, 77, 0}},      /* global, partial tiles, unequal, empty */
        {4, 300, 64, 64, {300, 201, 5, 0}},   /* sliding |i-j| <= 64 */
        {2, 83, 192, 5, {83, 40}},            /* narrow window: masks inside tiles */
        {2, 512, 128, 64, {512, 512}},        /* static shape, no padding */
        {1, 1, 64, -1, {1}},                  /* one token */
        {2, 200, 64, 64, {200, 30}},          /* pad queries far past the last key: no visible key */
    };
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            run_att_case(dt, &cases[i], &r, cases[i].L >= 5 ? 5 : 1);
            dfree_all();
        }
    }
}
END_TEST

/* ---- head ops ------------------------------------------------------------------ */

START_TEST(test_head_ops)
{
    const kn_dtype dt = DTS[_i];
    for (int pass = 0; pass < 2; pass++) {
        rng r = {seed_of(pass)};
        const int B = 3, L = 17, D = 100, K = 5;
        char what[96];
        /* type embedding */
        float *H = hrand(&r, (size_t)B * L * D, -3, 3), *te = hrand(&r, 3 * D, -1, 1);
        int32_t qt[3] = {2, 0, 1};
        float *dH = upload_raw(H, sizeof(float) * B * L * D), *dte = upload_raw(te, sizeof(float) * 3 * D);
        int32_t *dqt = upload_raw(qt, sizeof qt);
        OK(kn_add_type_emb(0, dH, dte, dqt, B, L, D));
        float *g = download(dH, (size_t)B * L * D, KN_F32);
        kn_cpu_add_type_emb(H, te, qt, B, L, D);
        expect_equal("add_type_emb", g, H, (size_t)B * L * D);
        free(g);
        /* gather (fp32 and 16-bit) */
        int32_t pos[3 * 5];
        for (int i = 0; i < B * K; i++)
            pos[i] = i % K == 0 ? 0 : rng_int(&r, L);
        int32_t *dpos = upload_raw(pos, sizeof pos);
        float *gref = malloc(sizeof(float) * B * K * D);
        kn_cpu_gather_rows(H, pos, gref, B, L, K, D);
        float *dG = dout((size_t)B * K * D, KN_F32);
        OK(kn_gather_rows(0, KN_F32, dH, dpos, dG, B, L, K, D));
        g = download(dG, (size_t)B * K * D, KN_F32);
        expect_equal("gather_rows fp32", g, gref, (size_t)B * K * D);
        free(g);
        float *H16 = malloc(sizeof(float) * B * L * D);
        memcpy(H16, H, sizeof(float) * B * L * D);
        void *dH16 = upload(H16, (size_t)B * L * D, dt);
        void *dG16 = dout((size_t)B * K * D, dt);
        OK(kn_gather_rows(0, dt, dH16, dpos, dG16, B, L, K, D));
        g = download(dG16, (size_t)B * K * D, dt);
        kn_cpu_gather_rows(H16, pos, gref, B, L, K, D);
        snprintf(what, sizeof what, "gather_rows %s", kn_dtype_name(dt));
        expect_equal(what, g, gref, (size_t)B * K * D);
        free(g);
        /* scorer tail: x in each dtype */
        const int n = B * K;
        float *w = hrand(&r, D, -1, 1), bias = 0.25f;
        uint8_t mask[15];
        for (int i = 0; i < n; i++)
            mask[i] = i % K < 3 || i == n - 1;
        float *dw = upload_raw(w, sizeof(float) * D), *dbias = upload_raw(&bias, sizeof bias);
        uint8_t *dmask = upload_raw(mask, sizeof mask);
        float *dlog = dout(n, KN_F32), lref[15], S[15];
        for (int xm = 0; xm < 2; xm++) {
            const kn_dtype xdt = xm ? KN_F32 : dt;
            const void *dx = xm ? (const void *)dG : dG16;
            OK(kn_scorer_tail(0, dx, xdt, dw, dbias, dmask, dlog, n, D));
            g = download(dlog, n, KN_F32);
            float *x = download(dx, (size_t)n * D, xdt);
            kn_cpu_scorer_tail(x, w, bias, mask, lref, n, D);
            for (int i = 0; i < n; i++) {
                S[i] = 0;
                for (int d = 0; d < D; d++)
                    S[i] += fabsf(x[(size_t)i * D + d] * w[d]);
                S[i] = 1e-5f * (S[i] + 1);
            }
            snprintf(what, sizeof what, "scorer_tail x%s", kn_dtype_name(xdt));
            expect_close(what, g, lref, n, 0, 0, S);
            for (int i = 0; i < n; i++)
                if (!mask[i])
                    ck_assert_float_eq(g[i], -1e4f);
            free(g), free(x);
            poison(dlog, n, KN_F32);
        }
        /* confidence features: K = 5 with masked slots, and K = 1 */
        float logits[15];
        for (int i = 0; i < n; i++)
            logits[i] = mask[i] ? rng_unif(&r, -5, 5) : -1e4f;
        float *dl = upload_raw(logits, sizeof logits), *dF = dout(4 * B, KN_F32), fref[12];
        for (int kk = 0; kk < 2; kk++) {
            const int KK = kk ? 1 : K;
            poison(dF, 4 * B, KN_F32);
            OK(kn_conf_features(0, dl, dmask, dF, B, KK));
            g = download(dF, 4 * B, KN_F32);
            kn_cpu_conf_features(logits, mask, fref, B, KK);
            snprintf(what, sizeof what, "conf_features K%d", KK);
            expect_close(what, g, fref, 4 * B, 1e-5f, 1e-5f, NULL);
            free(g);
        }
        /* act input: fp32 and 16-bit */
        float *feats = hrand(&r, 4 * B, 0, 1), *aref = malloc(sizeof(float) * B * (D + 4));
        float *dfe = upload_raw(feats, sizeof(float) * 4 * B);
        kn_cpu_act_input(H, feats, aref, B, L, D);
        for (int om = 0; om < 2; om++) {
            const kn_dtype odt = om ? dt : KN_F32;
            void *dA = dout((size_t)B * (D + 4), odt);
            OK(kn_act_input(0, dH, dfe, dA, odt, B, L, D));
            g = download(dA, (size_t)B * (D + 4), odt);
            snprintf(what, sizeof what, "act_input %s", kn_dtype_name(odt));
            expect_close(what, g, aref, (size_t)B * (D + 4), unit_roundoff(odt), 1e-7f, NULL);
            free(g);
        }
        free(H), free(te), free(gref), free(H16), free(w), free(feats), free(aref);
        dfree_all();
    }
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
    void *X, *W, *Y, *qkv, *qkv0, *att, *U, *G, *x16, *y16;
    float *bias, *r, *r0, *w, *ct, *st;
    int32_t *lens, *pos;
    int M, N, K, B, L, D, F, lt;
} det_args;

static void det_gemm(void *p)
{
    det_args *a = p;
    switch (a->lt) {
    case 1: /* cuBLASLt, bias + ReLU */
        OK(kn_gemm(a->ctx, 0, a->X, a->dt, a->W, a->dt, a->bias, a->Y, a->dt, a->M, a->N, a->K, KN_EPI_RELU));
        break;
    case 2: /* cuBLASLt + erf-GELU pass */
        OK(kn_gemm(a->ctx, 0, a->X, a->dt, a->W, a->dt, a->bias, a->Y, a->dt, a->M, a->N, a->K, KN_EPI_GELU));
        break;
    case 3: /* own tiled kernel */
        OK(kn_gemm_own(0, a->X, a->dt, a->W, a->dt, a->bias, a->Y, KN_F32, a->M, a->N, a->K, KN_EPI_GELU));
        break;
    default: /* own row-streaming kernel, fp32 X (the scorer) */
        OK(kn_gemm_own(0, a->r0, KN_F32, a->W, a->dt, a->bias, a->Y, KN_F32, 9, a->N, a->K, KN_EPI_GELU));
        break;
    }
}
static void det_att_global(void *p)
{
    det_args *a = p;
    OK(kn_attention(0, a->dt, a->qkv, a->att, a->B, a->L, a->D, a->lens, -1));
}
static void det_att_local(void *p)
{
    det_args *a = p;
    OK(kn_attention(0, a->dt, a->qkv, a->att, a->B, a->L, a->D, a->lens, 64));
}
static void det_rope(void *p)
{
    det_args *a = p;
    CU(cudaMemcpy(a->qkv, a->qkv0, (size_t)a->B * a->L * 3 * a->D * kn_dtype_size(a->dt), cudaMemcpyDeviceToDevice));
    OK(kn_rope(0, a->dt, a->qkv, a->B * a->L, a->D, a->pos, a->ct, a->st));
}
static void det_ln(void *p)
{
    det_args *a = p;
    CU(cudaMemcpy(a->r, a->r0, (size_t)a->M * a->D * sizeof(float), cudaMemcpyDeviceToDevice));
    OK(kn_layernorm(0, a->r, a->x16, a->dt, a->w, a->bias, a->y16, a->dt, NULL, a->M, a->D, 1e-5f));
}
static void det_geglu(void *p)
{
    det_args *a = p;
    OK(kn_geglu(0, a->dt, a->U, a->G, a->M, a->F));
}

START_TEST(test_repeatable)
{
    det_args a = {0};
    a.dt = DTS[_i];
    a.ctx = kn_gemm_ctx_create(0, 0);
    ck_assert_ptr_nonnull(a.ctx);
    rng r = {g_fresh_seed};
    a.M = 512, a.N = 1024, a.K = 1024, a.B = 2, a.L = 512, a.D = 1024, a.F = 2624;
    float *h = hrand(&r, (size_t)4 << 20, -1, 1); /* large enough for every input */
    a.X = upload(h, (size_t)a.M * a.K, a.dt);
    a.W = upload(h + 7, (size_t)a.N * a.K, a.dt);
    a.bias = upload_raw(h, sizeof(float) * a.N);
    a.Y = dalloc((size_t)a.M * a.N * 4);
    a.qkv0 = upload(h, (size_t)a.B * a.L * 3 * a.D, a.dt);
    a.qkv = dcopy(a.qkv0, (size_t)a.B * a.L * 3 * a.D * kn_dtype_size(a.dt));
    a.att = dalloc((size_t)a.B * a.L * a.D * kn_dtype_size(a.dt));
    int32_t lens[2] = {512, 301}, pos[1024];
    for (int i = 0; i < a.B * a.L; i++)
        pos[i] = i % a.L;
    a.lens = upload_raw(lens, sizeof lens);
    a.pos = upload_raw(pos, sizeof pos);
    a.ct = dalloc(sizeof(float) * 1024 * KN_ROPE_HALF);
    a.st = dalloc(sizeof(float) * 1024 * KN_ROPE_HALF);
    OK(kn_rope_tables_gpu(0, a.ct, a.st, 1024, 160000.0));
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
    expect_repeatable(what, a.att, (size_t)a.B * a.L * a.D * 2, det_att_global, &a);
    snprintf(what, sizeof what, "repeatable attention sliding %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.att, (size_t)a.B * a.L * a.D * 2, det_att_local, &a);
    snprintf(what, sizeof what, "repeatable rope %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.qkv, (size_t)a.B * a.L * 3 * a.D * 2, det_rope, &a);
    snprintf(what, sizeof what, "repeatable layernorm %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.y16, (size_t)a.M * a.D * 2, det_ln, &a);
    snprintf(what, sizeof what, "repeatable geglu %s", kn_dtype_name(a.dt));
    expect_repeatable(what, a.G, (size_t)a.M * a.F * 2, det_geglu, &a);
    free(h);
    dfree_all();
    kn_gemm_ctx_destroy(a.ctx);
}
END_TEST

/* ---- argument validation --------------------------------------------------------------- */

START_TEST(test_rejects_bad_shapes)
{
    ck_assert_int_eq(kn_attention(0, KN_F16, (void *)256, (void *)256, 1, 8, 100, (int32_t *)256, -1), -1);
    ck_assert_int_eq(kn_rope(0, KN_F16, (void *)256, 4, 96, (int32_t *)256, (float *)256, (float *)256), -1);
    ck_assert_int_eq(kn_geglu(0, KN_F32, (void *)256, (void *)256, 4, 8), -1);
    ck_assert_int_eq(kn_gemm_own(0, (void *)256, KN_BF16, (void *)256, KN_F16, NULL, (void *)256, KN_F16, 4, 4, 4,
                                 KN_EPI_NONE), -1);
    ck_assert_int_eq(kn_layernorm(0, (float *)256, NULL, KN_F16, (float *)256, NULL, NULL, KN_F16, NULL, 4, 8, 1e-5f), -1);
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
    tcase_add_loop_test(tc, test_geglu, 0, 2);
    tcase_add_loop_test(tc, test_layernorm, 0, 2);
    tcase_add_loop_test(tc, test_embed_layernorm, 0, 2);
    tcase_add_loop_test(tc, test_rope, 0, 2);
    tcase_add_loop_test(tc, test_attention, 0, 2);
    tcase_add_loop_test(tc, test_head_ops, 0, 2);
    tcase_add_loop_test(tc, test_repeatable, 0, 2);
    tcase_add_test(tc, test_rejects_bad_shapes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* CUDA does not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}

#endif /* LAYAD_CUDA */
