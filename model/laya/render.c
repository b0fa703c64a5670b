/*
 * render.c - a validated question -> its normalized form (laya-model.md §4.2;
 * Agent._to_internal and render_options of the official package): the head
 * "<type> question: <instructions>" and one text per option, all written in
 * the request's arena. question.c validates first; nothing here can fail but
 * for memory.
 */
#include "model/laya/question.h"
#include "model/laya/question_internal.h"

#include <stdlib.h>
#include <string.h>

#include "model/backend/rows.h"

/* Hands a finished arena buffer over as (out, len), trimmed to its length, and starts b
 * afresh in the same arena. */
static int take(arena *a, pj_buf *b, const char **out, size_t *len, layad_error *err)
{
    char *d = b->failed ? NULL : b->p ? arena_grow(a, b->p, b->cap, b->len + 1) : arena_alloc(a, 1);
    if (!d)
        return layad_fail(err, 500, "out of memory rendering a question");
    *out = d;
    *len = b->len;
    *b = pj_buf_in(a);
    return 0;
}

void question_render_criterion(pj_buf *b, const pj_value *v)
{
    if (v->type == PJ_STRING)
        pj_buf_put(b, v->u.str.s, v->u.str.len);
    else
        pj_dump(b, v); /* json.dumps(v, ensure_ascii=False, separators=(", ", ": ")) */
}

/* "<type> question: <instructions>", non-strings as JSON (json.dumps(ins, ensure_ascii=False)). */
static int render_head(arena *a, laya_question *q, const pj_value *ins, layad_error *err)
{
    pj_buf b = pj_buf_in(a);
    pj_buf_printf(&b, "%s question: ", question_type_names[q->qtype]);
    if (ins->type == PJ_STRING)
        pj_buf_put(&b, ins->u.str.s, ins->u.str.len);
    else
        pj_dump(&b, ins);
    return take(a, &b, &q->head, &q->head_len, err);
}

/* Choice options: "str(label)[: description]"; the labels are the answer keys. */
static int render_choice(arena *a, laya_question *q, const pj_value *crit, layad_error *err)
{
    int n = q->n_opts;
    pj_buf b = pj_buf_in(a);
    q->labels = arena_alloc(a, (size_t)n * sizeof *q->labels);
    if (!q->labels)
        return layad_fail(err, 500, "out of memory");
    for (int i = 0; i < n; i++) {
        const pj_value *v = NULL; /* description */
        if (crit->type == PJ_OBJECT) {
            pj_value *key = arena_alloc(a, sizeof *key);
            if (!key)
                return layad_fail(err, 500, "out of memory");
            key->type = PJ_STRING;
            key->u.str.s = crit->u.obj.m[i].key;
            key->u.str.len = crit->u.obj.m[i].keylen;
            q->labels[i] = key;
            v = crit->u.obj.m[i].val;
        } else {
            q->labels[i] = crit->u.arr.items[i];
        }
        pj_str(&b, q->labels[i]); /* str(k) */
        if (v && v->type != PJ_NULL && !(v->type == PJ_STRING && v->u.str.len == 0)) {
            pj_buf_puts(&b, ": ");
            question_render_criterion(&b, v);
        }
        if (take(a, &b, &q->opt[i], &q->opt_len[i], err))
            return -1;
    }
    return 0;
}

/* Score options: "level <i>: <description>"; the levels are the legend. */
static int render_score(arena *a, laya_question *q, const pj_value *crit, layad_error *err)
{
    pj_buf b = pj_buf_in(a);
    q->levels = (const pj_value **)crit->u.arr.items;
    for (int i = 0; i < q->n_opts; i++) {
        pj_buf_printf(&b, "level %d: ", i);
        question_render_criterion(&b, crit->u.arr.items[i]);
        if (take(a, &b, &q->opt[i], &q->opt_len[i], err))
            return -1;
    }
    return 0;
}

/* Noul options: {str(k).lower(): v} (a later duplicate wins), then [false, true],
 * each "<word>: <description or default>". */
static int render_noul(arena *a, laya_question *q, const pj_value *crit, const noul_words *words,
                       layad_error *err)
{
    static const char *const defaults[2] = {"no, the statement does not hold", "yes, the statement holds"};
    const pj_value *d[2] = {NULL, NULL}; /* false, true */
    for (size_t i = 0; crit && crit->type == PJ_OBJECT && i < crit->u.obj.n; i++) {
        const pj_member *m = &crit->u.obj.m[i];
        d[question_ascii_lower_eq(m->key, m->keylen, "true")] = m->val;
    }
    pj_buf b = pj_buf_in(a);
    for (int i = 0; i < 2; i++) {
        pj_buf_put(&b, words->w[i], words->n[i]);
        pj_buf_puts(&b, ": ");
        if (d[i] && d[i]->type != PJ_NULL && !(d[i]->type == PJ_STRING && d[i]->u.str.len == 0))
            question_render_criterion(&b, d[i]);
        else
            pj_buf_puts(&b, defaults[i]);
        if (take(a, &b, &q->opt[i], &q->opt_len[i], err))
            return -1;
    }
    return 0;
}

int question_normalize(arena *a, laya_question *q, const pj_value *ins, const pj_value *crit,
                       const pj_value *order, const noul_words *words, layad_error *err)
{
    int n = q->n_opts;
    if (render_head(a, q, ins, err))
        return -1;
    q->opt = arena_alloc(a, (size_t)n * sizeof *q->opt);
    q->opt_len = arena_alloc(a, (size_t)n * sizeof *q->opt_len);
    if (!q->opt || !q->opt_len)
        return layad_fail(err, 500, "out of memory");
    if (order) {
        q->order = arena_alloc(a, (size_t)n * sizeof *q->order);
        if (!q->order)
            return layad_fail(err, 500, "out of memory");
        for (int s = 0; s < n; s++)
            q->order[s] = (int)strtol(order->u.arr.items[s]->u.str.s, NULL, 10);
    }
    if (q->qtype == QTYPE_CHOICE)
        return render_choice(a, q, crit, err);
    if (q->qtype == QTYPE_SCORE)
        return render_score(a, q, crit, err);
    return render_noul(a, q, crit, words, err);
}
