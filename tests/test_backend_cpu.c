/*
 * test_backend_cpu.c - the CPU forward against the official laya package.
 *
 * Fixture tests/fixtures/cpu-forward-tiny.json: rows on the tiny checkpoint
 * (unequal lengths in one batch, rows longer than the local window and than one
 * key tile, single-marker rows, a 5-token row, an 11-marker row) with the logits
 * and act logits DecisionModel.forward computes for them in fp32, batched and
 * each row alone. Regenerate with (after `make build/tiny/model.safetensors`):
 *
 *   scripts/ref-forward.py --model build/tiny --each \
 *       --in tests/fixtures/cpu-forward-tiny.json --out tests/fixtures/cpu-forward-tiny.json
 *
 * Tolerance: |ours - ref| <= max(1e-4, 1e-5 |ref|) on every logit and act logit.
 * Beyond the oracle: a row's outputs are bit-identical alone, batched (one
 * chunk padded to the longest row, or the default padding-bounded chunks), in
 * any order, chunked by max_rows 2 or 1, and with 1 or 2 threads; unused slots hold
 * exactly -1e4; bad rows fail with an error instead of reading out of bounds.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cpu.h"
#include "model/checkpoint/checkpoint.h"
#include "tests/lib/testutil.h"

#define FIXTURE "tests/fixtures/cpu-forward-tiny.json"
#define MAXR 16
#define MAXK 16
#define MAXL 1024

static laya_checkpoint g_ck;
static int n_rows, K_ref;
static int32_t ids[MAXR][MAXL], marks[MAXR][MAXK];
static laya_row rows[MAXR];
static float ref_logits[MAXR][MAXK], ref_act[MAXR][2], ref_logits1[MAXR][MAXK], ref_act1[MAXR][2];
static char names[MAXR][64];

static void load_fixture(void)
{
    json_error_t je;
    json_t *root = json_load_file(FIXTURE, 0, &je);
    ck_assert_msg(root != NULL, "%s: %s", FIXTURE, je.text);
    json_t *jr = json_object_get(root, "rows"), *jl = json_object_get(root, "logits");
    json_t *ja = json_object_get(root, "act"), *jl1 = json_object_get(root, "logits_alone");
    json_t *ja1 = json_object_get(root, "act_alone");
    ck_assert(json_is_array(jr) && json_is_array(jl) && json_is_array(ja) && jl1 && ja1);
    n_rows = (int)json_array_size(jr);
    K_ref = (int)json_integer_value(json_object_get(root, "K"));
    ck_assert(n_rows > 0 && n_rows <= MAXR && K_ref > 0 && K_ref <= MAXK);
    for (int i = 0; i < n_rows; i++) {
        json_t *r = json_array_get(jr, i);
        json_t *ji = json_object_get(r, "ids"), *jm = json_object_get(r, "markers");
        snprintf(names[i], sizeof names[i], "%s", json_string_value(json_object_get(r, "name")));
        rows[i].len = (int)json_array_size(ji);
        rows[i].n_markers = (int)json_array_size(jm);
        ck_assert(rows[i].len <= MAXL && rows[i].n_markers <= MAXK);
        for (int t = 0; t < rows[i].len; t++)
            ids[i][t] = (int32_t)json_integer_value(json_array_get(ji, t));
        for (int k = 0; k < rows[i].n_markers; k++)
            marks[i][k] = (int32_t)json_integer_value(json_array_get(jm, k));
        rows[i].ids = ids[i];
        rows[i].markers = marks[i];
        rows[i].qtype = (int)json_integer_value(json_object_get(r, "qtype"));
        for (int k = 0; k < K_ref; k++) {
            ref_logits[i][k] = (float)json_real_value(json_array_get(json_array_get(jl, i), k));
            ref_logits1[i][k] = k < rows[i].n_markers
                                    ? (float)json_real_value(json_array_get(json_array_get(jl1, i), k))
                                    : -1e4f;
        }
        for (int c = 0; c < 2; c++) {
            ref_act[i][c] = (float)json_real_value(json_array_get(json_array_get(ja, i), c));
            ref_act1[i][c] = (float)json_real_value(json_array_get(json_array_get(ja1, i), c));
        }
    }
    json_decref(root);
}

static void setup(void)
{
    const char *tiny = tu_tiny();
    layad_error err;
    int rc = checkpoint_open(&g_ck, tiny, &err);
    ck_assert_msg(rc == 0, "checkpoint_open %s: %s", tiny, err.msg);
    load_fixture();
}

static void teardown(void) { checkpoint_close(&g_ck); }

static laya_backend *mk(int max_rows, int threads)
{
    layad_error err;
    laya_backend *b = cpu_backend_create(&g_ck, max_rows, threads, &err);
    ck_assert_msg(b != NULL, "cpu_backend_create: %s", err.msg);
    return b;
}

/* Runs rows[order[0..n)] with K slots into lg/act (poisoned first). */
static void fwd(laya_backend *b, const int *order, int n, int K, float *lg, float *act)
{
    laya_row sel[MAXR];
    for (int i = 0; i < n; i++)
        sel[i] = rows[order[i]];
    for (int i = 0; i < n * K; i++)
        lg[i] = NAN;
    for (int i = 0; i < n * 2; i++)
        act[i] = NAN;
    layad_error err;
    int rc = b->ops->forward(b, sel, n, K, lg, act, &err);
    ck_assert_msg(rc == 0, "forward: %s", err.msg);
}

