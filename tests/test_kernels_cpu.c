/*
 * test_kernels_cpu.c - the CPU fp32 kernels against naive float64 references.
 *
 * Every case runs twice: with seed 1234 and with a fresh seed (printed, so a
 * failure can be replayed with KN_TEST_SEED=<seed>). Outputs are poisoned with
 * NaN before each run, sizes are odd so every tile is partial somewhere, and
 * fixtures are bounded (operands scaled so outputs are O(1)); the bound is max
 * abs error <= 2e-5 (2e-6 for RoPE). Beyond the numerics: residual updates equal
 * a plain fp32 add bit for bit, RoPE leaves V untouched, attention gives finite
 * zeros where no key is visible, GEMM writes nothing outside Y, and results do
 * not depend on the thread count or on the other rows of the batch.
 */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu.h"
#include "tests/lib/testutil.h"

#define TOL 2e-5
#define TOL_ROPE 2e-6

/* ---- fixtures ---- */

static uint64_t g_rng;
static uint64_t g_seeds[2];

static uint64_t rng_next(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static float urand(float lo, float hi)
{
    return lo + (hi - lo) * (float)((rng_next() >> 40) * (1.0 / 16777216.0));
}

static int irand(int n) { return (int)(rng_next() % (uint64_t)n); }

static float *falloc(size_t n)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *frand(size_t n, float lo, float hi)
{
    float *p = falloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = urand(lo, hi);
    return p;
}

static void poison(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
}

static double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

/* max |got - ref| over n, failing on any non-finite output. */
static double max_err(const float *got, const double *ref, size_t n)
{
    double e = 0.0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(isfinite(got[i]), "non-finite output at %zu", i);
        double d = fabs((double)got[i] - ref[i]);
        e = d > e ? d : e;
    }
    return e;
}

#define FOR_SEEDS for (int si_ = 0; si_ < 2 && ((g_rng = g_seeds[si_]), 1); si_++)

/* ---- GEMM ---- */

static void gemm_ref(const float *X, const float *W, const float *bias, double *Y,
                     int M, int N, int K, int epi)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0.0;
            for (int k = 0; k < K; k++)
                s += (double)X[(size_t)m * K + k] * W[(size_t)n * K + k];
            if (bias)
                s += bias[n];
            if (epi == KN_EPI_GELU)
                s = gelu_d(s);
            else if (epi == KN_EPI_RELU)
                s = s > 0 ? s : 0;
            Y[(size_t)m * N + n] = s;
        }
}

static const int gemm_shapes[][3] = {
    {1, 1, 1}, {2, 3, 7}, {3, 4, 8}, {5, 2, 9}, {63, 64, 16}, {64, 65, 33}, {67, 129, 100},
    {130, 67, 257}, {83, 37, 1028}, {7, 260, 64}, {1, 300, 515},
};

START_TEST(test_gemm_epilogues)
{
    FOR_SEEDS {
        for (size_t s = 0; s < sizeof gemm_shapes / sizeof gemm_shapes[0]; s++) {
            const int M = gemm_shapes[s][0], N = gemm_shapes[s][1], K = gemm_shapes[s][2];
            const float sc = 1.0f / sqrtf((float)K);
            float *X = frand((size_t)M * K, -1, 1), *W = frand((size_t)N * K, -sc, sc);
            float *bias = frand((size_t)N, -1, 1);
            const size_t guard = 37;
            float *Y = falloc((size_t)M * N + guard);
            double *R = malloc(sizeof(double) * (size_t)M * N);
            const size_t np = kn_cpu_packed_size(N, K);
            ck_assert(np >= (size_t)N * K && np % KN_PACK_NR == 0);
            float *Wp = falloc(np);
            poison(Wp, np);
            kn_cpu_pack_weights(W, Wp, N, K);
            for (size_t i = 0; i < np; i++)
                ck_assert(!isnan(Wp[i])); /* every slot written, padding zeroed */
            for (int epi = 0; epi < 3; epi++)
                for (int hb = 0; hb < 2; hb++)
                    for (int packed = 0; packed < 2; packed++) {
                        poison(Y, (size_t)M * N);
                        for (size_t g = 0; g < guard; g++)
                            Y[(size_t)M * N + g] = 12345.0f;
                        if (packed)
                            kn_cpu_gemm_packed(X, Wp, hb ? bias : NULL, Y, M, N, K, epi);
                        else
                            kn_cpu_gemm(X, W, hb ? bias : NULL, Y, M, N, K, epi);
                        gemm_ref(X, W, hb ? bias : NULL, R, M, N, K, epi);
                        double e = max_err(Y, R, (size_t)M * N);
                        ck_assert_msg(e <= TOL, "gemm%s M=%d N=%d K=%d epi=%d bias=%d err %g",
                                      packed ? "_packed" : "", M, N, K, epi, hb, e);
                        for (size_t g = 0; g < guard; g++)
                            ck_assert_msg(Y[(size_t)M * N + g] == 12345.0f, "gemm wrote past Y");
                    }
            free(X), free(W), free(Wp), free(bias), free(Y), free(R);
        }
    }
}
END_TEST

