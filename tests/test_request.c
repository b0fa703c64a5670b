/*
 * test_request.c - the request API's client-error contract (server/api/request.h,
 * server/api/README.md): which status and field each malformed body gets, the limits, the
 * per-request overrides and caps, the error body, and the response shapes
 * (state vs states, empty questions, strict, return_logits) on the tiny model.
 *
 * Empty strings: `"state": ""` tokenizes to nothing, and the
 * sequence builder copied from that NULL array (undefined behaviour; the UBSan
 * daemon aborted). An empty string in every string field of a body is answered,
 * through the CPU forward, or refused with a clear 4xx naming the field; this
 * suite runs under ASan+UBSan in `make test`.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/backend/cpu.h"
#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "server/api/jev_confidence.h"
#include "server/api/request.h"
#include "tests/lib/testutil.h"

static laya_checkpoint g_ck;
static laya_backend *g_cpu; /* the forward for the tests that answer (created in each test's process) */

static void load(void)
{
    layad_error err = {0};
    ck_assert_msg(checkpoint_open(&g_ck, tu_tiny(), &err) == 0, "%s: %s", tu_tiny(), err.msg);
}

static void unload(void)
{
    checkpoint_close(&g_ck);
}

static void cpu_up(void)
{
    layad_error err = {0};
    g_cpu = cpu_backend_create(&g_ck, 8, 1, &err);
    ck_assert_msg(g_cpu != NULL, "cpu backend: %s", err.msg);
}

static void cpu_down(void)
{
    g_cpu->ops->destroy(g_cpu);
    g_cpu = NULL;
}

/* Parses body with opts (NULL: defaults); returns the status (200 when accepted) and the field. */
static int status_of(const char *body, const decide_opts *opts, char *field)
{
    decide_opts o;
    decide_opts_default(&o);
    if (opts)
        o = *opts;
    laya_request *r = NULL;
    layad_error err = {0};
    int rc = request_parse(&g_ck, body, strlen(body), &o, &r, &err);
    if (field)
        strcpy(field, rc ? err.field : "");
    if (rc == 0) {
        request_free(r);
        return 200;
    }
    ck_assert_ptr_null(r);
    return err.status;
}

#define Q1 "\"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"is it urgent\"}}"

START_TEST(client_errors_have_the_documented_status)
{
    char f[256];
    ck_assert_int_eq(status_of("", NULL, f), 400);
    ck_assert_int_eq(status_of("{\"state\": \"x\", " Q1, NULL, f), 400);          /* truncated */
    ck_assert_int_eq(status_of("[1, 2]", NULL, f), 400);                           /* not an object */
    ck_assert_int_eq(status_of("{\"state\": \"x\"}", NULL, f), 400);               /* no questions */
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"questions\": []}", NULL, f), 400);
    ck_assert_str_eq(f, "questions");
    ck_assert_int_eq(status_of("{" Q1 "}", NULL, f), 400);                         /* no state */
    ck_assert_str_eq(f, "state");
    ck_assert_int_eq(status_of("{\"state\": null, " Q1 "}", NULL, f), 400);
    ck_assert_int_eq(status_of("{\"state\": \"\xff\", " Q1 "}", NULL, f), 400);   /* not UTF-8 */
    ck_assert_int_eq(status_of("{\"state\": \"\\udc00\", " Q1 "}", NULL, f), 400); /* lone surrogate */
    ck_assert_int_eq(status_of("{\"states\": [], " Q1 "}", NULL, f), 400);
    ck_assert_int_eq(status_of("{\"states\": [\"a\", null], " Q1 "}", NULL, f), 400);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"states\": [\"a\"], " Q1 "}", NULL, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"max_len\": 0, " Q1 "}", NULL, f), 422);
    ck_assert_str_eq(f, "max_len");
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"max_len\": 2.5, " Q1 "}", NULL, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"max_len\": true, " Q1 "}", NULL, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"head_max_len\": -3, " Q1 "}", NULL, f), 422);
    ck_assert_str_eq(f, "head_max_len");
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"max_len\": 99999999999999, " Q1 "}", NULL, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"return_logits\": 1, " Q1 "}", NULL, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"min_confidence\": 1.5, " Q1 "}", NULL, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"model\": 3, " Q1 "}", NULL, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"i\", "
                               "\"criteria\": [\"x\", \"x\"]}}}", NULL, f), 422);
    ck_assert_str_eq(f, "questions.a.criteria");
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"questions\": {\" \": {\"type\": \"noul\", \"instructions\": \"i\"}}}",
                               NULL, f), 422);
    /* options that cannot fit max_len: the package's 422 */
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"max_len\": 12, \"questions\": {\"a\": {\"type\": \"choice\", "
                               "\"instructions\": \"pick\", \"criteria\": [\"one\", \"two\", \"three\", \"four\"]}}}",
                               NULL, f), 422);
    ck_assert_str_eq(f, "questions.a.criteria");
    /* accepted: a number as a state, nulls for optional fields, unknown extra fields */
    ck_assert_int_eq(status_of("{\"state\": 5, \"max_len\": null, \"task\": \"x\", \"model\": null, " Q1 "}", NULL, f),
                     200);
}
END_TEST

