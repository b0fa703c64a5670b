/*
 * test_parity.c - the CI half of scripts/parity: layad against answers the
 * official `laya` package gave, without PyPI.
 *
 * Fixture tests/fixtures/parity/tiny.jsonl (written by `scripts/parity tiny`):
 * a subset of the generated requests on the tiny checkpoint, each with the
 * package's status, rows (ids, markers), raw logits and act logits, and
 * response bytes (json.dumps(system_one(...), ensure_ascii=False), or the
 * {"results", "total_usage"} form for `states`). Checked here:
 *   - a request the package refused is a 422;
 *   - rows are identical;
 *   - with the package's logits injected, the response is byte-identical;
 *   - the CPU backend's logits are within max(1e-4, 1e-5 |ref|) of the package's.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cpu.h"
#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "server/api/request.h"
#include "tests/lib/testutil.h"

#define FIXTURE "tests/fixtures/parity/tiny.jsonl"

static laya_checkpoint g_ck;
static char *g_text;
static size_t g_len;

static void load(void)
{
    g_text = tu_read_fixture(FIXTURE, &g_len);
    layad_error err = {0};
    ck_assert_msg(checkpoint_open(&g_ck, tu_tiny(), &err) == 0, "%s: %s", tu_tiny(), err.msg);
}

static void unload(void)
{
    checkpoint_close(&g_ck);
    free(g_text);
}

static double num(const pj_value *v)
{
    return v->type == PJ_FLOAT ? v->u.num : strtod(v->u.str.s, NULL);
}

typedef struct tally {
    int cases, rejected, rows, responses, logits;
    double max_abs;
} tally;

/* The fixture's rows of case id (token ids and markers) against r's, and the fixture's logits
 * (lg) and act logits (ac) written into r for its format. */
static void check_rows(int id, laya_request *r, const pj_value *rows, const pj_value *lg, const pj_value *ac, tally *t)
{
    const int n = request_n_rows(r);
    ck_assert_msg(n == (int)rows->u.arr.n, "case %d: %d rows, want %zu", id, n, rows->u.arr.n);
    const laya_row *rw = request_rows(r);
    for (int i = 0; i < n; i++) {
        const pj_value *ids = rows->u.arr.items[i]->u.arr.items[0], *mk = rows->u.arr.items[i]->u.arr.items[1];
        ck_assert_msg(rw[i].len == (int)ids->u.arr.n, "case %d row %d: len %d want %zu", id, i, rw[i].len,
                      ids->u.arr.n);
        for (int k = 0; k < rw[i].len; k++)
            ck_assert_msg(rw[i].ids[k] == atoi(ids->u.arr.items[k]->u.str.s), "case %d row %d id %d", id, i, k);
        ck_assert_int_eq(rw[i].n_markers, (int)mk->u.arr.n);
        for (int k = 0; k < rw[i].n_markers; k++)
            ck_assert_int_eq(rw[i].markers[k], atoi(mk->u.arr.items[k]->u.str.s));
        for (int k = 0; k < rw[i].n_markers; k++)
            request_row_logits(r, i)[k] = (float)num(lg->u.arr.items[i]->u.arr.items[k]);
        for (int k = 0; k < 2; k++)
            request_row_act(r, i)[k] = (float)num(ac->u.arr.items[i]->u.arr.items[k]);
        t->rows++;
    }
}

