/*
 * worker.c - see worker.h. A mutex + condition variable mailbox of depth one:
 * the scheduler only submits to an idle worker, so there is never a second
 * batch to hold. Per-forward time goes to laya_inference_seconds{device};
 * the worker's own counters (worker_stats) are relaxed atomics.
 */
#include "server/sched/worker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/base/clock.h"
#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"

struct serve_worker {
    laya_backend *backend[WORKER_MAX_MODELS]; /* one per model, all resident */
    int n_models;
    int device;
    void (*on_done)(void *);
    void *arg;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    serve_batch *todo;  /* submitted, not started */
    serve_batch *done;  /* finished, not taken */
    int stop;
    double spin_s;      /* worker_set_spin */
    int prewake;        /* worker_prewake: poll for spin_s from now */
    _Atomic int sleeping; /* in pthread_cond_wait, or about to be */
    _Atomic long long n_batches, n_forwards, n_failed, n_rows, n_tokens, n_prewakes;
    _Atomic long long busy_ns;
};

int batch_alloc(serve_batch *b, int max_rows, int kmax)
{
    memset(b, 0, sizeof *b);
    b->max_rows = max_rows;
    b->kmax = kmax;
    b->rows = calloc((size_t)max_rows, sizeof *b->rows);
    b->ent = calloc((size_t)max_rows, sizeof *b->ent);
    b->bucket_start = calloc((size_t)max_rows + 1, sizeof *b->bucket_start);
    b->bucket_k = calloc((size_t)max_rows, sizeof *b->bucket_k);
    b->bucket_failed = calloc((size_t)max_rows, sizeof *b->bucket_failed);
    b->bucket_err = calloc((size_t)max_rows, sizeof *b->bucket_err);
    b->logits = calloc((size_t)max_rows * (size_t)kmax, sizeof *b->logits);
    b->act = calloc((size_t)max_rows * LAYA_N_ACT, sizeof *b->act);
    b->bucket_t_end = calloc((size_t)max_rows, sizeof *b->bucket_t_end);
    b->bucket_tm = calloc((size_t)max_rows, sizeof *b->bucket_tm);
    if (!b->rows || !b->ent || !b->bucket_start || !b->bucket_k || !b->bucket_failed || !b->bucket_err ||
        !b->logits || !b->act || !b->bucket_t_end || !b->bucket_tm) {
        batch_free(b);
        return -1;
    }
    return 0;
}

void batch_free(serve_batch *b)
{
    free(b->rows);
    free(b->ent);
    free(b->bucket_start);
    free(b->bucket_k);
    free(b->bucket_failed);
    free(b->bucket_err);
    free(b->logits);
    free(b->act);
    free(b->bucket_t_end);
    free(b->bucket_tm);
    memset(b, 0, sizeof *b);
}

static void run_batch(serve_worker *w, serve_batch *b)
{
    double t0 = layad_now();
    b->t_start = t0;
    for (int k = 0; k < b->n_buckets; k++) {
        int s = b->bucket_start[k], n = b->bucket_start[k + 1] - s;
        double f0 = layad_now();
        layad_error_clear(&b->bucket_err[k]);
        laya_backend *be = w->backend[b->model];
        int rc = be->ops->forward(be, b->rows + s, n, b->bucket_k[k],
                                          b->logits + (size_t)s * (size_t)b->kmax,
                                          b->act + (size_t)s * LAYA_N_ACT, &b->bucket_err[k]);
        b->bucket_failed[k] = rc != 0;
        b->bucket_tm[k] = be->last;
        double t1 = layad_now();
        metrics_inference(w->device, t1 - f0);
        long long toks = 0;
        for (int r = s; r < s + n; r++)
            toks += b->rows[r].len;
        atomic_fetch_add_explicit(&w->n_forwards, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->n_failed, rc != 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->n_rows, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->n_tokens, toks, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->busy_ns, (long long)((t1 - f0) * 1e9), memory_order_relaxed);
        b->bucket_t_end[k] = t1 - t0;
        atomic_store_explicit(&b->buckets_done, k + 1, memory_order_release);
        if (k + 1 < b->n_buckets)
            w->on_done(w->arg); /* let the loop answer this bucket's requests now */
    }
    b->infer_s = layad_now() - t0;
    atomic_fetch_add_explicit(&w->n_batches, 1, memory_order_relaxed);
}

/* With w->lock held: returns once a batch is submitted or stop is set. For
 * spin_s after the last batch the thread polls instead of sleeping: a wake
 * through the condition variable costs tens of microseconds on a virtual
 * machine, about what a lone request spends in a whole serving stage, while
 * a poll sees the next batch within a microsecond. */
