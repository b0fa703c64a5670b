/*
 * pyjson_parse.c - json.loads, as Python's json module reads a request body.
 *
 * A recursive-descent parser over the body bytes (see pyjson.h for the
 * semantics it keeps). UTF-8 is validated as strings are scanned; anything
 * Python's decoder would refuse (overlong forms, encoded surrogates, code
 * points past U+10FFFF) and any unpaired \uD8xx escape is a 400, the status
 * laya-serve gives both. Nesting is capped at PJ_MAX_DEPTH (Python would
 * raise RecursionError near 1000 and answer 500; a 400 is the honest status).
 *
 * Duplicate keys keep the first position and the last value, as a dict
 * does; pyjson_keys.c finds them in linear time (a keyed hash index once an
 * object is large). The arena and the queries on parsed values are in
 * pyjson_value.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/base/swar.h"
#include "model/pyexact/pyjson.h"
#include "model/pyexact/pyjson_keys.h"

#define PJ_MAX_DEPTH 512
#define PJ_MAX_INT_DIGITS 4300 /* CPython's default int max_str_digits */

/* ---- parser --------------------------------------------------------------- */

typedef struct parser {
    arena *a;
    const unsigned char *s, *end;
    const unsigned char *start;
    layad_error *err;
    char *scratch; /* string decode buffer, grows */
    size_t scap;
    pj_hash_key hkey; /* for the duplicate-key index, drawn when the first large object needs it */
} parser;

static int fail(parser *p, const char *what)
{
    return layad_fail(p->err, 400, "request body is not valid JSON: %s at byte %zu", what,
                      (size_t)(p->s - p->start));
}

/* ---- values --------------------------------------------------------------- */

static void skip_ws(parser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static int lit(parser *p, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n))
        return 0;
    p->s += n;
    return 1;
}

static pj_value *new_value(parser *p, pj_type t)
{
    pj_value *v = arena_alloc(p->a, sizeof *v);
    if (v)
        v->type = t;
    else
        layad_fail(p->err, 500, "out of memory parsing the request");
    return v;
}

static int scratch_reserve(parser *p, size_t need)
{
    if (need <= p->scap)
        return 0;
    size_t cap = p->scap ? p->scap : 256;
    while (cap < need)
        cap *= 2;
    char *n = arena_grow(p->a, p->scratch, p->scap, cap);
    if (!n)
        return layad_fail(p->err, 500, "out of memory parsing the request");
    p->scratch = n;
    p->scap = cap;
    return 0;
}

static int hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid. */
static int utf8_len(const unsigned char *s, const unsigned char *end)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (end - s < n)
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* Parses a string literal (p->s at the opening quote); result copied into the arena. */
/* Whether c stands for itself inside a JSON string: printable ASCII but the quote and
 * the backslash. */
