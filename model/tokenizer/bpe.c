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
#include "model/tokenizer/internal.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY_SLOT UINT64_MAX
#define PAIR_MASK ((1ull << 40) - 1)

/* Fibonacci hashing onto [0, cap) with a multiply-shift (cap need not be a power
 * of two, so the table can be sized tightly): the top bits of key * phi depend
 * on every bit of the key, and (h * cap) >> 64 keeps just those. */
static inline size_t merge_hash(uint64_t key, size_t cap)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(((unsigned __int128)h * cap) >> 64);
}

/* The id of the token merge `rank` produces. */
static inline int32_t merged_id(const tok_bpe *m, int32_t rank)
{
    return m->merge_new[rank];
}

/* Rank of the merge (a, b), or -1 when there is none. */
static inline int32_t merge_rank(const tok_bpe *m, int32_t a, int32_t b)
{
    if ((uint32_t)(a | b) > TOK_MAX_ID)
        return -1; /* no merge has such an id (the loader checked), and it would not pack */
    uint64_t key = (uint64_t)(uint32_t)a << 20 | (uint32_t)b;
    size_t i = merge_hash(key, m->merges_cap);
    for (;;) {
        uint64_t s = m->merges[i];
        if ((s & PAIR_MASK) == key)
            return (int32_t)(s >> 40);
        if (s == EMPTY_SLOT)
            return -1;
        if (++i == m->merges_cap)
            i = 0;
    }
}

int tok_bpe_merges_alloc(tok_bpe *m, size_t n)
{
    if (n > TOK_MAX_MERGES)
        return -1;
    size_t cap = n + n / 2 + 16; /* load <= 2/3 */
    m->merges = malloc(cap * sizeof *m->merges);
    m->merge_new = malloc((n ? n : 1) * sizeof *m->merge_new);
    if (!m->merges || !m->merge_new)
        return -1;
    for (size_t i = 0; i < cap; i++)
        m->merges[i] = EMPTY_SLOT;
    m->merges_cap = cap;
    m->n_merges = 0;
    return 0;
}

/* Inserts (a, b) -> (rank, new_id); a later duplicate overwrites, as HF's
 * HashMap collect does. The table was sized for every merge; ids were checked
 * against TOK_MAX_ID by the loader. */
void tok_bpe_merge_put(tok_bpe *m, int32_t a, int32_t b, int32_t rank, int32_t new_id)
{
    uint64_t key = (uint64_t)(uint32_t)a << 20 | (uint32_t)b;
    size_t i = merge_hash(key, m->merges_cap);
    while (m->merges[i] != EMPTY_SLOT && (m->merges[i] & PAIR_MASK) != key)
        if (++i == m->merges_cap)
            i = 0;
    if (m->merges[i] == EMPTY_SLOT)
        m->n_merges++;
    m->merges[i] = (uint64_t)rank << 40 | key;
    m->merge_new[rank] = new_id;
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
    free(m->merge_new);
    free(m->unk_token);
    memset(m, 0, sizeof *m);
}

/* ---- the word --------------------------------------------------------------- */

static int grow_syms(tok_scratch *s)
{
    tok_sym *v = tok_grow(s->a, s->syms, &s->syms_cap, sizeof *v, 256);
    if (!v)
        return -1;
    s->syms = v;
    return 0;
}

