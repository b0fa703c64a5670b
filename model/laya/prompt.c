/*
 * prompt.c - the sequence builder, exactly as the official package builds
 * a question row (see prompt.h and laya-model.md §4.5):
 *
 *   head_ids  = tok("<t> question: <ins>")
 *   opt_ids_i = [MASK] + tok(" " + opt_i)[:48]            (slot order)
 *   budget    = head_max_len - sum |opt_ids_i|
 *   if budget < 16: per = max(4, (head_max_len - 16) // max(1, n));
 *                   opt_ids_i = opt_ids_i[:per]; recompute budget
 *   head_ids  = head_ids[:max(8, budget)]
 *   row       = [CLS] head [SEP] opts... [SEP] state' [SEP], cut to max_len,
 *   room      = max(0, max_len - |head part| - 1); state' = first `room`
 *               state ids, or the last `room` when truncate_left
 *   markers past max_len are dropped -> a 422 when any option lost its marker.
 */
#include "model/laya/prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prompt_scrub(pj_buf *b, const char *text, size_t n, const char *mask)
{
    size_t ml = mask ? strlen(mask) : 0;
    if (!ml) {
        pj_buf_put(b, text, n);
        return;
    }
    /* Python's str.replace: left to right, matches do not overlap. memchr finds the candidates
     * (the mask's first byte is rare in text), where a test at every byte cost ~8 instructions
     * a byte of every state. */
    size_t i = 0, run = 0;
    const char *hit;
    while (i + ml <= n && (hit = memchr(text + i, mask[0], n - ml + 1 - i)) != NULL) {
        i = (size_t)(hit - text);
        if (memcmp(text + i, mask, ml) != 0) {
            i++;
            continue;
        }
        pj_buf_put(b, text + run, i - run);
        pj_buf_put(b, " ", 1);
        i += ml;
        run = i;
    }
    pj_buf_put(b, text + run, n - run);
}

/* Tokenizes scrub(prefix + text) into out; the scrubbed text lives in out's arena
 * (malloc'ed and freed here when out has none). */
static int encode_scrubbed(const laya_checkpoint *ck, const char *prefix, const char *text, size_t n,
                           tok_ids *out, layad_error *err)
{
    pj_buf b = pj_buf_in(out->a);
    if (prefix)
        pj_buf_puts(&b, prefix);
    prompt_scrub(&b, text, n, ck->cfg.mask_token);
    int rc = b.failed ? layad_fail(err, 500, "out of memory building a prompt")
                      : tokenizer_encode(ck->tok, b.p ? b.p : "", b.len, out, err);
    pj_buf_free(&b);
    return rc;
}

int prompt_state_ids(const laya_checkpoint *ck, const char *text, size_t n, tok_ids *ids, layad_error *err)
{
    return encode_scrubbed(ck, NULL, text, n, ids, err);
}

/* Copies n ids. An empty tokenization has no array (tok_ids.ids is NULL), and memcpy from
 * NULL is undefined even for 0 bytes (`"state": ""` aborted the daemon built with UBSan). */
static void copy_ids(int32_t *dst, const int32_t *src, size_t n)
{
    if (n)
        memcpy(dst, src, n * sizeof *dst);
}

static int span_equal(const int32_t *a, int na, const int32_t *b, int nb)
{
    return na == nb && !memcmp(a, b, (size_t)na * sizeof *a);
}

/* The options of one question, tokenized in slot order, each span [MASK] + at most
 * LAYA_OPT_TOKENS tokens of " " + option. In prompt_head's arena. */
typedef struct opt_spans {
    tok_ids ids;  /* every span, back to back */
    int *start;   /* per slot: where its span starts in ids */
    int *len;     /* per slot: its length, after any cut */
    int n;        /* slots */
    long total;   /* sum of len */
} opt_spans;

/* Appends [MASK] and the first keep ids of one to o->ids. */
static int append_span(opt_spans *o, int32_t mask_id, const tok_ids *one, size_t keep,
                       layad_error *err)
{
    tok_ids *opt = &o->ids;
    if (opt->cap < opt->n + keep + 1) {
        size_t cap = (opt->n + keep + 1) * 2;
        int32_t *p = arena_grow(opt->a, opt->ids, opt->cap * sizeof *p, cap * sizeof *p);
        if (!p)
            return layad_fail(err, 500, "out of memory building a prompt");
        opt->ids = p;
        opt->cap = cap;
    }
    opt->ids[opt->n++] = mask_id;
    copy_ids(opt->ids + opt->n, one->ids, keep);
    opt->n += keep;
    return 0;
}

/* Tokenizes the options of q in slot order (q->order, or as given) into o's spans and total. */
static int encode_options(const laya_checkpoint *ck, const laya_question *q, opt_spans *o,
                          layad_error *err)
{
    o->total = 0;
    for (int s = 0; s < o->n; s++) {
        int i = q->order ? q->order[s] : s;
        size_t before = o->ids.n;
        tok_ids one = {.a = o->ids.a};
        if (encode_scrubbed(ck, " ", q->opt[i], q->opt_len[i], &one, err) ||
            append_span(o, ck->cfg.mask_id, &one, one.n < LAYA_OPT_TOKENS ? one.n : LAYA_OPT_TOKENS, err))
            return -1;
        o->start[s] = (int)before;
        o->len[s] = (int)(o->ids.n - before);
        o->total += o->len[s];
    }
    return 0;
}

/* When the options leave the question fewer than LAYA_MIN_BUDGET tokens of head_max_len, cuts
 * each span to per = max(4, (head_max_len - 16) // max(1, n)) and returns per; else -1. */
