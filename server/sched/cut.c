/*
 * cut.c - see cut.h.
 *
 * Packing needs no sort: the rows of a pack lie back to back, so a pack costs
 * its bucket's capacity (batch_cost) whatever its mix of lengths. batch_cut's
 * dynamic program over the arrival order picks the cheapest contiguous cut;
 * with the fixed overhead per forward that is nearly always one pack per
 * batch, split only where the budgets force it.
 */
#include "server/sched/cut.h"

#include <stdlib.h>

#include "server/sched/internal.h"

int cut_init(sched_cut *c, int max_rows, int max_tokens, int exact, layad_error *err)
{
    const size_t n = (size_t)max_rows;
    if (batch_policy_init(&c->policy, max_tokens, max_rows, exact, err))
        return -1;
    c->dp_cost = calloc(n + 1, sizeof *c->dp_cost);
    c->dp_cost_from = calloc(n + 1, sizeof *c->dp_cost_from);
    if (!c->dp_cost || !c->dp_cost_from) {
        cut_free(c);
        return layad_fail(err, 500, "out of memory (scheduler cut)");
    }
    return 0;
}

void cut_free(sched_cut *c)
{
    free(c->dp_cost);
    free(c->dp_cost_from);
    c->dp_cost = NULL;
    c->dp_cost_from = NULL;
}

/* One pack per row: the fallback when a row exceeds the pack (the backend then
 * fails that row alone, with its own message). */
static int one_per_row(serve_batch *b)
{
    for (int i = 0; i <= b->n_rows; i++)
        b->bucket_start[i] = i;
    return b->n_rows;
}

void cut_buckets(scheduler *s, serve_batch *b)
{
    layad_error err;
    int nb = batch_cut(&s->cut.policy, b->rows, b->n_rows, b->bucket_start, s->cut.dp_cost,
                       s->cut.dp_cost_from, &err);
    if (nb < 0)
        nb = one_per_row(b);
    b->n_buckets = nb;
    b->tokens = 0;
    b->padded_tokens = 0;
    for (int q = 0; q < nb; q++) {
        int st = b->bucket_start[q], en = b->bucket_start[q + 1], K = 1;
        long tokens = 0;
        for (int r = st; r < en; r++) {
            if (b->rows[r].n_markers > K)
                K = b->rows[r].n_markers;
            tokens += b->rows[r].len;
        }
        const int cap = batch_capacity(&s->cut.policy, tokens, en - st);
        b->bucket_k[q] = K;
        b->tokens += tokens;
        b->padded_tokens += cap > 0 ? cap : tokens;
    }
}
