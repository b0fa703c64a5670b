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

static int buf_grow(pj_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void pj_buf_put(pj_buf *b, const char *s, size_t n)
{
    if (buf_grow(b, n))
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
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_grow(b, (size_t)n)) {
        b->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
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