static inline bool plain_ascii(unsigned c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

/* The end of the run from s of bytes copied as they are: printable ASCII other than the quote
 * and the backslash, and whole valid UTF-8 sequences (states in other scripts, typographic
 * quotes); s itself when the run is empty (an escape, the closing quote, an error). */
static const unsigned char *plain_run(const unsigned char *s, const unsigned char *end)
{
    while (s < end) {
        /* eight bytes a test; a word with a byte that is not plain ASCII (below 0x20, from 0x80,
         * the quote, the backslash) is left at that byte */
        if (end - s >= 8) {
            const uint64_t w = swar_load(s);
            const uint64_t m = swar_lt_or_high(w, 0x20) | swar_eq(w, '"') | swar_eq(w, '\\');
            if (!m) {
                s += 8;
                continue;
            }
            s += swar_first(m);
        }
        if (plain_ascii(*s)) {
            s++;
            continue;
        }
        const int l = *s >= 0x80 ? utf8_len(s, end) : 0;
        if (!l)
            break;
        s += l;
    }
    return s;
}

/* A \uXXXX escape (p->s past the "\u"), joined with a following low surrogate escape when
 * it is a high one, written as UTF-8 at scratch + *n. */
static int parse_u_escape(parser *p, size_t *n)
{
    unsigned cp;
    if (p->end - p->s < 4 || hex4(p->s, &cp))
        return fail(p, "invalid \\u escape");
    p->s += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF && p->end - p->s >= 6 && p->s[0] == '\\' && p->s[1] == 'u') {
        unsigned lo;
        if (!hex4(p->s + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p->s += 6;
        }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return layad_fail(p->err, 400, "request body contains an unpaired surrogate escape; "
                                       "those cannot be encoded as UTF-8");
    *n += put_utf8(p->scratch + *n, cp);
    return 0;
}

/* The escape at p->s (a backslash), its bytes written at scratch + *n (room for 8 reserved). */
static int parse_escape(parser *p, size_t *n)
{
    if (p->end - p->s < 2)
        return fail(p, "unterminated string");
    unsigned e = p->s[1];
    p->s += 2;
    char c;
    switch (e) {
    case '"': c = '"'; break;
    case '\\': c = '\\'; break;
    case '/': c = '/'; break;
    case 'b': c = '\b'; break;
    case 'f': c = '\f'; break;
    case 'n': c = '\n'; break;
    case 'r': c = '\r'; break;
    case 't': c = '\t'; break;
    case 'u': return parse_u_escape(p, n);
    default: return fail(p, "invalid escape");
    }
    p->scratch[(*n)++] = c;
    return 0;
}

static int parse_string(parser *p, const char **out, size_t *outlen)
{
    p->s++; /* opening quote */
    size_t n = 0;
    for (;;) {
        if (p->s >= p->end)
            return fail(p, "unterminated string");
        unsigned c = *p->s;
        const unsigned char *q = plain_run(p->s, p->end);
        if (q > p->s) { /* a run of plain bytes in one copy: most of a request's bytes */
            const size_t k = (size_t)(q - p->s);
            if (scratch_reserve(p, n + k + 8))
                return -1;
            memcpy(p->scratch + n, p->s, k);
            n += k;
            p->s = q;
            continue;
        }
        if (scratch_reserve(p, n + 8))
            return -1;
        if (c == '"') {
            p->s++;
            break;
        }
        if (c < 0x20)
            return fail(p, "invalid control character in string");
        if (c == '\\') {
            if (parse_escape(p, &n))
                return -1;
            continue;
        }
        /* what plain_run stops at beyond ASCII is not valid UTF-8 */
        return layad_fail(p->err, 400, "request body is not valid UTF-8 at byte %zu", (size_t)(p->s - p->start));
    }
    char *s = arena_alloc(p->a, n + 1);
    if (!s)
        return layad_fail(p->err, 500, "out of memory parsing the request");
    memcpy(s, p->scratch, n);
    s[n] = 0;
    *out = s;
    *outlen = n;
    return 0;
}

static int is_digit(const parser *p, const unsigned char *s)
{
    return s < p->end && *s >= '0' && *s <= '9';
}

static int parse_number(parser *p, pj_value **out)
{
    const unsigned char *b = p->s, *s = p->s;
    if (*s == '-')
        s++;
    if (!is_digit(p, s))
        return fail(p, "expecting value");
    if (*s == '0')
        s++;
    else
        while (is_digit(p, s))
            s++;
    int is_float = 0;
    if (s < p->end && *s == '.' && is_digit(p, s + 1)) {
        is_float = 1;
        s++;
        while (is_digit(p, s))
            s++;
    }
    if (s < p->end && (*s == 'e' || *s == 'E')) {
        const unsigned char *e = s + 1;
        if (e < p->end && (*e == '+' || *e == '-'))
            e++;
        if (is_digit(p, e)) {
            is_float = 1;
            s = e;
            while (is_digit(p, s))
                s++;
        }
    }
    size_t n = (size_t)(s - b);
    p->s = s;
    pj_value *v = new_value(p, is_float ? PJ_FLOAT : PJ_INT);
    if (!v)
        return -1;
    char *text = arena_alloc(p->a, n + 1);
    if (!text)
        return layad_fail(p->err, 500, "out of memory parsing the request");
    memcpy(text, b, n);
    text[n] = 0;
    if (is_float) {
        v->u.num = strtod(text, NULL); /* overflow gives +-inf, as Python's float() */
    } else {
        if (!strcmp(text, "-0")) {
            text[0] = '0';
            text[1] = 0;
            n = 1;
        }
        if (n - (text[0] == '-') > PJ_MAX_INT_DIGITS)
            return layad_fail(p->err, 400, "request body has an integer with more than %d digits",
                              PJ_MAX_INT_DIGITS);
        v->u.str.s = text;
        v->u.str.len = n;
    }
    *out = v;
    return 0;
}

static int parse_value(parser *p, pj_value **out, int depth);

/* Growable pointer lists for arrays and objects grow in the arena (in place while nothing
 * was allocated after them, else by a copy) and are kept as they are when complete. */
static int parse_array(parser *p, pj_value **out, int depth)
{
    pj_value *v = new_value(p, PJ_ARRAY);
    if (!v)
        return -1;
    p->s++;
    skip_ws(p);
    pj_value **items = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;
    if (p->s < p->end && *p->s == ']') {
        p->s++;
        rc = 0;
        goto done;
    }
    for (;;) {
        skip_ws(p);
        pj_value *item;
        if (parse_value(p, &item, depth + 1))
            goto done;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 4;
            pj_value **ni = arena_grow(p->a, items, cap * sizeof *ni, nc * sizeof *ni);
            if (!ni) {
                layad_fail(p->err, 500, "out of memory parsing the request");
                goto done;
            }
            items = ni;
            cap = nc;
        }
        items[n++] = item;
        skip_ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == ']') {
            p->s++;
            rc = 0;
            break;
        }
        fail(p, "expecting ',' delimiter");
        goto done;
    }
done:
    if (rc == 0 && n) {
        v->u.arr.items = items;
        v->u.arr.n = n;
    }
    *out = v;
    return rc;
}