START_TEST(limits_are_413_before_validation)
{
    char f[256];
    /* 65 questions, each invalid: the limit wins */
    char *b = malloc(65 * 64 + 64);
    strcpy(b, "{\"state\": \"x\", \"questions\": {");
    for (int i = 0; i < 65; i++)
        sprintf(b + strlen(b), "%s\"q%d\": {\"type\": \"bad\"}", i ? ", " : "", i);
    strcat(b, "}}");
    ck_assert_int_eq(status_of(b, NULL, f), 413);
    ck_assert_str_eq(f, "questions");
    free(b);
    /* 256 choice options, 33 score levels */
    char *c = malloc(256 * 8 + 256);
    strcpy(c, "{\"state\": \"x\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"i\", \"criteria\": [");
    for (int i = 0; i < 256; i++)
        sprintf(c + strlen(c), "%s%d", i ? ", " : "", i);
    strcat(c, "]}}}");
    ck_assert_int_eq(status_of(c, NULL, f), 413);
    ck_assert_str_eq(f, "questions.a.criteria");
    decide_opts o;
    decide_opts_default(&o);
    o.max_options = 300;
    ck_assert_int_ne(status_of(c, &o, f), 413);
    free(c);
    char *s = malloc(33 * 8 + 256);
    strcpy(s, "{\"state\": \"x\", \"questions\": {\"a\": {\"type\": \"score\", \"instructions\": \"i\", \"criteria\": [");
    for (int i = 0; i < 33; i++)
        sprintf(s + strlen(s), "%s\"l%d\"", i ? ", " : "", i);
    strcat(s, "]}}}");
    ck_assert_int_eq(status_of(s, NULL, f), 413);
    free(s);
    /* 65 states */
    char *t = malloc(65 * 8 + 256);
    strcpy(t, "{\"states\": [");
    for (int i = 0; i < 65; i++)
        sprintf(t + strlen(t), "%s\"s\"", i ? ", " : "");
    strcat(t, "], " Q1 "}");
    ck_assert_int_eq(status_of(t, NULL, f), 413);
    ck_assert_str_eq(f, "states");
    free(t);
    /* the serialized state over max_state_bytes */
    decide_opts_default(&o);
    o.max_state_bytes = 8;
    ck_assert_int_eq(status_of("{\"state\": \"123456789\", " Q1 "}", &o, f), 413);
    ck_assert_int_eq(status_of("{\"state\": \"12345678\", " Q1 "}", &o, f), 200);
}
END_TEST

START_TEST(caps_model_names_and_endpoint_form)
{
    char f[256];
    decide_opts o;
    decide_opts_default(&o);
    o.max_len_cap = 256;
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"max_len\": 257, " Q1 "}", &o, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"max_len\": 256, " Q1 "}", &o, f), 200);
    static const char *const names[] = {"laya", "jev-latest", NULL};
    o.model_names = names;
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"model\": \"jev-latest\", " Q1 "}", &o, f), 200);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"model\": \"gpt\", " Q1 "}", &o, f), 422);
    ck_assert_str_eq(f, "model");
    o.systemone = 1;
    ck_assert_int_eq(status_of("{\"states\": [\"a\"], " Q1 "}", &o, f), 422);
    o.return_logits_allowed = 0;
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"return_logits\": true, " Q1 "}", &o, f), 422);
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"return_logits\": false, " Q1 "}", &o, f), 200);
}
END_TEST

