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
 * Duplicate keys are found through a hash index once an object passes
 * PJ_LINEAR_KEYS members (smaller ones are scanned), so parsing stays linear
 * in the body: a scan per key made a 2 MB state of 120k keys cost 11 s of CPU
 * here (27.8 s where it was first reported); with the index it parses in
 * ~20 ms, and the most keys 2 MiB holds (262k) in ~45 ms (tests/test_pyjson.c
 * prints the times).
 * The hash is SipHash-1-3, keyed per parse from getrandom(), as CPython
 * hashes str for its dicts: with a fixed, unkeyed hash a client could send
 * keys that all collide and have the quadratic scan back. Sorting the keys
 * instead was rejected: O(n log n) and a second pass.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "model/pyexact/pyjson.h"

#define PJ_MAX_DEPTH 512
#define PJ_MAX_INT_DIGITS 4300 /* CPython's default int max_str_digits */
#define PJ_LINEAR_KEYS 16      /* objects up to this many members are scanned for duplicates */

/* ---- arena ---------------------------------------------------------------- */

struct pj_block {
    struct pj_block *next;
    size_t used, cap;
    max_align_t data[];
};

void *pj_alloc(pj_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct pj_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void pj_arena_free(pj_arena *a)
{
    struct pj_block *b = a->head;
    while (b) {
        struct pj_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

/* ---- parser --------------------------------------------------------------- */

typedef struct parser {
    pj_arena *a;
    const unsigned char *s, *end;
    const unsigned char *start;
    layad_error *err;
    char *scratch; /* string decode buffer, grows */
    size_t scap;
    uint64_t hkey[2]; /* SipHash key, drawn when the first large object needs it */
    int keyed;
} parser;

static int fail(parser *p, const char *what)
{
    return layad_fail(p->err, 400, "request body is not valid JSON: %s at byte %zu", what,
                      (size_t)(p->s - p->start));
}

/* ---- duplicate keys ---------------------------------------------------------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                    \
    do {                                                                                            \
        v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                                   \
        v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                                      \
        v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                                      \
        v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                                   \
    } while (0)

/* SipHash-1-3 of s[0..n) under key k (CPython's str hash). */
static uint64_t siphash13(const uint64_t k[2], const unsigned char *s, size_t n)
{
    uint64_t v0 = k[0] ^ 0x736f6d6570736575ULL, v1 = k[1] ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k[0] ^ 0x6c7967656e657261ULL, v3 = k[1] ^ 0x7465646279746573ULL;
    uint64_t b = (uint64_t)n << 56;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t m = 0;
        for (int i = 0; i < 8; i++)
            m |= (uint64_t)s[i] << (8 * i);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t i = 0; i < n; i++)
        b |= (uint64_t)s[i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* Draws the parse's hash key: getrandom() (never blocking), else the clock and an address
 * (still unknown to a client, if weaker). */
static void draw_hash_key(parser *p)
{
    if (getrandom(p->hkey, sizeof p->hkey, GRND_NONBLOCK) != (ssize_t)sizeof p->hkey) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        p->hkey[0] = ((uint64_t)t.tv_sec << 32) ^ (uint64_t)t.tv_nsec;
        p->hkey[1] = (uint64_t)(uintptr_t)p ^ ((uint64_t)(uintptr_t)&t << 17);
    }
    p->keyed = 1;
}

/* An object's member index: open addressing with linear probing, at most 3/4 full (half full
 * was 45% slower on 2 MiB of 3-byte keys: twice the table, twice the cache misses). A slot
 * holds the member's position + 1 (0: empty) and 32 bits of its key's hash. */
typedef struct key_slot {
    uint32_t hash, at;
} key_slot;

typedef struct key_index {
    key_slot *slot; /* malloc'ed; NULL until the object passes PJ_LINEAR_KEYS members */
    size_t cap;     /* power of two */
} key_index;

static void index_put(key_index *ix, uint32_t hash, uint32_t at)
{
    size_t j = hash & (ix->cap - 1);
    while (ix->slot[j].at)
        j = (j + 1) & (ix->cap - 1);
    ix->slot[j] = (key_slot){hash, at};
}

/* Position of key among m[0..n) (the members so far, keys distinct), or n when it is new; a
 * new key is entered in the index at position n, where the caller appends it. Below
 * PJ_LINEAR_KEYS members this is a scan; past it the index is built, and doubled whenever
 * it would be more than 3/4 full. -1 (and err) when out of memory or past 2^32 - 2 members. */
static int find_key(parser *p, key_index *ix, const pj_member *m, size_t n, const char *key, size_t keylen,
                    size_t *pos)
{
    *pos = n;
    if (n < PJ_LINEAR_KEYS) {
        size_t i;
        for (i = 0; i < n; i++)
            if (m[i].keylen == keylen && !memcmp(m[i].key, key, keylen))
                break;
        *pos = i;
        return 0;
    }
    if (n >= UINT32_MAX - 1)
        return layad_fail(p->err, 400, "request body has an object with more than %u keys", UINT32_MAX - 2);
    if (!p->keyed)
        draw_hash_key(p);
    if (4 * (n + 1) > 3 * ix->cap) {
        key_index grown = {.cap = ix->cap ? 2 * ix->cap : 4 * PJ_LINEAR_KEYS};
        grown.slot = calloc(grown.cap, sizeof *grown.slot);
        if (!grown.slot)
            return layad_fail(p->err, 500, "out of memory parsing the request");
        if (ix->slot) {
            for (size_t j = 0; j < ix->cap; j++)
                if (ix->slot[j].at)
                    index_put(&grown, ix->slot[j].hash, ix->slot[j].at);
        } else {
            for (size_t i = 0; i < n; i++)
                index_put(&grown, (uint32_t)siphash13(p->hkey, (const unsigned char *)m[i].key, m[i].keylen),
                          (uint32_t)i + 1);
        }
        free(ix->slot);
        *ix = grown;
    }
    uint32_t hash = (uint32_t)siphash13(p->hkey, (const unsigned char *)key, keylen);
    for (size_t j = hash & (ix->cap - 1);; j = (j + 1) & (ix->cap - 1)) {
        key_slot *sl = &ix->slot[j];
        if (!sl->at) {
            *sl = (key_slot){hash, (uint32_t)n + 1};
            *pos = n;
            return 0;
        }
        const pj_member *o = &m[sl->at - 1];
        if (sl->hash == hash && o->keylen == keylen && !memcmp(o->key, key, keylen)) {
            *pos = sl->at - 1;
            return 0;
        }
    }
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
    pj_value *v = pj_alloc(p->a, sizeof *v);
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
    char *n = realloc(p->scratch, cap);
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
static int parse_string(parser *p, const char **out, size_t *outlen)
{
    p->s++; /* opening quote */
    size_t n = 0;
    for (;;) {
        if (p->s >= p->end)
            return fail(p, "unterminated string");
        unsigned c = *p->s;
        if (scratch_reserve(p, n + 8))
            return -1;
        if (c == '"') {
            p->s++;
            break;
        }
        if (c < 0x20)
            return fail(p, "invalid control character in string");
        if (c == '\\') {
            if (p->end - p->s < 2)
                return fail(p, "unterminated string");
            unsigned e = p->s[1];
            p->s += 2;
            switch (e) {
            case '"': p->scratch[n++] = '"'; break;
            case '\\': p->scratch[n++] = '\\'; break;
            case '/': p->scratch[n++] = '/'; break;
            case 'b': p->scratch[n++] = '\b'; break;
            case 'f': p->scratch[n++] = '\f'; break;
            case 'n': p->scratch[n++] = '\n'; break;
            case 'r': p->scratch[n++] = '\r'; break;
            case 't': p->scratch[n++] = '\t'; break;
            case 'u': {
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
                n += put_utf8(p->scratch + n, cp);
                break;
            }
            default:
                return fail(p, "invalid escape");
            }
            continue;
        }
        int l = utf8_len(p->s, p->end);
        if (!l)
            return layad_fail(p->err, 400, "request body is not valid UTF-8 at byte %zu",
                              (size_t)(p->s - p->start));
        memcpy(p->scratch + n, p->s, (size_t)l);
        n += (size_t)l;
        p->s += l;
    }
    char *s = pj_alloc(p->a, n + 1);
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
    char *text = pj_alloc(p->a, n + 1);
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

/* Growable pointer lists for arrays and objects are built in malloc'ed temporaries and
 * copied into the arena when complete, so the arena holds only the final sizes. */
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
            size_t nc = cap ? cap * 2 : 8;
            pj_value **ni = realloc(items, nc * sizeof *ni);
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
        v->u.arr.items = pj_alloc(p->a, n * sizeof *items);
        if (!v->u.arr.items)
            rc = layad_fail(p->err, 500, "out of memory parsing the request");
        else
            memcpy(v->u.arr.items, items, n * sizeof *items);
        v->u.arr.n = n;
    }
    free(items);
    *out = v;
    return rc;
}

static int parse_object(parser *p, pj_value **out, int depth)
{
    pj_value *v = new_value(p, PJ_OBJECT);
    if (!v)
        return -1;
    p->s++;
    skip_ws(p);
    pj_member *m = NULL;
    size_t n = 0, cap = 0;
    key_index ix = {0};
    int rc = -1;
    if (p->s < p->end && *p->s == '}') {
        p->s++;
        rc = 0;
        goto done;
    }
    for (;;) {
        skip_ws(p);
        if (p->s >= p->end || *p->s != '"') {
            fail(p, "expecting property name enclosed in double quotes");
            goto done;
        }
        const char *key;
        size_t keylen;
        if (parse_string(p, &key, &keylen))
            goto done;
        skip_ws(p);
        if (p->s >= p->end || *p->s != ':') {
            fail(p, "expecting ':' delimiter");
            goto done;
        }
        p->s++;
        skip_ws(p);
        pj_value *val;
        if (parse_value(p, &val, depth + 1))
            goto done;
        /* Python dict semantics: a repeated key keeps its first position, takes the last value. */
        size_t i;
        if (find_key(p, &ix, m, n, key, keylen, &i))
            goto done;
        if (i < n) {
            m[i].val = val;
        } else {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 8;
                pj_member *nm = realloc(m, nc * sizeof *nm);
                if (!nm) {
                    layad_fail(p->err, 500, "out of memory parsing the request");
                    goto done;
                }
                m = nm;
                cap = nc;
            }
            m[n].key = key;
            m[n].keylen = keylen;
            m[n].val = val;
            n++;
        }
        skip_ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == '}') {
            p->s++;
            rc = 0;
            break;
        }
        fail(p, "expecting ',' delimiter");
        goto done;
    }
done:
    if (rc == 0 && n) {
        v->u.obj.m = pj_alloc(p->a, n * sizeof *m);
        if (!v->u.obj.m)
            rc = layad_fail(p->err, 500, "out of memory parsing the request");
        else
            memcpy(v->u.obj.m, m, n * sizeof *m);
        v->u.obj.n = n;
    }
    free(m);
    free(ix.slot);
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

int pj_parse(pj_arena *a, const char *body, size_t len, pj_value **out, layad_error *err)
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
    free(p.scratch);
    if (rc == 0)
        *out = v;
    return rc;
}

/* ---- queries ---------------------------------------------------------------- */

pj_value *pj_get(const pj_value *obj, const char *key)
{
    if (!obj || obj->type != PJ_OBJECT)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->u.obj.n; i++)
        if (obj->u.obj.m[i].keylen == n && !memcmp(obj->u.obj.m[i].key, key, n))
            return obj->u.obj.m[i].val;
    return NULL;
}

