/*
 * request.c - a decision request from body bytes to response bytes (see
 * request.h): body checks, limits, question validation (question.c), rows
 * (prompt.c), forward through a backend, answers (answers.c) and the
 * official envelope.
 *
 * Check order follows laya-serve + Agent so the status a client sees is the
 * one the official server gives: JSON/UTF-8 (400), body shape (400), size
 * limits (413), model and budgets (422), questions in order (422), then each
 * state's rows in state-major order (422 when options do not fit).
 *
 * Everything a request owns lives in one arena (model/base/arena.h): the
 * parsed body, the questions, the rows, the tokenizer's working buffers, the
 * logits and the response text. request_parse makes a heap arena of its own,
 * released by request_free (the CLI and the tools); request_parse_in takes
 * the caller's, which the daemon reserves per request slot at start-up and
 * resets after the response is sent, so a request calls no allocator.
 */
#include "server/api/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/laya/answers.h"
#include "model/laya/prompt.h"
#include "model/pyexact/pyjson.h"
#include "model/laya/question.h"
#include "server/api/controls.h"
#include "server/api/gate.h"
#include "server/api/jev_confidence.h"

#define DEFAULT_RESPONSE_MODEL "laya-rl-agent"

struct laya_request {
    arena *a;               /* where the request lives: &own, or request_parse_in's */
    arena own;              /* request_parse's heap arena */
    const laya_checkpoint *ck;
    const char *model;      /* response "model" */
    int model_index;        /* in decide_opts.models (0 without one) */
    int strict, return_logits, multi, jev;
    gate gate;              /* min_confidence */
    int n_states, n_q, n_rows;
    int max_len, head_max_len;
    laya_question *qs;
    laya_qhead *heads;
    laya_row *rows;
    laya_state_stats *stats; /* per row */
    float **logits, **act;   /* per row */
    long n_tokens;
    int max_markers;
};

void decide_opts_default(decide_opts *o)
{
    memset(o, 0, sizeof *o);
    o->return_logits_allowed = 1;
}

int request_n_rows(const laya_request *r) { return r->n_rows; }
const laya_row *request_rows(const laya_request *r) { return r->rows; }
int request_max_markers(const laya_request *r) { return r->max_markers; }
long request_n_tokens(const laya_request *r) { return r->n_tokens; }
int request_n_questions(const laya_request *r) { return r->n_q; }
const char *request_question_id(const laya_request *r, int q, size_t *len)
{
    *len = r->qs[q].qid_len;
    return r->qs[q].qid;
}
int request_max_len(const laya_request *r) { return r->max_len; }
int request_model(const laya_request *r) { return r->model_index; }
const laya_checkpoint *request_checkpoint(const laya_request *r) { return r->ck; }
float *request_row_logits(laya_request *r, int i) { return r->logits[i]; }
float *request_row_act(laya_request *r, int i) { return r->act[i]; }

void request_free(laya_request *r)
{
    if (!r || r->a != &r->own)
        return;
    arena own = r->own; /* r lives in it */
    arena_release(&own);
}

static void *alloc(laya_request *r, size_t n, layad_error *err)
{
    void *p = arena_alloc(r->a, n ? n : 1);
    if (!p)
        layad_fail(err, 500, "out of memory building the request");
    return p;
}

/* max_len / head_max_len: absent or null -> dflt; else a positive int <= cap (422). */
static int budget_param(const pj_value *body, const char *key, int cap, int dflt, int *out, layad_error *err)
{
    const pj_value *v = pj_get(body, key);
    *out = dflt;
    if (!v || v->type == PJ_NULL)
        return 0;
    if (v->type != PJ_INT)
        return layad_fail_field(err, 422, key, "%s must be an integer", key);
    if (v->u.str.s[0] == '-' || !strcmp(v->u.str.s, "0"))
        return layad_fail_field(err, 422, key, "%s must be a positive integer", key);
    if (v->u.str.len > 9 || atol(v->u.str.s) > cap)
        return layad_fail_field(err, 422, key, "%s exceeds server limit (%.*s > %d)", key,
                                (int)(v->u.str.len > 40 ? 40 : v->u.str.len), v->u.str.s, cap);
    *out = (int)atol(v->u.str.s);
    return 0;
}

/* The model a string names: its index in o->models (0 without a table when
 * model_names accepts it or is NULL), or -1. */