/* KN_EPI_ACC is the plain GEMM's result added into Y in one fp32 add: bitwise
 * Y0 + (X W^T + bias), both kernels, with and without bias. */
START_TEST(test_gemm_accumulate)
{
    FOR_SEEDS {
        for (size_t s = 0; s < sizeof gemm_shapes / sizeof gemm_shapes[0]; s++) {
            const int M = gemm_shapes[s][0], N = gemm_shapes[s][1], K = gemm_shapes[s][2];
            const size_t MN = (size_t)M * N;
            float *X = frand((size_t)M * K, -1, 1), *W = frand((size_t)N * K, -1, 1);
            float *bias = frand((size_t)N, -1, 1), *Y0 = frand(MN, -4, 4);
            float *Yn = falloc(MN), *Ya = falloc(MN), *Wp = falloc(kn_cpu_packed_size(N, K));
            kn_cpu_pack_weights(W, Wp, N, K);
            for (int hb = 0; hb < 2; hb++)
                for (int packed = 0; packed < 2; packed++) {
                    poison(Yn, MN);
                    memcpy(Ya, Y0, sizeof(float) * MN);
                    if (packed) {
                        kn_cpu_gemm_packed(X, Wp, hb ? bias : NULL, Yn, M, N, K, KN_EPI_NONE);
                        kn_cpu_gemm_packed(X, Wp, hb ? bias : NULL, Ya, M, N, K, KN_EPI_ACC);
                    } else {
                        kn_cpu_gemm(X, W, hb ? bias : NULL, Yn, M, N, K, KN_EPI_NONE);
                        kn_cpu_gemm(X, W, hb ? bias : NULL, Ya, M, N, K, KN_EPI_ACC);
                    }
                    for (size_t i = 0; i < MN; i++) {
                        const float want = Y0[i] + Yn[i];
                        ck_assert_msg(memcmp(&Ya[i], &want, sizeof want) == 0,
                                      "gemm%s acc M=%d N=%d K=%d bias=%d [%zu]: %a vs %a",
                                      packed ? "_packed" : "", M, N, K, hb, i, Ya[i], want);
                    }
                }
            free(X), free(W), free(Wp), free(bias), free(Y0), free(Yn), free(Ya);
        }
    }
}
END_TEST

START_TEST(test_gemm_k0_and_empty)
{
    float X[6] = {1, 2, 3, 4, 5, 6}, W[6] = {1, 1, 1, 1, 1, 1}, bias[3] = {-1.5f, 0.25f, 2.0f};
    float Y[6];
    poison(Y, 6);
    kn_cpu_gemm(X, W, bias, Y, 2, 3, 0, KN_EPI_RELU); /* K = 0: epi(bias) */
    for (int m = 0; m < 2; m++) {
        ck_assert_float_eq(Y[m * 3 + 0], 0.0f);
        ck_assert_float_eq(Y[m * 3 + 1], 0.25f);
        ck_assert_float_eq(Y[m * 3 + 2], 2.0f);
    }
    poison(Y, 6);
    kn_cpu_gemm(X, W, bias, Y, 0, 3, 2, KN_EPI_NONE); /* M = 0 writes nothing */
    for (int i = 0; i < 6; i++)
        ck_assert(isnan(Y[i]));
    float Wp[KN_PACK_NR];
    ck_assert_uint_eq(kn_cpu_packed_size(3, 0), 0);
    poison(Y, 6);
    kn_cpu_gemm_packed(X, Wp, bias, Y, 2, 3, 0, KN_EPI_RELU); /* packed, K = 0 */
    for (int m = 0; m < 2; m++) {
        ck_assert_float_eq(Y[m * 3 + 0], 0.0f);
        ck_assert_float_eq(Y[m * 3 + 2], 2.0f);
    }
}
END_TEST