int pj_is_number(const pj_value *v)
{
    return v->type == PJ_INT || v->type == PJ_FLOAT;
}

/* Integer text of a finite integral double ("%.0f" is exact for doubles). */
static int int_equals_double(const char *digits, double x)
{
    if (!isfinite(x) || x != floor(x))
        return 0;
    char buf[400];
    snprintf(buf, sizeof buf, "%.0f", x);
    if (!strcmp(buf, "-0"))
        strcpy(buf, "0");
    return !strcmp(buf, digits);
}

int pj_scalar_equal(const pj_value *a, const pj_value *b)
{
    /* Python: True == 1 == 1.0, False == 0 == 0.0 */
    const char *ta = a->type == PJ_TRUE ? "1" : a->type == PJ_FALSE ? "0" : NULL;
    const char *tb = b->type == PJ_TRUE ? "1" : b->type == PJ_FALSE ? "0" : NULL;
    int na = a->type == PJ_INT || ta, nb = b->type == PJ_INT || tb;
    const char *da = ta ? ta : a->type == PJ_INT ? a->u.str.s : NULL;
    const char *db = tb ? tb : b->type == PJ_INT ? b->u.str.s : NULL;
    if (na && nb)
        return !strcmp(da, db);
    if (na && b->type == PJ_FLOAT)
        return int_equals_double(da, b->u.num);
    if (nb && a->type == PJ_FLOAT)
        return int_equals_double(db, a->u.num);
    if (a->type == PJ_FLOAT && b->type == PJ_FLOAT)
        return a->u.num == b->u.num;
    if (a->type == PJ_STRING && b->type == PJ_STRING)
        return a->u.str.len == b->u.str.len && !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    if (a->type == PJ_NULL && b->type == PJ_NULL)
        return 1;
    return 0;
}