static int find_model(const char *s, size_t len, const decide_opts *o)
{
    if (o->models)
        return model_table_find(o->models, s, len);
    if (!o->model_names)
        return 0;
    for (const char *const *n = o->model_names; *n; n++)
        if (strlen(*n) == len && !memcmp(*n, s, len))
            return 0;
    return -1;
}

/* Which model answers: the body's "model" when it is a string (*pinned = 1;
 * -1 when it names none), else with a table a `task` that names a served model
 * (*task_routed = 1), else the default, 0. As in laya's Router an accepted
 * `model` outranks `task`. Errors are reported later, where laya-serve checks
 * (check_model, controls_task). */
static int route_model(const pj_value *body, const decide_opts *o, int *pinned, int *task_routed)
{
    const pj_value *m = pj_get(body, "model"), *task = pj_get(body, "task");
    *pinned = *task_routed = 0;
    if (m && m->type != PJ_NULL) {
        *pinned = 1;
        return m->type == PJ_STRING ? find_model(m->u.str.s, m->u.str.len, o) : -1;
    }
    if (!o->models || !task || task->type != PJ_STRING)
        return 0;
    int i = model_table_find(o->models, task->u.str.s, task->u.str.len);
    *task_routed = i >= 0;
    return i >= 0 ? i : 0;
}

/* The 422 of a "model" route_model refused. */
static int check_model(const pj_value *body, int routed, layad_error *err)
{
    if (routed >= 0)
        return 0;
    const pj_value *m = pj_get(body, "model");
    if (m->type != PJ_STRING)
        return layad_fail_field(err, 422, "model", "model must be a string");
    return layad_fail_field(err, 422, "model", "unknown model '%.*s'",
                            (int)(m->u.str.len > 100 ? 100 : m->u.str.len), m->u.str.s);
}

/* Body shape: the states to answer (1 for `state`). */
static int collect_states(const pj_value *body, const decide_opts *o, int max_states, const pj_value ***states,
                          int *n, int *multi, laya_request *r, layad_error *err)
{
    const pj_value *ss = pj_get(body, "states"), *s = pj_get(body, "state");
    if (o->systemone_batch) /* laya-serve's batch reads `states` only */
        s = NULL;
    if (ss && ss->type != PJ_NULL) {
        if (o->systemone && !o->systemone_batch)
            return layad_fail_field(err, 422, "states",
                                    "/v1/systemone takes one 'state'; send 'states' to /v1/systemone/batch");
        if (s && s->type != PJ_NULL)
            return layad_fail_field(err, 422, "state", "give either 'state' or 'states', not both");
        if (ss->type != PJ_ARRAY || !ss->u.arr.n)
            return layad_fail_field(err, 400, "states", "'states' must be a non-empty list");
        if (ss->u.arr.n > (size_t)max_states)
            return layad_fail_field(err, 413, "states", "too many states in batch (%zu > %d)", ss->u.arr.n,
                                    max_states);
        for (size_t i = 0; i < ss->u.arr.n; i++)
            if (ss->u.arr.items[i]->type == PJ_NULL)
                return layad_fail_field(err, 400, "states", o->systemone_batch ? "'state' is required"
                                        : "state must not be None; pass a string, dict, or list");
        *states = (const pj_value **)ss->u.arr.items;
        *n = (int)ss->u.arr.n;
        *multi = 1;
        return 0;
    }
    if (!s || s->type == PJ_NULL)
        return layad_fail_field(err, 400, "state", "'state' is required");
    const pj_value **one = alloc(r, sizeof *one, err);
    if (!one)
        return -1;
    one[0] = s;
    *states = one;
    *n = 1;
    *multi = 0;
    return 0;
}

/* serialize_state: strings as they are, anything else json.dumps(ensure_ascii=False). */
static void serialize_state(pj_buf *b, const pj_value *s)
{
    if (s->type == PJ_STRING)
        pj_buf_put(b, s->u.str.s, s->u.str.len);
    else
        pj_dump(b, s);
}

/* Row i = (state s, question q): the question's head, then the state's ids. The ids are
 * written at max_len capacity and trimmed in place to their length. */