START_TEST(test_gemm_thread_independent)
{
    FOR_SEEDS {
        const int M = 131, N = 97, K = 301;
        float *X = frand((size_t)M * K, -1, 1), *W = frand((size_t)N * K, -0.1f, 0.1f);
        float *bias = frand(N, -1, 1), *Y1 = falloc((size_t)M * N), *Y3 = falloc((size_t)M * N);
        int saved = omp_get_max_threads();
        omp_set_num_threads(1);
        kn_cpu_gemm(X, W, bias, Y1, M, N, K, KN_EPI_GELU);
        omp_set_num_threads(3);
        kn_cpu_gemm(X, W, bias, Y3, M, N, K, KN_EPI_GELU);
        omp_set_num_threads(saved);
        ck_assert(memcmp(Y1, Y3, sizeof(float) * (size_t)M * N) == 0);
        /* A row's result does not depend on the other rows (batch composition). */
        float *y1 = falloc(N);
        kn_cpu_gemm(X + (size_t)70 * K, W, bias, y1, 1, N, K, KN_EPI_GELU);
        ck_assert(memcmp(y1, Y1 + (size_t)70 * N, sizeof(float) * N) == 0);
        /* The same for the packed kernel. */
        float *Wp = falloc(kn_cpu_packed_size(N, K));
        kn_cpu_pack_weights(W, Wp, N, K);
        omp_set_num_threads(1);
        kn_cpu_gemm_packed(X, Wp, bias, Y1, M, N, K, KN_EPI_RELU);
        omp_set_num_threads(3);
        kn_cpu_gemm_packed(X, Wp, bias, Y3, M, N, K, KN_EPI_RELU);
        omp_set_num_threads(saved);
        ck_assert(memcmp(Y1, Y3, sizeof(float) * (size_t)M * N) == 0);
        kn_cpu_gemm_packed(X + (size_t)70 * K, Wp, bias, y1, 1, N, K, KN_EPI_RELU);
        ck_assert(memcmp(y1, Y1 + (size_t)70 * N, sizeof(float) * N) == 0);
        free(X), free(W), free(Wp), free(bias), free(Y1), free(Y3), free(y1);
    }
}
END_TEST

/* ---- GeGLU ---- */

START_TEST(test_geglu)
{
    FOR_SEEDS {
        const int shapes[][2] = {{1, 1}, {7, 13}, {65, 131}, {3, 2624}};
        for (int s = 0; s < 4; s++) {
            const int M = shapes[s][0], F = shapes[s][1];
            float *U = frand((size_t)M * 2 * F, -4, 4), *O = falloc((size_t)M * F);
            double *R = malloc(sizeof(double) * (size_t)M * F);
            for (int m = 0; m < M; m++)
                for (int f = 0; f < F; f++)
                    R[(size_t)m * F + f] = gelu_d(U[(size_t)m * 2 * F + f]) * U[(size_t)m * 2 * F + F + f];
            poison(O, (size_t)M * F);
            kn_cpu_geglu(U, O, M, F);
            double e = max_err(O, R, (size_t)M * F);
            ck_assert_msg(e <= TOL, "geglu M=%d F=%d err %g", M, F, e);
            free(U), free(O), free(R);
        }
    }
}
END_TEST

/* ---- LayerNorm ---- */

static void ln_ref(const float *r, const float *w, const float *b, double *y, int M, int D, double eps)
{
    for (int m = 0; m < M; m++) {
        const float *x = r + (size_t)m * D;
        double mean = 0, var = 0;
        for (int i = 0; i < D; i++)
            mean += x[i];
        mean /= D;
        for (int i = 0; i < D; i++)
            var += (x[i] - mean) * (x[i] - mean);
        var /= D;
        for (int i = 0; i < D; i++)
            y[(size_t)m * D + i] = (x[i] - mean) / sqrt(var + eps) * w[i] + (b ? b[i] : 0.0);
    }
}

/* alias: 0 = separate y, 1 = y aliases r, 2 = y aliases x. */
static void ln_case(int M, int D, float offset, float spread, int with_x, int with_b, int alias)
{
    float *r = frand((size_t)M * D, -spread, spread), *x = frand((size_t)M * D, -spread, spread);
    for (size_t i = 0; i < (size_t)M * D; i++)
        r[i] += offset;
    float *w = frand(D, 0.5f, 1.5f), *b = frand(D, -1, 1), *y = falloc((size_t)M * D);
    float *want_r = falloc((size_t)M * D);
    double *R = malloc(sizeof(double) * (size_t)M * D);
    for (size_t i = 0; i < (size_t)M * D; i++) {
        volatile float sum = r[i] + x[i]; /* the plain fp32 add, as stored */
        want_r[i] = with_x ? sum : r[i];
    }
    ln_ref(want_r, w, with_b ? b : NULL, R, M, D, 1e-5);
    float *out = alias == 1 ? r : (alias == 2 && with_x) ? x : y; /* aliasing x needs an x */
    if (out == y)
        poison(y, (size_t)M * D);
    kn_cpu_layernorm(r, with_x ? x : NULL, w, with_b ? b : NULL, out, M, D, 1e-5f);
    double e = max_err(out, R, (size_t)M * D);
    ck_assert_msg(e <= TOL, "layernorm M=%d D=%d off=%g x=%d b=%d alias=%d err %g",
                  M, D, offset, with_x, with_b, alias, e);
    if (alias != 1)
        ck_assert_msg(memcmp(r, want_r, sizeof(float) * (size_t)M * D) == 0,
                      "residual update is not the exact fp32 add");
    free(r), free(x), free(w), free(b), free(y), free(want_r), free(R);
}