START_TEST(error_body_shape)
{
    layad_error e = {0};
    layad_fail_field(&e, 422, "questions.a", "bad \"quote\"\n");
    size_t n;
    char *b = request_error_body(&e, &n);
    ck_assert_str_eq(b, "{\"error\": {\"message\": \"bad \\\"quote\\\"\\n\", \"field\": \"questions.a\"}, "
                        "\"detail\": \"bad \\\"quote\\\"\\n\"}");
    ck_assert_uint_eq(n, strlen(b));
    free(b);
    layad_fail(&e, 400, "not json");
    b = request_error_body(&e, NULL);
    ck_assert_str_eq(b, "{\"error\": {\"message\": \"not json\", \"field\": null}, \"detail\": \"not json\"}");
    free(b);
    layad_fail_field(&e, 500, "x", "/secret/path failed");
    b = request_error_body(&e, NULL);
    ck_assert_str_eq(b, "{\"error\": {\"message\": \"internal error\", \"field\": null}, \"detail\": \"internal error\"}");
    free(b);
}
END_TEST

static char *answer(const char *body, const decide_opts *opts)
{
    decide_opts o;
    decide_opts_default(&o);
    if (opts)
        o = *opts;
    laya_request *r = NULL;
    layad_error err = {0};
    ck_assert_msg(request_parse(&g_ck, body, strlen(body), &o, &r, &err) == 0, "%s", err.msg);
    for (int i = 0; i < request_n_rows(r); i++) {
        for (int k = 0; k < request_rows(r)[i].n_markers; k++)
            request_row_logits(r, i)[k] = (float)k;
        request_row_act(r, i)[0] = 1.0f;
        request_row_act(r, i)[1] = 0.0f;
    }
    size_t n;
    char *out = request_format(r, &n, &err);
    ck_assert_ptr_nonnull(out);
    out = strdup(out); /* the request's copy goes with it */
    request_free(r);
    return out;
}

START_TEST(response_shapes)
{
    char *s = answer("{\"state\": \"x\", \"questions\": {}}", NULL);
    ck_assert_str_eq(s, "{\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": {\"input_tokens\": 0, "
                        "\"output_tokens\": 0}}");
    free(s);
    s = answer("{\"states\": [\"a\", \"b\"], \"questions\": {}}", NULL);
    ck_assert_str_eq(s, "{\"results\": [{\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": {\"input_tokens\": 0, "
                        "\"output_tokens\": 0}}, {\"model\": \"laya-rl-agent\", \"answers\": {}, \"usage\": "
                        "{\"input_tokens\": 0, \"output_tokens\": 0}}], \"total_usage\": {\"input_tokens\": 0, "
                        "\"output_tokens\": 0}}");
    free(s);
    decide_opts o;
    decide_opts_default(&o);
    o.jev_strict = 1;
    o.response_model = "laya";
    s = answer("{\"state\": \"x\", " Q1 "}", &o);
    const char *want = "{\"model\": \"laya\", \"answers\": {\"a\": {\"type\": \"noul\", \"noul\": 0.6234}}, "
                       "\"usage\": {\"input_tokens\": ";
    ck_assert_msg(!strncmp(s, want, strlen(want)), "%s", s);
    ck_assert_ptr_null(strstr(s, "state_tokens"));
    free(s);
    s = answer("{\"state\": \"x\", \"return_logits\": true, " Q1 "}", NULL);
    ck_assert_ptr_nonnull(strstr(s, "\"logits\": [0.0, 1.0], \"act_logits\": [1.0, 0.0]}"));
    ck_assert_ptr_nonnull(strstr(s, "\"truncated\": false, \"truncated_questions\": []"));
    free(s);
}
END_TEST

/* A message or field cut to its byte limit inside a multi-byte character is still UTF-8,
 * so the error body is JSON (fuzz_request: a noul question's criteria keys quoted past the
 * 768-byte message). Three offsets put the cut at each byte of a 3-byte character. */
START_TEST(cut_messages_and_fields_stay_utf8)
{
    for (int pad = 0; pad < 3; pad++) {
        pj_buf b = {0};
        pj_buf_puts(&b, "{\"state\": \"x\", \"questions\": {\"");
        for (int i = 0; i < pad; i++)
            pj_buf_puts(&b, "q");
        for (int i = 0; i < 300; i++)
            pj_buf_puts(&b, "\xe2\x82\xac"); /* the euro sign */
        pj_buf_puts(&b, "\": {\"type\": \"noul\", \"instructions\": \"i\", \"criteria\": {\"");
        for (int i = 0; i < pad; i++)
            pj_buf_puts(&b, "k");
        for (int i = 0; i < 400; i++)
            pj_buf_puts(&b, "\xe2\x82\xac");
        pj_buf_puts(&b, "\": 1}}}}");
        decide_opts o;
        decide_opts_default(&o);
        laya_request *r = NULL;
        layad_error err = {0};
        ck_assert_int_eq(request_parse(&g_ck, b.p, b.len, &o, &r, &err), -1);
        ck_assert_int_eq(err.status, 422);
        ck_assert_msg(strlen(err.msg) > 700, "pad %d: the message should be cut: %s", pad, err.msg);
        size_t n;
        char *body = request_error_body(&err, &n);
        json_error_t je;
        json_t *j = json_loadb(body, n, 0, &je);
        ck_assert_msg(j != NULL, "pad %d: error body is not JSON (%s)", pad, je.text);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "field")), err.field);
        json_decref(j);
        free(body);
        free(b.p);
    }
}
END_TEST

