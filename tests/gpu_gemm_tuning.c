/*
 * gpu_gemm_tuning.c - persisted GEMM tuning on the device (kn_gemm_ctx_load_tuning /
 * _save_tuning, kernels/cuda.h): a context that loads another's file takes every
 * recorded algorithm without timing it and computes bit for bit what the tuning
 * context computed; a record whose algorithm cuBLASLt refuses is dropped and the shape
 * tuned again; a plan built before a load keeps its algorithm; a foreign file is
 * ignored with a warning. The file format itself is tested on the CPU
 * (tests/test_gemm_cache.c).
 *
 * Without a CUDA device the program prints SKIP and exits 0.
 */
#include <stdio.h>

#if !LAYAD_CUDA
int main(void)
{
    printf("SKIP: gpu_gemm_tuning: built without CUDA (no nvcc)\n");
    return 0;
}
#else

#include <check.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "kernels/cuda.h"
#include "tests/lib/testutil.h"

#include "tests/lib/gpu_check.h" /* CU, OK */

static const kn_stream KS0 = {NULL, 0};

/* The shapes: the encoder's projections at two bucket sizes, with and without bias. */
typedef struct shape { int M, N, K, epi, bias; } shape;
static const shape SHAPES[] = {
    {96, 2304, 768, KN_EPI_NONE, 1}, {512, 768, 768, KN_EPI_NONE, 1}, {96, 2624, 768, KN_EPI_NONE, 0},
    {512, 768, 1152, KN_EPI_RELU, 1},
};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
#define MAXE (512 * 2624)

/* fp16 operands shared by every context: X [512, 1152], W [2624, 1152], bias [2624]
 * (16-bit, so no conversion launch), Y [512, 2624]. */
static void *g_x, *g_w, *g_b, *g_y;

static void *dev_random(size_t n, uint64_t seed)
{
    float *h = malloc(n * sizeof *h), *d32 = NULL;
    void *d16 = NULL;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = (float)((seed >> 40) * (1.0 / 16777216.0)) - 0.5f;
    }
    CU(cudaMalloc((void **)&d32, n * sizeof(float)));
    CU(cudaMalloc(&d16, n * 2));
    CU(cudaMemcpy(d32, h, n * sizeof(float), cudaMemcpyHostToDevice));
    OK(kn_convert(KS0, d32, KN_F32, d16, KN_F16, n));
    CU(cudaDeviceSynchronize());
    cudaFree(d32);
    free(h);
    return d16;
}

static void setup(void)
{
    g_x = dev_random((size_t)512 * 1152, 1);
    g_w = dev_random((size_t)2624 * 1152, 2);
    g_b = dev_random(2624, 3);
    CU(cudaMalloc(&g_y, (size_t)MAXE * 2));
}

static void teardown(void)
{
    cudaFree(g_x), cudaFree(g_w), cudaFree(g_b), cudaFree(g_y);
}

/* Prepares shape i with operands (tuning, when on, happens here). */
static void prepare(kn_gemm_ctx *ctx, int i)
{
    const shape *s = &SHAPES[i];
    OK(kn_gemm_prepare(ctx, KN_F16, KN_F16, KN_F16, s->M, s->N, s->K, s->epi, s->bias, KS0, g_x, g_w, g_y));
}

/* Runs shape i and returns Y's bytes (malloc'ed). */
static uint16_t *run(kn_gemm_ctx *ctx, int i)
{
    const shape *s = &SHAPES[i];
    const size_t n = (size_t)s->M * s->N;
    CU(cudaMemset(g_y, 0xff, n * 2));
    OK(kn_gemm_ex(ctx, KS0, g_x, KN_F16, g_w, KN_F16, s->bias ? g_b : NULL, KN_F16, g_y, KN_F16, s->M, s->N,
                  s->K, s->epi));
    CU(cudaDeviceSynchronize());
    uint16_t *h = malloc(n * 2);
    CU(cudaMemcpy(h, g_y, n * 2, cudaMemcpyDeviceToHost));
    return h;
}

