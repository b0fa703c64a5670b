/*
 * tokenizer_bpe.c - the BPE model: one word -> ids, exactly as HF's
 * BPE::merge_word + Word::merge_all.
 *
 * A word starts as one symbol per character (the character's vocabulary id;
 * with byte_fallback an unknown character becomes its <0xNN> byte tokens;
 * otherwise unk, fused into one when fuse_unk; without unk it is dropped).
 * Merges are then applied lowest rank first, leftmost first among equal
 * ranks, from a binary heap of candidate pairs, with HF's lazy invalidation
 * (an entry is stale when its symbol is gone or its pair no longer yields
 * the same new id). Doing it with the heap rather than rescanning keeps a
 * 100 KB single-word input at O(n log n). No cache: every call recomputes,
 * so there is nothing to share between threads and nothing to bound.
 */
#include "model/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY_KEY UINT64_MAX

static size_t merge_hash(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static const tok_merge_slot *merge_get(const tok_bpe *m, int32_t a, int32_t b)
{
    if (!m->merges_cap)
        return NULL;
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (size_t i = merge_hash(key, m->merges_cap);; i = (i + 1) & (m->merges_cap - 1)) {
        const tok_merge_slot *s = &m->merges[i];
        if (s->key == key)
            return s;
        if (s->key == EMPTY_KEY)
            return NULL;
    }
}

int tok_bpe_merges_alloc(tok_bpe *m, size_t n)
{
    size_t cap = 16;
    while (cap < n * 2 + 2)
        cap <<= 1;
    m->merges = malloc(cap * sizeof *m->merges);
    if (!m->merges)
        return -1;
    for (size_t i = 0; i < cap; i++)
        m->merges[i].key = EMPTY_KEY;
    m->merges_cap = cap;
    m->n_merges = 0;
    return 0;
}

/* Inserts (a, b) -> (rank, new_id); a later duplicate overwrites, as HF's
 * HashMap collect does. The table was sized for every merge. */
void tok_bpe_merge_put(tok_bpe *m, int32_t a, int32_t b, int32_t rank, int32_t new_id)
{
    uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    size_t i = merge_hash(key, m->merges_cap);
    while (m->merges[i].key != EMPTY_KEY && m->merges[i].key != key)
        i = (i + 1) & (m->merges_cap - 1);
    if (m->merges[i].key == EMPTY_KEY)
        m->n_merges++;
    m->merges[i] = (tok_merge_slot){ key, rank, new_id };
}

int tok_bpe_init_tables(tok_bpe *m)
{
    for (int b = 0; b < 256; b++) {
        char name[8];
        static const char hex[] = "0123456789ABCDEF";
        memcpy(name, "<0x", 3);
        name[3] = hex[b >> 4];
        name[4] = hex[b & 15];
        name[5] = '>';
        m->byte_ids[b] = tok_strmap_get(&m->vocab, name, 6);
    }
    for (uint32_t cp = 0; cp < TOK_DIRECT_CHARS; cp++) {
        char u[4];
        size_t n = tok_utf8_encode(cp, u);
        m->direct[cp] = tok_strmap_get(&m->vocab, u, n);
    }
    return 0;
}

void tok_bpe_free(tok_bpe *m)
{
    tok_strmap_free(&m->vocab);
    free(m->merges);
    free(m->unk_token);
    memset(m, 0, sizeof *m);
}

/* ---- the word --------------------------------------------------------------- */

static int add_sym(tok_scratch *s, size_t *n, int32_t id, uint32_t len)
{
    if (*n == s->syms_cap) {
        size_t cap = s->syms_cap ? s->syms_cap * 2 : 256;
        tok_sym *v = realloc(s->syms, cap * sizeof *v);
        if (!v)
            return -1;
        s->syms = v;
        s->syms_cap = cap;
    }
    int32_t i = (int32_t)*n;
    s->syms[i] = (tok_sym){ id, i - 1, i + 1, len };
    (*n)++;
    return 0;
}

static bool heap_less(const tok_heap_item *a, const tok_heap_item *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static int heap_push(tok_scratch *s, size_t *n, tok_heap_item it)
{
    if (*n == s->heap_cap) {
        size_t cap = s->heap_cap ? s->heap_cap * 2 : 256;
        tok_heap_item *v = realloc(s->heap, cap * sizeof *v);
        if (!v)
            return -1;
        s->heap = v;
        s->heap_cap = cap;
    }
    tok_heap_item *h = s->heap;
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&it, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = it;
    return 0;
}

static tok_heap_item heap_pop(tok_scratch *s, size_t *n)
{
    tok_heap_item *h = s->heap;
    tok_heap_item top = h[0];
    tok_heap_item last = h[--(*n)];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && heap_less(&h[c + 1], &h[c]))
            c++;
        if (!heap_less(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (m > 0)
        h[i] = last;
    return top;
}

static int32_t char_id(const tok_bpe *m, const char *p, size_t n)
{
    if (n <= 2) {
        size_t adv;
        uint32_t cp = tok_utf8_decode(p, &adv);
        return m->direct[cp];
    }
    return tok_strmap_get(&m->vocab, p, n);
}

int tok_bpe_word(const tok_bpe *m, tok_scratch *s, const char *w, size_t len, tok_ids *out,
                 layad_error *err)
{
    if (len == 0)
        return 0;
    if (m->ignore_merges) {
        int32_t id = tok_strmap_get(&m->vocab, w, len);
        if (id >= 0)
            return tok_ids_push(out, id) == 0 ? 0 : layad_fail(err, 500, "tokenizer: out of memory");
    }
    size_t n = 0;
    int32_t unk_pending = -1; /* id of the pending unk symbol, -1 = none */
    uint32_t unk_len = 0;
    for (size_t i = 0; i < len;) {
        size_t adv;
        tok_utf8_decode(w + i, &adv);
        int32_t id = char_id(m, w + i, adv);
        if (id >= 0) {
            if (unk_pending >= 0) {
                if (add_sym(s, &n, unk_pending, unk_len) != 0)
                    goto oom;
                unk_pending = -1;
            }
            if (add_sym(s, &n, id, (uint32_t)adv) != 0)
                goto oom;
        } else {
            bool done = false;
            if (m->byte_fallback) {
                bool all = true;
                for (size_t k = 0; k < adv; k++)
                    all = all && m->byte_ids[(uint8_t)w[i + k]] >= 0;
                if (all) {
                    for (size_t k = 0; k < adv; k++)
                        if (add_sym(s, &n, m->byte_ids[(uint8_t)w[i + k]], 1) != 0)
                            goto oom;
                    done = true;
                }
            }
            if (!done && m->unk_token) {
                if (unk_pending >= 0 && m->fuse_unk) {
                    unk_len += (uint32_t)adv;
                } else {
                    if (unk_pending >= 0 && add_sym(s, &n, unk_pending, unk_len) != 0)
                        goto oom;
                    if (m->unk_missing)
                        return layad_fail(err, 500, "tokenizer: unk token \"%s\" is not in the vocabulary",
                                          m->unk_token);
                    unk_pending = m->unk_id;
                    unk_len = (uint32_t)adv;
                }
            }
        }
        i += adv;
    }
    if (unk_pending >= 0 && add_sym(s, &n, unk_pending, unk_len) != 0)
        goto oom;
    if (n == 0)
        return 0;
    tok_sym *sym = s->syms;
    sym[n - 1].next = -1;

    size_t hn = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const tok_merge_slot *ms = merge_get(m, sym[i].id, sym[i + 1].id);
        if (ms && heap_push(s, &hn, (tok_heap_item){ ms->rank, (int32_t)i, ms->new_id }) != 0)
            goto oom;
    }
    while (hn > 0) {
        tok_heap_item top = heap_pop(s, &hn);
        sym = s->syms;
        tok_sym *cur = &sym[top.pos];
        if (cur->len == 0 || cur->next == -1)
            continue;
        int32_t next_pos = cur->next;
        tok_sym right = sym[next_pos];
        const tok_merge_slot *ms = merge_get(m, cur->id, right.id);
        if (!ms || ms->new_id != top.new_id)
            continue;
        cur->id = top.new_id;
        cur->len += right.len;
        cur->next = right.next;
        sym[next_pos].len = 0;
        if (right.next >= 0)
            sym[right.next].prev = top.pos;
        if (cur->prev >= 0) {
            const tok_merge_slot *pm = merge_get(m, sym[cur->prev].id, cur->id);
            if (pm && heap_push(s, &hn, (tok_heap_item){ pm->rank, cur->prev, pm->new_id }) != 0)
                goto oom;
        }
        cur = &s->syms[top.pos];
        if (cur->next >= 0) {
            const tok_merge_slot *nm = merge_get(m, cur->id, s->syms[cur->next].id);
            if (nm && heap_push(s, &hn, (tok_heap_item){ nm->rank, top.pos, nm->new_id }) != 0)
                goto oom;
        }
    }
    for (int32_t i = 0; i >= 0; i = s->syms[i].next)
        if (tok_ids_push(out, s->syms[i].id) != 0)
            goto oom;
    return 0;
oom:
    return layad_fail(err, 500, "tokenizer: out of memory");
}