static int close_enough(float got, float ref, double *worst)
{
    double d = fabs((double)got - ref), tol = fmax(1e-4, 1e-5 * fabs(ref));
    *worst = d > *worst ? d : *worst;
    return isfinite(got) && d <= tol;
}

static int identity[MAXR];

START_TEST(test_matches_official_batched)
{
    laya_backend *b = mk(8, 0);
    for (int i = 0; i < n_rows; i++)
        identity[i] = i;
    float lg[MAXR * MAXK], act[MAXR * 2];
    fwd(b, identity, n_rows, K_ref, lg, act);
    double wl = 0, wa = 0;
    for (int i = 0; i < n_rows; i++) {
        for (int k = 0; k < K_ref; k++)
            ck_assert_msg(close_enough(lg[i * K_ref + k], ref_logits[i][k], &wl),
                          "row %s slot %d: %.9g vs official %.9g", names[i], k, lg[i * K_ref + k], ref_logits[i][k]);
        for (int c = 0; c < 2; c++)
            ck_assert_msg(close_enough(act[i * 2 + c], ref_act[i][c], &wa), "row %s act %d: %.9g vs official %.9g",
                          names[i], c, act[i * 2 + c], ref_act[i][c]);
        for (int k = rows[i].n_markers; k < K_ref; k++)
            ck_assert(lg[i * K_ref + k] == -1e4f);
    }
    printf("backend_cpu vs official (batched %d rows): max |d logit| %.3g, max |d act| %.3g\n", n_rows, wl, wa);
    b->ops->destroy(b);
}
END_TEST

START_TEST(test_alone_equals_batched_bitwise)
{
    laya_backend *b = mk(8, 0);
    for (int i = 0; i < n_rows; i++)
        identity[i] = i;
    float lg[MAXR * MAXK], act[MAXR * 2], lg1[MAXK], act1[2];
    fwd(b, identity, n_rows, K_ref, lg, act);
    double wl = 0, wa = 0;
    for (int i = 0; i < n_rows; i++) {
        fwd(b, &i, 1, K_ref, lg1, act1);
        ck_assert_msg(memcmp(lg1, lg + i * K_ref, sizeof(float) * K_ref) == 0, "row %s: alone != batched", names[i]);
        ck_assert(memcmp(act1, act + i * 2, sizeof act1) == 0);
        for (int k = 0; k < K_ref; k++) /* and the official alone run agrees too */
            ck_assert_msg(close_enough(lg1[k], ref_logits1[i][k], &wl), "row %s alone slot %d", names[i], k);
        for (int c = 0; c < 2; c++)
            ck_assert(close_enough(act1[c], ref_act1[i][c], &wa));
    }
    b->ops->destroy(b);
}
END_TEST

