/*
 * test_pyjson.c - Python's json.loads / json.dumps / float repr / round(x, 4)
 * in C (model/pyexact/pyjson.h, model/pyexact/pyfloat.h) against values Python computed.
 *
 * Fixture tests/fixtures/pycases.json (scripts/gen-test-cases.py): "repr"
 * [double bits, repr(x)], "round4" [bits, bits of round(x, 4)], "dumps"
 * {text, json.dumps(json.loads(text), ensure_ascii=False), str(value)},
 * "bad_json" texts json.loads refuses.
 *
 * Parsing is linear in the body (a key-flooding client must not cost quadratic time): objects with hundreds of
 * thousands of keys, wide and deep mixes, and long runs of duplicate keys parse
 * within a bound that a quadratic duplicate-key scan misses by orders of
 * magnitude (27.8 s for 120k keys before), with duplicates still resolved as
 * json.loads does (checked against a direct transcription of dict insertion).
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The significant digits of a decimal string ("-0.01230" -> "123"), at most 39. */
static void sig_digits(const char *s, char *d)
{
    int n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && (n > 0 || *s != '0'))
            d[n++] = *s;
    while (n > 0 && d[n - 1] == '0')
        n--;
    d[n] = 0;
}

/* Fresh round(x, 4) values from 1e-4 to 1e16 (what responses print, and on
 * both sides of 1e9, where py_float_repr's shortcut stops serving them) and
 * random doubles around them: each repr reads back to x, no shorter digit
 * string does, its digits are the correctly rounded ones of that length, and
 * it is in fixed notation with a fraction and no trailing zero past the
 * first decimal. */
