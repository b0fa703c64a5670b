/*
 * synth_rows.c - deterministic question rows for parity sweeps and benchmarks
 * (contract in synth_rows.h).
 *
 * Everything is integer arithmetic over splitmix64 so the rows are identical on
 * every host. Each row is built like the sequence builder builds it: prefix
 * first (CLS, type word, "question", ":", instruction words, SEP, a MASK plus
 * option words per option, SEP), then as much of the state as fits the row's
 * target length, then SEP. When the target is shorter than the prefix, the
 * question is simplified (one word per option, one instruction word) before
 * the target is raised, so short targets stay short.
 */
#include "tests/tools/synth_rows.h"

#include <stdlib.h>
#include <string.h>

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_u64(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n >= 1 (modulo bias is irrelevant here). */
static int below(rng *r, int n)
{
    return (int)(next_u64(r) % (uint64_t)n);
}

/* Ids the generator must not emit as words. */
typedef struct vocab {
    int n;
    int cls, sep, pad, mask;
    int32_t type_word[3], question_word, colon, json[5];
} vocab;

static int is_special(const vocab *v, int id)
{
    return id == v->cls || id == v->sep || id == v->pad || id == v->mask;
}

static int32_t word(const vocab *v, rng *r)
{
    for (;;) {
        int id = below(r, v->n);
        if (!is_special(v, id))
            return id;
    }
}

static void vocab_init(vocab *v, const laya_config *cfg)
{
    v->n = cfg->vocab;
    v->cls = cfg->cls_id;
    v->sep = cfg->sep_id;
    v->pad = cfg->pad_id;
    v->mask = cfg->mask_id;
    rng r = {0x5EED0F1D5ull};
    for (int t = 0; t < 3; t++)
        v->type_word[t] = word(v, &r);
    v->question_word = word(v, &r);
    v->colon = word(v, &r);
    for (int i = 0; i < 5; i++)
        v->json[i] = word(v, &r);
}

/* A question's shape before it meets a state. */
typedef struct qshape {
    int qtype, n_opts, instr_words, opt_words[64];
} qshape;

static int prefix_len(const qshape *q)
{
    int n = 1 + 3 + q->instr_words + 1; /* CLS type question : instr SEP */
    for (int i = 0; i < q->n_opts; i++)
        n += 1 + q->opt_words[i];
    return n + 1; /* SEP */
}

/* Writes one row into ids/markers; returns its length. State ids are st[0..nst). */
static int build_row(const vocab *v, rng *r, const qshape *q, const int32_t *st, int nst,
                     int target, int32_t *ids, int32_t *markers)
{
    int n = 0;
    ids[n++] = v->cls;
    ids[n++] = v->type_word[q->qtype];
    ids[n++] = v->question_word;
    ids[n++] = v->colon;
    for (int i = 0; i < q->instr_words; i++)
        ids[n++] = word(v, r);
    ids[n++] = v->sep;
    for (int i = 0; i < q->n_opts; i++) {
        markers[i] = n;
        ids[n++] = v->mask;
        for (int w = 0; w < q->opt_words[i]; w++)
            ids[n++] = word(v, r);
    }
    ids[n++] = v->sep;
    int room = target - n - 1;
    if (room < 0)
        room = 0;
    if (room > nst)
        room = nst;
    memcpy(ids + n, st, (size_t)room * sizeof *ids);
    n += room;
    ids[n++] = v->sep;
    return n;
}

static int alloc_set(synth_set *s, int n, long pool, layad_error *err)
{
    memset(s, 0, sizeof *s);
    s->rows = calloc((size_t)n, sizeof *s->rows);
    s->state = calloc((size_t)n, sizeof *s->state);
    s->json_state = calloc((size_t)n, sizeof *s->json_state);
    s->pool = malloc((size_t)pool * sizeof *s->pool);
    if (!s->rows || !s->state || !s->json_state || !s->pool) {
        synth_free(s);
        return layad_fail(err, 500, "synth_rows: out of memory");
    }
    s->n = n;
    return 0;
}

/* Fills a state's ids: words, or JSON-like structure around words. */
static void make_state(const vocab *v, rng *r, int json, int32_t *st, int n)
{
    for (int i = 0; i < n; i++) {
        if (json && i % 4 != 3)
            st[i] = v->json[(i + below(r, 2)) % 5];
        else
            st[i] = word(v, r);
    }
}

#define PARITY_STATES 60
#define PARITY_ROWS 288

/* The shape of question qi of state si (row in all) for a row of target tokens: its type
 * and option count by row, its words drawn from r, simplified to fit; returns the row's
 * tokens (at least the question's prefix and the state's first token). */
static int parity_question(rng *r, int row, int si, int qi, int target, int max_len, qshape *q)
{
    static const int choice_opts[] = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 40};
    const int n_choice = (int)(sizeof choice_opts / sizeof choice_opts[0]);
    const int shortest = si == 0 && qi == 0; /* a single option, 10 tokens */
    q->qtype = (row + si) % 3;
    if (q->qtype == QTYPE_CHOICE)
        q->n_opts = choice_opts[(row / 3) % n_choice];
    else if (q->qtype == QTYPE_SCORE)
        q->n_opts = 3 + (row / 3) % 3;
    else
        q->n_opts = 2;
    q->instr_words = 1 + below(r, 12);
    for (int i = 0; i < q->n_opts; i++)
        q->opt_words[i] = 1 + below(r, 6);
    if (shortest) {
        q->qtype = QTYPE_CHOICE;
        q->n_opts = 1;
    }
    if (prefix_len(q) + 1 > target) { /* simplify before lengthening */
        q->instr_words = shortest ? 0 : 1;
        for (int i = 0; i < q->n_opts; i++)
            q->opt_words[i] = 1;
    }
    while (prefix_len(q) + 1 > max_len && q->n_opts > 1)
        q->n_opts--;
    const int t = shortest ? 10 : target;
    return t < prefix_len(q) + 1 ? prefix_len(q) + 1 : t;
}

