/*
 * test_pyjson.c - Python's json.loads / json.dumps / float repr / round(x, 4)
 * in C (model/pyexact/pyjson.h, model/pyexact/pyfloat.h) against values Python computed.
 *
 * Fixture tests/fixtures/pycases.json (scripts/gen-test-cases.py): "repr"
 * [double bits, repr(x)], "round4" [bits, bits of round(x, 4)], "dumps"
 * {text, json.dumps(json.loads(text), ensure_ascii=False), str(value)},
 * "bad_json" texts json.loads refuses.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/pyexact/pyfloat.h"
#include "model/pyexact/pyjson.h"
#include "tests/lib/testutil.h"

START_TEST(float_repr_matches_python)
{
    const pj_value *cases = pj_get(tu_pycases(), "repr");
    ck_assert(cases && cases->u.arr.n > 500);
    for (size_t i = 0; i < cases->u.arr.n; i++) {
        const pj_value *c = cases->u.arr.items[i];
        double x = tu_hex_f64(c->u.arr.items[0]);
        char out[32];
        py_float_repr(x, out);
        ck_assert_msg(!strcmp(out, c->u.arr.items[1]->u.str.s), "repr(%.17g): got %s want %s", x, out,
                      c->u.arr.items[1]->u.str.s);
    }
}
END_TEST

START_TEST(round4_matches_python)
{
    const pj_value *cases = pj_get(tu_pycases(), "round4");
    ck_assert(cases && cases->u.arr.n > 500);
    for (size_t i = 0; i < cases->u.arr.n; i++) {
        const pj_value *c = cases->u.arr.items[i];
        double x = tu_hex_f64(c->u.arr.items[0]), want = tu_hex_f64(c->u.arr.items[1]);
        double got = py_round(x, 4);
        ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "round(%.17g, 4): got %.17g want %.17g", x, got, want);
    }
}
END_TEST

START_TEST(dumps_matches_python)
{
    const pj_value *cases = pj_get(tu_pycases(), "dumps");
    ck_assert(cases && cases->u.arr.n >= 10);
    for (size_t i = 0; i < cases->u.arr.n; i++) {
        const pj_value *c = cases->u.arr.items[i];
        const pj_value *text = pj_get(c, "text"), *want = pj_get(c, "dumps"), *str = pj_get(c, "str");
        pj_arena a = {0};
        pj_value *v;
        layad_error err = {0};
        ck_assert_msg(pj_parse(&a, text->u.str.s, text->u.str.len, &v, &err) == 0, "%s: %s", text->u.str.s, err.msg);
        pj_buf b = {0};
        pj_dump(&b, v);
        ck_assert_msg(b.len == want->u.str.len && !memcmp(b.p, want->u.str.s, b.len), "dumps(%s):\n got %s\nwant %s",
                      text->u.str.s, b.p, want->u.str.s);
        free(b.p);
        if (str->type == PJ_STRING) {
            pj_buf s = {0};
            pj_str(&s, v);
            ck_assert_msg(s.len == str->u.str.len && !memcmp(s.p, str->u.str.s, s.len), "str(%s): got %s want %s",
                          text->u.str.s, s.p, str->u.str.s);
            free(s.p);
        }
        pj_arena_free(&a);
    }
}
END_TEST

START_TEST(bad_json_is_400)
{
    const pj_value *cases = pj_get(tu_pycases(), "bad_json");
    ck_assert(cases && cases->u.arr.n >= 10);
    for (size_t i = 0; i < cases->u.arr.n; i++) {
        const pj_value *t = cases->u.arr.items[i];
        pj_arena a = {0};
        pj_value *v;
        layad_error err = {0};
        ck_assert_msg(pj_parse(&a, t->u.str.s, t->u.str.len, &v, &err) == -1, "accepted %s", t->u.str.s);
        ck_assert_int_eq(err.status, 400);
        pj_arena_free(&a);
    }
}
END_TEST

/* Bytes Python's UTF-8 decoder refuses (overlong, encoded surrogate, past U+10FFFF, stray
 * continuation, truncated sequence) are 400, inside and outside strings. */
START_TEST(invalid_utf8_is_400)
{
    static const char *bad[] = {"\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\x80\"", "\"\xe2\x82\"",
                                "[\"ok\", \"\xff\"]", "{\"\xfe\": 1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pj_arena a = {0};
        pj_value *v;
        layad_error err = {0};
        ck_assert_msg(pj_parse(&a, bad[i], strlen(bad[i]), &v, &err) == -1, "accepted case %zu", i);
        ck_assert_int_eq(err.status, 400);
        pj_arena_free(&a);
    }
    /* valid 4-byte UTF-8 and NUL inside a string survive a round trip */
    pj_arena a = {0};
    pj_value *v;
    layad_error err = {0};
    const char ok[] = "\"a\\u0000\xf0\x9f\x9a\x80\"";
    ck_assert(pj_parse(&a, ok, sizeof ok - 1, &v, &err) == 0);
    ck_assert_uint_eq(v->u.str.len, 6);
    pj_buf b = {0};
    pj_dump(&b, v);
    ck_assert_str_eq(b.p, "\"a\\u0000\xf0\x9f\x9a\x80\"");
    free(b.p);
    pj_arena_free(&a);
}
END_TEST

START_TEST(scalar_equality_is_python_dict_key_equality)
{
    pj_arena a = {0};
    pj_value *v;
    layad_error err = {0};
    const char *t = "[1, 1.0, true, \"1\", 0, -0.0, false, 100000000000000000000, 1e20, 1.5, NaN, NaN, null]";
    ck_assert(pj_parse(&a, t, strlen(t), &v, &err) == 0);
    pj_value **x = v->u.arr.items;
    ck_assert(pj_scalar_equal(x[0], x[1]) && pj_scalar_equal(x[0], x[2]) && pj_scalar_equal(x[1], x[2]));
    ck_assert(!pj_scalar_equal(x[0], x[3]));
    ck_assert(pj_scalar_equal(x[4], x[5]) && pj_scalar_equal(x[4], x[6]));
    ck_assert(pj_scalar_equal(x[7], x[8]));
    ck_assert(!pj_scalar_equal(x[0], x[9]));
    ck_assert(!pj_scalar_equal(x[10], x[11]));
    ck_assert(pj_scalar_equal(x[12], x[12]));
    pj_arena_free(&a);
}
END_TEST

START_TEST(deep_nesting_is_refused)
{
    size_t n = 2000;
    char *t = malloc(2 * n + 1);
    memset(t, '[', n);
    memset(t + n, ']', n);
    t[2 * n] = 0;
    pj_arena a = {0};
    pj_value *v;
    layad_error err = {0};
    ck_assert(pj_parse(&a, t, 2 * n, &v, &err) == -1);
    ck_assert_int_eq(err.status, 400);
    pj_arena_free(&a);
    free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pyjson");
    TCase *tc = tcase_create("python");
    tcase_add_unchecked_fixture(tc, tu_pycases_load, tu_pycases_unload);
    tcase_add_test(tc, float_repr_matches_python);
    tcase_add_test(tc, round4_matches_python);
    tcase_add_test(tc, dumps_matches_python);
    tcase_add_test(tc, bad_json_is_400);
    tcase_add_test(tc, invalid_utf8_is_400);
    tcase_add_test(tc, scalar_equality_is_python_dict_key_equality);
    tcase_add_test(tc, deep_nesting_is_refused);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