static int build_row(laya_request *r, int s, int q, const tok_ids *sid, int truncate_left, layad_error *err)
{
    int i = s * r->n_q + q;
    const laya_qhead *h = &r->heads[q];
    int32_t *markers = alloc(r, (size_t)h->n_markers * sizeof *markers, err);
    int32_t *ids = alloc(r, (size_t)r->max_len * sizeof *ids, err);
    if (!ids || !markers)
        return -1;
    int len, nm;
    if (prompt_row(h, &r->qs[q], sid->ids, (int)sid->n, truncate_left, r->max_len, r->head_max_len,
                   r->ck->cfg.sep_id, ids, &len, markers, &nm, &r->stats[i], err))
        return -1;
    ids = arena_grow(r->a, ids, (size_t)r->max_len * sizeof *ids, (size_t)(len ? len : 1) * sizeof *ids);
    r->rows[i] = (laya_row){.ids = ids, .len = len, .markers = markers, .n_markers = nm,
                            .qtype = r->qs[q].qtype};
    r->logits[i] = alloc(r, (size_t)nm * sizeof(float), err);
    r->act[i] = alloc(r, LAYA_N_ACT * sizeof(float), err);
    if (!ids || !r->logits[i] || !r->act[i])
        return -1;
    r->n_tokens += len;
    if (nm > r->max_markers)
        r->max_markers = nm;
    return 0;
}

static int build_rows(laya_request *r, const pj_value *const *states, const decide_opts *o, layad_error *err)
{
    const laya_checkpoint *ck = r->ck;
    int nq = r->n_q;
    r->heads = alloc(r, (size_t)nq * sizeof *r->heads, err);
    if (!r->heads)
        return -1;
    for (int q = 0; q < nq; q++)
        if (prompt_head(r->a, ck, &r->qs[q], r->head_max_len, &r->heads[q], err))
            return -1;
    r->n_rows = r->n_states * nq;
    r->rows = alloc(r, (size_t)r->n_rows * sizeof *r->rows, err);
    r->stats = alloc(r, (size_t)r->n_rows * sizeof *r->stats, err);
    r->logits = alloc(r, (size_t)r->n_rows * sizeof *r->logits, err);
    r->act = alloc(r, (size_t)r->n_rows * sizeof *r->act, err);
    if (!r->rows || !r->stats || !r->logits || !r->act)
        return -1;
    for (int s = 0; s < r->n_states; s++) {
        pj_buf text = pj_buf_in(r->a);
        serialize_state(&text, states[s]);
        if (text.failed)
            return layad_fail(err, 500, "out of memory serializing a state");
        if (o->max_state_bytes && text.len > o->max_state_bytes)
            return layad_fail_field(err, 413, r->multi ? "states" : "state", "state too large (%zu > %zu bytes)",
                                    text.len, o->max_state_bytes);
        tok_ids sid = {.a = r->a};
        if (prompt_state_ids(ck, text.p ? text.p : "", text.len, &sid, err))
            return -1;
        for (int q = 0; q < nq; q++)
            if (build_row(r, s, q, &sid, states[s]->type == PJ_ARRAY, err))
                return -1;
    }
    return 0;
}

/* The names `task` is checked against: the served names with a table (in
 * names[], MODELS_MAX + 1), else model_names. */
static const char *const *served_names(const decide_opts *o, const char **names)
{
    if (!o->models)
        return o->model_names;
    for (int i = 0; i < o->models->n; i++)
        names[i] = o->models->m[i].name;
    names[o->models->n] = NULL;
    return names;
}

int request_parse(const laya_checkpoint *ck, const char *body, size_t len, const decide_opts *o,
                  laya_request **out, layad_error *err)
{
    arena own = {0};
    if (request_parse_in(&own, ck, body, len, o, out, err)) {
        arena_release(&own);
        return -1;
    }
    (*out)->own = own;
    (*out)->a = &(*out)->own;
    return 0;
}

/* A failed parse gives back what it took from a (a reserved arena rewinds to mark), so the
 * error body still fits; when the arena ran out, the request was too large for the memory
 * a request may use, which only a smaller request can fix (413). */
static int parse_failed(arena *a, size_t mark, layad_error *err)
{
    int full = a->full;
    arena_rewind(a, mark);
    if (!full)
        return -1;
    return layad_fail(err, 413, "the request needs more than the %zu MiB of working memory a request may use "
                                "on this server; send fewer or smaller states or questions", a->cap >> 20);
}

/* The per-request caps: the server's options where set, else the documented defaults;
 * options and levels never beyond what a head can score. */
