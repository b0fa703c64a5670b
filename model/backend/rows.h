/*
 * rows.h - the unit of work between the sequence builder and the forward.
 *
 * One row per (state, question): token ids with [CLS]/[SEP]/[MASK] markers
 * already placed (laya-model.md §4.5), the marker positions and the question
 * type. A backend turns n rows into decision logits [n, K] (K = max markers
 * over the rows; slots past a row's markers hold -1e4) and act logits [n, 2].
 * The backend owns nothing a row points to; rows are read-only to it.
 */
#ifndef LAYAD_ROWS_H
#define LAYAD_ROWS_H

#include <stdint.h>

#include "model/base/error.h"

enum laya_qtype { QTYPE_CHOICE = 0, QTYPE_SCORE = 1, QTYPE_NOUL = 2 };

typedef struct laya_row {
    const int32_t *ids;      /* len token ids, len >= 1 */
    int len;
    const int32_t *markers;  /* n_markers positions, each < len, strictly increasing */
    int n_markers;           /* >= 1 */
    int qtype;               /* enum laya_qtype */
} laya_row;

#define LAYA_N_ACT 2          /* act head width; checked against the checkpoint at load */
#define LAYA_MASK_FILL (-1e4f) /* logit of an unused marker slot (upstream masked_fill value) */

typedef struct laya_backend laya_backend;

/* Where the last forward call's time went, in seconds, summed over its packs:
 * host-side layout of the inputs (stage), the device run as the host waits for
 * it (run, from launch to synchronization; on the CPU the whole compute), and
 * inside run the host's launch call (launch: the graph launch or the eager
 * enqueue), the device's span from the input copy's start to the output
 * copy's end (gpu) and those copies (h2d, d2h), as the device timed them with
 * events (0 on the CPU); then the copy of the results out of the staging
 * buffers (unpack). run - gpu is what the host adds around the device's work.
 * The serving path reports these per request (Server-Timing). */
typedef struct laya_fwd_timing {
    double stage_s, run_s, launch_s, gpu_s, h2d_s, d2h_s, unpack_s;
} laya_fwd_timing;

typedef struct laya_backend_ops {
    const char *name; /* "cpu", "cuda" */
    /* Runs the encoder and the decision head over rows[0..n). Writes logits[n*K]
     * (row-major, unused slots LAYA_MASK_FILL) and act[n*LAYA_N_ACT]. K must be
     * >= the max n_markers. Returns 0 or -1 with err set; never allocates on
     * the request path beyond what the backend reserved at start-up. */
    int (*forward)(laya_backend *b, const laya_row *rows, int n, int K,
                   float *logits, float *act, layad_error *err);
    void (*destroy)(laya_backend *b);
    /* Optional (NULL: nothing to do): work the backend deferred off the request
     * path, such as capturing a graph for a shape first met at serving time.
     * Called by the backend's own thread between batches; does one piece and
     * returns 1 if it did something, 0 when nothing is left. */
    int (*idle)(laya_backend *b);
} laya_backend_ops;

struct laya_backend {
    const laya_backend_ops *ops;
    laya_fwd_timing last; /* written by forward; read by its caller after it returns */
};

/* Destroys b[0..n) (NULL entries skipped): the one cleanup of a set of backends. */
static inline void laya_backends_destroy(laya_backend *const *b, int n)
{
    for (int i = 0; i < n; i++)
        if (b[i])
            b[i]->ops->destroy(b[i]);
}

#endif
