/*
 * scheduler.c - the scheduler loop; see scheduler.h, and internal.h for how
 * server/sched/ is divided.
 *
 * Batches are filled from the queue (queue.c: fresh jobs ahead of the rest of
 * split ones), cut into packs (cut.c) and go to the least loaded idle worker
 * (pick_worker). As a worker publishes buckets, on_wake copies their results
 * into the requests and finishes the jobs that are complete; a tick finishes
 * jobs past their deadline (504) or cancelled (499), queued or in flight;
 * shutdown stops intake, lets queued and in-flight work finish within the
 * grace period and answers the rest 503.
 */
#include "server/sched/scheduler.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/base/clock.h"
#include "server/sched/internal.h"
#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"

#define TICK_MS 5                   /* deadline scan period */

double sched_now(void)
{
    return layad_now();
}

/* ---- dispatch -------------------------------------------------------------- */

static void arm_window(scheduler *s, double remaining_s);
static void finish_dead(scheduler *s, serve_job *list, double now);

/* The least loaded worker that can take a batch now, or -1. A worker holds
 * at most one batch (its mailbox has depth one), so only idle workers (no
 * rows in flight) qualify: a slow or busy device never gets a second batch
 * while another is free, and the queue waits for whichever device frees
 * first. Among idle workers, the one given the fewest padded tokens so far,
 * then the lowest index, so that light load spreads over every device. */
static int pick_worker(const scheduler *s)
{
    int best = -1;
    for (int w = 0; w < s->n_workers; w++) {
        if (s->busy[w])
            continue;
        if (best < 0 || s->given_tokens[w] < s->given_tokens[best])
            best = w;
    }
    return best;
}

/* Publishes the worker the next batch would go to, for scheduler_prewake: the loop owns busy
 * and given_tokens, so another thread reads only this. */
static void publish_next(scheduler *s)
{
    atomic_store_explicit(&s->next_worker, pick_worker(s), memory_order_relaxed);
}

/* Cuts worker w's batch (rows already taken) into buckets and hands it over. */
static void launch(scheduler *s, int w)
{
    serve_batch *b = &s->batches[w];
    cut_buckets(s, b);
    metrics_batch(b->n_rows, b->tokens, b->padded_tokens);
    s->busy[w] = 1;
    s->given_tokens[w] += b->padded_tokens;
    s->buckets_seen[w] = 0;
    atomic_store_explicit(&b->buckets_done, 0, memory_order_relaxed);
    worker_submit(s->workers[w], b);
    publish_next(s);
}

static int any_busy(const scheduler *s)
{
    for (int w = 0; w < s->n_workers; w++)
        if (s->busy[w])
            return 1;
    return 0;
}

/* Gives batches to idle workers while the queue has rows and the batch window
 * of its head job is over (or the budgets are full, or shutdown began);
 * otherwise arms the window timer. With every worker idle there is no window:
 * nothing is running for rows to gather behind, so waiting would only add
 * its length to a lone request; under load the rows that arrive while the
 * workers are busy form the next batch anyway. */
static void dispatch(scheduler *s)
{
    double now = sched_now();
    for (;;) {
        int w = pick_worker(s);
        if (w < 0)
            break;
        const int idle = !any_busy(s);
        uv_mutex_lock(&s->lock);
        if (!s->head) {
            uv_mutex_unlock(&s->lock);
            break;
        }
        double waited = now - s->head->t_enqueue;
        double window = s->o.batch_window_us * 1e-6;
        int full = s->q_rows >= s->o.max_batch_rows || s->q_tokens >= s->o.max_batch_tokens;
        if (!full && !idle && waited < window && !s->shutting_down) {
            double rem = window - waited;
            uv_mutex_unlock(&s->lock);
            if (rem >= 0.001) {
                arm_window(s, rem);
                break;
            }
            /* Sub-millisecond windows are below libuv's timer resolution:
             * wait them out here (submits keep landing in the queue). */
            struct timespec ts = {0, (long)(rem * 1e9) + 1000};
            nanosleep(&ts, NULL);
            now = sched_now();
            continue;
        }
        int n = queue_take_rows(s, &s->batches[w], now);
        serve_job *dropped = s->dropped;
        s->dropped = NULL;
        queue_depth_metric(s);
        uv_mutex_unlock(&s->lock);
        finish_dead(s, dropped, now);
        if (n == 0)
            continue; /* the queue dropped an exhausted head job: it shrank */
        launch(s, w);
    }
}