typedef struct {
    int q, o, l, s;
} parse_caps;

static parse_caps caps_of(const decide_opts *o)
{
    parse_caps c = {
        .q = o->max_questions > 0 ? o->max_questions : LAYA_LIMIT_QUESTIONS,
        .o = o->max_options > 0 ? o->max_options : LAYA_LIMIT_OPTIONS,
        .l = o->max_levels > 0 ? o->max_levels : LAYA_LIMIT_LEVELS,
        .s = o->max_states > 0 ? o->max_states : LAYA_LIMIT_STATES,
    };
    if (c.o > LAYA_MAX_OPTIONS_HARD)
        c.o = LAYA_MAX_OPTIONS_HARD;
    if (c.l > LAYA_MAX_OPTIONS_HARD)
        c.l = LAYA_MAX_OPTIONS_HARD;
    return c;
}

/* The body's shape: an object with `questions` (an object), and with `states` as well on the
 * batch route. On success *questions is that member. */
static int body_shape(const pj_value *root, int batch, const pj_value **questions, layad_error *err)
{
    *questions = pj_get(root, "questions");
    if (batch && (root->type != PJ_OBJECT || !*questions || !pj_get(root, "states")))
        return layad_fail(err, 400, "request body must be an object with 'states' and 'questions' fields");
    if (root->type != PJ_OBJECT || !*questions)
        return layad_fail(err, 400, "request body must be an object with a 'questions' field");
    if ((*questions)->type != PJ_OBJECT)
        return layad_fail_field(err, 400, "questions", "'questions' must be an object");
    return 0;
}

/* `return_logits`: absent or null is false; true only where the server allows it. */
static int parse_return_logits(const pj_value *root, const decide_opts *o, laya_request *r, layad_error *err)
{
    const pj_value *rl = pj_get(root, "return_logits");
    if (!rl || rl->type == PJ_NULL)
        return 0;
    if (rl->type != PJ_TRUE && rl->type != PJ_FALSE)
        return layad_fail_field(err, 422, "return_logits", "return_logits must be a boolean");
    if (rl->type == PJ_TRUE && !o->return_logits_allowed)
        return layad_fail_field(err, 422, "return_logits", "return_logits is disabled on this server");
    r->return_logits = rl->type == PJ_TRUE;
    return 0;
}

/* The model decides the checkpoint, hence the caps; an unknown one is reported after the
 * body and limit checks, in laya-serve's order. Returns route_model's answer. */
static int pick_model(laya_request *r, const pj_value *root, const laya_checkpoint *ck, const decide_opts *o,
                      int *pinned, int *task_routed)
{
    const int routed = root->type == PJ_OBJECT ? route_model(root, o, pinned, task_routed) : 0;
    r->model_index = routed > 0 ? routed : 0;
    r->ck = ck;
    if (o->models && o->models->n) {
        r->ck = o->models->m[r->model_index].ck;
        r->model = o->models->m[r->model_index].name;
    }
    return routed;
}

/* Every request-level field after the model, in laya-serve's order of checks; leaves the
 * states in *states and the questions' member in *questions. */
static int parse_fields(laya_request *r, const pj_value *root, const decide_opts *o, const pj_value *const **states,
                        const pj_value **questions, layad_error *err)
{
    const char *names[MODELS_MAX + 1];
    const parse_caps c = caps_of(o);
    const int batch = o->systemone_batch;
    int pinned = 0, task_routed = 0;
    const int routed = pick_model(r, root, r->ck, o, &pinned, &task_routed);
    const laya_config *cfg = &r->ck->cfg;
    const int cap_len = o->max_len_cap > 0 ? o->max_len_cap : cfg->max_position;
    const int cap_head = o->head_max_len_cap > 0 ? o->head_max_len_cap : cfg->max_position;
    if (body_shape(root, batch, questions, err) ||
        collect_states(root, o, c.s, (const pj_value ***)states, &r->n_states, &r->multi, r, err) ||
        question_check_limits(*questions, c.q, c.o, c.l, err) || controls_refuse(root, batch, err) ||
        check_model(root, routed, err) ||
        budget_param(root, "max_len", cap_len, cfg->max_len, &r->max_len, err) ||
        budget_param(root, "head_max_len", cap_head, cfg->head_max_len, &r->head_max_len, err) ||
        parse_return_logits(root, o, r, err) || controls_check(root, batch, err) || gate_parse(root, &r->gate, err) ||
        controls_task(root, served_names(o, names), pinned || task_routed, err))
        return -1;
    r->jev = (o->jev_confidence || batch) && !r->strict;
    return 0;
}

