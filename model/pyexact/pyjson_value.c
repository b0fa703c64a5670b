/*
 * pyjson_value.c - the parsed value tree: its arena and the queries the
 * request validators ask of it (see pyjson.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/pyexact/pyjson.h"

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