static int same_output(kn_gemm_ctx *a, kn_gemm_ctx *b, int i)
{
    uint16_t *ya = run(a, i), *yb = run(b, i);
    const int eq = memcmp(ya, yb, (size_t)SHAPES[i].M * SHAPES[i].N * 2) == 0;
    free(ya), free(yb);
    return eq;
}

static kn_gemm_ctx *tuning_ctx(void)
{
    kn_gemm_ctx *ctx = kn_gemm_ctx_create(0, 0);
    ck_assert_ptr_nonnull(ctx);
    kn_gemm_ctx_set_tuning(ctx, 1);
    return ctx;
}

/* A tuned context's file, at path; returns the records written (>= 1: the H200's
 * heuristic offers several candidates for these shapes). */
static int tune_and_save(const char *path, kn_gemm_ctx **out)
{
    kn_gemm_ctx *ctx = tuning_ctx();
    for (int i = 0; i < NSHAPES; i++)
        prepare(ctx, i);
    char err[512] = "x";
    const int n = kn_gemm_ctx_save_tuning(ctx, path, err, sizeof err);
    ck_assert_msg(n >= 1 && n <= NSHAPES, "saved %d: %s", n, err);
    ck_assert_str_eq(err, "");
    *out = ctx;
    return n;
}

START_TEST(loaded_algorithms_are_used)
{
    char path[] = "/tmp/layad-gpu-tuning-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    kn_gemm_ctx *a;
    const int n = tune_and_save(path, &a);
    kn_gemm_ctx *b = tuning_ctx();
    char warn[512] = "x";
    ck_assert_int_eq(kn_gemm_ctx_load_tuning(b, path, warn, sizeof warn), n);
    ck_assert_str_eq(warn, "");
    for (int i = 0; i < NSHAPES; i++)
        prepare(b, i);
    int seeded = -1, rejected = -1;
    kn_gemm_ctx_tuning_counts(b, &seeded, &rejected);
    ck_assert_int_eq(seeded, n);
    ck_assert_int_eq(rejected, 0);
    for (int i = 0; i < NSHAPES; i++)
        ck_assert_msg(same_output(a, b, i), "shape %d: the loaded algorithm differs from the tuned one", i);
    /* saving again writes the same file */
    char p2[sizeof path + 4];
    snprintf(p2, sizeof p2, "%s.2", path);
    char err[512];
    ck_assert_int_eq(kn_gemm_ctx_save_tuning(b, p2, err, sizeof err), n);
    size_t l1, l2;
    char *f1 = tu_read_file(path, &l1), *f2 = tu_read_file(p2, &l2);
    ck_assert(f1 && f2 && l1 == l2 && memcmp(f1, f2, l1) == 0);
    free(f1), free(f2);
    unlink(p2);
    unlink(path);
    kn_gemm_ctx_destroy(a);
    kn_gemm_ctx_destroy(b);
}
END_TEST

