/*
 * cut.h - how the scheduler cuts a batch into buckets (one forward each).
 *
 * The whole policy is cut_buckets; its scratch lives in sched_cut (one per
 * scheduler, sized at start-up, loop thread only). Kept apart so that the
 * batching-shape module of model/backend can replace it without touching the
 * loop.
 */
#ifndef LAYAD_SERVER_CUT_H
#define LAYAD_SERVER_CUT_H

#include "server/sched/worker.h"

typedef struct scheduler scheduler;

typedef struct sched_cut {
    int *order;        /* sort scratch, [max_batch_rows] */
    long *dp_cost;     /* DP scratch, [max_batch_rows + 1] */
    int *dp_cost_from; /* [max_batch_rows + 1] */
} sched_cut;

/* Allocates the scratch for batches of up to max_rows rows: 0, or -1 (out of
 * memory, nothing left allocated). */
int cut_init(sched_cut *c, int max_rows);
void cut_free(sched_cut *c);

/* Sorts b's rows by length (stable by arrival, entries follow their rows) and
 * cuts them into buckets: fills n_buckets, bucket_start, bucket_k, tokens and
 * padded_tokens. Uses s->cut as scratch; loop thread. */
void cut_buckets(scheduler *s, serve_batch *b);

#endif