START_TEST(float_repr_of_rounded_values_is_shortest)
{
    srand(20261204);
    for (int i = 0; i < 200000; i++) {
        const double mag = pow(10.0, (double)(rand() % 21) - 4.0), u = (double)rand() / RAND_MAX;
        double x = u * mag * (rand() % 2 ? 1.0 : -1.0);
        if (i % 2)
            x = py_round(x, 4);
        if (x == 0.0 || fabs(x) < 1e-4 || fabs(x) >= 1e16)
            continue;
        char out[32], got[40], want[48], e[48];
        py_float_repr(x, out);
        ck_assert_msg(strtod(out, NULL) == x, "repr(%.17g) = %s does not read back", x, out);
        sig_digits(out, got);
        const int nd = (int)strlen(got);
        snprintf(e, sizeof e, "%.*e", nd - 1, x);
        sig_digits(e, want);
        ck_assert_msg(!strcmp(got, want), "repr(%.17g) = %s: digits %s, correctly rounded %s", x, out, got, want);
        if (nd > 1) {
            snprintf(e, sizeof e, "%.*e", nd - 2, x);
            ck_assert_msg(strtod(e, NULL) != x, "repr(%.17g) = %s, but %s is shorter and reads back", x, out, e);
        }
        const char *dot = strchr(out, '.');
        const size_t len = strlen(out);
        ck_assert_msg(dot && !strchr(out, 'e') && dot[1] && (out[len - 1] != '0' || out + len - 2 == dot),
                      "repr(%.17g) = %s is not in fixed notation with its fraction", x, out);
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

/* round(x, n) as CPython forms it: the correctly rounded "%.*f" string read back, a zero
 * keeping x's sign (py_round's own fallback, and what its integer path must equal). */
static double round_by_printf(double x, int nd)
{
    char buf[400];
    snprintf(buf, sizeof buf, "%.*f", nd, x);
    const double r = strtod(buf, NULL);
    return r == 0.0 ? copysign(0.0, x) : r;
}

/* py_round against round_by_printf, bit for bit: random doubles over 2^-80..2^60 and every
 * decimal count from -1 to 16, exact ties ((2k + 1) / 2^j, which half-even must send to the
 * even neighbour), results on both sides of 2^53, subnormals, both signs. */
START_TEST(round_matches_printf)
{
    uint64_t st = 20261205;
    long n = 0;
    for (int i = 0; i < 300000; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        const int nd = (int)(st >> 59) % 18 - 1, kind = (int)((st >> 40) % 4);
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        double x;
        if (kind == 0) /* a tie or near it at nd decimals */
            x = ldexp((double)(2 * (st >> 44) + 1), -(int)((st >> 20) % 40 + 1));
        else if (kind == 1) /* near 2^53 / 10^nd, where the integer path stops */
            x = ldexp(1.0, 53) / pow(10.0, nd < 0 ? 0 : nd) *
                (1.0 + ((double)(st >> 11) / 9007199254740992.0 - 0.5) * 1e-6);
        else if (kind == 2 && i % 97 == 0) /* subnormal */
            x = ldexp((double)(st >> 12), -1074);
        else
            x = ldexp((double)(st >> 11) / 9007199254740992.0, (int)((st >> 3) % 140) - 80);
        if (st & 4)
            x = -x;
        const double got = py_round(x, nd), want = round_by_printf(x, nd);
        ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "round(%a, %d): got %a want %a", x, nd, got, want);
        n++;
    }
    printf("round(x, n): %ld cases equal to the printf / strtod pair\n", n);
}
END_TEST

START_TEST(dumps_matches_python)
{
    const pj_value *cases = pj_get(tu_pycases(), "dumps");
    ck_assert(cases && cases->u.arr.n >= 10);
    for (size_t i = 0; i < cases->u.arr.n; i++) {
        const pj_value *c = cases->u.arr.items[i];
        const pj_value *text = pj_get(c, "text"), *want = pj_get(c, "dumps"), *str = pj_get(c, "str");
        arena a = {0};
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
        arena_release(&a);
    }
}
END_TEST

START_TEST(bad_json_is_400)
{
    const pj_value *cases = pj_get(tu_pycases(), "bad_json");
    ck_assert(cases && cases->u.arr.n >= 10);
    for (size_t i = 0; i < cases->u.arr.n; i++) {
        const pj_value *t = cases->u.arr.items[i];
        arena a = {0};
        pj_value *v;
        layad_error err = {0};
        ck_assert_msg(pj_parse(&a, t->u.str.s, t->u.str.len, &v, &err) == -1, "accepted %s", t->u.str.s);
        ck_assert_int_eq(err.status, 400);
        arena_release(&a);
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
        arena a = {0};
        pj_value *v;
        layad_error err = {0};
        ck_assert_msg(pj_parse(&a, bad[i], strlen(bad[i]), &v, &err) == -1, "accepted case %zu", i);
        ck_assert_int_eq(err.status, 400);
        arena_release(&a);
    }
    /* valid 4-byte UTF-8 and NUL inside a string survive a round trip */
    arena a = {0};
    pj_value *v;
    layad_error err = {0};
    const char ok[] = "\"a\\u0000\xf0\x9f\x9a\x80\"";
    ck_assert(pj_parse(&a, ok, sizeof ok - 1, &v, &err) == 0);
    ck_assert_uint_eq(v->u.str.len, 6);
    pj_buf b = {0};
    pj_dump(&b, v);
    ck_assert_str_eq(b.p, "\"a\\u0000\xf0\x9f\x9a\x80\"");
    free(b.p);
    arena_release(&a);
}
END_TEST

/* String literals made of random pieces at random offsets (the parser tests eight plain bytes
 * at a time): plain ASCII runs, escapes, raw UTF-8, and now and then a raw control byte, which
 * makes the literal a 400. The decoded bytes are known from the pieces. */
START_TEST(strings_decode_at_every_offset)
{
    static const struct { const char *lit, *dec; } pieces[] = {
        {"\\\"", "\""}, {"\\\\", "\\"}, {"\\n", "\n"}, {"\\/", "/"}, {"\\u00e9", "\xc3\xa9"},
        {"\\ud83d\\ude80", "\xf0\x9f\x9a\x80"}, {"\xc3\xa9", "\xc3\xa9"}, {"\xe2\x80\x9c", "\xe2\x80\x9c"},
        {"\xf0\x9f\x9a\x80", "\xf0\x9f\x9a\x80"}, {"~", "~"}, {" ", " "}, {"\x7f", "\x7f"},
    };
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    unsigned seed = 7;
    char lit[256], dec[256];
    for (int k = 0; k < 50000; k++) {
        size_t nl = 0, nd = 0;
        bool bad = false;
        lit[nl++] = '"';
        while (nl < 200 && rand_r(&seed) % 6) {
            const int r = rand_r(&seed) % 8;
            if (r < 5) { /* a plain run of 0-19 bytes */
                for (int m = rand_r(&seed) % 20; m > 0; m--)
                    lit[nl++] = dec[nd++] = (char)('a' + rand_r(&seed) % 26);
            } else if (r < 7) {
                const size_t i = (size_t)rand_r(&seed) % n_pieces;
                memcpy(lit + nl, pieces[i].lit, strlen(pieces[i].lit));
                nl += strlen(pieces[i].lit);
                memcpy(dec + nd, pieces[i].dec, strlen(pieces[i].dec));
                nd += strlen(pieces[i].dec);
            } else if (rand_r(&seed) % 8 == 0) {
                lit[nl++] = (char)(rand_r(&seed) % 0x20);
                bad = true;
            }
        }
        lit[nl++] = '"';
        arena a = {0};
        pj_value *v;
        layad_error err = {0};
        const int rc = pj_parse(&a, lit, nl, &v, &err);
        if (bad) {
            ck_assert_msg(rc == -1 && err.status == 400, "literal %d: a raw control byte was accepted", k);
        } else {
            ck_assert_msg(rc == 0, "literal %d: %s", k, err.msg);
            ck_assert_int_eq(v->type, PJ_STRING);
            ck_assert_uint_eq(v->u.str.len, nd);
            ck_assert_msg(nd == 0 || memcmp(v->u.str.s, dec, nd) == 0, "literal %d decodes wrongly", k);
        }
        arena_release(&a);
    }
}
END_TEST

/* pj_buf_int writes what printf's %ld does, at the extremes and around every power of ten. */
START_TEST(int_matches_printf)
{
    long cases[64 + 2];
    int n = 0;
    cases[n++] = LONG_MIN;
    cases[n++] = LONG_MAX;
    for (long p = 1; p <= LONG_MAX / 10 && n < 62; p *= 10) {
        cases[n++] = p - 1;
        cases[n++] = -p;
    }
    for (int i = 0; i < n; i++) {
        pj_buf b = {0};
        pj_buf_put(&b, "x", 1);
        pj_buf_int(&b, cases[i]);
        char want[32];
        snprintf(want, sizeof want, "x%ld", cases[i]);
        ck_assert_str_eq(b.p, want);
        free(b.p);
    }
}
END_TEST

START_TEST(scalar_equality_is_python_dict_key_equality)
{
    arena a = {0};
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
    arena_release(&a);
}
END_TEST

START_TEST(deep_nesting_is_refused)
{
    size_t n = 2000;
    char *t = malloc(2 * n + 1);
    memset(t, '[', n);
    memset(t + n, ']', n);
    t[2 * n] = 0;
    arena a = {0};
    pj_value *v;
    layad_error err = {0};
    ck_assert(pj_parse(&a, t, 2 * n, &v, &err) == -1);
    ck_assert_int_eq(err.status, 400);
    arena_release(&a);
    free(t);
}
END_TEST

/* ---- linear parsing ------------------------------------------------------------ */

#define BODY_LIMIT (2u << 20) /* the daemon's default max_body_bytes */
#define PARSE_BOUND_MS 500.0  /* ~10x what a 2-core CI machine needs under ASan; the quadratic scan took 27.8 s */

static double now_ms(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Parses t[0..n) into a (must succeed), prints and bounds the time it took: thread CPU time is
 * asserted (robust to a loaded machine), wall time is printed beside it. */
static pj_value *timed_parse(arena *a, const char *label, const char *t, size_t n)
{
    pj_value *v = NULL;
    layad_error err = {0};
    double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
    int rc = pj_parse(a, t, n, &v, &err);
    double cpu = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0, wall = now_ms(CLOCK_MONOTONIC) - w0;
    printf("pyjson parse %-40s %8zu bytes: %7.2f ms cpu, %7.2f ms wall\n", label, n, cpu, wall);
    fflush(stdout);
    ck_assert_msg(rc == 0, "%s: %s", label, err.msg);
    ck_assert_msg(cpu < PARSE_BOUND_MS, "%s: parse took %.1f ms of CPU (bound %.0f ms)", label, cpu, PARSE_BOUND_MS);
    return v;
}

/* The request shape of the key-flooding reproduction: a body whose `state` is one object of
 * n_keys keys "k<i>" -> i, within the 2 MiB body limit. */
START_TEST(state_with_120k_keys_parses_in_linear_time)
{
    const size_t n_keys = 120000;
    pj_buf b = {0};
    pj_buf_puts(&b, "{\"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"urgent?\"}}, \"state\": {");
    for (size_t i = 0; i < n_keys; i++)
        pj_buf_printf(&b, "%s\"k%zu\": %zu", i ? ", " : "", i, i);
    pj_buf_puts(&b, "}}");
    ck_assert(!b.failed && b.len <= BODY_LIMIT);
    arena a = {0};
    const pj_value *root = timed_parse(&a, "state with 120k keys", b.p, b.len);
    const pj_value *st = pj_get(root, "state");
    ck_assert(st && st->type == PJ_OBJECT);
    ck_assert_uint_eq(st->u.obj.n, n_keys);
    char key[32];
    for (size_t i = 0; i < n_keys; i += 997) {
        snprintf(key, sizeof key, "k%zu", i);
        ck_assert_str_eq(st->u.obj.m[i].key, key);
        ck_assert_int_eq(atol(st->u.obj.m[i].val->u.str.s), (long)i);
    }
    arena_release(&a);
    free(b.p);
}
END_TEST

/* The most keys 2 MiB holds: distinct 3-byte keys with one-digit values (~260k). */
START_TEST(most_keys_in_the_body_limit_parse_in_linear_time)
{
    pj_buf b = {0};
    pj_buf_puts(&b, "{");
    size_t n = 0;
    for (int x = '0'; x <= 'z'; x++)
        for (int y = '0'; y <= 'z'; y++)
            for (int z = '0'; z <= 'z'; z++) {
                if (x == '\\' || y == '\\' || z == '\\' || b.len + 16 > BODY_LIMIT)
                    continue;
                pj_buf_printf(&b, "%s\"%c%c%c\":%d", n ? "," : "", x, y, z, (int)(n % 10));
                n++;
            }
    pj_buf_puts(&b, "}");
    ck_assert(!b.failed && b.len <= BODY_LIMIT && n > 250000);
    arena a = {0};
    const pj_value *v = timed_parse(&a, "2 MiB of 3-byte keys", b.p, b.len);
    ck_assert_uint_eq(v->u.obj.n, n);
    arena_release(&a);
    free(b.p);
}
END_TEST

/* Wide and deep at once, within the body limit: 64 states, each an object of 120 keys whose
 * values are objects of 10 keys, then one chain 500 objects deep where every level has 31. */
START_TEST(wide_and_deep_mix_parses_in_linear_time)
{
    pj_buf b = {0};
    pj_buf_puts(&b, "{\"states\": [");
    for (int s = 0; s < 64; s++) {
        pj_buf_puts(&b, s ? ", {" : "{");
        for (int k = 0; k < 120; k++) {
            pj_buf_printf(&b, "%s\"f%d\": {", k ? ", " : "", k);
            for (int j = 0; j < 10; j++)
                pj_buf_printf(&b, "%s\"g%d\": [%d, \"x\"]", j ? ", " : "", j, j);
            pj_buf_puts(&b, "}");
        }
        pj_buf_puts(&b, "}");
    }
    pj_buf_puts(&b, "], \"deep\": ");
    const int depth = 500;
    for (int d = 0; d < depth; d++) {
        pj_buf_puts(&b, "{");
        for (int j = 0; j < 30; j++)
            pj_buf_printf(&b, "\"d%d\": %d, ", j, d);
        pj_buf_puts(&b, "\"next\": ");
    }
    pj_buf_puts(&b, "null");
    for (int d = 0; d < depth; d++)
        pj_buf_puts(&b, "}");
    pj_buf_puts(&b, "}");
    ck_assert(!b.failed && b.len <= BODY_LIMIT);
    arena a = {0};
    const pj_value *root = timed_parse(&a, "64 x 120 x 10 keys + 500 deep x 31", b.p, b.len);
    const pj_value *ss = pj_get(root, "states");
    ck_assert_uint_eq(ss->u.arr.n, 64);
    const pj_value *last = ss->u.arr.items[63];
    ck_assert_uint_eq(last->u.obj.n, 120);
    ck_assert_str_eq(last->u.obj.m[119].key, "f119");
    ck_assert_uint_eq(pj_get(last, "f100")->u.obj.n, 10);
    const pj_value *d = pj_get(root, "deep");
    for (int i = 0; i < depth; i++) {
        ck_assert_uint_eq(d->u.obj.n, 31);
        ck_assert_int_eq(atoi(pj_get(d, "d29")->u.str.s), i);
        d = pj_get(d, "next");
    }
    ck_assert_int_eq(d->type, PJ_NULL);
    arena_release(&a);
    free(b.p);
}
END_TEST

/* 120k members over 1000 distinct keys: 1000 members, each at its first position with its
 * last value, in linear time. */
START_TEST(many_duplicate_keys_keep_first_position_last_value)
{
    const int n = 120000, distinct = 1000;
    pj_buf b = {0};
    pj_buf_puts(&b, "{");
    for (int i = 0; i < n; i++)
        pj_buf_printf(&b, "%s\"k%d\": %d", i ? ", " : "", (i * 7) % distinct, i);
    pj_buf_puts(&b, "}");
    ck_assert(!b.failed && b.len <= BODY_LIMIT);
    arena a = {0};
    const pj_value *v = timed_parse(&a, "120k members, 1000 distinct keys", b.p, b.len);
    ck_assert_uint_eq(v->u.obj.n, (size_t)distinct);
    char key[32];
    for (int j = 0; j < distinct; j++) {
        int k = (j * 7) % distinct; /* first seen at position j (7 is prime to 1000) */
        snprintf(key, sizeof key, "k%d", k);
        ck_assert_str_eq(v->u.obj.m[j].key, key);
        ck_assert_int_eq(atoi(v->u.obj.m[j].val->u.str.s), n - distinct + j); /* last i with i*7 = k */
    }
    arena_release(&a);
    free(b.p);
}
END_TEST

/* "\\u00e9" and the raw UTF-8 bytes are one key: the extra keys' ids 6 and 7 are equal. */
static int canon(int id, int n_keys)
{
    return id == n_keys + 7 ? n_keys + 6 : id;
}

/* dict insertion, transcribed: a repeated key keeps its first position and takes the last
 * value. Random objects of 1-300 members over 1-120 keys (some differing only by an embedded
 * NUL or a prefix) cross the sizes where the parser changes its lookup. */
START_TEST(duplicate_keys_match_dict_insertion)
{
    static const char *const extra[] = {"", "\\u0000", "a\\u0000", "a\\u0000b", "ab", "a", "\\u00e9", "\xc3\xa9"};
    static const size_t extra_len[] = {0, 1, 2, 3, 2, 1, 2, 2}; /* decoded lengths */
    static const char *const extra_dec[] = {"", "\0", "a\0", "a\0b", "ab", "a", "\xc3\xa9", "\xc3\xa9"};
    unsigned seed = 12345;
    for (int round = 0; round < 400; round++) {
        seed = seed * 1103515245u + 12345u;
        int n_members = 1 + (int)(seed >> 8) % 300;
        seed = seed * 1103515245u + 12345u;
        int n_keys = 1 + (int)(seed >> 8) % 120;
        int keys[300], order[300], last[300], n_out = 0; /* key ids; expected members */
        pj_buf b = {0};
        pj_buf_puts(&b, "{");
        for (int i = 0; i < n_members; i++) {
            seed = seed * 1103515245u + 12345u;
            keys[i] = (int)(seed >> 8) % (n_keys + 8); /* ids >= n_keys are the extra keys */
            if (keys[i] >= n_keys)
                pj_buf_printf(&b, "%s\"%s\": %d", i ? ", " : "", extra[keys[i] - n_keys], i);
            else
                pj_buf_printf(&b, "%s\"key%d\": %d", i ? ", " : "", keys[i], i);
            int j;
            for (j = 0; j < n_out && canon(keys[order[j]], n_keys) != canon(keys[i], n_keys); j++)
                ;
            if (j == n_out)
                order[n_out++] = i;
            last[j] = i;
        }
        pj_buf_puts(&b, "}");
        arena a = {0};
        pj_value *v;
        layad_error err = {0};
        ck_assert_msg(pj_parse(&a, b.p, b.len, &v, &err) == 0, "%s", err.msg);
        ck_assert_msg(v->u.obj.n == (size_t)n_out, "round %d: %zu members, want %d", round, v->u.obj.n, n_out);
        for (int j = 0; j < n_out; j++) {
            const pj_member *m = &v->u.obj.m[j];
            int id = keys[order[j]];
            char want[32];
            const char *wk = want;
            size_t wl;
            if (id >= n_keys) {
                wk = extra_dec[id - n_keys];
                wl = extra_len[id - n_keys];
            } else {
                wl = (size_t)snprintf(want, sizeof want, "key%d", id);
            }
            ck_assert_msg(m->keylen == wl && !memcmp(m->key, wk, wl), "round %d member %d: wrong key", round, j);
            ck_assert_msg(atoi(m->val->u.str.s) == last[j], "round %d member %d: value %s, want %d", round, j,
                          m->val->u.str.s, last[j]);
        }
        arena_release(&a);
        free(b.p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pyjson");
    TCase *tc = tcase_create("python");
    tcase_add_unchecked_fixture(tc, tu_pycases_load, tu_pycases_unload);
    tcase_add_test(tc, float_repr_matches_python);
    tcase_add_test(tc, strings_decode_at_every_offset);
    tcase_add_test(tc, int_matches_printf);
    tcase_add_test(tc, round4_matches_python);
    tcase_add_test(tc, round_matches_printf);
    tcase_add_test(tc, float_repr_of_rounded_values_is_shortest);
    tcase_add_test(tc, dumps_matches_python);
    tcase_add_test(tc, bad_json_is_400);
    tcase_add_test(tc, invalid_utf8_is_400);
    tcase_add_test(tc, scalar_equality_is_python_dict_key_equality);
    tcase_add_test(tc, deep_nesting_is_refused);
    suite_add_tcase(s, tc);
    TCase *lin = tcase_create("linear");
    tcase_set_timeout(lin, 60);
    tcase_add_test(lin, state_with_120k_keys_parses_in_linear_time);
    tcase_add_test(lin, most_keys_in_the_body_limit_parse_in_linear_time);
    tcase_add_test(lin, wide_and_deep_mix_parses_in_linear_time);
    tcase_add_test(lin, many_duplicate_keys_keep_first_position_last_value);
    tcase_add_test(lin, duplicate_keys_match_dict_insertion);
    suite_add_tcase(s, lin);
    return tu_run(s);
}