START_TEST(test_layernorm_combos)
{
    FOR_SEEDS {
        const int shapes[][2] = {{1, 1}, {5, 7}, {33, 64}, {9, 1024}, {3, 1028}};
        for (int s = 0; s < 5; s++)
            for (int with_x = 0; with_x < 2; with_x++)
                for (int with_b = 0; with_b < 2; with_b++)
                    for (int alias = 0; alias < 3; alias++)
                        ln_case(shapes[s][0], shapes[s][1], 0.0f, 3.0f, with_x, with_b, alias);
    }
}
END_TEST

START_TEST(test_layernorm_large_residual)
{
    FOR_SEEDS {
        const float offsets[] = {1e4f, -3e4f, 2.5e5f, 1e6f};
        for (int o = 0; o < 4; o++)
            for (int with_x = 0; with_x < 2; with_x++) {
                ln_case(17, 1024, offsets[o], 4.0f, with_x, 1, 0);
                ln_case(4, 768, offsets[o], 1.0f, with_x, 0, 1);
            }
        /* Residual values themselves of magnitude 1e4: spread, not just offset. */
        ln_case(11, 1024, 0.0f, 3e4f, 1, 1, 0);
    }
}
END_TEST

/* ---- RoPE ---- */

START_TEST(test_rope_tables)
{
    const double thetas[] = {10000.0, 160000.0};
    const int P = 8192;
    float *c = falloc((size_t)P * 32), *s = falloc((size_t)P * 32);
    for (int t = 0; t < 2; t++) {
        poison(c, (size_t)P * 32);
        poison(s, (size_t)P * 32);
        kn_rope_tables(c, s, P, thetas[t]);
        for (int j = 0; j < 32; j++) {
            /* inv_freq as transformers builds it in float32 */
            double inv_d = 1.0 / pow(thetas[t], (2.0 * j) / 64.0);
            float inv = 1.0f / (float)pow((double)(float)thetas[t], (double)((float)(2 * j) / 64.0f));
            ck_assert_msg(fabs(inv - inv_d) <= 1e-7 * inv_d + 1e-12, "inv_freq %d", j);
            for (int p = 0; p < P; p += 7) {
                double a = (double)((float)p * inv);
                ck_assert_msg(fabs(c[(size_t)p * 32 + j] - cos(a)) <= 2e-7 && fabs(s[(size_t)p * 32 + j] - sin(a)) <= 2e-7,
                              "rope table theta=%g pos=%d j=%d", thetas[t], p, j);
            }
        }
        ck_assert_float_eq(c[0], 1.0f);
        ck_assert_float_eq(s[0], 0.0f);
    }
    free(c), free(s);
}
END_TEST

START_TEST(test_rope_apply)
{
    FOR_SEEDS {
        const int B = 3, L = 37, D = 192, P = 64, M = B * L; /* positions wrap at each row */
        float *c = falloc((size_t)P * 32), *s = falloc((size_t)P * 32);
        kn_rope_tables(c, s, P, 10000.0);
        int32_t *pos = malloc(sizeof(int32_t) * M);
        for (int m = 0; m < M; m++)
            pos[m] = m % L;
        pos[M - 1] = P - 1; /* last table row too */
        float *qkv = frand((size_t)M * 3 * D, -1, 1), *orig = falloc((size_t)M * 3 * D);
        memcpy(orig, qkv, sizeof(float) * (size_t)M * 3 * D);
        double *R = malloc(sizeof(double) * (size_t)M * 3 * D);
        for (int m = 0; m < M; m++)
            for (int blk = 0; blk < 3; blk++)
                for (int h = 0; h < D / 64; h++)
                    for (int j = 0; j < 64; j++) {
                        size_t at = (size_t)m * 3 * D + (size_t)blk * D + (size_t)h * 64;
                        double v = orig[at + j];
                        if (blk < 2) {
                            int jj = j % 32;
                            double cc = c[(size_t)pos[m] * 32 + jj], ss = s[(size_t)pos[m] * 32 + jj];
                            double rot = j < 32 ? -(double)orig[at + j + 32] : (double)orig[at + j - 32];
                            v = v * cc + rot * ss;
                        }
                        R[at + j] = v;
                    }
        kn_cpu_rope(qkv, M, D, pos, c, s);
        double e = max_err(qkv, R, (size_t)M * 3 * D);
        ck_assert_msg(e <= TOL_ROPE, "rope err %g", e);
        for (int m = 0; m < M; m++) /* V untouched, bit for bit */
            ck_assert(memcmp(qkv + (size_t)m * 3 * D + 2 * D, orig + (size_t)m * 3 * D + 2 * D,
                             sizeof(float) * D) == 0);
        /* position 0 is the identity */
        ck_assert(memcmp(qkv, orig, sizeof(float) * 2 * D) == 0);
        free(c), free(s), free(pos), free(qkv), free(orig), free(R);
    }
}
END_TEST