static void on_window(uv_timer_t *t)
{
    scheduler *s = t->data;
    s->window_armed = 0;
    dispatch(s);
    poll_keep(s);
}

static void arm_window(scheduler *s, double remaining_s)
{
    if (s->window_armed)
        return;
    uint64_t ms = (uint64_t)(remaining_s * 1000.0 + 0.999);
    /* libuv timers have millisecond resolution; a sub-millisecond window
     * rounds up to the next loop turn, which is what we want anyway. */
    if (ms == 0)
        ms = 1;
    s->window_armed = 1;
    uv_timer_start(&s->window, on_window, ms, 0);
}

/* ---- completion --------------------------------------------------------------- */

/* Row i of bucket q failed: a solo job is answered 500, any other is retried alone. */
static void fail_row(scheduler *s, serve_batch *b, int q, serve_job *j)
{
    if (j->solo) {
        log_msg("error", "forward failed for a request run alone: %s", b->bucket_err[q].msg);
        layad_error e = b->bucket_err[q];
        e.status = 500;
        j->infer_s += b->bucket_t_end[q];
        job_finish(j, 500, &e);
    } else {
        log_msg("warn", "batch forward failed (%s); retrying its requests one by one", b->bucket_err[q].msg);
        queue_requeue_solo(s, j);
    }
}

/* The serving-path stages of job j, whose last row was in bucket q of b. */
static void job_stages(serve_job *j, const serve_batch *b, int q)
{
    j->wake_s = b->t_start - b->t_submit;
    j->fwd = b->bucket_tm[q];
    j->t_done = sched_now();
    j->back_s = j->t_done - (b->t_start + b->bucket_t_end[q]);
}

/* Copies the results of buckets [*seen, done) into their requests and
 * finishes the jobs whose rows are now all done (loop thread). */
static void complete_buckets(scheduler *s, serve_batch *b, int *seen, int done)
{
    for (int q = *seen; q < done; q++) {
        int st = b->bucket_start[q], en = b->bucket_start[q + 1], K = b->bucket_k[q];
        const float *lg = b->logits + (size_t)st * (size_t)b->kmax;
        for (int i = st; i < en; i++) {
            serve_job *j = b->ent[i].job;
            if (j->finished || b->ent[i].epoch != j->epoch)
                continue; /* late (504) or superseded by a retry: dropped */
            if (b->bucket_failed[q]) {
                fail_row(s, b, q, j);
                continue;
            }
            int row = b->ent[i].row;
            memcpy(request_row_logits(j->req, row), lg + (size_t)(i - st) * (size_t)K,
                   (size_t)j->rows[row].n_markers * sizeof(float));
            memcpy(request_row_act(j->req, row), b->act + (size_t)i * LAYA_N_ACT, LAYA_N_ACT * sizeof(float));
            j->pending_infer = b->bucket_t_end[q];
            if (++j->rows_done == j->n_rows) {
                job_stages(j, b, q);
                j->infer_s += j->pending_infer; /* timing is final before done() hands j over */
                j->pending_infer = 0;
                job_finish(j, 200, NULL);
            }
        }
    }
    *seen = done;
}

/* The whole batch is back: every job of it was counted in_flight once;
 * unfinished ones keep this batch's forward time, then all are released. */
static void complete_batch(scheduler *s, serve_batch *b, int *seen)
{
    complete_buckets(s, b, seen, b->n_buckets);
    uv_mutex_lock(&s->lock);
    queue_batch_back(s, b->tokens, b->n_buckets > 0 ? b->bucket_t_end[b->n_buckets - 1] : 0);
    uv_mutex_unlock(&s->lock);
    int nd = 0;
    for (int i = 0; i < b->n_rows; i++) {
        serve_job *j = b->ent[i].job;
        if (j->seen_seq == b->seq)
            continue;
        j->seen_seq = b->seq;
        if (!j->finished) {
            j->infer_s += j->pending_infer;
            j->pending_infer = 0;
        }
        s->scratch[nd++] = j;
    }
    for (int i = 0; i < nd; i++) {
        s->scratch[i]->in_flight--;
        job_release_if_idle(s->scratch[i]);
    }
    b->n_rows = 0;
}

static void maybe_stop(scheduler *s);