static void wait_todo(serve_worker *w, double last_done)
{
    for (;;) {
        while (!w->todo && !w->stop && w->spin_s > 0 && layad_now() - last_done < w->spin_s) {
            pthread_mutex_unlock(&w->lock);
            for (int i = 0; i < 32; i++)
                layad_cpu_relax();
            pthread_mutex_lock(&w->lock);
        }
        /* worker_prewake sets prewake only while sleeping reads 1, so one still set here came
         * from a stale read (this thread had just woken for a batch): it would cost a spin */
        w->prewake = 0;
        atomic_store_explicit(&w->sleeping, 1, memory_order_relaxed);
        while (!w->todo && !w->stop && !w->prewake)
            pthread_cond_wait(&w->wake, &w->lock);
        atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
        if (w->todo || w->stop)
            return;
        /* a request is on its way (worker_prewake): poll for it */
        atomic_fetch_add_explicit(&w->n_prewakes, 1, memory_order_relaxed);
        last_done = layad_now();
    }
}

static void *worker_main(void *arg)
{
    serve_worker *w = arg;
    double last_done = 0;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        /* Deferred backend work (a graph for a shape first met while serving)
         * runs only while no batch waits, one piece at a time. */
        while (!w->todo && !w->stop) {
            pthread_mutex_unlock(&w->lock);
            int did = 0;
            for (int m = 0; m < w->n_models && !did; m++)
                if (w->backend[m]->ops->idle)
                    did = w->backend[m]->ops->idle(w->backend[m]);
            pthread_mutex_lock(&w->lock);
            if (!did)
                break;
        }
        wait_todo(w, last_done);
        if (!w->todo)
            break;
        serve_batch *b = w->todo;
        pthread_mutex_unlock(&w->lock);
        run_batch(w, b);
        pthread_mutex_lock(&w->lock);
        w->todo = NULL;
        w->done = b;
        pthread_mutex_unlock(&w->lock);
        w->on_done(w->arg);
        last_done = layad_now();
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

serve_worker *worker_create(laya_backend *const *b, int n_models, int device_index, void (*on_done)(void *),
                            void *arg, layad_error *err)
{
    serve_worker *w = NULL;
    if (n_models < 1 || n_models > WORKER_MAX_MODELS) {
        layad_fail(err, 500, "a worker serves 1 to %d models, not %d", WORKER_MAX_MODELS, n_models);
        goto fail;
    }
    w = calloc(1, sizeof *w);
    if (!w) {
        layad_fail(err, 500, "out of memory (worker)");
        goto fail;
    }
    if (pthread_mutex_init(&w->lock, NULL) || pthread_cond_init(&w->wake, NULL)) {
        layad_fail(err, 500, "pthread init failed (worker)");
        goto fail;
    }
    memcpy(w->backend, b, (size_t)n_models * sizeof *b);
    w->n_models = n_models;
    w->device = device_index;
    w->on_done = on_done;
    w->arg = arg;
    if (pthread_create(&w->thread, NULL, worker_main, w)) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        layad_fail(err, 500, "cannot start worker thread");
        goto fail;
    }
    return w;
fail:
    laya_backends_destroy(b, n_models > WORKER_MAX_MODELS ? WORKER_MAX_MODELS : n_models);
    free(w);
    return NULL;
}

void worker_set_spin(serve_worker *w, double seconds)
{
    pthread_mutex_lock(&w->lock);
    w->spin_s = seconds;
    pthread_mutex_unlock(&w->lock);
}

void worker_prewake(serve_worker *w)
{
    if (!atomic_load_explicit(&w->sleeping, memory_order_relaxed))
        return;
    pthread_mutex_lock(&w->lock);
    w->prewake = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void worker_submit(serve_worker *w, serve_batch *batch)
{
    batch->t_submit = layad_now();
    pthread_mutex_lock(&w->lock);
    w->todo = batch;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

serve_batch *worker_take_done(serve_worker *w)
{
    pthread_mutex_lock(&w->lock);
    serve_batch *b = w->done;
    w->done = NULL;
    pthread_mutex_unlock(&w->lock);
    return b;
}

void worker_stats_get(const serve_worker *w, worker_stats *out)
{
    serve_worker *m = (serve_worker *)w; /* atomic loads of a const object */
    out->batches = atomic_load_explicit(&m->n_batches, memory_order_relaxed);
    out->forwards = atomic_load_explicit(&m->n_forwards, memory_order_relaxed);
    out->failed_forwards = atomic_load_explicit(&m->n_failed, memory_order_relaxed);
    out->rows = atomic_load_explicit(&m->n_rows, memory_order_relaxed);
    out->tokens = atomic_load_explicit(&m->n_tokens, memory_order_relaxed);
    out->busy_s = (double)atomic_load_explicit(&m->busy_ns, memory_order_relaxed) * 1e-9;
    out->prewakes = atomic_load_explicit(&m->n_prewakes, memory_order_relaxed);
}

int worker_device_index(const serve_worker *w)
{
    return w->device;
}

laya_backend *worker_backend(serve_worker *w, int m)
{
    return m >= 0 && m < w->n_models ? w->backend[m] : NULL;
}

void worker_destroy(serve_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    laya_backends_destroy(w->backend, w->n_models);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
