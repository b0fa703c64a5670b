/*
 * gpu_eval.h - shared pieces of `layad-dev parity-fast`, `layad-dev check` and `layad-dev bench`:
 * how two forwards are compared, how forwards are timed, and the fp32
 * reference cache.
 *
 * Comparison is per question type (choice, score, noul) on the numbers a
 * client sees: raw decision logits, calibrated probabilities (softmax of
 * logits / temperature over the row's options, the temperature layad would
 * use), raw act logits and the act probability softmax(act)[0]. Argmax
 * agreement is gated only where the reference's top-2 probability margin
 * exceeds a threshold (ties may legitimately flip under rounding).
 */
#ifndef LAYAD_GPU_EVAL_H
#define LAYAD_GPU_EVAL_H

#include <jansson.h>
#include <stdint.h>

#include "model/checkpoint/checkpoint.h"
#include "model/base/error.h"
#include "model/backend/rows.h"

typedef struct delta_stats {
    double max_dlogit, max_dp, max_dact_logit, max_dact_p;
    /* the maximum is one row's luck: the mean of the rows' max |dp| and how many
     * rows pass 0.01 compare two precisions over the whole sweep */
    double sum_dp;
    int n_dp_over_1e2;
    int n;            /* rows compared */
    int n_agree;      /* argmax equal */
    int n_gated;      /* rows whose reference top-2 margin > threshold */
    int n_gated_agree;
} delta_stats;

/* Outputs of one forward over n rows with K slots: logits [n*K], act [n*2]. */
typedef struct fwd_out {
    float *logits, *act;
    int n, K;
} fwd_out;

int fwd_out_alloc(fwd_out *o, int n, int K, layad_error *err);
void fwd_out_free(fwd_out *o);

/* Adds rows [0, n) to per-type stats st[3] (and to all, if non-NULL),
 * comparing y against the reference x. */
void delta_accum(delta_stats st[3], delta_stats *all, const laya_config *cfg,
                 const laya_row *rows, const fwd_out *x, const fwd_out *y, double margin);

/* {"choice": {...}, "score": {...}, "noul": {...}, "all": {...}} */
json_t *delta_json(const delta_stats st[3], const delta_stats *all);

/* 1 if x and y hold the same bits. */
int fwd_out_identical(const fwd_out *x, const fwd_out *y);

/* Calibrated probabilities of a row: p[0..nm) = softmax(logits / T). */
void row_probs(const laya_config *cfg, const laya_row *row, const float *logits, double *p);

/* fp32 reference cache: logits/act of a row set on a checkpoint, keyed by the
 * checkpoint's sha256 and the row set's hash. load returns 1 when the file
 * exists and matches, 0 when absent or stale, -1 on a read error. */
int ref_save(const char *path, const char *sha256, uint64_t set_hash, const fwd_out *o,
             layad_error *err);
int ref_load(const char *path, const char *sha256, uint64_t set_hash, fwd_out *o,
             layad_error *err);

/* Timing: `warm` untimed forwards, then `groups` groups of `per_group`
 * forwards; per-forward milliseconds of each group in ms[0..groups).
 * Returns 0 or -1. */
typedef int (*fwd_fn)(void *ctx, int iter, layad_error *err);
int time_groups(fwd_fn fn, void *ctx, int warm, int groups, int per_group, double *ms,
                layad_error *err);

/* Median of v[0..n) (sorts a copy). */
double median(const double *v, int n);

/* Host wall clock in milliseconds (monotonic). */
double wall_ms(void);

/* Encoder + head FLOPs of one forward over rows of the given lengths (real
 * tokens, no padding), counting 2 per multiply-add: linear layers, attention
 * scores and values (local layers over their window only). */
double forward_flops(const laya_config *cfg, const int *lens, int n);

/* Bytes of 16-bit weights a forward streams (every linear layer once, the
 * embedding rows touched ignored). */
double forward_weight_bytes(const laya_config *cfg);

#endif