static int cut_options(opt_spans *o, int head_max_len)
{
    int n = o->n;
    if (head_max_len - o->total >= LAYA_MIN_BUDGET)
        return -1;
    int per = (head_max_len - LAYA_MIN_BUDGET) / (n > 1 ? n : 1);
    /* Python's // floors; head_max_len < 16 makes the numerator negative */
    if ((head_max_len - LAYA_MIN_BUDGET) % (n > 1 ? n : 1) != 0 && head_max_len - LAYA_MIN_BUDGET < 0)
        per -= 1;
    if (per < 4)
        per = 4;
    o->total = 0;
    for (int s = 0; s < n; s++) {
        if (o->len[s] > per)
            o->len[s] = per;
        o->total += o->len[s];
    }
    return per;
}

/* The number of distinct id spans among the (cut) options. */
static int count_distinct(const opt_spans *o)
{
    int distinct = 0;
    for (int s = 0; s < o->n; s++) {
        int seen = 0;
        for (int t = 0; t < s && !seen; t++)
            seen = span_equal(o->ids.ids + o->start[s], o->len[s], o->ids.ids + o->start[t],
                              o->len[t]);
        distinct += !seen;
    }
    return distinct;
}

/* Writes [CLS] head[:hlen] [SEP] spans... [SEP] into out->ids and the span starts into
 * out->markers, both allocated in a; sets len and n_markers. */
static int write_head(arena *a, const laya_config *cfg, const tok_ids *head, int hlen,
                      const opt_spans *o, laya_qhead *out, layad_error *err)
{
    int n = o->n;
    int len = 1 + hlen + 1 + (int)o->total + 1;
    out->ids = arena_alloc(a, (size_t)len * sizeof *out->ids);
    out->markers = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *out->markers);
    if (!out->ids || !out->markers)
        return layad_fail(err, 500, "out of memory building a prompt");
    int p = 0;
    out->ids[p++] = cfg->cls_id;
    copy_ids(out->ids + p, head->ids, (size_t)hlen);
    p += hlen;
    out->ids[p++] = cfg->sep_id;
    for (int s = 0; s < n; s++) {
        out->markers[s] = p;
        copy_ids(out->ids + p, o->ids.ids + o->start[s], (size_t)o->len[s]);
        p += o->len[s];
    }
    out->ids[p++] = cfg->sep_id;
    out->len = p;
    out->n_markers = n;
    return 0;
}

int prompt_head(arena *a, const laya_checkpoint *ck, const laya_question *q, int head_max_len,
                laya_qhead *out, layad_error *err)
{
    int n = q->n_opts;
    tok_ids head = {.a = a};
    opt_spans o = { .ids = {.a = a}, .n = n };
    o.start = arena_alloc(a, (size_t)(n + 1) * sizeof *o.start);
    o.len = arena_alloc(a, (size_t)(n ? n : 1) * sizeof *o.len);
    if (!o.start || !o.len)
        return layad_fail(err, 500, "out of memory building a prompt");
    if (encode_scrubbed(ck, NULL, q->head, q->head_len, &head, err) || encode_options(ck, q, &o, err) != 0)
        return -1;
    int per = cut_options(&o, head_max_len);
    long budget = head_max_len - o.total;
    long hk = budget > 8 ? budget : 8;
    int hlen = (int)((long)head.n < hk ? (long)head.n : hk);
    if (write_head(a, &ck->cfg, &head, hlen, &o, out, err) != 0)
        return -1;
    out->tokens_per_option = per;
    out->n_distinct = count_distinct(&o);
    return 0;
}

int prompt_row(const laya_qhead *head, const laya_question *q, const int32_t *state, int n_state,
               int truncate_left, int max_len, int head_max_len, int sep_id, int32_t *ids, int *len,
               int32_t *markers, int *n_markers, laya_state_stats *stats, layad_error *err)
{
    int room = max_len - head->len - 1;
    if (room < 0)
        room = 0;
    int used = n_state < room ? n_state : room;
    const int32_t *st = state; /* NULL when the state has no tokens: no arithmetic on it then */
    if (truncate_left && used < n_state)
        st += n_state - used;
    int full = head->len + used + 1;
    int n = full < max_len ? full : max_len;
    int hcopy = head->len < n ? head->len : n;
    copy_ids(ids, head->ids, (size_t)hcopy);
    if (n > hcopy) {
        int scopy = n - hcopy < used ? n - hcopy : used;
        copy_ids(ids + hcopy, st, (size_t)scopy);
        if (hcopy + scopy < n)
            ids[hcopy + scopy] = sep_id;
    }
    *len = n;
    int k = 0;
    for (int s = 0; s < head->n_markers; s++)
        if (head->markers[s] < max_len)
            markers[k++] = head->markers[s];
    *n_markers = k;
    stats->state_tokens = n_state;
    stats->state_tokens_used = used;
    if (k != head->n_markers) {
        char mem[sizeof err->msg];
        pj_buf m = pj_buf_fixed(mem, sizeof mem);
        pj_buf_puts(&m, "question ");
        py_repr_str(&m, q->qid, q->qid_len);
        pj_buf_printf(&m, ": only %d of its %d option markers fit in max_len=%d with head_max_len=%d spent "
                          "on the question; lower head_max_len, raise max_len, or use fewer options",
                      k, head->n_markers, max_len, head_max_len);
        char field[256];
        snprintf(field, sizeof field, "questions.%.*s.criteria", (int)(q->qid_len > 200 ? 200 : q->qid_len),
                 q->qid);
        return layad_fail_field(err, 422, field, "%s", m.p);
    }
    return 0;
}
