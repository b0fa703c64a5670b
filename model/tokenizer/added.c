/*
 * tokenizer_added.c - splitting added tokens out of text, as HF's
 * AddedVocabulary::find_matches does.
 *
 * HF finds added tokens with an Aho-Corasick automaton in LeftmostLongest
 * mode: the match that starts leftmost wins, the longest pattern among those
 * starting there, matches do not overlap and the scan resumes at the end of
 * the previous match (also after a match rejected by single_word, and at the
 * unextended end of an rstrip match). A byte trie walked from each position
 * gives exactly those matches; the patterns are few and short (ModernBERT:
 * 116, at most 24 bytes), so this costs a couple of table lookups per input
 * byte and needs no failure links.
 *
 * The option semantics are HF's, including its word and space definitions
 * (Rust regex \w and \s, both Unicode): single_word rejects a match touching
 * a word character on either side; lstrip pulls the match start back over
 * whitespace, but not before the end of the previous match; rstrip pushes
 * the end forward over whitespace.
 */
#include "model/tokenizer/internal.h"

#include "model/base/swar.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- Unicode predicates (Rust regex definitions) ---------------------------- */

/* \s: the White_Space property. */
static bool is_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* \w: Alphabetic, Mark, Decimal_Number, Connector_Punctuation, Join_Control.
 * Alphabetic is the letters, letter numbers and Other_Alphabetic; outside the
 * marks (already included), Other_Alphabetic holds only the circled and
 * squared Latin letters listed here. */
static bool is_word(uint32_t c)
{
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
               c == '_';
    if (c == 0x200C || c == 0x200D)
        return true;
    if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
        (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189))
        return true;
    if (tok_in_ranges(tok_extra_letter, tok_extra_letter_N, c) ||
        tok_in_ranges(tok_extra_number, tok_extra_number_N, c))
        return true; /* letters and digits newer than utf8proc's tables */
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

/* The code point ending at text[end) (end > 0, valid UTF-8). */
static uint32_t last_cp(const char *text, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && ((unsigned char)text[i] & 0xC0) == 0x80)
        i--;
    size_t adv;
    return tok_utf8_decode(text + i, &adv);
}

/* Start of the whitespace run that ends text[0..end). */
static size_t trailing_space_start(const char *text, size_t end)
{
    while (end > 0) {
        size_t i = end - 1;
        while (i > 0 && ((unsigned char)text[i] & 0xC0) == 0x80)
            i--;
        size_t adv;
        if (!is_space(tok_utf8_decode(text + i, &adv)))
            break;
        end = i;
    }
    return end;
}

/* End of the whitespace run that starts text[pos..len). */
static size_t leading_space_end(const char *text, size_t pos, size_t len)
{
    while (pos < len) {
        size_t adv;
        if (!is_space(tok_utf8_decode(text + pos, &adv)))
            break;
        pos += adv;
    }
    return pos;
}

/* ---- trie ------------------------------------------------------------------- */

typedef struct build_edge {
    uint32_t parent;
    uint8_t byte;
    uint32_t child;
} build_edge;

static int cmp_edge(const void *a, const void *b)
{
    const build_edge *x = a, *y = b;
    if (x->parent != y->parent)
        return x->parent < y->parent ? -1 : 1;
    return (int)x->byte - (int)y->byte;
}

void tok_trie_free(tok_trie *trie)
{
    free(trie->nodes);
    free(trie->edges);
    memset(trie, 0, sizeof *trie);
}

/* The trie under construction: nodes go straight into trie, edges into be unsorted, and
 * (parent << 8 | byte) + 1 -> child is an open-addressing hash (hkey 0 = empty slot). */
typedef struct trie_builder {
    tok_trie *trie;
    size_t node_cap, edge_cap; /* both the byte count of all patterns, plus one */
    build_edge *be;
    size_t n_be;
    uint64_t *hkey;
    uint32_t *hval;
    size_t hcap;               /* a power of two, at least twice the capacity */
} trie_builder;

/* *total = 1 + the bytes of the patterns as they will be inserted (normalization may
 * lengthen them): one node and one edge per pattern byte at most. */
static int pattern_bytes(const tok_added *added, size_t n_added, bool normalized,
                         const tokenizer *t, tok_scratch *s, size_t *total)
{
    *total = 1;
    for (size_t i = 0; i < n_added; i++) {
        if (added[i].normalized != normalized)
            continue;
        const char *pat = added[i].content;
        size_t plen = added[i].len;
        if (normalized && tok_normalize(t, s, pat, plen, &pat, &plen) != 0)
            return -1;
        *total += plen;
    }
    return 0;
}

