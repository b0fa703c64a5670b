/*
 * gate.c - see gate.h. The bucket spelling and the order of the checks are
 * laya.confidence's (0.4.15): a map's keys are checked one entry at a time,
 * key before value, in body order, so the first bad entry names the message.
 */
#include "server/api/gate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/rows.h"
#include "model/laya/question.h"
#include "model/pyexact/pyfloat.h"

static const char *const buckets[] = {"choice:2", "choice:3-5", "choice:6-10", "choice:11+",
                                      "score:2",  "score:3-5",  "score:6-10",  "score:11+",
                                      "noul:2",   "noul:3-5",   "noul:6-10",   "noul:11+",
                                      "default"};

void gate_repr(pj_buf *b, const pj_value *v)
{
    switch (v->type) {
    case PJ_STRING:
        py_repr_str(b, v->u.str.s, v->u.str.len);
        return;
    case PJ_ARRAY:
        pj_buf_puts(b, "[");
        for (size_t i = 0; i < v->u.arr.n; i++) {
            if (i)
                pj_buf_puts(b, ", ");
            gate_repr(b, v->u.arr.items[i]);
        }
        pj_buf_puts(b, "]");
        return;
    case PJ_OBJECT:
        pj_buf_puts(b, "{");
        for (size_t i = 0; i < v->u.obj.n; i++) {
            if (i)
                pj_buf_puts(b, ", ");
            py_repr_str(b, v->u.obj.m[i].key, v->u.obj.m[i].keylen);
            pj_buf_puts(b, ": ");
            gate_repr(b, v->u.obj.m[i].val);
        }
        pj_buf_puts(b, "}");
        return;
    default:
        pj_str(b, v); /* None, True, False, digits, float repr */
    }
}

/* 422 on min_confidence with "<prefix><repr(v)>" (the message is cut at the error's size). */
static int fail_repr(layad_error *err, const char *prefix, const pj_value *v)
{
    char mem[sizeof err->msg];
    pj_buf m = pj_buf_fixed(mem, sizeof mem); /* cut to err->msg anyway */
    pj_buf_puts(&m, prefix);
    gate_repr(&m, v);
    return layad_fail_field(err, 422, "min_confidence", "%s", m.p);
}

/* _check_one_threshold: a real number (bool excluded), finite, in [0.0, 1.0]. */
static int one_threshold(const pj_value *v, double *out, layad_error *err)
{
    double x = NAN;
    if (v->type == PJ_FLOAT)
        x = v->u.num;
    else if (v->type == PJ_INT)
        x = strtod(v->u.str.s, NULL); /* float(int), correctly rounded; huge ints -> inf */
    if (!isfinite(x) || x < 0.0 || x > 1.0)
        return fail_repr(err, "min_confidence must be a float in [0.0, 1.0], got ", v);
    *out = x;
    return 0;
}

static int parse_map(const pj_value *v, gate *g, layad_error *err)
{
    if (!v->u.obj.n)
        return fail_repr(err, "a min_confidence map must be a non-empty dict of bucket -> float, got ", v);
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const pj_member *m = &v->u.obj.m[i];
        size_t j = 0, nb = sizeof buckets / sizeof buckets[0];
        while (j < nb && !(strlen(buckets[j]) == m->keylen && !memcmp(buckets[j], m->key, m->keylen)))
            j++;
        if (j == nb) {
            pj_value key = {.type = PJ_STRING, .u.str = {m->key, m->keylen}};
            return fail_repr(err, "min_confidence map keys must be a bucket like 'choice:3-5' or 'default', got ",
                             &key);
        }
        if (one_threshold(m->val, &g->thr[g->n], err))
            return -1;
        snprintf(g->key[g->n], sizeof g->key[g->n], "%s", buckets[j]);
        g->n++; /* at most 13: pyjson keeps one member per key */
    }
    return 0;
}

int gate_parse(const pj_value *body, gate *g, layad_error *err)
{
    memset(g, 0, sizeof *g);
    const pj_value *v = pj_get(body, "min_confidence");
    if (!v || v->type == PJ_NULL)
        return 0;
    if (v->type == PJ_OBJECT) {
        if (parse_map(v, g, err))
            return -1;
        g->is_map = 1;
    } else if (one_threshold(v, &g->scalar, err)) {
        return -1;
    }
    g->set = 1;
    return 0;
}

/* resolve_min_confidence: the answer's bucket entry, else "default", else 0.0. */
static double threshold(const gate *g, const answer_numbers *a)
{
    if (!g->is_map)
        return g->scalar;
    static const char *const type[] = {"choice", "score", "noul"};
    int k = a->qtype == QTYPE_NOUL ? 2 : a->k; /* noul answers carry no probabilities */
    char key[16];
    snprintf(key, sizeof key, "%s:%s", type[a->qtype], k <= 2 ? "2" : k <= 5 ? "3-5" : k <= 10 ? "6-10" : "11+");
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->key[i], key))
            return g->thr[i];
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->key[i], "default"))
            return g->thr[i];
    return 0.0;
}

void gate_format(pj_buf *b, const gate *g, const answer_numbers *a)
{
    if (!g->set)
        return;
    double t = threshold(g, a);
    int low = a->answer_confidence < t;
    if (low)
        pj_buf_puts(b, ", \"low_confidence\": true");
    pj_buf_printf(b, ", \"abstention\": \"%s\", \"abstention_threshold\": ", low ? "abstained" : "passed");
    pj_buf_float(b, t);
}