int request_parse_in(arena *a, const laya_checkpoint *ck, const char *body, size_t len, const decide_opts *o,
                     laya_request **out, layad_error *err)
{
    *out = NULL;
    const size_t mark = a->used;
    laya_request *r = arena_alloc(a, sizeof *r);
    if (!r) {
        layad_fail(err, 500, "out of memory");
        return parse_failed(a, mark, err);
    }
    r->a = a;
    r->ck = ck;
    r->model = o->response_model ? o->response_model : DEFAULT_RESPONSE_MODEL;
    r->strict = o->jev_strict;
    pj_value *root;
    const pj_value *questions;
    const pj_value *const *states = NULL;
    if (pj_parse(a, body, len, &root, err) || parse_fields(r, root, o, &states, &questions, err))
        goto fail;
    r->n_q = (int)questions->u.obj.n;
    r->qs = alloc(r, (size_t)r->n_q * sizeof *r->qs, err);
    if (!r->qs)
        goto fail;
    for (int q = 0; q < r->n_q; q++) {
        const pj_member *m = &questions->u.obj.m[q];
        if (question_parse(a, m->key, m->keylen, m->val, &r->qs[q], err))
            goto fail;
    }
    if (r->n_q && build_rows(r, states, o, err))
        goto fail;
    *out = r;
    return 0;
fail:
    return parse_failed(a, mark, err);
}

int request_run(laya_request *r, laya_backend *b, int max_rows, layad_error *err)
{
    if (!r->n_rows)
        return 0;
    int chunk = max_rows > 0 ? max_rows : r->n_rows;
    float *logits = arena_alloc(r->a, (size_t)chunk * (size_t)r->max_markers * sizeof *logits);
    float *act = arena_alloc(r->a, (size_t)chunk * LAYA_N_ACT * sizeof *act);
    if (!logits || !act)
        return layad_fail(err, 500, "out of memory running the forward");
    int rc = 0;
    for (int i = 0; i < r->n_rows && !rc; i += chunk) {
        int n = r->n_rows - i < chunk ? r->n_rows - i : chunk;
        int K = 0;
        for (int j = 0; j < n; j++)
            if (r->rows[i + j].n_markers > K)
                K = r->rows[i + j].n_markers;
        rc = b->ops->forward(b, r->rows + i, n, K, logits, act, err);
        for (int j = 0; j < n && !rc; j++) {
            memcpy(r->logits[i + j], logits + (size_t)j * K, (size_t)r->rows[i + j].n_markers * sizeof *logits);
            memcpy(r->act[i + j], act + (size_t)j * LAYA_N_ACT, LAYA_N_ACT * sizeof *act);
        }
    }
    return rc;
}

/* The usage block of state s. */
static void usage(pj_buf *b, const laya_request *r, int s)
{
    if (!r->n_q) {
        pj_buf_puts(b, "{\"input_tokens\": 0, \"output_tokens\": 0}");
        return;
    }
    long tokens = 0;
    int dropped = 0;
    for (int q = 0; q < r->n_q; q++) {
        int i = s * r->n_q + q;
        tokens += r->rows[i].len;
        int d = r->stats[i].state_tokens - r->stats[i].state_tokens_used;
        if (d > dropped)
            dropped = d;
    }
    pj_buf_puts(b, "{\"input_tokens\": ");
    pj_buf_int(b, tokens);
    pj_buf_puts(b, ", \"output_tokens\": 0");
    if (r->strict) {
        pj_buf_puts(b, "}");
        return;
    }
    pj_buf_puts(b, ", \"state_tokens\": ");
    pj_buf_int(b, r->stats[s * r->n_q].state_tokens);
    pj_buf_puts(b, ", \"state_tokens_dropped\": ");
    pj_buf_int(b, dropped);
    pj_buf_puts(b, dropped > 0 ? ", \"truncated\": true, \"truncated_questions\": ["
                               : ", \"truncated\": false, \"truncated_questions\": [");
    int first = 1;
    for (int q = 0; q < r->n_q; q++) {
        const laya_state_stats *st = &r->stats[s * r->n_q + q];
        if (st->state_tokens_used < st->state_tokens) {
            if (!first)
                pj_buf_puts(b, ", ");
            pj_buf_string(b, r->qs[q].qid, r->qs[q].qid_len);
            first = 0;
        }
    }
    pj_buf_puts(b, "]");
    first = 1;
    for (int q = 0; q < r->n_q; q++) {
        const laya_qhead *h = &r->heads[q];
        if (h->n_distinct >= h->n_markers)
            continue;
        pj_buf_puts(b, first ? ", \"options\": {" : ", ");
        first = 0;
        pj_buf_string(b, r->qs[q].qid, r->qs[q].qid_len);
        pj_buf_printf(b, ": {\"total\": %d, \"distinct\": %d, \"tokens_per_option\": ", h->n_markers, h->n_distinct);
        if (h->tokens_per_option < 0)
            pj_buf_puts(b, "null}");
        else
            pj_buf_printf(b, "%d}", h->tokens_per_option);
    }
    if (!first)
        pj_buf_puts(b, "}");
    pj_buf_puts(b, "}");
}