/* ---- attention ---- */

static void att_ref(const float *qkv, double *out, int B, int L, int D, const int32_t *lens, int window)
{
    const int H = D / 64;
    double *sc = malloc(sizeof(double) * (size_t)L);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < L; i++) {
                const float *q = qkv + ((size_t)b * L + i) * 3 * D + (size_t)h * 64;
                double mx = -INFINITY, sum = 0;
                int any = 0;
                for (int j = 0; j < L; j++) {
                    int vis = j < lens[b] && (window < 0 || abs(i - j) <= window);
                    sc[j] = -INFINITY;
                    if (!vis)
                        continue;
                    const float *k = qkv + ((size_t)b * L + j) * 3 * D + D + (size_t)h * 64;
                    double d = 0;
                    for (int t = 0; t < 64; t++)
                        d += (double)q[t] * k[t];
                    sc[j] = d / 8.0;
                    mx = sc[j] > mx ? sc[j] : mx;
                    any = 1;
                }
                double *o = out + ((size_t)b * L + i) * D + (size_t)h * 64;
                for (int t = 0; t < 64; t++)
                    o[t] = 0;
                if (!any)
                    continue;
                for (int j = 0; j < L; j++)
                    if (sc[j] > -INFINITY)
                        sum += exp(sc[j] - mx);
                for (int j = 0; j < L; j++) {
                    if (sc[j] == -INFINITY)
                        continue;
                    double p = exp(sc[j] - mx) / sum;
                    const float *v = qkv + ((size_t)b * L + j) * 3 * D + 2 * D + (size_t)h * 64;
                    for (int t = 0; t < 64; t++)
                        o[t] += p * v[t];
                }
            }
    free(sc);
}

/* A packed batch of rows taken from a padded [B, L] buffer in the order
 * order[0..B): qkv rows back to back, cu, and the query-tile list. */
typedef struct packed {
    int T, n_tiles;
    int32_t cu[16], tiles[2 * 64];
    float *qkv;
} packed;

static void pack_rows(packed *p, const float *qkv, int B, int L, int D, const int32_t *lens,
                      const int *order)
{
    p->T = 0;
    for (int i = 0; i < B; i++)
        p->T += lens[order[i]];
    p->qkv = falloc((size_t)(p->T + 1) * 3 * D);
    int t = 0;
    for (int i = 0; i < B; i++) {
        const int b = order[i];
        p->cu[i] = t;
        memcpy(p->qkv + (size_t)t * 3 * D, qkv + (size_t)b * L * 3 * D, sizeof(float) * (size_t)lens[b] * 3 * D);
        t += lens[b];
    }
    p->cu[B] = t;
    p->n_tiles = kn_attention_tiles(p->cu, B, p->tiles, 64);
    ck_assert(p->n_tiles >= 0);
}

/* The packed kernel's rows against the double reference R; the slot past the rows is
 * not written. */
static void att_check_ref(const packed *p, const float *out, const double *R, int B, int L, int D,
                          const int32_t *lens, int window)
{
    for (int b = 0; b < B; b++) {
        double e = 0;
        for (int i = 0; i < lens[b]; i++)
            for (int t = 0; t < D; t++) {
                double d = fabs(out[((size_t)p->cu[b] + i) * D + t] - R[((size_t)b * L + i) * D + t]);
                e = d > e ? d : e;
            }
        ck_assert_msg(e <= TOL, "attention B=%d L=%d window=%d row %d err %g", B, L, window, b, e);
    }
    ck_assert(isnan(out[(size_t)p->T * D]));
}

/* Pack composition: the rows in reverse order (other starts) and each row alone give
 * the packed outputs bit for bit. */