/* ---- empty strings ----------------------------------------------------------- */

/* Parses body (opts NULL: defaults); when accepted, checks each row as the scheduler trusts it
 * (ids in the vocabulary, markers on [MASK] ids inside the row), runs the CPU forward and
 * formats, and returns 200 with the response in *out (malloc'ed; JSON checked). Otherwise
 * returns the status, with the field in field[] and a non-empty message. */
static int answer_or_status(const char *body, const decide_opts *opts, char *field, char **out)
{
    decide_opts o;
    decide_opts_default(&o);
    if (opts)
        o = *opts;
    laya_request *r = NULL;
    layad_error err = {0};
    *out = NULL;
    field[0] = 0;
    if (request_parse(&g_ck, body, strlen(body), &o, &r, &err)) {
        ck_assert_ptr_null(r);
        ck_assert_msg(err.msg[0], "%s: %d without a message", body, err.status);
        strcpy(field, err.field);
        return err.status;
    }
    for (int i = 0; i < request_n_rows(r); i++) {
        const laya_row *w = &request_rows(r)[i];
        ck_assert_msg(w->len >= 1 && w->len <= request_max_len(r) && w->n_markers >= 1, "%s: row %d", body, i);
        for (int t = 0; t < w->len; t++)
            ck_assert(w->ids[t] >= 0 && w->ids[t] < g_ck.cfg.vocab);
        for (int m = 0; m < w->n_markers; m++)
            ck_assert(w->markers[m] < w->len && w->ids[w->markers[m]] == g_ck.cfg.mask_id);
    }
    ck_assert_msg(request_run(r, g_cpu, 0, &err) == 0, "%s: forward: %s", body, err.msg);
    size_t n;
    *out = request_format(r, &n, &err);
    ck_assert_ptr_nonnull(*out);
    *out = strdup(*out); /* the request's copy goes with it */
    json_t *j = json_loadb(*out, n, 0, NULL);
    ck_assert_msg(j != NULL, "not JSON: %s", *out);
    json_decref(j);
    request_free(r);
    return 200;
}

/* body answers with 200 under o (NULL: the defaults). */
static void expect_ok(const char *body, const decide_opts *o)
{
    char f[256], *s;
    ck_assert_int_eq(answer_or_status(body, o, f, &s), 200);
    free(s);
}

/* `"state": ""` is a state of no tokens: the row is the question half and its closing [SEP]
 * ([CLS] head [SEP] opts [SEP] [SEP]), the usage says 0 state tokens, nothing truncated. */