/* One answer: the Agent's keys, then what laya-serve adds after them (not in strict mode). */
static void answer(pj_buf *b, const laya_request *r, int q, int i)
{
    const laya_config *cfg = &r->ck->cfg;
    int k = r->rows[i].n_markers;
    if (r->strict || (!r->gate.set && !r->jev)) {
        answers_format(b, cfg, &r->qs[q], k, r->logits[i], r->act[i], r->strict, r->return_logits);
        return;
    }
    answer_numbers a;
    answers_format_open(b, cfg, &r->qs[q], k, r->logits[i], r->act[i], r->strict, r->return_logits);
    answers_numbers(cfg, &r->qs[q], k, r->logits[i], &a);
    gate_format(b, &r->gate, &a);
    if (r->jev)
        jev_confidence_format(b, &a);
    pj_buf_put(b, "}", 1);
}

static void result(pj_buf *b, const laya_request *r, int s)
{
    pj_buf_puts(b, "{\"model\": ");
    pj_buf_string(b, r->model, strlen(r->model));
    pj_buf_puts(b, ", \"answers\": {");
    for (int q = 0; q < r->n_q; q++) {
        int i = s * r->n_q + q;
        if (q)
            pj_buf_puts(b, ", ");
        pj_buf_string(b, r->qs[q].qid, r->qs[q].qid_len);
        pj_buf_puts(b, ": ");
        answer(b, r, q, i);
    }
    pj_buf_puts(b, "}, \"usage\": ");
    usage(b, r, s);
    pj_buf_puts(b, "}");
}

char *request_format(const laya_request *r, size_t *len, layad_error *err)
{
    pj_buf b = pj_buf_in(r->a);
    if (!r->multi) {
        result(&b, r, 0);
    } else {
        pj_buf_puts(&b, "{\"results\": [");
        for (int s = 0; s < r->n_states; s++) {
            if (s)
                pj_buf_puts(&b, ", ");
            result(&b, r, s);
        }
        long total = 0;
        for (int i = 0; i < r->n_rows; i++)
            total += r->rows[i].len;
        pj_buf_printf(&b, "], \"total_usage\": {\"input_tokens\": %ld, \"output_tokens\": 0}}", total);
    }
    if (b.failed || !b.p) {
        layad_fail(err, 500, "out of memory formatting the response");
        return NULL;
    }
    *len = b.len;
    return b.p;
}

void request_error_write(pj_buf *b, const layad_error *err, int show_5xx)
{
    const char *msg = err->status >= 500 && !show_5xx ? "internal error" : err->msg;
    pj_buf_puts(b, "{\"error\": {\"message\": ");
    pj_buf_string(b, msg, strlen(msg));
    pj_buf_puts(b, ", \"field\": ");
    if (err->status < 500 && err->field[0])
        pj_buf_string(b, err->field, strlen(err->field));
    else
        pj_buf_puts(b, "null");
    pj_buf_puts(b, "}, \"detail\": ");
    pj_buf_string(b, msg, strlen(msg));
    pj_buf_puts(b, "}");
}

char *request_error_body(const layad_error *err, size_t *len)
{
    pj_buf b = {0};
    request_error_write(&b, err, 0);
    if (b.failed || !b.p) {
        pj_buf_free(&b);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.p;
}
