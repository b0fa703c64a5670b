/*
 * worker.h - one inference thread that owns the laya_backends of one device:
 * one per served model (all resident), a batch runs on the one of its model.
 *
 * The scheduler hands a worker a prepared batch (rows already sorted and cut
 * into buckets, shortest first; output buffers reserved at start-up); the
 * worker runs one forward per bucket, records each bucket's status and time,
 * publishes it (buckets_done) and calls the completion hook, which wakes the
 * scheduler loop: short rows are answered while longer buckets still run. It never parses,
 * allocates or formats: everything it touches was allocated before serving.
 * One worker per device; the scheduler owns them all and alone decides which
 * device runs what.
 */
#ifndef LAYAD_SERVER_WORKER_H
#define LAYAD_SERVER_WORKER_H

#include <stdatomic.h>

#include "model/base/error.h"
#include "model/backend/rows.h"

typedef struct serve_job serve_job;

/* One row of a batch: where it came from (job, row index, job epoch). */
typedef struct batch_entry {
    serve_job *job;
    int row;
    int epoch;
} batch_entry;

/* A batch in flight. Sized for max_rows rows of up to kmax markers at start-up. */
typedef struct serve_batch {
    int max_rows, kmax;
    int model;             /* which backend of the worker runs it: every row is of this model */
    int n_rows;
    laya_row *rows;        /* [max_rows], sorted by length within the batch */
    batch_entry *ent;      /* [max_rows], parallel to rows */
    int n_buckets;
    int *bucket_start;     /* [max_rows + 1]: bucket b = rows[bucket_start[b] .. bucket_start[b+1]) */
    int *bucket_k;         /* [max_rows]: marker slots of bucket b */
    int *bucket_failed;    /* [max_rows]: 1 when the forward of bucket b failed */
    layad_error *bucket_err; /* [max_rows] */
    float *logits;         /* bucket b writes at logits + bucket_start[b] * kmax, row stride bucket_k[b] */
    float *act;            /* row i at act + i * LAYA_N_ACT */
    double *bucket_t_end;  /* [max_rows]: seconds from the batch start to the end of bucket b */
    laya_fwd_timing *bucket_tm; /* [max_rows]: where bucket b's forward spent its time */
    double t_submit, t_start;   /* monotonic: handed to the worker, picked up by its thread */
    _Atomic int buckets_done; /* buckets whose results are final (worker: release; loop: acquire) */
    double infer_s;        /* wall time of all forwards of the batch */
    long tokens, padded_tokens;
    unsigned long long seq; /* dispatch sequence number (scheduler's) */
} serve_batch;

int batch_alloc(serve_batch *b, int max_rows, int kmax);
void batch_free(serve_batch *b);

typedef struct serve_worker serve_worker;

#define WORKER_MAX_MODELS 8

/* Starts a worker thread owning backends b[0..n_models) (model m's batches run
 * on b[m]; all destroyed by worker_destroy, and on failure here).
 * on_done(arg) is called from the worker thread after each batch. */
serve_worker *worker_create(laya_backend *const *b, int n_models, int device_index, void (*on_done)(void *),
                            void *arg, layad_error *err);

/* After each batch the worker polls for the next one for this long before it
 * sleeps (0, the default: it sleeps at once). Thread-safe. */
void worker_set_spin(serve_worker *w, double seconds);

/* A batch is likely soon: a worker that sleeps wakes and polls for its spin
 * time from now (nothing when it is awake or its spin is 0). Thread-safe;
 * an atomic load when the worker is awake. */
void worker_prewake(serve_worker *w);

/* Hands batch to an idle worker (the caller guarantees it is idle). on_done
 * runs after every bucket and once more when the whole batch is done. */
void worker_submit(serve_worker *w, serve_batch *batch);

/* Returns the finished batch and makes the worker idle again, or NULL while busy. */
serve_batch *worker_take_done(serve_worker *w);

/* Work done by one worker since start (relaxed atomics: any thread may read;
 * /health shows them per device, the tests check where batches went). */
typedef struct worker_stats {
    long long batches;         /* batches run to the end */
    long long forwards;        /* bucket forwards, failed ones included */
    long long failed_forwards;
    long long rows;            /* rows of all forwards */
    long long tokens;          /* real tokens of all forwards */
    double busy_s;             /* wall time spent in forwards */
    long long prewakes;        /* wakes from sleep by worker_prewake */
} worker_stats;

void worker_stats_get(const serve_worker *w, worker_stats *out);

int worker_device_index(const serve_worker *w);
/* Model m's backend, or NULL when there is no model m. */
laya_backend *worker_backend(serve_worker *w, int m);

/* Stops the thread after its current batch, joins it, destroys the backends. */
void worker_destroy(serve_worker *w);

#endif