/* An object's members as parsed so far (in the arena, kept when complete) and their
 * duplicate-key index. */
typedef struct member_list {
    pj_member *m;
    size_t n, cap;
    pj_key_index ix;
} member_list;

/* Parses one `"key": value` (p->s before the key, whitespace allowed). */
static int parse_member(parser *p, const char **key, size_t *keylen, pj_value **val, int depth)
{
    skip_ws(p);
    if (p->s >= p->end || *p->s != '"')
        return fail(p, "expecting property name enclosed in double quotes");
    if (parse_string(p, key, keylen))
        return -1;
    skip_ws(p);
    if (p->s >= p->end || *p->s != ':')
        return fail(p, "expecting ':' delimiter");
    p->s++;
    skip_ws(p);
    return parse_value(p, val, depth + 1);
}

/* Adds a member with Python dict semantics: a repeated key keeps its first position and takes
 * the last value. */
static int add_member(parser *p, member_list *ml, const char *key, size_t keylen, pj_value *val)
{
    size_t i;
    if (pj_key_find(p->a, &ml->ix, &p->hkey, ml->m, ml->n, key, keylen, &i, p->err))
        return -1;
    if (i < ml->n) {
        ml->m[i].val = val;
        return 0;
    }
    if (ml->n == ml->cap) {
        size_t nc = ml->cap ? ml->cap * 2 : 4;
        pj_member *nm = arena_grow(p->a, ml->m, ml->cap * sizeof *nm, nc * sizeof *nm);
        if (!nm)
            return layad_fail(p->err, 500, "out of memory parsing the request");
        ml->m = nm;
        ml->cap = nc;
    }
    ml->m[ml->n].key = key;
    ml->m[ml->n].keylen = keylen;
    ml->m[ml->n].val = val;
    ml->n++;
    return 0;
}

