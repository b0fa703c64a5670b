/*
 * cut.c - see cut.h.
 *
 * Rows sorted by length; a bucket of n rows whose longest row has L tokens
 * costs pow2(n) * pad(L) + FORWARD_OVERHEAD_TOKENS (pad: a multiple of 16 up
 * to 256, of 64 beyond, as the GPU buckets are shaped); an O(n^2) dynamic
 * program over the sorted rows picks the cheapest contiguous cut.
 * n <= max_batch_rows, so this is a few thousand steps per batch.
 */
#include "server/sched/cut.h"

#include <stdlib.h>

#include "server/sched/internal.h"

#define FORWARD_OVERHEAD_TOKENS 512 /* fixed cost of one forward, in padded-token units */

int cut_init(sched_cut *c, int max_rows)
{
    size_t n = (size_t)max_rows;
    c->order = calloc(n, sizeof *c->order);
    c->dp_cost = calloc(n + 1, sizeof *c->dp_cost);
    c->dp_cost_from = calloc(n + 1, sizeof *c->dp_cost_from);
    if (!c->order || !c->dp_cost || !c->dp_cost_from) {
        cut_free(c);
        return -1;
    }
    return 0;
}

void cut_free(sched_cut *c)
{
    free(c->order);
    free(c->dp_cost);
    free(c->dp_cost_from);
    c->order = NULL;
    c->dp_cost = NULL;
    c->dp_cost_from = NULL;
}

static int pad_tokens(int len)
{
    if (len <= 256)
        return (len + 15) / 16 * 16;
    return (len + 63) / 64 * 64;
}

static long pow2(long n)
{
    long p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static int cmp_len(const void *a, const void *b, void *ctx)
{
    const serve_batch *bt = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int lx = bt->rows[x].len, ly = bt->rows[y].len;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Sorts the batch rows by length (stable by arrival) and cuts buckets. */
void cut_buckets(scheduler *s, serve_batch *b)
{
    int n = b->n_rows;
    for (int i = 0; i < n; i++)
        s->cut.order[i] = i;
    qsort_r(s->cut.order, (size_t)n, sizeof *s->cut.order, cmp_len, b);
    /* Apply the permutation in place by following its cycles (no scratch rows). */
    for (int i = 0; i < n; i++) {
        if (s->cut.order[i] < 0)
            continue;
        int cur = i;
        laya_row tr = b->rows[i];
        batch_entry te = b->ent[i];
        for (;;) {
            int src = s->cut.order[cur];
            s->cut.order[cur] = -1;
            if (src == i) {
                b->rows[cur] = tr;
                b->ent[cur] = te;
                break;
            }
            b->rows[cur] = b->rows[src];
            b->ent[cur] = b->ent[src];
            cur = src;
        }
    }
    /* DP: dp[i] = cheapest cut of rows[0..i). */
    long *dp = s->cut.dp_cost;
    int *from = s->cut.dp_cost_from;
    dp[0] = 0;
    for (int i = 1; i <= n; i++) {
        long best = -1;
        int arg = 0;
        long L = pad_tokens(b->rows[i - 1].len);
        for (int j = 0; j < i; j++) {
            long c = dp[j] + pow2(i - j) * L + FORWARD_OVERHEAD_TOKENS;
            if (best < 0 || c < best) {
                best = c;
                arg = j;
            }
        }
        dp[i] = best;
        from[i] = arg;
    }
    int nb = 0;
    for (int i = n; i > 0; i = from[i])
        nb++;
    b->n_buckets = nb;
    int k = nb;
    b->bucket_start[nb] = n;
    for (int i = n; i > 0; i = from[i])
        b->bucket_start[--k] = from[i];
    b->tokens = 0;
    b->padded_tokens = 0;
    for (int q = 0; q < nb; q++) {
        int st = b->bucket_start[q], en = b->bucket_start[q + 1], K = 1;
        for (int r = st; r < en; r++) {
            if (b->rows[r].n_markers > K)
                K = b->rows[r].n_markers;
            b->tokens += b->rows[r].len;
        }
        b->bucket_k[q] = K;
        b->padded_tokens += pow2(en - st) * pad_tokens(b->rows[en - 1].len);
    }
}