static uint32_t crc32_ref(const char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= (unsigned char)p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1u ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

/* Rewrites every record's algorithm words with all-ones bytes (an algorithm id
 * cuBLASLt does not have) and signs the file again. */
static void spoil_algorithms(const char *path)
{
    size_t len;
    char *f = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(f);
    for (char *line = strstr(f, "\nrec "); line; line = strstr(line + 1, "\nrec ")) {
        char *eol = strchr(line + 1, '\n');
        for (int w = 0; w < 8; w++) /* the last 8 fields: 16 hex digits and a space each */
            memset(eol - 16 - 17 * w, 'f', 16);
    }
    char *crc = strstr(f, "crc32 ");
    ck_assert_ptr_nonnull(crc);
    snprintf(crc, 16, "crc32 %08" PRIx32 "\n", crc32_ref(f, (size_t)(crc - f)));
    FILE *o = fopen(path, "wb");
    ck_assert_ptr_nonnull(o);
    fputs(f, o);
    fclose(o);
    free(f);
}

START_TEST(refused_algorithms_are_tuned_again)
{
    char path[] = "/tmp/layad-gpu-tuning-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    kn_gemm_ctx *a;
    const int n = tune_and_save(path, &a);
    spoil_algorithms(path);
    kn_gemm_ctx *b = tuning_ctx();
    char warn[512];
    ck_assert_int_eq(kn_gemm_ctx_load_tuning(b, path, warn, sizeof warn), n);
    for (int i = 0; i < NSHAPES; i++) {
        prepare(b, i);
        uint16_t *y = run(b, i); /* runs, and writes every element */
        for (size_t e = 0; e < (size_t)SHAPES[i].M * SHAPES[i].N; e++)
            ck_assert_msg((y[e] & 0x7c00) != 0x7c00, "shape %d: element %zu not finite", i, e);
        free(y);
    }
    int seeded = -1, rejected = -1;
    kn_gemm_ctx_tuning_counts(b, &seeded, &rejected);
    ck_assert_int_eq(seeded, 0);
    ck_assert_int_eq(rejected, n);
    char err[512];
    ck_assert_int_eq(kn_gemm_ctx_save_tuning(b, path, err, sizeof err), n); /* re-tuned records */
    unlink(path);
    kn_gemm_ctx_destroy(a);
    kn_gemm_ctx_destroy(b);
}
END_TEST

/* A plan built before a load keeps its algorithm: output bit-identical across it. */
START_TEST(plans_never_change)
{
    char path[] = "/tmp/layad-gpu-tuning-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    kn_gemm_ctx *a;
    tune_and_save(path, &a);
    kn_gemm_ctx *b = kn_gemm_ctx_create(0, 0); /* tuning off: the heuristic's first */
    ck_assert_ptr_nonnull(b);
    uint16_t *before[NSHAPES];
    for (int i = 0; i < NSHAPES; i++)
        before[i] = run(b, i);
    char warn[512];
    kn_gemm_ctx_load_tuning(b, path, warn, sizeof warn);
    int seeded = -1;
    for (int i = 0; i < NSHAPES; i++) {
        uint16_t *after = run(b, i);
        ck_assert(memcmp(before[i], after, (size_t)SHAPES[i].M * SHAPES[i].N * 2) == 0);
        free(before[i]), free(after);
    }
    kn_gemm_ctx_tuning_counts(b, &seeded, NULL);
    ck_assert_int_eq(seeded, 0);
    unlink(path);
    kn_gemm_ctx_destroy(a);
    kn_gemm_ctx_destroy(b);
}
END_TEST

START_TEST(foreign_file_is_ignored)
{
    char path[] = "/tmp/layad-gpu-tuning-XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    kn_gemm_ctx *a;
    tune_and_save(path, &a);
    size_t len;
    char *f = tu_read_file(path, &len);
    char *drv = strstr(f, " driver=");
    ck_assert_ptr_nonnull(drv);
    drv[8] = drv[8] == '1' ? '2' : '1'; /* another driver; signed again */
    char *crc = strstr(f, "crc32 ");
    snprintf(crc, 16, "crc32 %08" PRIx32 "\n", crc32_ref(f, (size_t)(crc - f)));
    FILE *o = fopen(path, "wb");
    fputs(f, o);
    fclose(o);
    free(f);
    kn_gemm_ctx *b = tuning_ctx();
    char warn[512] = "";
    ck_assert_int_eq(kn_gemm_ctx_load_tuning(b, path, warn, sizeof warn), 0);
    ck_assert_msg(strstr(warn, "another environment") && strstr(warn, "driver"), "warning '%s'", warn);
    printf("foreign file: %s\n", warn);
    unlink(path);
    kn_gemm_ctx_destroy(a);
    kn_gemm_ctx_destroy(b);
}
END_TEST

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: gpu_gemm_tuning: no CUDA device\n");
        return 0;
    }
    Suite *s = suite_create("gpu_gemm_tuning");
    TCase *tc = tcase_create("tuning file");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, loaded_algorithms_are_used);
    tcase_add_test(tc, refused_algorithms_are_tuned_again);
    tcase_add_test(tc, plans_never_change);
    tcase_add_test(tc, foreign_file_is_ignored);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* CUDA does not survive fork() */
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
#endif /* LAYAD_CUDA */