int synth_parity(synth_set *s, const laya_config *cfg, int max_len, uint64_t seed,
                 layad_error *err)
{
    if (max_len < 16)
        return layad_fail(err, 500, "synth_parity: max_len %d < 16", max_len);
    vocab v;
    vocab_init(&v, cfg);
    long pool = (long)PARITY_ROWS * (max_len + 64);
    if (alloc_set(s, PARITY_ROWS, pool, err))
        return -1;
    int32_t *st = malloc((size_t)max_len * sizeof *st);
    if (!st) {
        synth_free(s);
        return layad_fail(err, 500, "synth_parity: out of memory");
    }
    rng r = {seed};
    long used = 0;
    int row = 0;
    for (int si = 0; si < PARITY_STATES; si++) {
        /* 48 states of 5 questions, 12 of 4: 288 rows. Targets grow
         * quadratically from 10 to max_len so short rows dominate, as in traffic. */
        int nq = si % 5 == 4 ? 4 : 5;
        long num = (long)(max_len - 10) * si * si;
        int target = 10 + (int)(num / ((PARITY_STATES - 1) * (PARITY_STATES - 1)));
        int json = si % 2;
        make_state(&v, &r, json, st, max_len);
        for (int qi = 0; qi < nq; qi++, row++) {
            qshape q;
            const int t = parity_question(&r, row, si, qi, target, max_len, &q);
            int32_t *ids = s->pool + used;
            int32_t *markers = ids + t + 1;
            int len = build_row(&v, &r, &q, st, max_len, t, ids, markers);
            s->rows[row] = (laya_row){ids, len, markers, q.n_opts, q.qtype};
            s->state[row] = si;
            s->json_state[row] = json;
            s->tokens += len;
            if (q.n_opts > s->max_markers)
                s->max_markers = q.n_opts;
            used += t + 1 + q.n_opts;
        }
    }
    free(st);
    return 0;
}

int synth_uniform(synth_set *s, const laya_config *cfg, int n, int len, int n_opts,
                  uint64_t seed, layad_error *err)
{
    if (n < 1 || len < 10 || n_opts < 1 || n_opts > 64)
        return layad_fail(err, 500, "synth_uniform: bad shape %d x %d, %d options", n, len, n_opts);
    vocab v;
    vocab_init(&v, cfg);
    if (alloc_set(s, n, (long)n * (len + 1 + n_opts), err))
        return -1;
    int32_t *st = malloc((size_t)len * sizeof *st);
    if (!st) {
        synth_free(s);
        return layad_fail(err, 500, "synth_uniform: out of memory");
    }
    rng r = {seed};
    long used = 0;
    for (int i = 0; i < n; i++) {
        qshape q = {.qtype = QTYPE_CHOICE, .n_opts = n_opts, .instr_words = 8};
        for (int o = 0; o < n_opts; o++)
            q.opt_words[o] = 2;
        while (prefix_len(&q) + 1 > len && q.instr_words > 0)
            q.instr_words--;
        while (prefix_len(&q) + 1 > len && q.n_opts > 1)
            q.n_opts--;
        for (int o = 0; o < q.n_opts && prefix_len(&q) + 1 > len; o++)
            q.opt_words[o] = 1;
        make_state(&v, &r, i % 2, st, len);
        int32_t *ids = s->pool + used;
        int32_t *markers = ids + len + 1;
        int got = build_row(&v, &r, &q, st, len, len, ids, markers);
        s->rows[i] = (laya_row){ids, got, markers, q.n_opts, q.qtype};
        s->json_state[i] = i % 2;
        s->state[i] = i;
        s->tokens += got;
        if (q.n_opts > s->max_markers)
            s->max_markers = q.n_opts;
        used += len + 1 + n_opts;
    }
    free(st);
    return 0;
}

uint64_t synth_hash(const synth_set *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
#define MIX(x)                                         \
    do {                                               \
        uint32_t x_ = (uint32_t)(x);                   \
        for (int b_ = 0; b_ < 4; b_++) {               \
            h ^= (x_ >> (8 * b_)) & 0xff;              \
            h *= 0x100000001b3ull;                     \
        }                                              \
    } while (0)
    for (int i = 0; i < s->n; i++) {
        const laya_row *r = &s->rows[i];
        MIX(r->qtype);
        MIX(r->len);
        for (int t = 0; t < r->len; t++)
            MIX(r->ids[t]);
        MIX(r->n_markers);
        for (int k = 0; k < r->n_markers; k++)
            MIX(r->markers[k]);
    }
#undef MIX
    return h;
}

void synth_free(synth_set *s)
{
    free(s->rows);
    free(s->state);
    free(s->json_state);
    free(s->pool);
    memset(s, 0, sizeof *s);
}