static inline int add_sym(tok_scratch *s, size_t *n, int32_t id, uint32_t len)
{
    if (*n == s->syms_cap && grow_syms(s) != 0)
        return -1;
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
        tok_heap_item *v = tok_grow(s->a, s->heap, &s->heap_cap, sizeof *v, 256);
        if (!v)
            return -1;
        s->heap = v;
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

/* Id of the one-character token p[0..n), -1 when the vocabulary lacks it. */
static inline int32_t char_id(const tok_bpe *m, const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    if (n == 1)
        return m->direct[u[0]];
    if (n == 2)
        return m->direct[(uint32_t)(u[0] & 0x1F) << 6 | (u[1] & 0x3F)];
    return tok_strmap_get(&m->vocab, p, n);
}

/* Length of the UTF-8 sequence starting with lead byte c (valid input). */
static inline size_t seq_len(unsigned char c)
{
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Words of up to SHORT_WORD symbols (nearly all of them) merge without the heap:
 * keep the rank of every adjacent pair and repeatedly merge the lowest, leftmost
 * first. That is the order HF's heap produces: its lazily invalidated entries
 * only survive when the pair at their position still yields the same token,
 * which for a fixed left symbol means the same right symbol, i.e. the same pair
 * and rank. */
#define SHORT_WORD 48

static int merge_short(const tok_bpe *m, tok_scratch *s, size_t n, tok_ids *out)
{
    /* ranks unsigned, "no merge" the largest: the lowest rank is then a plain minimum (the
     * leftmost on a tie), and the shifts are loops over a few entries, not memmove calls */
    int32_t id[SHORT_WORD];
    uint32_t rank[SHORT_WORD];
    for (size_t i = 0; i < n; i++)
        id[i] = s->syms[i].id;
    for (size_t i = 0; i + 1 < n; i++)
        rank[i] = (uint32_t)merge_rank(m, id[i], id[i + 1]);
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (rank[i] < rank[best])
                best = i;
        if (rank[best] == (uint32_t)-1)
            break;
        id[best] = merged_id(m, (int32_t)rank[best]);
        for (size_t i = best + 1; i + 1 < n; i++)
            id[i] = id[i + 1];
        for (size_t i = best + 1; i + 2 < n; i++)
            rank[i] = rank[i + 1];
        n--;
        if (best > 0)
            rank[best - 1] = (uint32_t)merge_rank(m, id[best - 1], id[best]);
        if (best + 1 < n)
            rank[best] = (uint32_t)merge_rank(m, id[best], id[best + 1]);
    }
    for (size_t i = 0; i < n; i++)
        if (tok_ids_push(out, id[i]) != 0)
            return -1;
    return 0;
}

/* Appends the symbols of a character the vocabulary lacks (p, adv bytes): its <0xNN> byte
 * tokens when byte_fallback has them all, else the unk symbol (*unk_pending, *unk_len: the one
 * not yet appended, -1 for none; fuse_unk grows it), else nothing (the character is dropped). */
static int add_unknown(const tok_bpe *m, tok_scratch *s, size_t *n, const char *p, size_t adv,
                       int32_t *unk_pending, uint32_t *unk_len, layad_error *err)
{
    if (m->byte_fallback) {
        bool all = true;
        for (size_t k = 0; k < adv; k++)
            all = all && m->byte_ids[(uint8_t)p[k]] >= 0;
        if (all) {
            for (size_t k = 0; k < adv; k++)
                if (add_sym(s, n, m->byte_ids[(uint8_t)p[k]], 1) != 0)
                    return layad_fail(err, 500, "tokenizer: out of memory");
            return 0;
        }
    }
    if (!m->unk_token)
        return 0;
    if (*unk_pending >= 0 && m->fuse_unk) {
        *unk_len += (uint32_t)adv;
        return 0;
    }
    if (*unk_pending >= 0 && add_sym(s, n, *unk_pending, *unk_len) != 0)
        return layad_fail(err, 500, "tokenizer: out of memory");
    if (m->unk_missing)
        return layad_fail(err, 500, "tokenizer: unk token \"%s\" is not in the vocabulary",
                          m->unk_token);
    *unk_pending = m->unk_id;
    *unk_len = (uint32_t)adv;
    return 0;
}

/* Splits the word w[0..len) into the linked symbols s->syms[0..*n), one per character (see
 * add_unknown for the others); the last one's next is -1. */
static int word_symbols(const tok_bpe *m, tok_scratch *s, const char *w, size_t len, size_t *n,
                        layad_error *err)
{
    int32_t unk_pending = -1; /* id of the pending unk symbol, -1 = none */
    uint32_t unk_len = 0;
    for (size_t i = 0; i < len;) {
        size_t adv = seq_len((unsigned char)w[i]);
        int32_t id = char_id(m, w + i, adv);
        if (id >= 0) {
            if (unk_pending >= 0) {
                if (add_sym(s, n, unk_pending, unk_len) != 0)
                    goto oom;
                unk_pending = -1;
            }
            if (add_sym(s, n, id, (uint32_t)adv) != 0)
                goto oom;
        } else if (add_unknown(m, s, n, w + i, adv, &unk_pending, &unk_len, err) != 0) {
            return -1;
        }
        i += adv;
    }
    if (unk_pending >= 0 && add_sym(s, n, unk_pending, unk_len) != 0)
        goto oom;
    if (*n > 0)
        s->syms[*n - 1].next = -1;
    return 0;
oom:
    return layad_fail(err, 500, "tokenizer: out of memory");
}

/* Merges the n linked symbols in s->syms with the heap (HF's Word::merge_all, lazy
 * invalidation) and appends the resulting ids to out. -1 when out of memory. */
static int merge_long(const tok_bpe *m, tok_scratch *s, size_t n, tok_ids *out)
{
    tok_sym *sym = s->syms;
    size_t hn = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        int32_t r = merge_rank(m, sym[i].id, sym[i + 1].id);
        if (r >= 0 && heap_push(s, &hn, (tok_heap_item){ r, (int32_t)i, merged_id(m, r) }) != 0)
            return -1;
    }
    while (hn > 0) {
        tok_heap_item top = heap_pop(s, &hn);
        sym = s->syms;
        tok_sym *cur = &sym[top.pos];
        if (cur->len == 0 || cur->next == -1)
            continue;
        int32_t next_pos = cur->next;
        tok_sym right = sym[next_pos];
        int32_t r = merge_rank(m, cur->id, right.id);
        if (r < 0 || merged_id(m, r) != top.new_id)
            continue;
        cur->id = top.new_id;
        cur->len += right.len;
        cur->next = right.next;
        sym[next_pos].len = 0;
        if (right.next >= 0)
            sym[right.next].prev = top.pos;
        if (cur->prev >= 0) {
            int32_t pr = merge_rank(m, sym[cur->prev].id, cur->id);
            if (pr >= 0 && heap_push(s, &hn, (tok_heap_item){ pr, cur->prev, merged_id(m, pr) }) != 0)
                return -1;
        }
        cur = &s->syms[top.pos];
        if (cur->next >= 0) {
            int32_t nr = merge_rank(m, cur->id, s->syms[cur->next].id);
            if (nr >= 0 && heap_push(s, &hn, (tok_heap_item){ nr, top.pos, merged_id(m, nr) }) != 0)
                return -1;
        }
    }
    for (int32_t i = 0; i >= 0; i = s->syms[i].next)
        if (tok_ids_push(out, s->syms[i].id) != 0)
            return -1;
    return 0;
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
    if (word_symbols(m, s, w, len, &n, err) != 0)
        return -1;
    if (n == 0)
        return 0;
    int rc = n <= SHORT_WORD ? merge_short(m, s, n, out) : merge_long(m, s, n, out);
    return rc == 0 ? 0 : layad_fail(err, 500, "tokenizer: out of memory");
}