START_TEST(empty_state_is_a_state_of_no_tokens)
{
    decide_opts o;
    decide_opts_default(&o);
    laya_request *e = NULL, *x = NULL;
    layad_error err = {0};
    const char *be = "{\"state\": \"\", " Q1 "}", *bx = "{\"state\": \"x\", " Q1 "}";
    ck_assert_msg(request_parse(&g_ck, be, strlen(be), &o, &e, &err) == 0, "%s", err.msg);
    ck_assert_msg(request_parse(&g_ck, bx, strlen(bx), &o, &x, &err) == 0, "%s", err.msg);
    const laya_row *re = request_rows(e), *rx = request_rows(x);
    ck_assert_int_lt(re->len, rx->len);
    ck_assert_int_ge(re->len, 3);
    ck_assert_mem_eq(re->ids, rx->ids, (size_t)(re->len - 1) * sizeof *re->ids);
    ck_assert_int_eq(re->ids[re->len - 2], g_ck.cfg.sep_id);
    ck_assert_int_eq(re->ids[re->len - 1], g_ck.cfg.sep_id);
    ck_assert_int_eq(re->n_markers, rx->n_markers);
    request_free(e);
    request_free(x);
    char f[256], *s;
    ck_assert_int_eq(answer_or_status(be, NULL, f, &s), 200);
    ck_assert_msg(strstr(s, "\"state_tokens\": 0, \"state_tokens_dropped\": 0, \"truncated\": false"), "%s", s);
    free(s);
    /* the same in a batch, beside a state with tokens, and as the tail a list keeps */
    expect_ok("{\"states\": [\"\", \"x\", \"\"], " Q1 "}", NULL);
    ck_assert_int_eq(answer_or_status("{\"state\": \"\", \"max_len\": 8, " Q1 "}", NULL, f, &s), 422);
    ck_assert_str_eq(f, "questions.a.criteria");
}
END_TEST

/* Every string field of a body, empty: answered, or refused with the status and field the
 * package gives. */
START_TEST(empty_strings_everywhere_are_answered_or_refused)
{
    static const struct {
        const char *body;
        int status;
        const char *field;
    } cases[] = {
        {"{\"state\": \"\", " Q1 "}", 200, ""},
        {"{\"states\": [\"\", \"\"], " Q1 "}", 200, ""},
        {"{\"state\": [\"\"], " Q1 "}", 200, ""},
        {"{\"state\": [], " Q1 "}", 200, ""},
        {"{\"state\": {\"\": \"\"}, " Q1 "}", 200, ""},
        {"{\"state\": \"\", \"model\": \"\", " Q1 "}", 200, ""},
        {"{\"state\": \"\", \"task\": \"\", " Q1 "}", 200, ""},
        {"{\"state\": \"\", \"questions\": {\"\": {\"type\": \"noul\", \"instructions\": \"i\"}}}", 422, "questions"},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"\", \"instructions\": \"i\"}}}", 422, "questions.a.type"},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"\"}}}", 422,
         "questions.a.instructions"},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": [\"\"]}}}", 200, ""},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"i\", "
         "\"criteria\": [\"\", \"b\"]}}}", 200, ""},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"choice\", \"instructions\": \"i\", "
         "\"criteria\": {\"\": \"\", \"b\": \"\"}}}}", 200, ""},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"score\", \"instructions\": \"i\", "
         "\"criteria\": [\"\", \"\"]}}}", 200, ""},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"i\", "
         "\"criteria\": {\"true\": \"\", \"false\": \"\"}}}}", 200, ""},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"i\", "
         "\"labels\": {\"false\": \"\", \"true\": \"\"}}}}", 422, "questions.a.labels"},
        {"{\"state\": \"\", \"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"i\", "
         "\"option_order\": \"\"}}}", 422, "questions.a.option_order"},
        {"{\"state\": \"\", \"max_len\": \"\", " Q1 "}", 422, "max_len"},
        {"{\"state\": \"\", \"head_max_len\": \"\", " Q1 "}", 422, "head_max_len"},
        {"{\"state\": \"\", \"return_logits\": \"\", " Q1 "}", 422, "return_logits"},
        {"{\"state\": \"\", \"min_confidence\": \"\", " Q1 "}", 422, "min_confidence"},
        {"{\"state\": \"\", \"questions\": \"\"}", 400, "questions"},
        {"{\"states\": \"\", " Q1 "}", 400, "states"},
        {"\"\"", 400, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char f[256], *s;
        int st = answer_or_status(cases[i].body, NULL, f, &s);
        ck_assert_msg(st == cases[i].status && !strcmp(f, cases[i].field), "%s: got %d (field '%s'), want %d ('%s')",
                      cases[i].body, st, f, cases[i].status, cases[i].field);
        free(s);
    }
    /* a served-name list refuses the empty model name */
    static const char *const names[] = {"laya", NULL};
    decide_opts o;
    decide_opts_default(&o);
    o.model_names = names;
    char f[256], *s;
    ck_assert_int_eq(answer_or_status("{\"state\": \"\", \"model\": \"\", " Q1 "}", &o, f, &s), 422);
    ck_assert_str_eq(f, "model");
}
END_TEST