/* r run on backend b: every logit and act logit within 1e-4 (or 1e-5 relative) of the fixture's. */
static void check_forward(int id, laya_request *r, laya_backend *b, const pj_value *lg, const pj_value *ac, tally *t)
{
    layad_error err = {0};
    ck_assert_msg(request_run(r, b, 16, &err) == 0, "case %d: %s", id, err.msg);
    const laya_row *rw = request_rows(r);
    for (int i = 0; i < request_n_rows(r); i++) {
        const int nm = rw[i].n_markers;
        for (int k = 0; k < nm + 2; k++) {
            double ref =
                k < nm ? num(lg->u.arr.items[i]->u.arr.items[k]) : num(ac->u.arr.items[i]->u.arr.items[k - nm]);
            double got = k < nm ? request_row_logits(r, i)[k] : request_row_act(r, i)[k - nm];
            double d = fabs(got - ref);
            ck_assert_msg(d <= fmax(1e-4, 1e-5 * fabs(ref)), "case %d row %d slot %d: %.9g vs %.9g", id, i, k, got,
                          ref);
            t->max_abs = fmax(t->max_abs, d);
            t->logits++;
        }
    }
}

/* Checks one fixture line; with b, also runs the backend. */
static void check_case(const pj_value *c, laya_backend *b, tally *t)
{
    int id = atoi(pj_get(c, "case")->u.str.s);
    const pj_value *body = pj_get(c, "body");
    decide_opts o;
    decide_opts_default(&o);
    o.max_options = 512;
    o.jev_strict = pj_get(c, "strict")->type == PJ_TRUE;
    laya_request *r = NULL;
    layad_error err = {0};
    int rc = request_parse(&g_ck, body->u.str.s, body->u.str.len, &o, &r, &err);
    t->cases++;
    if (strcmp(pj_get(c, "status")->u.str.s, "200")) {
        ck_assert_msg(rc == -1 && err.status == 422, "case %d: the package refused it, layad: rc %d status %d", id,
                      rc, err.status);
        t->rejected++;
        return;
    }
    ck_assert_msg(rc == 0, "case %d: %s", id, err.msg);
    const pj_value *lg = pj_get(c, "logits"), *ac = pj_get(c, "act_logits");
    check_rows(id, r, pj_get(c, "rows"), lg, ac, t);
    size_t len;
    char *out = request_format(r, &len, &err);
    ck_assert_msg(out != NULL, "case %d: %s", id, err.msg);
    const pj_value *want = pj_get(c, "response");
    ck_assert_msg(len == want->u.str.len && !memcmp(out, want->u.str.s, len), "case %d response:\n got %s\nwant %s", id,
                  out, want->u.str.s);
    t->responses++;
    if (b && request_n_rows(r))
        check_forward(id, r, b, lg, ac, t);
    request_free(r);
}

static void run_all(int forward)
{
    layad_error err = {0};
    laya_backend *b = NULL;
    if (forward) {
        b = cpu_backend_create(&g_ck, 16, 0, &err);
        ck_assert_msg(b != NULL, "%s", err.msg);
    }
    tally t = {0};
    char *line = g_text;
    while (line < g_text + g_len) {
        char *end = strchr(line, '\n');
        if (!end)
            end = g_text + g_len;
        if (end > line) {
            arena a = {0};
            pj_value *c;
            ck_assert_msg(pj_parse(&a, line, (size_t)(end - line), &c, &err) == 0, "%s", err.msg);
            check_case(c, b, &t);
            arena_release(&a);
        }
        line = end + 1;
    }
    if (b)
        b->ops->destroy(b);
    ck_assert_msg(t.cases >= 40 && t.rejected >= 1 && t.responses >= 30, "fixture too small: %d cases", t.cases);
    printf("parity fixture: %d cases, %d rejected, %d rows, %d responses byte-identical", t.cases, t.rejected, t.rows,
           t.responses);
    if (forward)
        printf(", %d logits within tolerance (max |d| %.3g)", t.logits, t.max_abs);
    printf("\n");
}

START_TEST(rows_and_responses_match_the_package)
{
    run_all(0);
}
END_TEST

START_TEST(cpu_forward_matches_the_package)
{
    run_all(1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("parity");
    TCase *tc = tcase_create("tiny");
    tcase_add_unchecked_fixture(tc, load, unload);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, rows_and_responses_match_the_package);
    tcase_add_test(tc, cpu_forward_matches_the_package);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
