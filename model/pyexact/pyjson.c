/*
 * pyjson.c - json.dumps(v, ensure_ascii=False) and Python str() of parsed
 * JSON values, byte for byte (see pyjson.h).
 *
 * The escapes are CPython's c_encode_basestring: only '"', '\\' and the
 * C0 controls are escaped (\n \r \t \b \f by name, the rest as \u00xx in
 * lowercase hex); DEL, U+2028 and everything else pass through raw.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/pyexact/pyfloat.h"
#include "model/pyexact/pyjson.h"

pj_buf pj_buf_fixed(char *storage, size_t cap)
{
    storage[0] = 0;
    return (pj_buf){.p = storage, .cap = cap, .fixed = 1};
}

void pj_buf_free(pj_buf *b)
{
    if (!b->a && !b->fixed)
        free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Room for extra more bytes and the NUL: the bytes that may be appended (extra, or
 * for a fixed buffer what still fits); `failed` is set when growth fails. */
static size_t buf_room(pj_buf *b, size_t extra)
{
    if (b->failed)
        return 0;
    if (b->len + extra + 1 <= b->cap)
        return extra;
    if (b->fixed)
        return b->cap - 1 - b->len;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = b->a ? arena_grow(b->a, b->p, b->cap, cap) : realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return extra;
}

void pj_buf_put(pj_buf *b, const char *s, size_t n)
{
    n = buf_room(b, n);
    if (b->failed)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void pj_buf_puts(pj_buf *b, const char *s)
{
    pj_buf_put(b, s, strlen(s));
}

void pj_buf_printf(pj_buf *b, const char *fmt, ...)
{
    /* formatted once into the stack when it fits, else measured, then written in place */
    char local[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(local, sizeof local, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof local) {
        pj_buf_put(b, local, (size_t)n);
        return;
    }
    size_t room = buf_room(b, (size_t)n);
    if (b->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, room + 1, fmt, ap);
    va_end(ap);
    b->len += room;
}

void pj_buf_int(pj_buf *b, long v)
{
    char d[24], *e = d + sizeof d, *p = e;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    pj_buf_put(b, p, (size_t)(e - p));
}

void pj_buf_string(pj_buf *b, const char *s, size_t n)
{
    pj_buf_put(b, "\"", 1);
    size_t run = 0; /* start of the pending unescaped run */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c < 0x20) {
            switch (c) {
            case '\n': esc = "\\n"; break;
            case '\r': esc = "\\r"; break;
            case '\t': esc = "\\t"; break;
            case '\b': esc = "\\b"; break;
            case '\f': esc = "\\f"; break;
            default:
                snprintf(u, sizeof u, "\\u%04x", c);
                esc = u;
            }
        }
        if (esc) {
            pj_buf_put(b, s + run, i - run);
            pj_buf_puts(b, esc);
            run = i + 1;
        }
    }
    pj_buf_put(b, s + run, n - run);
    pj_buf_put(b, "\"", 1);
}

void pj_buf_float(pj_buf *b, double x)
{
    char tmp[32];
    int n = py_float_json(x, tmp);
    pj_buf_put(b, tmp, (size_t)n);
}

void pj_dump(pj_buf *b, const pj_value *v)
{
    switch (v->type) {
    case PJ_NULL: pj_buf_puts(b, "null"); break;
    case PJ_TRUE: pj_buf_puts(b, "true"); break;
    case PJ_FALSE: pj_buf_puts(b, "false"); break;
    case PJ_INT: pj_buf_put(b, v->u.str.s, v->u.str.len); break;
    case PJ_FLOAT: pj_buf_float(b, v->u.num); break;
    case PJ_STRING: pj_buf_string(b, v->u.str.s, v->u.str.len); break;
    case PJ_ARRAY:
        pj_buf_put(b, "[", 1);
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                pj_buf_put(b, ", ", 2);
            pj_dump(b, v->u.arr.items[i]);
        }
        pj_buf_put(b, "]", 1);
        break;
    case PJ_OBJECT:
        pj_buf_put(b, "{", 1);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            if (i)
                pj_buf_put(b, ", ", 2);
            pj_buf_string(b, v->u.obj.m[i].key, v->u.obj.m[i].keylen);
            pj_buf_put(b, ": ", 2);
            pj_dump(b, v->u.obj.m[i].val);
        }
        pj_buf_put(b, "}", 1);
        break;
    }
}

void pj_str(pj_buf *b, const pj_value *v)
{
    char tmp[32];
    switch (v->type) {
    case PJ_NULL: pj_buf_puts(b, "None"); break;
    case PJ_TRUE: pj_buf_puts(b, "True"); break;
    case PJ_FALSE: pj_buf_puts(b, "False"); break;
    case PJ_INT: pj_buf_put(b, v->u.str.s, v->u.str.len); break;
    case PJ_FLOAT: pj_buf_put(b, tmp, (size_t)py_float_repr(v->u.num, tmp)); break;
    case PJ_STRING: pj_buf_put(b, v->u.str.s, v->u.str.len); break;
    default: pj_dump(b, v); break;
    }
}

void pj_buf_key(pj_buf *b, const pj_value *v)
{
    switch (v->type) {
    case PJ_STRING: pj_buf_string(b, v->u.str.s, v->u.str.len); break;
    case PJ_INT:
        pj_buf_put(b, "\"", 1);
        pj_buf_put(b, v->u.str.s, v->u.str.len);
        pj_buf_put(b, "\"", 1);
        break;
    case PJ_FLOAT:
        pj_buf_put(b, "\"", 1);
        pj_buf_float(b, v->u.num);
        pj_buf_put(b, "\"", 1);
        break;
    case PJ_TRUE: pj_buf_puts(b, "\"true\""); break;
    case PJ_FALSE: pj_buf_puts(b, "\"false\""); break;
    default: pj_buf_puts(b, "\"null\""); break;
    }
}
