/*
 * test_answers.c - post-processing numbers against the official package.
 *
 * Fixture "answers" in tests/fixtures/pycases.json (scripts/gen-test-cases.py):
 * random float32 logit rows (k = 1..300, ties, option_order permutations) and
 * temperatures, with what laya's _decode_answers arithmetic gives for them
 * (NumPy float32 softmax, laya.common.confidence_from_probs / answer_confidence,
 * the float64 expected score, PyTorch's act softmax), compared bit for bit.
 * Then the answer JSON shapes: key order, strict Jev projection, return_logits.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/laya/answers.h"
#include "model/pyexact/pyfloat.h"
#include "model/pyexact/pyjson.h"
#include "model/backend/rows.h"
#include "tests/lib/testutil.h"

START_TEST(numbers_match_the_package_bit_for_bit)
{
    const pj_value *cases = pj_get(tu_pycases(), "answers");
    ck_assert(cases && cases->u.arr.n >= 100);
    for (size_t c = 0; c < cases->u.arr.n; c++) {
        const pj_value *x = cases->u.arr.items[c];
        const pj_value *jl = pj_get(x, "logits"), *jp = pj_get(x, "probs"), *jo = pj_get(x, "order");
        int k = (int)jl->u.arr.n;
        float logits[512], p[512];
        int order[512];
        for (int i = 0; i < k; i++)
            logits[i] = tu_hex_f32(jl->u.arr.items[i]);
        if (jo->type == PJ_ARRAY)
            for (int i = 0; i < k; i++)
                order[i] = atoi(jo->u.arr.items[i]->u.str.s);
        answers_probs(logits, k, tu_hex_f64(pj_get(x, "temperature")), jo->type == PJ_ARRAY ? order : NULL, p);
        for (int i = 0; i < k; i++)
            ck_assert_msg(p[i] == tu_hex_f32(jp->u.arr.items[i]), "case %zu k=%d p[%d]: %.9g vs %.9g", c, k, i, p[i],
                          tu_hex_f32(jp->u.arr.items[i]));
        double conf = answers_entropy_confidence(p, k), want = tu_hex_f64(pj_get(x, "entropy_confidence"));
        ck_assert_msg(conf == want, "case %zu k=%d confidence %.17g vs %.17g", c, k, conf, want);
        double score = answers_expected_score(p, k);
        ck_assert_msg(score == tu_hex_f64(pj_get(x, "score")), "case %zu score %.17g vs %.17g", c, score,
                      tu_hex_f64(pj_get(x, "score")));
        const pj_value *ja = pj_get(x, "act");
        float act[2] = {tu_hex_f32(ja->u.arr.items[0]), tu_hex_f32(ja->u.arr.items[1])};
        float ap = answers_act_probability(act);
        ck_assert_msg(ap == tu_hex_f32(pj_get(x, "act_probability")), "case %zu act %.9g vs %.9g", c, ap,
                      tu_hex_f32(pj_get(x, "act_probability")));
    }
}
END_TEST

/* A small fixed question set for the JSON shapes. */
static laya_config cfg_default(void)
{
    laya_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.temperature[0] = cfg.temperature[1] = cfg.temperature[2] = 1.0;
    return cfg;
}

static char *format(const laya_question *q, int k, const float *lg, int strict, int rl)
{
    laya_config cfg = cfg_default();
    float act[2] = {2.0f, -1.0f};
    pj_buf b = {0};
    answers_format(&b, &cfg, q, k, lg, act, strict, rl);
    ck_assert(!b.failed);
    return b.p;
}

