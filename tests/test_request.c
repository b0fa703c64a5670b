/*
 * test_request.c - the request API's client-error contract (server/api/request.h,
 * server/api/README.md): which status and field each malformed body gets, the limits, the
 * per-request overrides and caps, the error body, and the response shapes
 * (state vs states, empty questions, strict, return_logits) on the tiny model.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint/checkpoint.h"
#include "server/api/request.h"
#include "tests/lib/testutil.h"

static laya_checkpoint g_ck;

static void load(void)
{
    layad_error err = {0};
    ck_assert_msg(checkpoint_open(&g_ck, tu_tiny(), &err) == 0, "%s: %s", tu_tiny(), err.msg);
}

static void unload(void)
{
    checkpoint_close(&g_ck);
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
    ck_assert_int_eq(status_of("{\"state\": \"x\", \"min_confidence\": 0.5, " Q1 "}", NULL, f), 422);
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
    ck_assert_str_eq(b, "{\"error\": {\"message\": \"bad \\\"quote\\\"\\n\", \"field\": \"questions.a\"}}");
    ck_assert_uint_eq(n, strlen(b));
    free(b);
    layad_fail(&e, 400, "not json");
    b = request_error_body(&e, NULL);
    ck_assert_str_eq(b, "{\"error\": {\"message\": \"not json\", \"field\": null}}");
    free(b);
    layad_fail_field(&e, 500, "x", "/secret/path failed");
    b = request_error_body(&e, NULL);
    ck_assert_str_eq(b, "{\"error\": {\"message\": \"internal error\", \"field\": null}}");
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

int main(void)
{
    Suite *s = suite_create("request");
    TCase *tc = tcase_create("contract");
    tcase_add_unchecked_fixture(tc, load, unload);
    tcase_add_test(tc, client_errors_have_the_documented_status);
    tcase_add_test(tc, limits_are_413_before_validation);
    tcase_add_test(tc, caps_model_names_and_endpoint_form);
    tcase_add_test(tc, error_body_shape);
    tcase_add_test(tc, response_shapes);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
