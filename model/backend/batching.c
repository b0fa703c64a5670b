/*
 * batching.c - the batching policy (see batching.h).
 */
#include "model/backend/batching.h"

#include <string.h>

#include "kernels/cpu.h" /* kn_attention_tiles, KN_ATT_TQ */

/* Step between buckets up to t tokens: 16 to 128, 32 to 256, 64 to 1024, then
 * an eighth of the power of two below t (128 to 2048, 256 to 4096, ...), so
 * that a bucket is at most 12.5% larger than what it holds above 512 tokens.
 * The fine steps at the bottom are measured, not free: on the H200 a 40-token
 * row ran 7% faster in a 48-token bucket than in a 64-token one, and 150
 * tokens 3% faster in 160 than in 192 (cuBLASLt's kernels and the attention
 * tiles follow the bucket), while a 16-token step costs a few small graphs. */
static int bucket_step(long t)
{
    long p = 1024;
    while (p * 2 < t)
        p *= 2;
    return t <= 128 ? 16 : t <= 256 ? 32 : t <= 1024 ? 64 : (int)(p / 8);
}

int batch_policy_init(batch_policy *p, int max_tokens, int max_rows, int exact, layad_error *err)
{
    memset(p, 0, sizeof *p);
    if (max_tokens < 1 || max_rows < 1)
        return layad_fail(err, 500, "batching: max_tokens (%d) and max_rows (%d) must be >= 1",
                          max_tokens, max_rows);
    p->max_tokens = max_tokens;
    p->max_rows = max_rows;
    p->exact = exact;
    if (exact)
        return 0;
    long t = 0;
    while (t < max_tokens) {
        t += bucket_step(t + 1);
        if (p->n_buckets == BATCH_MAX_BUCKETS)
            return layad_fail(err, 500, "batching: max_tokens %d needs more than %d buckets",
                              max_tokens, BATCH_MAX_BUCKETS);
        p->bucket[p->n_buckets++] = (int)t;
    }
    return 0;
}

int batch_rows_cap(const batch_policy *p, int cap)
{
    const int r = cap / 16 > 8 ? cap / 16 : 8;
    return p->exact || r > p->max_rows ? p->max_rows : r;
}

int batch_capacity(const batch_policy *p, long tokens, int rows)
{
    if (tokens > p->max_tokens || rows > p->max_rows)
        return -1;
    if (p->exact)
        return (int)(tokens > 0 ? tokens : 1);
    int lo = 0, hi = p->n_buckets - 1; /* smallest bucket >= tokens */
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (p->bucket[mid] >= tokens)
            hi = mid;
        else
            lo = mid + 1;
    }
    while (lo < p->n_buckets && batch_rows_cap(p, p->bucket[lo]) < rows)
        lo++;
    return lo < p->n_buckets ? p->bucket[lo] : -1;
}

long batch_cost(const batch_policy *p, long tokens, int rows)
{
    const int cap = batch_capacity(p, tokens, rows);
    return (cap < 0 ? tokens : cap) + BATCH_OVERHEAD_TOKENS;
}

int batch_cut(const batch_policy *p, const laya_row *rows, int n, int *start, long *dp, int *from,
              layad_error *err)
{
    for (int i = 0; i < n; i++)
        if (rows[i].len > p->max_tokens)
            return layad_fail(err, 413, "a row of %d tokens exceeds the pack capacity (%d)",
                              rows[i].len, p->max_tokens);
    /* dp[i] = cheapest cut of rows[0..i); the last pack is rows[j..i). */
    dp[0] = 0;
    for (int i = 1; i <= n; i++) {
        long tokens = 0, best = -1;
        int arg = i - 1;
        for (int j = i - 1; j >= 0 && i - j <= p->max_rows; j--) {
            tokens += rows[j].len;
            if (tokens > p->max_tokens)
                break;
            const long c = dp[j] + batch_cost(p, tokens, i - j);
            if (best < 0 || c < best) {
                best = c;
                arg = j;
            }
        }
        dp[i] = best;
        from[i] = arg;
    }
    int k = 0;
    for (int i = n; i > 0; i = from[i])
        k++;
    start[k] = n;
    int q = k;
    for (int i = n; i > 0; i = from[i])
        start[--q] = from[i];
    if (k == 0)
        start[0] = 0;
    return k;
}

