/*
 * batching.h - the one batching policy: how rows become packs, which token
 * buckets exist, how a pack is laid out for the kernels, and what it costs.
 *
 * The scheduler (server/sched) cuts its batches with batch_cut and charges
 * them with batch_cost; the backends (cpu.c, cuda_*.c) lay out each pack with
 * batch_pack, and the CUDA backend captures one graph per bucket of
 * batch_buckets. Nobody else decides a shape.
 *
 * Packing (varlen): the rows of a pack lie back to back in its token slots,
 * row r at [cu[r], cu[r+1]), so a pack of mixed lengths pays no padding
 * inside; only its total is rounded up to a bucket. Attention, RoPE positions,
 * the head's gathers and the confidence features all work from per-row
 * offsets (kernels/cuda.h). Every kernel computes a row from that row alone in
 * a fixed order, so a row's logits do not depend on its neighbours; on the GPU
 * the bucket still counts (cuBLASLt picks its algorithm per shape), so they
 * can differ in the last bits between buckets.
 *
 * Buckets: token capacities 16..128 in steps of 16, 160..256 in steps of 32,
 * 320..1024 in steps of 64, then in each doubling (1024..2048, 2048..4096,
 * ...) steps of an eighth of it, up to max_tokens: 64 shapes for 32768
 * tokens, each at most 12.5% above what it holds from 512 tokens on (small
 * rows are memory-bound, yet their extra slots still cost: batching.c says
 * what was measured). A pack holds at most batch_rows_cap(cap) rows
 * (a sixteenth of its tokens, at least 8, at most max_rows). Its gathered
 * slots (each row's CLS and markers, which the head's last layer and the tail
 * run on) come in three classes per bucket, so the tail of a typical pack does
 * not pay for a worst case: tiny (16: a short request with a question or
 * two; the tail's attention and fp32 scorer work grow with these slots, and
 * 16 instead of 80 saved 1.3-1.7% of the forward from 1x40 to 1x512 on the
 * H200: bench/results/experiments/gathered-classes/), few (a sixteenth of the tokens, at least 80: most packs; buckets
 * above 1280 tokens have no tiny class, it would equal this one) and full (one
 * per token plus one per row: packs of rows with many short options). Graph
 * shapes are (bucket, distinct class): 150 for 32768 tokens.
 */
#ifndef LAYAD_BATCHING_H
#define LAYAD_BATCHING_H

#include <stddef.h>
#include <stdint.h>

#include "model/backend/rows.h"
#include "model/base/error.h"

#define BATCH_MAX_BUCKETS 96
#define BATCH_OVERHEAD_TOKENS 512 /* fixed cost of one forward, in token units (launches, head) */
#define BATCH_GCLASSES 3          /* gathered-slot classes per bucket: tiny, few, full */
#define BATCH_GATHER_TINY 16
#define BATCH_GATHER_FEW 80

typedef struct batch_policy {
    int max_tokens;  /* real tokens per pack; >= the longest row */
    int max_rows;    /* rows per pack */
    int exact;       /* 1: no bucket rounding (CPU: no graphs, every slot costs) */
    int n_buckets;
    int bucket[BATCH_MAX_BUCKETS]; /* token capacities, ascending */
} batch_policy;

/* Sets up the policy. max_tokens >= 1, max_rows >= 1; exact as above.
 * -1 with err when the bucket set would not fit BATCH_MAX_BUCKETS. */
int batch_policy_init(batch_policy *p, int max_tokens, int max_rows, int exact, layad_error *err);

/* Token capacity a pack of `tokens` real tokens in `rows` rows runs in: the
 * smallest bucket >= tokens whose row slots hold the rows (exact: tokens
 * itself); -1 when none does. */
int batch_capacity(const batch_policy *p, long tokens, int rows);

/* Row slots of bucket cap: a sixteenth of its tokens, at least 8, at most
 * max_rows. Small buckets hold few rows, so their graphs do not walk the
 * empty row slots of a large batch (spare attention tiles, act-head rows). */
int batch_rows_cap(const batch_policy *p, int cap);

/* Cost of one pack of `tokens` real tokens in `rows` rows, in token units: its
 * capacity plus BATCH_OVERHEAD_TOKENS. The scheduler compares cuts with it. */
long batch_cost(const batch_policy *p, long tokens, int rows);

/* Cuts rows[0..n) (in the given order: packing needs no sort) into contiguous
 * packs of at most max_rows rows and max_tokens tokens, choosing the cut of
 * least total batch_cost (dynamic program over the order, O(n * max_rows)).
 * Writes start[0..k] (start[0] = 0, start[k] = n) and returns k, the number of
 * packs; -1 with err if a row is longer than max_tokens. scratch_cost and
 * scratch_from hold n + 1 entries each (caller-owned, so nothing allocates). */
int batch_cut(const batch_policy *p, const laya_row *rows, int n, int *start, long *scratch_cost,
              int *scratch_from, layad_error *err);

/* How many rows from the front of rows[0..n) fit one pack (greedy, at least
 * the rows that fit; 0 when rows[0] alone is too long). For a linear cost
 * this is also the least-cost cut, so the backends use it to split what they
 * are handed (one pack when the scheduler cut it). */
int batch_take(const batch_policy *p, const laya_row *rows, int n);

/* The kernels' view of one pack (every array caller-owned, sized by the caps):
 *   cu[rows_cap + 1]   row r at slots [cu[r], cu[r+1]); rows past n empty;
 *   ids, pos, ttype [cap]  token id, position in its row, its row's qtype
 *                          (padding slots: pad_id, 0, 0);
 *   tiles[2 * tiles_cap]   attention query tiles (kn_attention_tiles);
 *   goff[rows_cap + 1]     row r's gathered slots [goff[r], goff[r+1]): CLS then markers;
 *   gpos, grow [gcap]      gathered slot -> absolute token slot, its row
 *                          (padding: 0 and -1);
 *   gmask [gcap]           1 for markers, 0 for CLS and padding. */
typedef struct batch_layout {
    int cap, rows_cap, tiles_cap, gcap;
    int32_t *cu, *ids, *pos, *ttype, *tiles, *goff, *gpos, *grow;
    uint8_t *gmask;
    /* filled by batch_pack */
    int n_rows, tokens, gathered, n_tiles;
} batch_layout;

/* Gathered slots of bucket cap in class cls (0: tiny, 1: few, 2: up to cap +
 * rows; never above the last, and equal where a class folds into the next);
 * batch_gclass: the lowest class a pack with `gathered` slots fits. */
int batch_gcap(const batch_policy *p, int cap, int cls);
int batch_gclass(const batch_policy *p, int cap, long gathered);
/* 1 when class cls of bucket cap is a graph shape of its own, 0 when it folds
 * into a lower one (batch_gclass maps its packs there). */
int batch_gclass_own(const batch_policy *p, int cap, int cls);

/* Gathered slots of rows[0..n): one CLS per row plus the markers. */
long batch_gathered(const laya_row *rows, int n);

/* The array sizes of a layout with these caps (tiles_cap derived). */
void batch_layout_caps(batch_layout *l, int cap, int rows_cap, int gcap);

/* Lays rows[0..n) out into l (its arrays and caps set). -1 with err when they
 * do not fit the caps. */
int batch_pack(const laya_row *rows, int n, int pad_id, batch_layout *l, layad_error *err);

#endif
