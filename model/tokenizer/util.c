/*
 * tokenizer_util.c - small building blocks of the tokenizer: strict UTF-8,
 * the string -> id hash map, growable scratch buffers.
 *
 * The hash map is open addressing with linear probing over FNV-1a hashes;
 * keys live back to back in one arena so a 256k vocabulary is three
 * allocations, and a lookup is one hash plus (almost always) one memcmp.
 */
#include "model/tokenizer/internal.h"

#include "model/base/swar.h"

#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ------------------------------------------------------------------ */

bool tok_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        /* ASCII, nearly every byte of a request, eight bytes a test; a word with a byte from 0x80
         * is left at that byte */
        if (len - i >= 8) {
            const uint64_t m = swar_load(s + i) & SWAR_HIGHS;
            if (!m) {
                i += 8;
                continue;
            }
            i += swar_first(m);
        }
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 2; cp = c & 0x1F; min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3; cp = c & 0x0F; min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4; cp = c & 0x07; min = 0x10000;
        } else {
            return false;
        }
        if (len - i < n)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}

uint32_t tok_utf8_decode(const char *str, size_t *adv)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    if (c < 0x80) {
        *adv = 1;
        return c;
    }
    if (c < 0xE0) {
        *adv = 2;
        return (uint32_t)(c & 0x1F) << 6 | (s[1] & 0x3F);
    }
    if (c < 0xF0) {
        *adv = 3;
        return (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    }
    *adv = 4;
    return (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
           (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
}

size_t tok_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

bool tok_in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid][0])
            hi = mid;
        else if (cp > r[mid][1])
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* ---- string map ------------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

#define KEY_LEN(k) ((size_t)((k) & 0xFFFFFF))
#define KEY_OFF(k) ((size_t)((k) >> 24))

int tok_strmap_init(tok_strmap *m, size_t expected)
{
    memset(m, 0, sizeof *m);
    size_t cap = 16;
    while (cap < expected * 2 + 2)
        cap <<= 1;
    m->slots = calloc(cap, sizeof *m->slots);
    m->n_cap = expected ? expected : 8;
    m->key_off = malloc(m->n_cap * sizeof *m->key_off);
    m->val = malloc(m->n_cap * sizeof *m->val);
    m->arena_cap = expected * 8 + 64;
    m->arena = malloc(m->arena_cap);
    if (!m->slots || !m->key_off || !m->val || !m->arena) {
        tok_strmap_free(m);
        return -1;
    }
    m->cap = cap;
    return 0;
}

static size_t find_slot(const tok_strmap *m, const char *key, size_t len, uint64_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t e = m->slots[i];
        if (e == 0)
            return i;
        uint64_t k = m->key_off[e - 1];
        if (KEY_LEN(k) == len && memcmp(m->arena + KEY_OFF(k), key, len) == 0)
            return i;
    }
}

static int strmap_grow(tok_strmap *m)
{
    size_t cap = m->cap * 2;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    size_t mask = cap - 1;
    for (size_t e = 0; e < m->n; e++) {
        uint64_t k = m->key_off[e];
        size_t i = hash_bytes(m->arena + KEY_OFF(k), KEY_LEN(k)) & mask;
        while (slots[i])
            i = (i + 1) & mask;
        slots[i] = (uint32_t)(e + 1);
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int tok_strmap_put(tok_strmap *m, const char *key, size_t len, int32_t id)
{
    if (len >= (1u << 24))
        return -1;
    uint64_t h = hash_bytes(key, len);
    size_t i = find_slot(m, key, len, h);
    if (m->slots[i]) {
        m->val[m->slots[i] - 1] = id;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap) {
        if (strmap_grow(m) != 0)
            return -1;
        i = find_slot(m, key, len, h);
    }
    if (m->n == m->n_cap) {
        size_t nc = m->n_cap * 2;
        uint64_t *ko = realloc(m->key_off, nc * sizeof *ko);
        if (!ko)
            return -1;
        m->key_off = ko;
        int32_t *v = realloc(m->val, nc * sizeof *v);
        if (!v)
            return -1;
        m->val = v;
        m->n_cap = nc;
    }
    if (m->arena_len + len > m->arena_cap) {
        size_t nc = m->arena_cap * 2;
        while (nc < m->arena_len + len)
            nc *= 2;
        char *a = realloc(m->arena, nc);
        if (!a)
            return -1;
        m->arena = a;
        m->arena_cap = nc;
    }
    if (m->arena_len >= ((size_t)1 << 40))
        return -1;
    memcpy(m->arena + m->arena_len, key, len);
    m->key_off[m->n] = (uint64_t)m->arena_len << 24 | len;
    m->val[m->n] = id;
    m->arena_len += len;
    m->slots[i] = (uint32_t)(m->n + 1);
    m->n++;
    return 0;
}

int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t len)
{
    if (!m->cap)
        return -1;
    uint32_t e = m->slots[find_slot(m, key, len, hash_bytes(key, len))];
    return e ? m->val[e - 1] : -1;
}

void tok_strmap_free(tok_strmap *m)
{
    free(m->slots);
    free(m->arena);
    free(m->key_off);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* ---- scratch buffers -------------------------------------------------------- */

void *tok_realloc(arena *a, void *p, size_t old, size_t n)
{
    return a ? arena_grow(a, p, old, n) : realloc(p, n);
}

void *tok_grow(arena *a, void *p, size_t *cap, size_t elem, size_t first)
{
    const size_t n = *cap ? *cap * 2 : first;
    void *v = tok_realloc(a, p, *cap * elem, n * elem);
    if (v)
        *cap = n;
    return v;
}

int tok_buf_reserve(tok_buf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = tok_realloc(b->a, b->p, b->cap, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int tok_spans_push(tok_spans *s, size_t off, size_t len, bool at_start)
{
    if (s->n == s->cap) {
        tok_span *v = tok_grow(s->a, s->v, &s->cap, sizeof *v, 64);
        if (!v)
            return -1;
        s->v = v;
    }
    s->v[s->n++] = (tok_span){ off, len, at_start };
    return 0;
}

int tok_ids_push(tok_ids *out, int32_t id)
{
    if (out->n == out->cap) {
        int32_t *v = tok_grow(out->a, out->ids, &out->cap, sizeof *v, 64);
        if (!v)
            return -1;
        out->ids = v;
    }
    out->ids[out->n++] = id;
    return 0;
}

void tok_scratch_free(tok_scratch *s)
{
    if (!s)
        return;
    free(s->u32);
    free(s->prefixed.p);
    for (int i = 0; i < 2; i++) {
        free(s->norm[i].p);
        free(s->pre[i].p);
        free(s->spans[i].v);
    }
    free(s->syms);
    free(s->heap);
    free(s->cache);
    free(s->texts);
    free(s);
}