/* Adds the path of pat[0..plen) (plen > 0) to the trie and marks its end with token unless an
 * earlier pattern ends there. -1 when out of capacity (cannot happen, see pattern_bytes). */
static int insert_pattern(trie_builder *b, const char *pat, size_t plen, int32_t token)
{
    tok_trie *trie = b->trie;
    uint32_t node = 0;
    for (size_t k = 0; k < plen; k++) {
        uint8_t byte = (uint8_t)pat[k];
        uint64_t key = ((uint64_t)node << 8 | byte) + 1;
        size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (b->hcap - 1);
        while (b->hkey[h] && b->hkey[h] != key)
            h = (h + 1) & (b->hcap - 1);
        if (b->hkey[h]) {
            node = b->hval[h];
            continue;
        }
        if (trie->n_nodes == b->node_cap || b->n_be == b->edge_cap)
            return -1; /* cannot happen: capacity covers every pattern byte */
        uint32_t child = (uint32_t)trie->n_nodes++;
        trie->nodes[child].token = -1;
        b->hkey[h] = key;
        b->hval[h] = child;
        b->be[b->n_be++] = (build_edge){ node, byte, child };
        node = child;
    }
    if (trie->nodes[node].token < 0)
        trie->nodes[node].token = token;
    return 0;
}

/* Fills trie->skip from the root's table (see tok_trie). A whitespace byte starts a pattern in
 * ModernBERT's normalized trie (its runs of spaces); a byte that common would stop the scan in
 * nearly every word of eight, so such a trie is scanned a byte at a time. */
static void skip_bytes(tok_trie *trie)
{
    trie->n_skip = 0;
    for (int b = 0; b < 256; b++) {
        if (!trie->root[b])
            continue;
        if (trie->n_skip == TOK_TRIE_SKIP_BYTES || b == ' ' || (b >= '\t' && b <= '\r')) {
            trie->n_skip = 0;
            return;
        }
        trie->skip[trie->n_skip++] = (unsigned char)b;
    }
}

/* Fills trie->pairs from the root's children (see tok_trie). */
static void start_pairs(tok_trie *trie)
{
    memset(trie->pairs, 0, sizeof trie->pairs);
    for (unsigned b0 = 0; b0 < 256; b0++) {
        const uint32_t c = trie->root[b0];
        if (!c)
            continue;
        const tok_trie_node *n = &trie->nodes[c];
        if (n->token >= 0) {
            memset(trie->pairs + b0 * 4, 0xFF, 4 * sizeof *trie->pairs);
            continue;
        }
        for (uint32_t e = n->first_edge; e < n->first_edge + n->n_edges; e++) {
            const unsigned bit = b0 << 8 | trie->edges[e].byte;
            trie->pairs[bit >> 6] |= 1ull << (bit & 63);
        }
    }
}

/* Sorts the builder's edges by (parent, byte) into trie->edges, each node's edges contiguous,
 * and fills the root's direct table. */
static int pack_edges(trie_builder *b)
{
    tok_trie *trie = b->trie;
    build_edge *be = b->be;
    size_t n_be = b->n_be;
    qsort(be, n_be, sizeof *be, cmp_edge);
    trie->edges = malloc((n_be ? n_be : 1) * sizeof *trie->edges);
    if (!trie->edges)
        return -1;
    for (size_t e = 0; e < n_be; e++) {
        tok_trie_node *p = &trie->nodes[be[e].parent];
        if (p->n_edges == 0)
            p->first_edge = (uint32_t)e;
        p->n_edges++;
        trie->edges[e] = (tok_trie_edge){ be[e].byte, be[e].child };
        if (be[e].parent == 0)
            trie->root[be[e].byte] = be[e].child;
    }
    trie->n_edges = n_be;
    skip_bytes(trie);
    start_pairs(trie);
    return 0;
}

/* Builds the trie over the contents of the entries whose `normalized` flag
 * equals `normalized`; normalized patterns go through the normalizers first,
 * as HF does. The first entry wins when two patterns are identical. */