static void on_wake(uv_async_t *a)
{
    scheduler *s = a->data;
    for (int w = 0; w < s->n_workers; w++) {
        if (!s->busy[w])
            continue;
        serve_batch *b = &s->batches[w];
        if (worker_take_done(s->workers[w])) {
            s->busy[w] = 0;
            publish_next(s);
            complete_batch(s, b, &s->buckets_seen[w]);
        } else {
            int done = atomic_load_explicit(&b->buckets_done, memory_order_acquire);
            if (done > s->buckets_seen[w])
                complete_buckets(s, b, &s->buckets_seen[w], done);
        }
    }
    dispatch(s);
    poll_keep(s);
    maybe_stop(s);
}

static void worker_done_cb(void *arg)
{
    scheduler *s = arg;
    uv_async_send(&s->wake);
}

/* ---- deadlines and shutdown ---------------------------------------------------- */

/* The answer for a job that must not run on: 499 when cancelled (its client
 * went away), else 504 (its deadline passed). */
static void finish_late(serve_job *j)
{
    layad_error e;
    if (atomic_load(&j->cancelled))
        layad_fail(&e, 499, "the client went away before the answer");
    else
        layad_fail(&e, 504, "the request waited past its deadline");
    job_finish(j, e.status, &e); /* job_finish counts the 504s */
}

/* Finishes the jobs unlinked from the queue (list; job_finish does nothing
 * on one finished already), each as finish_late says, and releases them. */
static void finish_dead(scheduler *s, serve_job *list, double now)
{
    (void)s;
    (void)now;
    for (serve_job *j = list, *nx; j; j = nx) {
        nx = j->next;
        j->next = NULL;
        finish_late(j);
        job_release_if_idle(j);
    }
}

/* Finishes with e the jobs evicted from the queue (list), then the unfinished
 * jobs in flight, all of them: their rows are dropped when the batch returns.
 * Each answer also counts as rejection `reject`. */
static void finish_all(scheduler *s, serve_job *list, const layad_error *e, int reject)
{
    for (serve_job *j = list, *nx; j; j = nx) {
        nx = j->next;
        j->next = NULL;
        metrics_reject(reject);
        job_finish(j, e->status, e);
        job_release_if_idle(j);
    }
    for (int w = 0; w < s->n_workers; w++) {
        if (!s->busy[w])
            continue;
        serve_batch *b = &s->batches[w];
        for (int i = 0; i < b->n_rows; i++) {
            serve_job *j = b->ent[i].job;
            if (!j->finished) {
                metrics_reject(reject);
                job_finish(j, e->status, e);
            }
        }
    }
}

/* Jobs past their deadline or cancelled: queued ones are unlinked, those in
 * flight finished now (their rows are dropped when the batch returns). */
static void expire(scheduler *s, double now)
{
    finish_dead(s, queue_evict(s, 0, now), now);
    for (int w = 0; w < s->n_workers; w++) {
        if (!s->busy[w])
            continue;
        serve_batch *b = &s->batches[w];
        for (int i = 0; i < b->n_rows; i++) {
            serve_job *j = b->ent[i].job;
            if (!j->finished && (now >= j->deadline || atomic_load(&j->cancelled)))
                finish_late(j);
        }
    }
}

static void on_tick(uv_timer_t *t)
{
    scheduler *s = t->data;
    expire(s, sched_now());
    maybe_stop(s);
}

static void fail_everything(scheduler *s)
{
    layad_error e;
    layad_fail(&e, 503, "the server is shutting down");
    serve_job *list = queue_evict(s, 1, 0);
    finish_all(s, list, &e, REJ_DRAINING);
}

static void maybe_stop(scheduler *s)
{
    if (!s->shutting_down || s->stopped)
        return;
    int empty = queue_empty(s);
    for (int w = 0; w < s->n_workers; w++)
        if (s->busy[w])
            return;
    if (!empty)
        return;
    s->stopped = 1;
    uv_stop(&s->loop);
}

static void on_grace(uv_timer_t *t)
{
    scheduler *s = t->data;
    s->grace_over = 1;
    log_msg("warn", "shutdown grace period over; answering the remaining requests 503");
    fail_everything(s);
    maybe_stop(s);
}

void scheduler_shutdown(scheduler *s, double grace_s)
{
    scheduler_drain(s);
    if (s->shutting_down)
        return;
    s->shutting_down = 1;
    uv_timer_start(&s->grace, on_grace, (uint64_t)(grace_s * 1000.0), 0);
    dispatch(s); /* no more waiting for the window */
    maybe_stop(s);
}