START_TEST(answer_shapes)
{
    arena a = {0};
    layad_error err = {0};
    laya_question q;
    pj_value *def;
    const char *choice = "{\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": [1, 2.5, false, \"s\"]}";
    ck_assert(pj_parse(&a, choice, strlen(choice), &def, &err) == 0);
    ck_assert(question_parse(&a, "q", 1, def, &q, &err) == 0);
    float lg[4] = {0.0f, 3.0f, 1.0f, 1.0f};
    char *s = format(&q, 4, lg, 0, 0);
    ck_assert_str_eq(s, "{\"type\": \"choice\", \"choice\": 2.5, \"probabilities\": {\"1\": 0.0377, \"2.5\": 0.7573, "
                        "\"false\": 0.1025, \"s\": 0.1025}, \"confidence\": 0.4222, \"answer_confidence\": 0.7573, "
                        "\"action\": {\"act_probability\": 0.9526}}");
    free(s);
    s = format(&q, 4, lg, 1, 1);
    ck_assert_str_eq(s, "{\"type\": \"choice\", \"choice\": 2.5, \"confidence\": 0.4222, \"probabilities\": {\"1\": "
                        "0.0377, \"2.5\": 0.7573, \"false\": 0.1025, \"s\": 0.1025}, \"logits\": [0.0, 3.0, 1.0, 1.0], "
                        "\"act_logits\": [2.0, -1.0]}");
    free(s);

    const char *score = "{\"type\": \"score\", \"instructions\": \"x\", \"criteria\": [\"lo\", {\"k\": 1e-05}, 3]}";
    ck_assert(pj_parse(&a, score, strlen(score), &def, &err) == 0);
    ck_assert(question_parse(&a, "s", 1, def, &q, &err) == 0);
    float lg3[3] = {1.0f, 1.0f, 1.0f};
    s = format(&q, 3, lg3, 0, 0);
    ck_assert_str_eq(s, "{\"type\": \"score\", \"score\": 1.0, \"legend\": {\"0\": \"lo\", \"1\": \"{\\\"k\\\": 1e-05}\", "
                        "\"2\": \"3\"}, \"probabilities\": {\"0\": 0.3333, \"1\": 0.3333, \"2\": 0.3333}, \"confidence\": "
                        "0.0, \"answer_confidence\": 0.3333, \"action\": {\"act_probability\": 0.9526}}");
    free(s);
    s = format(&q, 3, lg3, 1, 0);
    ck_assert_str_eq(s, "{\"type\": \"score\", \"score\": 1.0, \"confidence\": 0.0, \"probabilities\": {\"0\": 0.3333, "
                        "\"1\": 0.3333, \"2\": 0.3333}, \"legend\": {\"0\": \"lo\", \"1\": \"{\\\"k\\\": 1e-05}\", \"2\": "
                        "\"3\"}}");
    free(s);

    const char *noul = "{\"type\": \"noul\", \"instructions\": \"x\"}";
    ck_assert(pj_parse(&a, noul, strlen(noul), &def, &err) == 0);
    ck_assert(question_parse(&a, "n", 1, def, &q, &err) == 0);
    float lg2[2] = {0.0f, 1.0f};
    s = format(&q, 2, lg2, 0, 0);
    ck_assert_str_eq(s, "{\"type\": \"noul\", \"noul\": 0.7311, \"confidence\": 0.7311, \"answer_confidence\": 0.7311, "
                        "\"action\": {\"act_probability\": 0.9526}}");
    free(s);
    s = format(&q, 2, lg2, 1, 0);
    ck_assert_str_eq(s, "{\"type\": \"noul\", \"noul\": 0.7311}");
    free(s);

    /* a single option: p = [1.0], both confidences 1.0 */
    const char *one = "{\"type\": \"choice\", \"instructions\": \"x\", \"criteria\": {\"solo\": \"only\"}}";
    ck_assert(pj_parse(&a, one, strlen(one), &def, &err) == 0);
    ck_assert(question_parse(&a, "o", 1, def, &q, &err) == 0);
    float lg1[1] = {-7.25f};
    s = format(&q, 1, lg1, 0, 0);
    ck_assert_str_eq(s, "{\"type\": \"choice\", \"choice\": \"solo\", \"probabilities\": {\"solo\": 1.0}, \"confidence\": "
                        "1.0, \"answer_confidence\": 1.0, \"action\": {\"act_probability\": 0.9526}}");
    free(s);
    arena_release(&a);
}
END_TEST

/* option_order: slot s showed option order[s]; probabilities come back in label order. */
START_TEST(option_order_unpermutes)
{
    float lg[3] = {5.0f, 0.0f, 0.0f}; /* slot 0 is the likely one */
    int order[3] = {2, 0, 1};        /* slot 0 showed option 2 */
    float p[3];
    answers_probs(lg, 3, 1.0, order, p);
    ck_assert(p[2] > 0.98f && p[0] < 0.01f && p[1] < 0.01f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("answers");
    TCase *tc = tcase_create("package");
    tcase_add_unchecked_fixture(tc, tu_pycases_load, tu_pycases_unload);
    tcase_add_test(tc, numbers_match_the_package_bit_for_bit);
    tcase_add_test(tc, answer_shapes);
    tcase_add_test(tc, option_order_unpermutes);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
