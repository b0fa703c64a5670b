/*
 * scheduler.h - the batching scheduler: a libuv loop between HTTP and workers.
 *
 * HTTP threads submit jobs (a parsed request's rows); the loop gathers rows
 * of many jobs for at most batch_window_us (only while a worker is busy: with
 * all of them idle a job goes at once) or until max_batch_rows /
 * max_batch_tokens is reached, cuts them into packs (model/backend/batching.h:
 * rows back to back, a small dynamic program over bucket cost; a batch holds rows of one
 * model, the model of the oldest job that can go) and hands the batch to the
 * least loaded worker (one per device): only an idle worker takes a batch,
 * the one given the fewest tokens so far first, so a slow or busy device
 * never holds work that another free device could run. As each
 * pack of a batch completes, its rows' logits are copied into their
 * requests, and a job whose rows are all done is finished at once: its done() hook runs on the loop
 * thread (the HTTP layer resumes the connection there; formatting happens
 * back on an HTTP thread).
 *
 * Batches are filled fairly: jobs never dispatched go first (up to half the
 * budgets while a split job is waiting, so that one cannot starve), then
 * everything in arrival order. A job larger than a batch is split, and a
 * small job submitted behind it waits at most for the batch in flight.
 *
 * Guarantees: admission is decided at submit, before any work: a job over
 * max_request_tokens is refused (SCHED_REJ_TOO_LARGE, a 413), and the queue is
 * bounded by count (max_queue) and by time: when the work ahead of a new job
 * (queued plus in-flight tokens over the measured throughput, an EWMA of
 * tokens per second of busy worker time) exceeds max_queue_wait_s, submit
 * fails at once with a Retry-After estimate, so a job admitted under overload
 * still starts within about that budget. A job past its deadline is finished
 * with 504, one whose client went away (gone() or scheduler_cancel) with 499;
 * either way its queued rows never run and its late rows are dropped; if a bucket's forward fails, every job with rows in it is
 * retried alone ("solo"), so one bad input cannot fail its neighbours; a
 * solo failure finishes that job with 500. Every submitted job is finished
 * exactly once, also on shutdown (503 past the grace period).
 *
 * Ownership: a job is reference counted (the HTTP side and the scheduler
 * each hold one); the last unref frees the request with it.
 */
#ifndef LAYAD_SERVER_SCHEDULER_H
#define LAYAD_SERVER_SCHEDULER_H

#include <stdatomic.h>
#include <uv.h>

#include "model/base/error.h"
#include "server/api/request.h"
#include "model/backend/rows.h"
#include "server/sched/worker.h"

struct serve_job {
    /* set by the submitter before scheduler_submit, read-only afterwards */
    laya_request *req;
    int model;                  /* the worker backend its rows run on (request_model) */
    const laya_row *rows;
    int n_rows;
    long n_tokens;
    void (*done)(serve_job *j); /* called once, on the loop thread */
    void *user;
    /* optional: 1 when nobody waits for the answer any more (the client hung
     * up). Called on the loop thread, under the queue lock, before each batch
     * that would carry rows of the job: it must be quick and take no lock of
     * the scheduler's. The job is then finished 499 without running. */
    int (*gone)(serve_job *j);
    /* scheduler private (loop thread, or under the queue lock while queued) */
    serve_job *next;
    int next_row, rows_done, in_flight, epoch, solo, queued, finished;
    unsigned long long seen_seq, taken_seq;
    _Atomic int cancelled; /* scheduler_cancel */
    double pending_infer; /* this batch's forward time up to the last bucket with its rows */
    double t_enqueue, deadline, t_dispatch;
    /* result: valid once done() ran */
    int status;           /* 200, or the error status */
    layad_error err;
    double queue_s;       /* enqueue -> first dispatch */
    double infer_s;       /* forward time of the batches that carried its rows */
    /* The serving path of its last batch (on success): handed to the worker
     * -> its thread picked the batch up (wake_s); the forward of the bucket
     * that finished the job (fwd); that forward's end -> the loop thread
     * finished the job (back_s, at t_done). */
    double wake_s, back_s, t_done;
    laya_fwd_timing fwd;
    int retry_after;      /* seconds, set when scheduler_submit refuses it for load */
    _Atomic int refs;
    /* memory: NULL arena: the job is malloc'ed and its last unref frees it and its request.
     * In an arena: the last unref calls release(release_ctx) when set (the owner of the
     * arena takes the memory back), else nothing. */
    arena *mem;
    void (*release)(void *ctx);
    void *release_ctx;
};