/* ---- set-up, accessors, teardown ------------------------------------------------ */

scheduler *scheduler_create(const sched_opts *o, layad_error *err)
{
    scheduler *s = calloc(1, sizeof *s);
    if (!s) {
        layad_fail(err, 500, "out of memory (scheduler)");
        return NULL;
    }
    s->o = *o;
    s->scratch = calloc((size_t)o->max_batch_rows, sizeof *s->scratch);
    if (!s->scratch) {
        layad_fail(err, 500, "out of memory (scheduler)");
        goto fail;
    }
    if (cut_init(&s->cut, o->max_batch_rows, o->max_batch_tokens, o->exact_cost, err))
        goto fail;
    if (uv_loop_init(&s->loop)) {
        layad_fail(err, 500, "cannot set up the scheduler loop");
        goto fail;
    }
    if (uv_mutex_init(&s->lock)) {
        uv_loop_close(&s->loop);
        layad_fail(err, 500, "cannot set up the scheduler lock");
        goto fail;
    }
    uv_async_init(&s->loop, &s->wake, on_wake);
    uv_timer_init(&s->loop, &s->window);
    uv_timer_init(&s->loop, &s->tick);
    uv_timer_init(&s->loop, &s->grace);
    s->wake.data = s->window.data = s->tick.data = s->grace.data = s;
    poll_init(s);
    uv_timer_start(&s->tick, on_tick, TICK_MS, TICK_MS);
    return s;
fail:
    free(s->scratch);
    cut_free(&s->cut);
    free(s);
    return NULL;
}
int scheduler_add_worker_models(scheduler *s, laya_backend *const *b, int n_models, int device_index,
                                layad_error *err)
{
    int w = s->n_workers;
    const int models_differ = w > 0 && n_models != s->n_models;
    if (w >= MAX_WORKERS || models_differ || batch_alloc(&s->batches[w], s->o.max_batch_rows, s->o.kmax)) {
        laya_backends_destroy(b, n_models);
        return w >= MAX_WORKERS ? layad_fail(err, 500, "too many workers (max %d)", MAX_WORKERS)
               : models_differ  ? layad_fail(err, 500, "every worker serves the same %d models", s->n_models)
                                : layad_fail(err, 500, "out of memory (batch buffers)");
    }
    s->workers[w] = worker_create(b, n_models, device_index, worker_done_cb, s, err); /* frees b on failure */
    if (!s->workers[w]) {
        batch_free(&s->batches[w]);
        return -1;
    }
    worker_set_spin(s->workers[w], s->o.worker_spin_us * 1e-6);
    s->n_models = n_models;
    s->n_workers++;
    return 0;
}

int scheduler_add_worker(scheduler *s, laya_backend *b, int device_index, layad_error *err)
{
    return scheduler_add_worker_models(s, &b, 1, device_index, err);
}

int scheduler_n_workers(const scheduler *s)
{
    return s->n_workers;
}

int scheduler_worker_stats(const scheduler *s, int i, worker_stats *out)
{
    if (i < 0 || i >= s->n_workers)
        return -1;
    worker_stats_get(s->workers[i], out);
    return 0;
}

laya_backend *scheduler_backend(scheduler *s, int i, int m)
{
    return i >= 0 && i < s->n_workers ? worker_backend(s->workers[i], m) : NULL;
}

uv_loop_t *scheduler_loop(scheduler *s)
{
    return &s->loop;
}

int scheduler_busy(const scheduler *s)
{
    int n = 0;
    for (int w = 0; w < s->n_workers; w++)
        n += s->busy[w];
    return n;
}

int scheduler_run(scheduler *s)
{
    return uv_run(&s->loop, UV_RUN_DEFAULT);
}

static void close_cb(uv_handle_t *h)
{
    (void)h;
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, close_cb);
}

void scheduler_destroy(scheduler *s)
{
    if (!s)
        return;
    for (int w = 0; w < s->n_workers; w++) {
        worker_destroy(s->workers[w]);
        batch_free(&s->batches[w]);
    }
    uv_walk(&s->loop, close_walk, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&s->loop))
        log_msg("warn", "scheduler loop closed with live handles");
    uv_mutex_destroy(&s->lock);
    free(s->scratch);
    cut_free(&s->cut);
    free(s);
}