/* The message of a refused body (opts may be NULL), for laya-serve's word-for-word checks. */
static void expect_refusal(const char *body, const decide_opts *opts, int status, const char *msg)
{
    decide_opts o;
    decide_opts_default(&o);
    if (opts)
        o = *opts;
    laya_request *r = NULL;
    layad_error err = {0};
    ck_assert_msg(request_parse(&g_ck, body, strlen(body), &o, &r, &err) != 0, "%s: accepted", body);
    ck_assert_msg(err.status == status && !strcmp(err.msg, msg), "%s: %d '%s', want %d '%s'", body, err.status,
                  err.msg, status, msg);
}

/* min_confidence: a float in [0, 1], or a non-empty map of bucket -> float. */
static void serve_min_confidence(const decide_opts *o)
{
    const char *bad = "min_confidence must be a float in [0.0, 1.0], got ";
    char want[256];
    snprintf(want, sizeof want, "%s1.5", bad);
    expect_refusal("{\"state\": \"x\", \"min_confidence\": 1.5, " Q1 "}", o, 422, want);
    snprintf(want, sizeof want, "%sTrue", bad);
    expect_refusal("{\"state\": \"x\", \"min_confidence\": true, " Q1 "}", o, 422, want);
    snprintf(want, sizeof want, "%s[0.5, 'a']", bad);
    expect_refusal("{\"state\": \"x\", \"min_confidence\": [0.5, \"a\"], " Q1 "}", o, 422, want);
    expect_refusal("{\"state\": \"x\", \"min_confidence\": {}, " Q1 "}", o, 422,
                   "a min_confidence map must be a non-empty dict of bucket -> float, got {}");
    expect_refusal("{\"state\": \"x\", \"min_confidence\": {\"noul:2\": 0.1, \"choice:7\": 0.1}, " Q1 "}", o,
                   422, "min_confidence map keys must be a bucket like 'choice:3-5' or 'default', got 'choice:7'");
    snprintf(want, sizeof want, "%sNone", bad);
    expect_refusal("{\"state\": \"x\", \"min_confidence\": {\"default\": null}, " Q1 "}", o, 422, want);
    expect_ok("{\"state\": \"x\", \"min_confidence\": 1, " Q1 "}", o);
}

/* task: the served model in laya's spelling (laya -> english), or 422; hooks and a bad lang_guess
 * refused, other fields ignored. */
static void serve_task_and_hooks(const decide_opts *o)
{
    expect_ok("{\"state\": \"x\", \"task\": \" English\", " Q1 "}", o);
    expect_ok("{\"state\": \"x\", \"task\": \"rl-agent\", " Q1 "}", o);
    /* an explicit model outranks task */
    expect_ok("{\"state\": \"x\", \"model\": \"laya\", \"task\": \"bogus\", " Q1 "}", o);
    expect_refusal("{\"state\": \"x\", \"task\": \"bogus\", " Q1 "}", o, 422,
                   "unknown model 'bogus'; choose one of ['jev-latest', 'laya', 'rl-agent']");
    expect_refusal("{\"state\": \"x\", \"task\": 5, " Q1 "}", o, 422,
                   "unknown model 5; choose one of ['jev-latest', 'laya', 'rl-agent']");
    expect_refusal("{\"state\": \"x\", \"task\": \"typed_decisions\", " Q1 "}", o, 422,
                   "task names the typed-decisions checkpoint, which this server does not serve; it serves rl-agent");
    expect_refusal("{\"state\": \"x\", \"on_predict_start\": 1, \"hooks\": [], " Q1 "}", o, 422,
                   "hooks, on_predict_start run inside the server process and cannot be sent to this endpoint; "
                   "layad runs no hooks, so drop them");
    expect_refusal("{\"state\": \"x\", \"lang_guess\": 1, " Q1 "}", o, 422,
                   "lang_guess must be a language code string such as \"de\", or null");
    expect_ok("{\"state\": \"x\", \"lang\": \"de\", \"other\": 1, " Q1 "}", o);
}