static void att_check_packing(const float *qkv, const packed *p, const float *out, int B, int L, int D,
                              const int32_t *lens, int window)
{
    int rev[16];
    for (int b = 0; b < B; b++)
        rev[b] = B - 1 - b;
    packed q;
    pack_rows(&q, qkv, B, L, D, lens, rev);
    float *outr = falloc((size_t)(q.T + 1) * D);
    kn_cpu_attention(q.qkv, outr, q.T, D, q.cu, q.tiles, q.n_tiles, window);
    for (int i = 0; i < B; i++) {
        const int b = rev[i];
        ck_assert_msg(memcmp(outr + (size_t)q.cu[i] * D, out + (size_t)p->cu[b] * D,
                             sizeof(float) * (size_t)lens[b] * D) == 0, "row %d moved differs", b);
        packed one;
        pack_rows(&one, qkv + (size_t)b * L * 3 * D, 1, L, D, &lens[b], &(int){0});
        float *o1 = falloc((size_t)(one.T + 1) * D);
        kn_cpu_attention(one.qkv, o1, one.T, D, one.cu, one.tiles, one.n_tiles, window);
        ck_assert_msg(memcmp(o1, out + (size_t)p->cu[b] * D, sizeof(float) * (size_t)lens[b] * D) == 0,
                      "row %d alone differs from packed", b);
        free(o1), free(one.qkv);
    }
    free(outr), free(q.qkv);
}

/* Query selection equals the full kernel at the selected slots (each row's first, a
 * random and its last); row -1 gives zeros. */
static void att_check_select(const packed *p, const float *out, int B, int D, const int32_t *lens, int window)
{
    int32_t qrow[64], qpos[64];
    int G = 0;
    for (int b = 0; b < B; b++) {
        if (!lens[b])
            continue;
        const int at[3] = {0, irand(lens[b]), lens[b] - 1};
        for (int t = 0; t < 3; t++, G++) {
            qrow[G] = b;
            qpos[G] = p->cu[b] + at[t];
        }
    }
    qrow[G] = -1, qpos[G] = 0, G++;
    float *os = falloc((size_t)G * D);
    poison(os, (size_t)G * D);
    kn_cpu_attention_select(p->qkv, os, D, p->cu, window, qrow, qpos, G);
    for (int g = 0; g < G; g++) {
        if (qrow[g] < 0) {
            for (int t = 0; t < D; t++)
                ck_assert(os[(size_t)g * D + t] == 0.0f);
            continue;
        }
        ck_assert(memcmp(os + (size_t)g * D, out + (size_t)qpos[g] * D, sizeof(float) * D) == 0);
    }
    free(os);
}

static void att_case(int B, int L, int D, const int32_t *lens, int window, float qscale)
{
    const size_t n = (size_t)B * L;
    float *qkv = frand(n * 3 * D, -1, 1);
    for (size_t m = 0; m < n; m++) /* sharpen the scores so the softmax is not flat */
        for (int t = 0; t < D; t++)
            qkv[m * 3 * D + t] *= qscale;
    double *R = malloc(sizeof(double) * n * D);
    att_ref(qkv, R, B, L, D, lens, window);
    int fwd[16];
    for (int b = 0; b < B; b++)
        fwd[b] = b;
    packed p;
    pack_rows(&p, qkv, B, L, D, lens, fwd);
    float *out = falloc((size_t)(p.T + 1) * D);
    poison(out, (size_t)(p.T + 1) * D);
    kn_cpu_attention(p.qkv, out, p.T, D, p.cu, p.tiles, p.n_tiles + 3, window);
    att_check_ref(&p, out, R, B, L, D, lens, window);

    /* Thread-count independence. */
    float *out1 = falloc((size_t)(p.T + 1) * D);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    kn_cpu_attention(p.qkv, out1, p.T, D, p.cu, p.tiles, p.n_tiles, window);
    omp_set_num_threads(saved);
    ck_assert(memcmp(out, out1, sizeof(float) * (size_t)p.T * D) == 0);

    att_check_packing(qkv, &p, out, B, L, D, lens, window);
    att_check_select(&p, out, B, D, lens, window);
    free(qkv), free(out), free(out1), free(R), free(p.qkv);
}

START_TEST(test_attention_windows_lengths)
{
    FOR_SEEDS {
        /* Unequal lengths incl. 0 and partial key tiles; starts off the tile grid. */
        const int32_t lens4[4] = {130, 0, 67, 1};
        const int windows[] = {-1, 64, 3, 0};
        for (int w = 0; w < 4; w++) {
            att_case(4, 130, 128, lens4, windows[w], 1.0f);
            att_case(4, 130, 128, lens4, windows[w], 4.0f);
        }
        const int32_t lens2[2] = {200, 199 - irand(150)};
        att_case(2, 200, 64, lens2, 64, 2.0f);
        att_case(2, 200, 64, lens2, -1, 2.0f);
        const int32_t lens1[1] = {65};
        att_case(1, 65, 192, lens1, 64, 1.0f);
        const int32_t lens5[5] = {17, 63, 64, 1, 65};
        att_case(5, 65, 64, lens5, 64, 2.0f);
    }
}
END_TEST

