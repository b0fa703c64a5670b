/*
 * pyjson.h - JSON as Python's json module reads and writes it.
 *
 * The official package receives a request as Python objects (json.loads)
 * and serializes dict/list states and structured criteria with
 * json.dumps(..., ensure_ascii=False). Matching its answers byte-for-byte
 * needs both halves exactly, which a general JSON library does not give:
 *
 *   parse (pyjson_parse.c): json.loads semantics - NaN / Infinity /
 *     -Infinity literals, integers of any size (kept as their digits),
 *     floats as doubles (1e400 -> inf), embedded NUL, duplicate keys keep
 *     the first position and the last value, control characters in strings
 *     rejected; plus what layad adds: the body must be UTF-8 and must not
 *     contain an unpaired surrogate escape (both 400). Duplicate keys are
 *     found by pyjson_keys.c.
 *   dump (pyjson.c): json.dumps(v, ensure_ascii=False) - separators ", "
 *     and ": ", insertion order, raw UTF-8, \" \\ \n \r \t \b \f and \u00XX
 *     (lowercase hex) escapes, Python float repr, true/false/null.
 *
 * Values live in an arena owned by the caller (model/base/arena.h): resetting
 * or releasing the arena frees them. The parse's temporary lists live in the
 * same arena, so a parse into a reserved arena calls no allocator.
 */
#ifndef LAYAD_PYJSON_H
#define LAYAD_PYJSON_H

#include <stddef.h>

#include "model/base/arena.h"
#include "model/base/error.h"

typedef enum pj_type { PJ_NULL, PJ_FALSE, PJ_TRUE, PJ_INT, PJ_FLOAT, PJ_STRING, PJ_ARRAY, PJ_OBJECT } pj_type;

typedef struct pj_value pj_value;
typedef struct pj_member {
    const char *key; /* UTF-8, NUL-terminated, may contain NUL (keylen) */
    size_t keylen;
    pj_value *val;
} pj_member;

struct pj_value {
    pj_type type;
    union {
        struct { const char *s; size_t len; } str; /* PJ_STRING; PJ_INT: decimal digits, "-" sign, canonical */
        double num;                                /* PJ_FLOAT */
        struct { pj_value **items; size_t n; } arr;
        struct { pj_member *m; size_t n; } obj;
    } u;
};

/* Parses body[0..len) into *out (allocated in a). Errors are status 400. */
int pj_parse(arena *a, const char *body, size_t len, pj_value **out, layad_error *err);

/* Member of an object by key, or NULL. */
pj_value *pj_get(const pj_value *obj, const char *key);

/* 1 if v is a number (int, float; Python's bool is an int too but is not counted here). */
int pj_is_number(const pj_value *v);

/* Python == between two scalar JSON values as dict keys compare (1 == 1.0 == true,
 * "a" == "a", NaN never equal); containers are never equal here. */
int pj_scalar_equal(const pj_value *a, const pj_value *b);

/* A growable output buffer, always NUL-terminated once written. Its storage is one of:
 *   malloc (a zero-initialized pj_buf): release with pj_buf_free;
 *   an arena (pj_buf_in): grows in place there, freed with the arena;
 *   fixed (pj_buf_fixed): the caller's array, never grown; appends keep what fits (a
 *     prefix of the full text), for messages that are cut to a layad_error anyway.
 * When growth fails `failed` is set and appends stop. */
typedef struct pj_buf {
    char *p;
    size_t len, cap;
    int failed;
    arena *a;   /* arena storage, or NULL */
    int fixed;  /* 1: p is the caller's array of cap bytes */
} pj_buf;

static inline pj_buf pj_buf_in(arena *a) { return (pj_buf){.a = a}; }
pj_buf pj_buf_fixed(char *storage, size_t cap); /* cap >= 1 */
void pj_buf_free(pj_buf *b); /* frees malloc storage; nothing for the other two */

void pj_buf_put(pj_buf *b, const char *s, size_t n);
void pj_buf_puts(pj_buf *b, const char *s);
void pj_buf_printf(pj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends v in decimal, as printf's %ld: the response's counts, without printf's cost. */
void pj_buf_int(pj_buf *b, long v);
/* Appends a JSON string literal (quotes included) with json.dumps(ensure_ascii=False) escapes. */
void pj_buf_string(pj_buf *b, const char *s, size_t n);
/* Appends json.dumps(x) of a float (repr; NaN, Infinity, -Infinity). */
void pj_buf_float(pj_buf *b, double x);

/* Appends json.dumps(v, ensure_ascii=False). */
void pj_dump(pj_buf *b, const pj_value *v);

/* Appends str(v) as Python prints a scalar parsed from JSON: strings raw, ints as digits,
 * floats by repr (nan/inf), True/False/None. Containers are dumped as JSON (not used by
 * the official package on containers). */
void pj_str(pj_buf *b, const pj_value *v);

/* Appends the JSON object key json.dumps writes for a dict key holding scalar v
 * (str as is; int digits; float repr / NaN / Infinity; true/false/null), quoted. */
void pj_buf_key(pj_buf *b, const pj_value *v);

#endif
