/*
 * test_prompt.c - the sequence builder against the official package's
 * build_sequence on the tiny checkpoint.
 *
 * Fixture "prompt" in tests/fixtures/pycases.json (scripts/gen-test-cases.py):
 * questions and states chosen to hit each rule of laya-model.md §4.5 - mask
 * scrubbing in instructions, options and state; the 48-token option cap; the
 * budget < 16 per-option cut; the head cut max(8, budget); right truncation of
 * strings and dicts, left truncation of lists; markers past max_len (422 with
 * the package's message); structured criteria and non-string instructions.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint/checkpoint.h"
#include "model/laya/prompt.h"
#include "model/pyexact/pyjson.h"
#include "server/api/request.h"
#include "tests/lib/testutil.h"

static laya_checkpoint g_ck;

static void load(void)
{
    layad_error err = {0};
    tu_pycases_load();
    ck_assert_msg(checkpoint_open(&g_ck, tu_tiny(), &err) == 0, "%s: %s", tu_tiny(), err.msg);
}

static void unload(void)
{
    checkpoint_close(&g_ck);
    tu_pycases_unload();
}

static int int_at(const pj_value *arr, size_t i)
{
    return atoi(arr->u.arr.items[i]->u.str.s);
}

START_TEST(rows_match_build_sequence)
{
    const pj_value *cases = pj_get(tu_pycases(), "prompt");
    ck_assert(cases && cases->u.arr.n >= 10);
    int errors = 0;
    for (size_t c = 0; c < cases->u.arr.n; c++) {
        const pj_value *x = cases->u.arr.items[c];
        pj_buf body = {0};
        pj_buf_puts(&body, "{\"state\": ");
        pj_dump(&body, pj_get(x, "state"));
        pj_buf_puts(&body, ", \"questions\": {\"q\": ");
        pj_dump(&body, pj_get(x, "question"));
        pj_buf_printf(&body, "}, \"max_len\": %s, \"head_max_len\": %s}", pj_get(x, "max_len")->u.str.s,
                      pj_get(x, "head_max_len")->u.str.s);
        decide_opts o;
        decide_opts_default(&o);
        laya_request *r = NULL;
        layad_error err = {0};
        int rc = request_parse(&g_ck, body.p, body.len, &o, &r, &err);
        int want_error = pj_get(x, "error")->type == PJ_TRUE;
        if (want_error) {
            ck_assert_msg(rc == -1 && err.status == 422, "case %zu: want 422, got rc %d (%s)", c, rc, err.msg);
            ck_assert_msg(strstr(err.msg, "option markers fit in max_len=") != NULL, "case %zu: %s", c, err.msg);
            ck_assert_str_eq(err.field, "questions.q.criteria");
            errors++;
            free(body.p);
            continue;
        }
        ck_assert_msg(rc == 0, "case %zu: %s", c, err.msg);
        ck_assert_int_eq(request_n_rows(r), 1);
        const laya_row *row = request_rows(r);
        const pj_value *ids = pj_get(x, "ids"), *mk = pj_get(x, "markers");
        ck_assert_msg(row->len == (int)ids->u.arr.n, "case %zu: len %d want %zu\n%s", c, row->len, ids->u.arr.n,
                      body.p);
        for (int i = 0; i < row->len; i++)
            ck_assert_msg(row->ids[i] == int_at(ids, (size_t)i), "case %zu: id[%d] %d want %d", c, i, row->ids[i],
                          int_at(ids, (size_t)i));
        ck_assert_int_eq(row->n_markers, (int)mk->u.arr.n);
        for (int i = 0; i < row->n_markers; i++) {
            ck_assert_int_eq(row->markers[i], int_at(mk, (size_t)i));
            ck_assert_int_eq(row->ids[row->markers[i]], g_ck.cfg.mask_id);
        }
        ck_assert_int_eq(row->ids[0], g_ck.cfg.cls_id);
        request_free(r);
        free(body.p);
    }
    ck_assert_msg(errors >= 1, "the fixture must include a markers-past-max_len case");
}
END_TEST

START_TEST(scrub_replaces_every_mask_string)
{
    pj_buf b = {0};
    const char *t = "[MASK][MASK]a[MASK b[MASK]";
    prompt_scrub(&b, t, strlen(t), "[MASK]");
    ck_assert_str_eq(b.p, "  a[MASK b ");
    free(b.p);
    /* no mask token configured: text unchanged */
    pj_buf c = {0};
    prompt_scrub(&c, t, strlen(t), "");
    ck_assert_str_eq(c.p, t);
    free(c.p);
}
END_TEST

/* str.replace(mask, " ") the plain way: the reference for the scan prompt_scrub does. */
static size_t scrub_ref(char *out, const char *t, size_t n, const char *mask)
{
    const size_t ml = strlen(mask);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + ml <= n && memcmp(t + i, mask, ml) == 0) {
            out[o++] = ' ';
            i += ml;
        } else {
            out[o++] = t[i++];
        }
    }
    return o;
}

/* Random texts dense in the mask's bytes, near misses and overlaps ("[[MASK]", "[MASK[MASK]"). */
START_TEST(scrub_matches_str_replace)
{
    const char alphabet[] = "[MASK]x";
    unsigned seed = 20261207;
    char t[64], want[64];
    for (int k = 0; k < 20000; k++) {
        const size_t n = (size_t)(rand_r(&seed) % 40);
        for (size_t i = 0; i < n; i++)
            t[i] = rand_r(&seed) % 3 ? "[MASK]"[i % 6] : alphabet[rand_r(&seed) % 7];
        if (rand_r(&seed) % 2 && n >= 6)
            memcpy(t + rand_r(&seed) % (n - 5), "[MASK]", 6);
        pj_buf b = {0};
        prompt_scrub(&b, t, n, "[MASK]");
        const size_t wn = scrub_ref(want, t, n, "[MASK]");
        ck_assert_uint_eq(b.len, wn);
        ck_assert_msg(wn == 0 || memcmp(b.p, want, wn) == 0, "text %d: \"%.*s\"", k, (int)n, t);
        free(b.p);
    }
}
END_TEST

/* User text can never create a marker: [MASK] ids appear only at marker positions. */
START_TEST(markers_are_exactly_the_mask_ids)
{
    const char *body = "{\"state\": \"[MASK] [MASK]\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": "
                       "\"[MASK]?\", \"criteria\": {\"[MASK]\": \"[MASK]\", \"b\": null}}}}";
    decide_opts o;
    decide_opts_default(&o);
    laya_request *r = NULL;
    layad_error err = {0};
    ck_assert_msg(request_parse(&g_ck, body, strlen(body), &o, &r, &err) == 0, "%s", err.msg);
    const laya_row *row = request_rows(r);
    int masks = 0;
    for (int i = 0; i < row->len; i++)
        masks += row->ids[i] == g_ck.cfg.mask_id;
    ck_assert_int_eq(masks, 2);
    ck_assert_int_eq(row->n_markers, 2);
    request_free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("prompt");
    TCase *tc = tcase_create("build_sequence");
    tcase_add_unchecked_fixture(tc, load, unload);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, rows_match_build_sequence);
    tcase_add_test(tc, scrub_replaces_every_mask_string);
    tcase_add_test(tc, scrub_matches_str_replace);
    tcase_add_test(tc, markers_are_exactly_the_mask_ids);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