START_TEST(test_attention_tiles)
{
    /* Each row gets ceil(len / 64) tiles in order; the rest of the list is dead. */
    const int32_t cu[5] = {0, 0, 130, 131, 195};
    int32_t tiles[2 * 10];
    ck_assert_int_eq(kn_attention_tiles(cu, 4, tiles, 10), 5);
    const int32_t want[10] = {1, 0, 1, 64, 1, 128, 2, 130, 3, 131};
    ck_assert(memcmp(tiles, want, sizeof want) == 0);
    for (int i = 5; i < 10; i++)
        ck_assert_int_eq(tiles[2 * i], -1);
    ck_assert_int_eq(kn_attention_tiles(cu, 4, tiles, 4), -1);
    ck_assert_int_eq(kn_attention_tiles(cu, 4, tiles, 195 / 64 + 4), 5); /* the documented cap */
}
END_TEST

/* ---- head ops ---- */

START_TEST(test_embed_type_gather)
{
    FOR_SEEDS {
        const int V = 50, D = 70, M = 27, G = 12;
        float *E = frand((size_t)V * D, -1, 1), *h = falloc((size_t)M * D);
        int32_t ids[27], ttype[27], idx[12];
        for (int m = 0; m < M; m++) {
            ids[m] = irand(V);
            ttype[m] = irand(3);
        }
        poison(h, (size_t)M * D);
        kn_cpu_embed(E, ids, h, M, D);
        for (int m = 0; m < M; m++)
            ck_assert(memcmp(h + (size_t)m * D, E + (size_t)ids[m] * D, sizeof(float) * D) == 0);
        float *T = frand((size_t)3 * D, -1, 1), *h0 = falloc((size_t)M * D);
        memcpy(h0, h, sizeof(float) * (size_t)M * D);
        kn_cpu_add_type_emb(h, T, ttype, M, D);
        for (int m = 0; m < M; m++)
            for (int d = 0; d < D; d++) {
                volatile float want = h0[(size_t)m * D + d] + T[(size_t)ttype[m] * D + d];
                ck_assert(h[(size_t)m * D + d] == want);
            }
        for (int g = 0; g < G; g++)
            idx[g] = irand(M);
        float *gr = falloc((size_t)G * D);
        poison(gr, (size_t)G * D);
        kn_cpu_gather_rows(h, idx, gr, G, D);
        for (int g = 0; g < G; g++)
            ck_assert(memcmp(gr + (size_t)g * D, h + (size_t)idx[g] * D, sizeof(float) * D) == 0);
        free(E), free(h), free(T), free(h0), free(gr);
    }
}
END_TEST

START_TEST(test_scorer_tail)
{
    FOR_SEEDS {
        const int n = 11, D = 1027;
        float *x = frand((size_t)n * D, -1, 1), *w = frand(D, -0.05f, 0.05f), lg[11];
        uint8_t mask[11];
        for (int i = 0; i < n; i++)
            mask[i] = i % 4 != 3;
        poison(lg, n);
        kn_cpu_scorer_tail(x, w, 0.375f, mask, lg, n, D);
        for (int i = 0; i < n; i++) {
            if (!mask[i]) {
                ck_assert(lg[i] == -1e4f);
                continue;
            }
            double s = 0.375;
            for (int k = 0; k < D; k++)
                s += (double)x[(size_t)i * D + k] * w[k];
            ck_assert_msg(fabs(lg[i] - s) <= TOL, "scorer %d: %g vs %g", i, lg[i], s);
        }
        free(x), free(w);
    }
}
END_TEST

static void feats_ref(const float *z, const uint8_t *mask, int K, double f[4])
{
    double mx = -INFINITY, sum = 0, ent = 0, p[64], t1 = 0, t2 = 0;
    int live = 0;
    for (int k = 0; k < K; k++) {
        mx = z[k] > mx ? z[k] : mx;
        live += mask[k] != 0;
    }
    for (int k = 0; k < K; k++)
        sum += exp(z[k] - mx);
    for (int k = 0; k < K; k++) {
        p[k] = exp(z[k] - mx) / sum;
        ent += p[k] * log(p[k] > 1e-9 ? p[k] : 1e-9);
    }
    for (int k = 0; k < K; k++) /* top-2 by sorting positions */
        if (p[k] > t1)
            t1 = p[k];
    int seen = 0;
    for (int k = 0; k < K; k++) {
        if (p[k] == t1 && !seen) {
            seen = 1;
            continue;
        }
        t2 = p[k] > t2 ? p[k] : t2;
    }
    double kk = live > 2 ? live : 2;
    f[0] = t1, f[1] = t1 - t2, f[2] = -ent / log(kk), f[3] = kk / 255.0;
}