/* A job for request r (rows, tokens taken from it); refs = 1 (the caller's). Allocated in
 * a (the request's arena) when a is set, else malloc'ed. */
serve_job *job_create(arena *a, laya_request *r, void (*done)(serve_job *), void *user);
void job_ref(serve_job *j);
void job_unref(serve_job *j); /* the last one frees (or releases) the job and the request */

typedef struct sched_opts {
    int max_queue;
    int batch_window_us;
    int max_batch_rows;
    int max_batch_tokens;
    double request_timeout_s;
    int kmax;                 /* largest n_markers a row may have */
    int exact_cost;           /* 1: the backend runs packs without buckets (CPU) */
    long max_request_tokens;  /* tokens of one job; beyond: SCHED_REJ_TOO_LARGE (0: no limit) */
    double max_queue_wait_s;  /* estimated wait before a new job starts; beyond: REJ_QUEUE_FULL (0: no limit) */
    int worker_spin_us;       /* workers poll this long after a batch before sleeping (worker_set_spin) */
} sched_opts;

/* scheduler_submit's *reason besides the metrics.h ones: rows outside the
 * configured shapes (an internal error), a job over max_request_tokens. */
#define SCHED_REJ_BAD_ROWS (-1)
#define SCHED_REJ_TOO_LARGE (-2)

typedef struct scheduler scheduler;

scheduler *scheduler_create(const sched_opts *o, layad_error *err);

/* Starts a worker owning backend b (device_index labels its metrics). Call
 * before scheduler_run. On failure the backend is destroyed. */
int scheduler_add_worker(scheduler *s, laya_backend *b, int device_index, layad_error *err);
/* The same for a device serving several models: b[m] runs the rows of jobs of
 * model m (all backends stay resident; a batch holds rows of one model). */
int scheduler_add_worker_models(scheduler *s, laya_backend *const *b, int n_models, int device_index,
                                layad_error *err);
int scheduler_n_workers(const scheduler *s);
/* Worker i's backend of model m, or NULL. */
laya_backend *scheduler_backend(scheduler *s, int i, int m);
/* Thread-safe: worker i's counters (workers are numbered in the order they
 * were added). 0, or -1 when there is no worker i. */
int scheduler_worker_stats(const scheduler *s, int i, worker_stats *out);

uv_loop_t *scheduler_loop(scheduler *s);

/* Thread-safe. 0: accepted (the scheduler took a reference); -1: rejected,
 * nothing kept, *reason = REJ_QUEUE_FULL (by count or by estimated wait;
 * j->retry_after says when to come back), REJ_DRAINING (metrics.h),
 * SCHED_REJ_TOO_LARGE or SCHED_REJ_BAD_ROWS (also a model no worker has). */
int scheduler_submit(scheduler *s, serve_job *j, int *reason);

/* Thread-safe: a request is on its way (its headers are in; its body is
 * still to be read and parsed). With worker_spin_us set, a loop thread and
 * workers that sleep are woken now to poll for the spin time, so that their
 * wakes (tens of microseconds each on a virtual machine, one after the other
 * at submit) overlap the body's parse instead of following it. Costs an
 * atomic load per thread when they are awake already, as under load. */
void scheduler_prewake(scheduler *s);

/* Thread-safe: nobody waits for j's answer any more. Its queued rows never
 * run, rows in flight are dropped, and it is finished 499 within one tick
 * (5 ms). Harmless on a finished job; the caller keeps its reference. */
void scheduler_cancel(scheduler *s, serve_job *j);

/* Thread-safe: the estimated seconds before a job submitted now would start
 * (queued and in-flight tokens over the measured throughput; 0 before the
 * first batch completes), and that throughput in tokens/s, all workers. */
double scheduler_est_wait(scheduler *s, double *tokens_per_s);

/* Thread-safe: stop intake (submit answers REJ_DRAINING); queued work continues. */
void scheduler_drain(scheduler *s);
int scheduler_draining(const scheduler *s);
long scheduler_depth(const scheduler *s);   /* queued jobs */
int scheduler_busy(const scheduler *s);     /* workers running a batch */

/* Loop thread: drain, finish queued and in-flight work, then stop the loop.
 * Whatever is not finished grace_s later is answered 503. */
void scheduler_shutdown(scheduler *s, double grace_s);

/* Runs the loop until scheduler_shutdown completes. */
int scheduler_run(scheduler *s);

/* After scheduler_run returned: stops the workers (destroying their backends)
 * and frees everything. */
void scheduler_destroy(scheduler *s);

/* Monotonic clock in seconds (shared by the server files for timings). */
double sched_now(void);

#endif