int batch_take(const batch_policy *p, const laya_row *rows, int n)
{
    long tokens = 0;
    int k = 0;
    while (k < n && k < p->max_rows && tokens + rows[k].len <= p->max_tokens)
        tokens += rows[k++].len;
    return k;
}

int batch_gcap(const batch_policy *p, int cap, int cls)
{
    const int full = cap + batch_rows_cap(p, cap); /* a CLS or marker per token, plus one per row */
    const int few = cap / 16 > BATCH_GATHER_FEW ? cap / 16 : BATCH_GATHER_FEW;
    const int want = cls >= BATCH_GCLASSES - 1 ? full
                     : cls == 1 || few > BATCH_GATHER_FEW ? few
                                                         : BATCH_GATHER_TINY;
    return want < full ? want : full;
}

int batch_gclass(const batch_policy *p, int cap, long gathered)
{
    int c = 0;
    while (c < BATCH_GCLASSES - 1 && gathered > batch_gcap(p, cap, c))
        c++;
    return c;
}

int batch_gclass_own(const batch_policy *p, int cap, int cls)
{
    return batch_gclass(p, cap, batch_gcap(p, cap, cls)) == cls;
}

long batch_gathered(const laya_row *rows, int n)
{
    long g = 0;
    for (int r = 0; r < n; r++)
        g += 1 + rows[r].n_markers;
    return g;
}

void batch_layout_caps(batch_layout *l, int cap, int rows_cap, int gcap)
{
    l->cap = cap;
    l->rows_cap = rows_cap;
    l->tiles_cap = cap / KN_ATT_TQ + rows_cap;
    l->gcap = gcap;
}

/* Gathered slots of row r: its CLS (slot 0 of the row), then its markers. */
static void pack_gathered(const laya_row *row, int r, int base, batch_layout *l)
{
    int g = l->gathered;
    l->goff[r] = g;
    l->gpos[g] = base;
    l->grow[g] = r;
    l->gmask[g] = 0;
    g++;
    for (int k = 0; k < row->n_markers; k++, g++) {
        l->gpos[g] = base + row->markers[k];
        l->grow[g] = r;
        l->gmask[g] = 1;
    }
    l->gathered = g;
}

int batch_pack(const laya_row *rows, int n, int pad_id, batch_layout *l, layad_error *err)
{
    long tokens = 0, gathered = 0;
    for (int r = 0; r < n; r++) {
        tokens += rows[r].len;
        gathered += 1 + rows[r].n_markers;
    }
    if (n > l->rows_cap || tokens > l->cap || gathered > l->gcap)
        return layad_fail(err, 500, "batching: %d rows, %ld tokens, %ld gathered slots exceed the "
                          "pack (%d, %d, %d)", n, tokens, gathered, l->rows_cap, l->cap, l->gcap);
    l->n_rows = n;
    l->tokens = (int)tokens;
    l->gathered = 0;
    int t = 0;
    for (int r = 0; r < n; r++) {
        const laya_row *row = &rows[r];
        l->cu[r] = t;
        memcpy(l->ids + t, row->ids, sizeof(int32_t) * (size_t)row->len);
        for (int i = 0; i < row->len; i++) {
            l->pos[t + i] = i;
            l->ttype[t + i] = row->qtype;
        }
        pack_gathered(row, r, t, l);
        t += row->len;
    }
    for (int r = n; r <= l->rows_cap; r++) {
        l->cu[r] = t;
        l->goff[r] = l->gathered;
    }
    for (int i = t; i < l->cap; i++) {
        l->ids[i] = pad_id;
        l->pos[i] = 0;
        l->ttype[i] = 0;
    }
    for (int g = l->gathered; g < l->gcap; g++) {
        l->gpos[g] = 0;
        l->grow[g] = -1;
        l->gmask[g] = 0;
    }
    l->n_tiles = kn_attention_tiles(l->cu, l->rows_cap, l->tiles, l->tiles_cap);
    if (l->n_tiles < 0)
        return layad_fail(err, 500, "batching: attention tiles exceed %d", l->tiles_cap);
    return 0;
}