START_TEST(test_conf_features_act_input)
{
    FOR_SEEDS {
        /* Rows of 1 + live slots (CLS masked to -1e4, then the markers), an
         * empty padding row, and the same rows padded to K slots: equal bits. */
        enum { B = 7, K = 8 };
        const int live[B] = {7, 1, 2, 5, 3, 6, 0};
        float z[B * K], zp[B * K], feats[B * 4], featp[B * 4];
        uint8_t mask[B * K], maskp[B * K];
        int32_t goff[B + 1], goffp[B + 1];
        int g = 0;
        for (int b = 0; b < B; b++) {
            goff[b] = g;
            goffp[b] = b * K;
            const int n = live[b] ? 1 + live[b] : 0;
            for (int k = 0; k < K; k++) {
                const int real = k >= 1 && k <= live[b];
                zp[b * K + k] = real ? urand(-6, 6) : -1e4f;
                maskp[b * K + k] = (uint8_t)real;
                if (k < n) {
                    z[g] = zp[b * K + k];
                    mask[g++] = maskp[b * K + k];
                }
            }
        }
        goff[B] = g, goffp[B] = B * K;
        goffp[B - 1] = goffp[B]; /* the empty row stays empty when padded */
        for (int b = 0; b < B; b++) /* a tie for the top in row 5 */
            if (b == 5)
                z[goff[b] + 2] = z[goff[b] + 4] = zp[b * K + 2] = zp[b * K + 4] = 9.0f;
        poison(feats, B * 4);
        kn_cpu_conf_features(z, mask, goff, feats, B);
        for (int b = 0; b + 1 < B; b++) {
            double f[4];
            feats_ref(z + goff[b], mask + goff[b], goff[b + 1] - goff[b], f);
            for (int i = 0; i < 4; i++)
                ck_assert_msg(fabs(feats[b * 4 + i] - f[i]) <= TOL, "feat b=%d i=%d %g vs %g",
                              b, i, feats[b * 4 + i], f[i]);
        }
        for (int i = 0; i < 4; i++)
            ck_assert(feats[(B - 1) * 4 + i] == 0.0f); /* empty row */
        ck_assert(feats[5 * 4 + 1] == 0.0f);          /* tie: top1 - top2 = 0 */
        ck_assert(feats[1 * 4 + 0] == 1.0f && feats[1 * 4 + 3] == 2.0f / 255.0f); /* one marker */
        kn_cpu_conf_features(zp, maskp, goffp, featp, B);
        ck_assert(memcmp(feats, featp, sizeof feats) == 0);

        const int D = 9;
        float *h = frand((size_t)g * D, -1, 1), *ai = falloc((size_t)B * (D + 4));
        poison(ai, (size_t)B * (D + 4));
        kn_cpu_act_input(h, feats, goff, ai, B, D);
        for (int b = 0; b + 1 < B; b++) {
            ck_assert(memcmp(ai + (size_t)b * (D + 4), h + (size_t)goff[b] * D, sizeof(float) * D) == 0);
            ck_assert(memcmp(ai + (size_t)b * (D + 4) + D, feats + b * 4, sizeof(float) * 4) == 0);
        }
        for (int i = 0; i < D + 4; i++)
            ck_assert(ai[(size_t)(B - 1) * (D + 4) + i] == 0.0f);
        free(h), free(ai);
    }
}
END_TEST

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels_cpu");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_gemm_epilogues);
    tcase_add_test(tc, test_gemm_accumulate);
    tcase_add_test(tc, test_gemm_k0_and_empty);
    tcase_add_test(tc, test_gemm_thread_independent);
    tcase_add_test(tc, test_geglu);
    tcase_add_test(tc, test_layernorm_combos);
    tcase_add_test(tc, test_layernorm_large_residual);
    tcase_add_test(tc, test_rope_tables);
    tcase_add_test(tc, test_rope_apply);
    tcase_add_test(tc, test_attention_windows_lengths);
    tcase_add_test(tc, test_attention_tiles);
    tcase_add_test(tc, test_embed_type_gather);
    tcase_add_test(tc, test_scorer_tail);
    tcase_add_test(tc, test_conf_features_act_input);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *env = getenv("KN_TEST_SEED");
    g_seeds[0] = 1234;
    g_seeds[1] = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    printf("test_kernels_cpu: seeds 1234 and %llu (replay: KN_TEST_SEED=%llu)\n",
           (unsigned long long)g_seeds[1], (unsigned long long)g_seeds[1]);
    return tu_run(kernels_suite());
}