/* /v1/systemone/batch: states, batch_size, sort_by_length, no diagnostics. */
static void serve_batch(const decide_opts *o)
{
    expect_refusal("{\"state\": \"x\", " Q1 "}", o, 400,
                   "request body must be an object with 'states' and 'questions' fields");
    expect_refusal("{\"states\": [\"x\", null], " Q1 "}", o, 400, "'state' is required");
    expect_refusal("{\"states\": [\"x\"], \"batch_size\": 0, " Q1 "}", o, 422,
                   "batch_size must be a positive integer, got 0");
    expect_refusal("{\"states\": [\"x\"], \"batch_size\": 1.0, " Q1 "}", o, 422, "batch_size must be an integer");
    expect_refusal("{\"states\": [\"x\"], \"sort_by_length\": 1, " Q1 "}", o, 422,
                   "sort_by_length must be a boolean");
    expect_refusal("{\"states\": [\"x\"], \"diagnostics\": {}, " Q1 "}", o, 422,
                   "diagnostics is filled in place for an in-process caller and cannot be returned over HTTP; "
                   "read the per-group report from the CLI or a local Router");
    char f[256], *s;
    ck_assert_int_eq(answer_or_status("{\"states\": [\"x\", \"y\"], \"state\": \"z\", \"batch_size\": 1, "
                                      "\"sort_by_length\": true, " Q1 "}", o, f, &s), 200);
    ck_assert_ptr_nonnull(strstr(s, "\"results\": [{"));
    ck_assert_ptr_nonnull(strstr(s, "\"total_usage\": "));
    free(s);
}

/* min_confidence, task, the hook refusals and the batch controls, as laya-serve answers them. */
START_TEST(laya_serve_controls)
{
    static const char *const names[] = {"rl-agent", "laya", "jev-latest", NULL};
    decide_opts o;
    decide_opts_default(&o);
    o.systemone = 1;
    o.model_names = names;
    serve_min_confidence(&o);
    serve_task_and_hooks(&o);
    o.systemone_batch = 1;
    serve_batch(&o);
}
END_TEST

#define QCS "\"questions\": {\"c\": {\"type\": \"choice\", \"instructions\": \"i\", \"criteria\": [\"a\", \"b\", \"c\"]}, " \
            "\"s\": {\"type\": \"score\", \"instructions\": \"i\", \"criteria\": [\"l\", \"m\"]}, " \
            "\"n\": {\"type\": \"noul\", \"instructions\": \"i\"}}"

/* What laya-serve appends to each answer: the gate's fields, then x_jev_confidence on choice and
 * score answers of /v1/systemone; strict mode and /decide keep the Agent's answer. */