START_TEST(test_order_chunks_threads_independent)
{
    laya_backend *b8 = mk(8, 0), *b2 = mk(2, 1), *b1 = mk(1, 2);
    for (int i = 0; i < n_rows; i++)
        identity[i] = i;
    int rev[MAXR];
    for (int i = 0; i < n_rows; i++)
        rev[i] = n_rows - 1 - i;
    const int K = K_ref + 2; /* more slots than any row needs: filled with -1e4 */
    float lg[MAXR * MAXK], act[MAXR * 2], lgr[MAXR * MAXK], actr[MAXR * 2];
    fwd(b8, identity, n_rows, K, lg, act);
    fwd(b8, rev, n_rows, K, lgr, actr);
    for (int i = 0; i < n_rows; i++) {
        int j = n_rows - 1 - i;
        ck_assert(memcmp(lg + i * K, lgr + j * K, sizeof(float) * K) == 0);
        ck_assert(memcmp(act + i * 2, actr + j * 2, sizeof(float) * 2) == 0);
        ck_assert(lg[i * K + K - 1] == -1e4f && lg[i * K + K - 2] == -1e4f);
    }
    fwd(b2, identity, n_rows, K, lgr, actr); /* packs of 2 rows, 1 thread */
    ck_assert(memcmp(lg, lgr, sizeof(float) * n_rows * K) == 0);
    ck_assert(memcmp(act, actr, sizeof(float) * n_rows * 2) == 0);
    fwd(b1, identity, n_rows, K, lgr, actr); /* one row per pack, 2 threads */
    ck_assert(memcmp(lg, lgr, sizeof(float) * n_rows * K) == 0);
    ck_assert(memcmp(act, actr, sizeof(float) * n_rows * 2) == 0);
    b8->ops->destroy(b8);
    b2->ops->destroy(b2);
    b1->ops->destroy(b1);
}
END_TEST

START_TEST(test_bad_rows_rejected)
{
    laya_backend *b = mk(1, 0);
    layad_error err;
    float lg[MAXK * 2], act[4];
    int32_t bad_ids[8] = {1235, 5, 1280, 1236, 1238, 7, 1236, 1236};
    int32_t m1[1] = {4};
    laya_row r = {bad_ids, 8, m1, 1, QTYPE_CHOICE};
    ck_assert_int_eq(b->ops->forward(b, &r, 1, 1, lg, act, &err), -1); /* id 1280 >= vocab */
    bad_ids[2] = 9;
    ck_assert_int_eq(b->ops->forward(b, &r, 1, 1, lg, act, &err), 0);
    int32_t m2[2] = {4, 4};
    laya_row r2 = {bad_ids, 8, m2, 2, QTYPE_CHOICE}; /* markers not increasing */
    ck_assert_int_eq(b->ops->forward(b, &r2, 1, 2, lg, act, &err), -1);
    m2[1] = 8;                                         /* marker past the row */
    ck_assert_int_eq(b->ops->forward(b, &r2, 1, 2, lg, act, &err), -1);
    m2[1] = 5;
    ck_assert_int_eq(b->ops->forward(b, &r2, 1, 1, lg, act, &err), -1); /* K < markers */
    r2.qtype = 3;
    ck_assert_int_eq(b->ops->forward(b, &r2, 1, 2, lg, act, &err), -1);
    /* Longer than the arena (max_rows 1 x max_len 512 slots). */
    static int32_t long_ids[600];
    for (int t = 0; t < 600; t++)
        long_ids[t] = t % 1000;
    laya_row rl = {long_ids, 600, m1, 1, QTYPE_CHOICE};
    ck_assert_int_eq(b->ops->forward(b, &rl, 1, 1, lg, act, &err), -1);
    ck_assert_int_eq(err.status, 413);
    ck_assert_int_eq(b->ops->forward(b, NULL, 0, 1, lg, act, &err), 0); /* empty batch */
    b->ops->destroy(b);
    ck_assert_ptr_null(cpu_backend_create(&g_ck, 0, 0, &err));
}
END_TEST

static Suite *backend_suite(void)
{
    Suite *s = suite_create("backend_cpu");
    TCase *tc = tcase_create("tiny");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_matches_official_batched);
    tcase_add_test(tc, test_alone_equals_batched_bitwise);
    tcase_add_test(tc, test_order_chunks_threads_independent);
    tcase_add_test(tc, test_bad_rows_rejected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(backend_suite());
}