int tok_trie_build(tok_trie *trie, const tok_added *added, size_t n_added, bool normalized,
                   const tokenizer *t, tok_scratch *s)
{
    memset(trie, 0, sizeof *trie);
    size_t total;
    if (pattern_bytes(added, n_added, normalized, t, s, &total) != 0)
        return -1;
    trie_builder b = { .trie = trie, .node_cap = total, .edge_cap = total, .hcap = 16 };
    trie->nodes = calloc(b.node_cap, sizeof *trie->nodes);
    b.be = malloc(b.edge_cap * sizeof *b.be);
    while (b.hcap < total * 2)
        b.hcap <<= 1;
    b.hkey = calloc(b.hcap, sizeof *b.hkey);
    b.hval = malloc(b.hcap * sizeof *b.hval);
    int rc = -1;
    if (!trie->nodes || !b.be || !b.hkey || !b.hval)
        goto out;
    trie->n_nodes = 1;
    trie->nodes[0].token = -1;
    trie->empty = true;
    for (size_t i = 0; i < n_added; i++) {
        if (added[i].normalized != normalized)
            continue;
        const char *pat = added[i].content;
        size_t plen = added[i].len;
        if (normalized && tok_normalize(t, s, pat, plen, &pat, &plen) != 0)
            goto out;
        if (plen == 0)
            continue;
        if (insert_pattern(&b, pat, plen, (int32_t)i) != 0)
            goto out;
        trie->empty = false;
    }
    if (pack_edges(&b) != 0)
        goto out;
    rc = 0;
out:
    free(b.be);
    free(b.hkey);
    free(b.hval);
    if (rc != 0)
        tok_trie_free(trie);
    return rc;
}

static uint32_t trie_step(const tok_trie *trie, uint32_t node, uint8_t b)
{
    const tok_trie_node *n = &trie->nodes[node];
    const tok_trie_edge *e = trie->edges + n->first_edge;
    size_t lo = 0, hi = n->n_edges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (e[mid].byte == b)
            return e[mid].child;
        if (e[mid].byte < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* The first position from i where a pattern may start (its byte starts one, and with the next
 * byte it starts one or it is one alone: trie->pairs), or len. Where trie->skip holds the first
 * bytes, eight bytes are tested a step (model/base/swar.h) and a word holding one is left at it. */
static inline size_t next_start(const tok_trie *trie, const char *text, size_t i, size_t len)
{
    for (; trie->n_skip && len - i >= 8; i += 8) {
        const uint64_t w = swar_load(text + i);
        uint64_t any = 0;
        for (int k = 0; k < trie->n_skip; k++)
            any |= swar_eq(w, trie->skip[k]);
        if (any) {
            i += swar_first(any);
            break;
        }
    }
    for (; i < len; i++) {
        const unsigned b0 = (uint8_t)text[i];
        if (!trie->root[b0])
            continue;
        if (i + 1 == len)
            break;
        const unsigned bit = b0 << 8 | (uint8_t)text[i + 1];
        if (trie->pairs[bit >> 6] >> (bit & 63) & 1)
            break;
    }
    return i;
}

/* Leftmost-longest match at or after pos: true with [*ms, *me) and token index. */
static bool next_match(const tok_trie *trie, const char *text, size_t len, size_t pos,
                       size_t *ms, size_t *me, int32_t *tok)
{
    for (size_t i = pos;; i++) {
        if ((i = next_start(trie, text, i, len)) == len)
            return false;
        uint32_t node = trie->root[(uint8_t)text[i]]; /* not 0: next_start found it */
        int32_t best = -1;
        size_t best_end = 0;
        for (size_t j = i + 1;; j++) {
            if (trie->nodes[node].token >= 0) {
                best = trie->nodes[node].token;
                best_end = j;
            }
            if (j == len)
                break;
            node = trie_step(trie, node, (uint8_t)text[j]);
            if (!node)
                break;
        }
        if (best >= 0) {
            *ms = i;
            *me = best_end;
            *tok = best;
            return true;
        }
    }
}

int tok_added_split(const tokenizer *t, const tok_trie *trie, const char *text, size_t len,
                    tok_piece_fn fn, void *ctx)
{
    if (len == 0)
        return 0;
    if (trie->empty)
        return fn(ctx, text, len, 0, -1);
    size_t start_offset = 0, pos = 0, ms, me;
    int32_t ti;
    while (pos < len && next_match(trie, text, len, pos, &ms, &me, &ti)) {
        const tok_added *a = &t->added[ti];
        size_t start = ms, stop = me;
        pos = me;
        if (a->single_word) {
            bool start_space = start == 0 || !is_word(last_cp(text, start));
            size_t adv;
            bool stop_space = stop == len || !is_word(tok_utf8_decode(text + stop, &adv));
            if (!start_space || !stop_space)
                continue;
        }
        if (a->lstrip) {
            size_t ns = trailing_space_start(text, start);
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip)
            stop = leading_space_end(text, stop, len);
        if (start > stop)
            return -1; /* HF cannot slice this either (it panics) */
        if (start_offset < start && fn(ctx, text + start_offset, start - start_offset,
                                       start_offset, -1) != 0)
            return -1;
        if (fn(ctx, text + start, stop - start, start, a->id) != 0)
            return -1;
        start_offset = stop;
    }
    if (start_offset != len && fn(ctx, text + start_offset, len - start_offset, start_offset, -1) != 0)
        return -1;
    return 0;
}