START_TEST(gate_and_jev_fields)
{
    decide_opts o;
    decide_opts_default(&o);
    o.systemone = o.jev_confidence = 1;
    char f[256], *s;
    ck_assert_int_eq(answer_or_status("{\"state\": \"x\", \"min_confidence\": {\"choice:3-5\": 1, \"default\": 0}, "
                                      QCS "}", &o, f, &s), 200);
    json_t *j = json_loads(s, 0, NULL), *a = json_object_get(j, "answers");
    ck_assert_ptr_nonnull(a);
    json_t *c = json_object_get(a, "c"), *sc = json_object_get(a, "s"), *n = json_object_get(a, "n");
    ck_assert(json_is_true(json_object_get(c, "low_confidence"))); /* nothing clears 1.0 */
    ck_assert_str_eq(json_string_value(json_object_get(c, "abstention")), "abstained");
    ck_assert(json_real_value(json_object_get(c, "abstention_threshold")) == 1.0);
    ck_assert_ptr_null(json_object_get(sc, "low_confidence"));
    ck_assert_str_eq(json_string_value(json_object_get(sc, "abstention")), "passed");
    ck_assert_str_eq(json_string_value(json_object_get(n, "abstention")), "passed");
    ck_assert_ptr_nonnull(json_object_get(c, "x_jev_confidence"));
    ck_assert_ptr_nonnull(json_object_get(sc, "x_jev_confidence"));
    ck_assert_ptr_null(json_object_get(n, "x_jev_confidence"));
    ck_assert_ptr_nonnull(strstr(s, "\"abstention_threshold\": 1.0, \"x_jev_confidence\": ")); /* laya's key order */
    /* the value: Jev's formula on the printed probabilities */
    json_t *p = json_object_get(c, "probabilities");
    double v[3] = {json_real_value(json_object_get(p, "a")), json_real_value(json_object_get(p, "b")),
                   json_real_value(json_object_get(p, "c"))};
    double t = v[0] + v[1] + v[2], top = fmax(v[0], fmax(v[1], v[2])) / t;
    ck_assert_double_eq_tol(json_real_value(json_object_get(c, "x_jev_confidence")), (top - 1.0 / 3) / (2.0 / 3),
                            0.5e-4 + 1e-12);
    json_decref(j);
    free(s);
    o.jev_strict = 1;
    ck_assert_int_eq(answer_or_status("{\"state\": \"x\", \"min_confidence\": 0.5, " QCS "}", &o, f, &s), 200);
    ck_assert_ptr_null(strstr(s, "abstention"));
    ck_assert_ptr_null(strstr(s, "x_jev_confidence"));
    free(s);
    decide_opts_default(&o); /* /decide: the Agent's answer only */
    ck_assert_int_eq(answer_or_status("{\"state\": \"x\", " QCS "}", &o, f, &s), 200);
    ck_assert_ptr_null(strstr(s, "x_jev_confidence"));
    free(s);
}
END_TEST

/* jev_confidence on hand-computed distributions. */
START_TEST(jev_confidence_formula)
{
    answer_numbers a = {.qtype = QTYPE_CHOICE, .k = 3, .p = {0.2, 0.3, 0.5}};
    ck_assert_double_eq_tol(jev_confidence(&a), 0.25, 1e-12);
    a.p[0] = a.p[1] = a.p[2] = 0.0; /* a zero total reads as uniform */
    ck_assert_double_eq_tol(jev_confidence(&a), 0.0, 1e-12);
    a = (answer_numbers){.qtype = QTYPE_SCORE, .k = 3, .p = {0.1, 0.8, 0.1}};
    ck_assert_double_eq_tol(jev_confidence(&a), 1.0 - 0.2 / (2.0 / 3), 1e-12);
    a = (answer_numbers){.qtype = QTYPE_SCORE, .k = 3, .p = {0.5, 0.0, 0.5}}; /* mode 0: 1 - 1/(2/3) < 0 */
    ck_assert(jev_confidence(&a) == 0.0);
    a = (answer_numbers){.qtype = QTYPE_CHOICE, .k = 1, .p = {0.3}};
    ck_assert(jev_confidence(&a) == 1.0);
    a = (answer_numbers){.qtype = QTYPE_NOUL, .k = 2, .p = {0.3, 0.7}};
    ck_assert(isnan(jev_confidence(&a)));
}
END_TEST

/* A test case of s whose tests run against the CPU backend on the loaded checkpoint. */
static TCase *backend_tcase(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_add_unchecked_fixture(tc, load, unload);
    tcase_add_checked_fixture(tc, cpu_up, cpu_down);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return tc;
}

int main(void)
{
    Suite *s = suite_create("request");
    TCase *tc = tcase_create("contract");
    tcase_add_unchecked_fixture(tc, load, unload);
    tcase_add_test(tc, client_errors_have_the_documented_status);
    tcase_add_test(tc, limits_are_413_before_validation);
    tcase_add_test(tc, caps_model_names_and_endpoint_form);
    tcase_add_test(tc, error_body_shape);
    tcase_add_test(tc, cut_messages_and_fields_stay_utf8);
    tcase_add_test(tc, response_shapes);
    tcase_add_test(tc, jev_confidence_formula);
    suite_add_tcase(s, tc);
    TCase *serve = backend_tcase(s, "laya_serve");
    tcase_add_test(serve, laya_serve_controls);
    tcase_add_test(serve, gate_and_jev_fields);
    TCase *empty = backend_tcase(s, "empty_strings");
    tcase_add_test(empty, empty_state_is_a_state_of_no_tokens);
    tcase_add_test(empty, empty_strings_everywhere_are_answered_or_refused);
    return tu_run(s);
}
