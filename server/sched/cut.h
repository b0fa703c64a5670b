/*
 * cut.h - how the scheduler cuts a batch into packs (one forward each).
 *
 * The policy itself is model/backend/batching.h (batch_cut), the same module
 * the backends lay their packs out with; this file only applies it to a
 * serve_batch and keeps its scratch (one per scheduler, sized at start-up,
 * loop thread only).
 */
#ifndef LAYAD_SERVER_CUT_H
#define LAYAD_SERVER_CUT_H

#include "model/backend/batching.h"
#include "server/sched/worker.h"

typedef struct scheduler scheduler;

typedef struct sched_cut {
    batch_policy policy;
    long *dp_cost;     /* batch_cut scratch, [max_batch_rows + 1] */
    int *dp_cost_from; /* [max_batch_rows + 1] */
} sched_cut;

/* Sets up the policy for batches of up to max_rows rows and max_tokens tokens
 * (exact: a backend without buckets, the CPU) and allocates the scratch:
 * 0, or -1 with err (nothing left allocated). */
int cut_init(sched_cut *c, int max_rows, int max_tokens, int exact, layad_error *err);
void cut_free(sched_cut *c);

/* Cuts b's rows, in arrival order, into packs: fills n_buckets, bucket_start,
 * bucket_k, tokens and padded_tokens (the packs' token capacities). Uses
 * s->cut; loop thread. */
void cut_buckets(scheduler *s, serve_batch *b);

#endif