/* Parses the members of a non-empty object up to and including its closing brace. */
static int parse_members(parser *p, member_list *ml, int depth)
{
    for (;;) {
        const char *key;
        size_t keylen;
        pj_value *val;
        if (parse_member(p, &key, &keylen, &val, depth) || add_member(p, ml, key, keylen, val))
            return -1;
        skip_ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == '}') {
            p->s++;
            return 0;
        }
        return fail(p, "expecting ',' delimiter");
    }
}

/* Parses an object (p->s at the opening brace). *out is set even on failure (its members
 * then unset), as parse_array does. */
static int parse_object(parser *p, pj_value **out, int depth)
{
    pj_value *v = new_value(p, PJ_OBJECT);
    if (!v)
        return -1;
    p->s++;
    skip_ws(p);
    member_list ml = {0};
    int rc;
    if (p->s < p->end && *p->s == '}') {
        p->s++;
        rc = 0;
    } else {
        rc = parse_members(p, &ml, depth);
    }
    if (rc == 0 && ml.n) {
        v->u.obj.m = ml.m;
        v->u.obj.n = ml.n;
    }
    *out = v;
    return rc;
}

static int parse_value(parser *p, pj_value **out, int depth)
{
    if (depth > PJ_MAX_DEPTH)
        return layad_fail(p->err, 400, "request body nests deeper than %d levels", PJ_MAX_DEPTH);
    if (p->s >= p->end)
        return fail(p, "expecting value");
    pj_value *v;
    switch (*p->s) {
    case '"': {
        v = new_value(p, PJ_STRING);
        if (!v || parse_string(p, &v->u.str.s, &v->u.str.len))
            return -1;
        *out = v;
        return 0;
    }
    case '{':
        return parse_object(p, out, depth);
    case '[':
        return parse_array(p, out, depth);
    case 'n':
        if (!lit(p, "null"))
            return fail(p, "expecting value");
        *out = new_value(p, PJ_NULL);
        return *out ? 0 : -1;
    case 't':
        if (!lit(p, "true"))
            return fail(p, "expecting value");
        *out = new_value(p, PJ_TRUE);
        return *out ? 0 : -1;
    case 'f':
        if (!lit(p, "false"))
            return fail(p, "expecting value");
        *out = new_value(p, PJ_FALSE);
        return *out ? 0 : -1;
    case 'N':
    case 'I':
    case '-': {
        double x;
        if (lit(p, "NaN"))
            x = NAN;
        else if (lit(p, "Infinity"))
            x = INFINITY;
        else if (lit(p, "-Infinity"))
            x = -INFINITY;
        else if (*p->s == '-')
            return parse_number(p, out);
        else
            return fail(p, "expecting value");
        v = new_value(p, PJ_FLOAT);
        if (!v)
            return -1;
        v->u.num = x;
        *out = v;
        return 0;
    }
    default:
        if (*p->s >= '0' && *p->s <= '9')
            return parse_number(p, out);
        return fail(p, "expecting value");
    }
}

int pj_parse(arena *a, const char *body, size_t len, pj_value **out, layad_error *err)
{
    parser p = {.a = a, .s = (const unsigned char *)body, .end = (const unsigned char *)body + len,
                .start = (const unsigned char *)body, .err = err};
    *out = NULL;
    /* json.loads(bytes) decodes with 'utf-8-sig' when the body starts with a BOM */
    if (len >= 3 && !memcmp(body, "\xEF\xBB\xBF", 3))
        p.s += 3;
    skip_ws(&p);
    pj_value *v;
    int rc = parse_value(&p, &v, 0);
    if (rc == 0) {
        skip_ws(&p);
        if (p.s != p.end)
            rc = fail(&p, "extra data");
    }
    /* Invalid UTF-8 outside strings is a syntax error above; Python would name it a decode
     * error. Both are 400. */
    if (rc == 0)
        *out = v;
    return rc;
}
