/*
 * scheduler.c - see scheduler.h.
 *
 * Threads: HTTP threads only touch the queue (under `lock`) and wake the loop
 * with uv_async_send; workers wake it the same way when a batch is done;
 * everything else runs on the loop thread. Batches are cut from the queue
 * head in FIFO order and go to the least loaded idle worker (pick_worker);
 * a job larger than the budgets is split over several batches (it stays at
 * the head until all its rows are out).
 *
 * Bucket cutting: rows sorted by length; a bucket of n rows whose longest row
 * has L tokens costs pow2(n) * pad(L) + FORWARD_OVERHEAD_TOKENS (pad: a
 * multiple of 16 up to 256, of 64 beyond, as the GPU buckets are shaped); an
 * O(n^2) dynamic program over the sorted rows picks the cheapest contiguous
 * cut. n <= max_batch_rows, so this is a few thousand steps per batch.
 */
#include "server/sched/scheduler.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"

#define MAX_WORKERS 16
#define FORWARD_OVERHEAD_TOKENS 512 /* fixed cost of one forward, in padded-token units */
#define TICK_MS 5                   /* deadline scan period */

struct scheduler {
    sched_opts o;
    uv_loop_t loop;
    uv_async_t wake;       /* submit or batch done */
    uv_timer_t window;     /* batch window expiry */
    uv_timer_t tick;       /* deadlines */
    uv_timer_t grace;      /* shutdown grace */
    int window_armed;

    uv_mutex_t lock;       /* guards the queue fields and draining */
    serve_job *head, *tail;
    long depth;            /* jobs queued */
    long q_rows, q_tokens; /* rows/tokens not yet dispatched */
    int draining;

    int n_workers;
    serve_worker *workers[MAX_WORKERS];
    serve_batch batches[MAX_WORKERS];
    int busy[MAX_WORKERS];
    int buckets_seen[MAX_WORKERS]; /* buckets of the worker's batch already answered */
    long long given_tokens[MAX_WORKERS]; /* padded tokens dispatched to each worker so far */
    unsigned long long seq;

    int shutting_down, grace_over, stopped;
    serve_job **scratch;   /* distinct jobs of a batch, [max_batch_rows] */
    int *dp_cost_from;     /* DP scratch, [max_batch_rows + 1] */
    long *dp_cost;
    int *order;            /* sort scratch, [max_batch_rows] */
};

double sched_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- jobs ---------------------------------------------------------------- */

serve_job *job_create(laya_request *r, void (*done)(serve_job *), void *user)
{
    serve_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->req = r;
    j->rows = request_rows(r);
    j->n_rows = request_n_rows(r);
    j->n_tokens = request_n_tokens(r);
    j->done = done;
    j->user = user;
    atomic_init(&j->refs, 1);
    return j;
}

void job_ref(serve_job *j)
{
    atomic_fetch_add(&j->refs, 1);
}

void job_unref(serve_job *j)
{
    if (j && atomic_fetch_sub(&j->refs, 1) == 1) {
        request_free(j->req);
        free(j);
    }
}

/* ---- helpers --------------------------------------------------------------- */

static int pad_tokens(int len)
{
    if (len <= 256)
        return (len + 15) / 16 * 16;
    return (len + 63) / 64 * 64;
}

static long pow2(long n)
{
    long p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static void update_depth_metric(scheduler *s)
{
    metrics_queue_depth(s->depth);
}

/* Finishes a job (loop thread). Drops the scheduler's reference when nothing
 * of the scheduler still points at it. */
static void job_finish(scheduler *s, serve_job *j, int status, const layad_error *err)
{
    (void)s;
    if (j->finished)
        return;
    j->finished = 1;
    j->status = status;
    if (err)
        j->err = *err;
    if (status == 504)
        metrics_reject(REJ_DEADLINE);
    j->done(j);
}

static void job_release_if_idle(serve_job *j)
{
    if (j->finished && !j->queued && j->in_flight == 0)
        job_unref(j);
}

/* Unlinks j from the queue (lock held). */
static void queue_remove(scheduler *s, serve_job *j)
{
    serve_job **pp = &s->head, *prev = NULL;
    while (*pp && *pp != j) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = j->next;
    if (s->tail == j)
        s->tail = prev;
    j->next = NULL;
    j->queued = 0;
    s->depth--;
    for (int r = j->next_row; r < j->n_rows; r++)
        s->q_tokens -= j->rows[r].len;
    s->q_rows -= j->n_rows - j->next_row;
}

/* ---- batch formation ---------------------------------------------------- */

static int cmp_len(const void *a, const void *b, void *ctx)
{
    const serve_batch *bt = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int lx = bt->rows[x].len, ly = bt->rows[y].len;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Sorts the batch rows by length (stable by arrival) and cuts buckets. */
static void cut_buckets(scheduler *s, serve_batch *b)
{
    int n = b->n_rows;
    for (int i = 0; i < n; i++)
        s->order[i] = i;
    qsort_r(s->order, (size_t)n, sizeof *s->order, cmp_len, b);
    /* Apply the permutation in place by following its cycles (no scratch rows). */
    for (int i = 0; i < n; i++) {
        if (s->order[i] < 0)
            continue;
        int cur = i;
        laya_row tr = b->rows[i];
        batch_entry te = b->ent[i];
        for (;;) {
            int src = s->order[cur];
            s->order[cur] = -1;
            if (src == i) {
                b->rows[cur] = tr;
                b->ent[cur] = te;
                break;
            }
            b->rows[cur] = b->rows[src];
            b->ent[cur] = b->ent[src];
            cur = src;
        }
    }
    /* DP: dp[i] = cheapest cut of rows[0..i). */
    long *dp = s->dp_cost;
    int *from = s->dp_cost_from;
    dp[0] = 0;
    for (int i = 1; i <= n; i++) {
        long best = -1;
        int arg = 0;
        long L = pad_tokens(b->rows[i - 1].len);
        for (int j = 0; j < i; j++) {
            long c = dp[j] + pow2(i - j) * L + FORWARD_OVERHEAD_TOKENS;
            if (best < 0 || c < best) {
                best = c;
                arg = j;
            }
        }
        dp[i] = best;
        from[i] = arg;
    }
    int nb = 0;
    for (int i = n; i > 0; i = from[i])
        nb++;
    b->n_buckets = nb;
    int k = nb;
    b->bucket_start[nb] = n;
    for (int i = n; i > 0; i = from[i])
        b->bucket_start[--k] = from[i];
    b->tokens = 0;
    b->padded_tokens = 0;
    for (int q = 0; q < nb; q++) {
        int st = b->bucket_start[q], en = b->bucket_start[q + 1], K = 1;
        for (int r = st; r < en; r++) {
            if (b->rows[r].n_markers > K)
                K = b->rows[r].n_markers;
            b->tokens += b->rows[r].len;
        }
        b->bucket_k[q] = K;
        b->padded_tokens += pow2(en - st) * pad_tokens(b->rows[en - 1].len);
    }
}

/* Takes rows from the queue head into b (lock held). Returns rows taken. */
static int take_rows(scheduler *s, serve_batch *b, double now)
{
    int n = 0;
    long tokens = 0;
    b->seq = ++s->seq;
    while (s->head) {
        serve_job *j = s->head;
        if (j->solo && n > 0)
            break;
        int took = 0;
        while (j->next_row < j->n_rows && n < s->o.max_batch_rows) {
            const laya_row *r = &j->rows[j->next_row];
            if (n > 0 && tokens + r->len > s->o.max_batch_tokens)
                break;
            b->rows[n] = *r;
            b->ent[n] = (batch_entry){j, j->next_row, j->epoch};
            tokens += r->len;
            s->q_tokens -= r->len;
            s->q_rows--;
            j->next_row++;
            n++;
            took = 1;
        }
        if (took) {
            j->in_flight++;
            if (j->t_dispatch == 0) {
                j->t_dispatch = now;
                j->queue_s = now - j->t_enqueue;
                metrics_observe(H_QUEUE_WAIT, j->queue_s);
            }
        }
        if (j->next_row < j->n_rows)
            break; /* budget full; the rest of j goes next */
        s->head = j->next;
        if (!s->head)
            s->tail = NULL;
        j->next = NULL;
        j->queued = 0;
        s->depth--;
        if (j->solo)
            break;
    }
    b->n_rows = n;
    return n;
}

static void arm_window(scheduler *s, double remaining_s);

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

static void dispatch(scheduler *s)
{
    double now = sched_now();
    for (;;) {
        int w = pick_worker(s);
        if (w < 0)
            break;
        uv_mutex_lock(&s->lock);
        if (!s->head) {
            uv_mutex_unlock(&s->lock);
            break;
        }
        double waited = now - s->head->t_enqueue;
        double window = s->o.batch_window_us * 1e-6;
        int full = s->q_rows >= s->o.max_batch_rows || s->q_tokens >= s->o.max_batch_tokens;
        if (!full && waited < window && !s->shutting_down) {
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
        serve_batch *b = &s->batches[w];
        int n = take_rows(s, b, now);
        update_depth_metric(s);
        uv_mutex_unlock(&s->lock);
        if (n == 0)
            continue; /* take_rows dropped an exhausted head job: the queue shrank */
        cut_buckets(s, b);
        metrics_observe(H_BATCH_ROWS, b->n_rows);
        metrics_observe(H_BATCH_TOKENS, (double)b->tokens);
        metrics_observe(H_PADDING_RATIO, b->tokens ? (double)b->padded_tokens / (double)b->tokens : 1.0);
        s->busy[w] = 1;
        s->given_tokens[w] += b->padded_tokens;
        s->buckets_seen[w] = 0;
        atomic_store_explicit(&b->buckets_done, 0, memory_order_relaxed);
        worker_submit(s->workers[w], b);
    }
}

static void on_window(uv_timer_t *t)
{
    scheduler *s = t->data;
    s->window_armed = 0;
    dispatch(s);
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

static void requeue_solo(scheduler *s, serve_job *j)
{
    j->epoch++;
    j->solo = 1;
    j->rows_done = 0;
    uv_mutex_lock(&s->lock);
    if (j->queued) {
        for (int r = 0; r < j->next_row; r++)
            s->q_tokens += j->rows[r].len;
        s->q_rows += j->next_row;
        j->next_row = 0;
    } else {
        j->next_row = 0;
        j->queued = 1;
        j->next = s->head;
        s->head = j;
        if (!s->tail)
            s->tail = j;
        s->depth++;
        s->q_rows += j->n_rows;
        s->q_tokens += j->n_tokens;
    }
    update_depth_metric(s);
    uv_mutex_unlock(&s->lock);
}

/* Copies the results of buckets [b->buckets_seen, done) into their requests
 * and finishes the jobs whose rows are now all done (loop thread). */
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
                if (j->solo) {
                    log_msg("error", "forward failed for a request run alone: %s", b->bucket_err[q].msg);
                    layad_error e = b->bucket_err[q];
                    e.status = 500;
                    j->infer_s += b->bucket_t_end[q];
                    job_finish(s, j, 500, &e);
                } else {
                    log_msg("warn", "batch forward failed (%s); retrying its requests one by one",
                            b->bucket_err[q].msg);
                    requeue_solo(s, j);
                }
                continue;
            }
            int row = b->ent[i].row;
            memcpy(request_row_logits(j->req, row), lg + (size_t)(i - st) * (size_t)K,
                   (size_t)j->rows[row].n_markers * sizeof(float));
            memcpy(request_row_act(j->req, row), b->act + (size_t)i * LAYA_N_ACT, LAYA_N_ACT * sizeof(float));
            j->pending_infer = b->bucket_t_end[q];
            if (++j->rows_done == j->n_rows) {
                j->infer_s += j->pending_infer; /* timing is final before done() hands j over */
                j->pending_infer = 0;
                job_finish(s, j, 200, NULL);
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
            complete_batch(s, b, &s->buckets_seen[w]);
        } else {
            int done = atomic_load_explicit(&b->buckets_done, memory_order_acquire);
            if (done > s->buckets_seen[w])
                complete_buckets(s, b, &s->buckets_seen[w], done);
        }
    }
    dispatch(s);
    maybe_stop(s);
}

static void worker_done_cb(void *arg)
{
    scheduler *s = arg;
    uv_async_send(&s->wake);
}

/* ---- deadlines -------------------------------------------------------------- */

static void expire(scheduler *s, double now)
{
    /* Queued jobs past their deadline leave the queue; in-flight ones are
     * answered now and their rows dropped when the batch returns. */
    serve_job *expired = NULL;
    uv_mutex_lock(&s->lock);
    for (serve_job *j = s->head, *nx; j; j = nx) {
        nx = j->next;
        if (now >= j->deadline) {
            queue_remove(s, j);
            j->next = expired;
            expired = j;
        }
    }
    update_depth_metric(s);
    uv_mutex_unlock(&s->lock);
    layad_error e;
    layad_fail(&e, 504, "the request waited past its deadline");
    for (serve_job *j = expired, *nx; j; j = nx) {
        nx = j->next;
        j->next = NULL;
        job_finish(s, j, 504, &e);
        job_release_if_idle(j);
    }
    for (int w = 0; w < s->n_workers; w++) {
        if (!s->busy[w])
            continue;
        serve_batch *b = &s->batches[w];
        for (int i = 0; i < b->n_rows; i++) {
            serve_job *j = b->ent[i].job;
            if (!j->finished && now >= j->deadline)
                job_finish(s, j, 504, &e);
        }
    }
}

static void on_tick(uv_timer_t *t)
{
    scheduler *s = t->data;
    expire(s, sched_now());
    maybe_stop(s);
}

/* ---- shutdown ---------------------------------------------------------------- */

static void fail_everything(scheduler *s)
{
    layad_error e;
    layad_fail(&e, 503, "the server is shutting down");
    serve_job *list = NULL;
    uv_mutex_lock(&s->lock);
    while (s->head) {
        serve_job *j = s->head;
        queue_remove(s, j);
        j->next = list;
        list = j;
    }
    update_depth_metric(s);
    uv_mutex_unlock(&s->lock);
    for (serve_job *j = list, *nx; j; j = nx) {
        nx = j->next;
        j->next = NULL;
        metrics_reject(REJ_DRAINING);
        job_finish(s, j, 503, &e);
        job_release_if_idle(j);
    }
    for (int w = 0; w < s->n_workers; w++) {
        if (!s->busy[w])
            continue;
        serve_batch *b = &s->batches[w];
        for (int i = 0; i < b->n_rows; i++)
            if (!b->ent[i].job->finished) {
                metrics_reject(REJ_DRAINING);
                job_finish(s, b->ent[i].job, 503, &e);
            }
    }
}

static void maybe_stop(scheduler *s)
{
    if (!s->shutting_down || s->stopped)
        return;
    uv_mutex_lock(&s->lock);
    int empty = s->head == NULL;
    uv_mutex_unlock(&s->lock);
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

/* ---- public ------------------------------------------------------------------ */

scheduler *scheduler_create(const sched_opts *o, layad_error *err)
{
    scheduler *s = calloc(1, sizeof *s);
    if (!s) {
        layad_fail(err, 500, "out of memory (scheduler)");
        return NULL;
    }
    s->o = *o;
    size_t n = (size_t)o->max_batch_rows;
    s->scratch = calloc(n, sizeof *s->scratch);
    s->dp_cost_from = calloc(n + 1, sizeof *s->dp_cost_from);
    s->dp_cost = calloc(n + 1, sizeof *s->dp_cost);
    s->order = calloc(n, sizeof *s->order);
    if (!s->scratch || !s->dp_cost_from || !s->dp_cost || !s->order)
        goto fail;
    if (uv_loop_init(&s->loop))
        goto fail;
    if (uv_mutex_init(&s->lock)) {
        uv_loop_close(&s->loop);
        goto fail;
    }
    uv_async_init(&s->loop, &s->wake, on_wake);
    uv_timer_init(&s->loop, &s->window);
    uv_timer_init(&s->loop, &s->tick);
    uv_timer_init(&s->loop, &s->grace);
    s->wake.data = s->window.data = s->tick.data = s->grace.data = s;
    uv_timer_start(&s->tick, on_tick, TICK_MS, TICK_MS);
    return s;
fail:
    free(s->scratch);
    free(s->dp_cost_from);
    free(s->dp_cost);
    free(s->order);
    free(s);
    layad_fail(err, 500, "cannot set up the scheduler loop");
    return NULL;
}

int scheduler_add_worker(scheduler *s, laya_backend *b, int device_index, layad_error *err)
{
    if (s->n_workers >= MAX_WORKERS) {
        b->ops->destroy(b);
        return layad_fail(err, 500, "too many workers (max %d)", MAX_WORKERS);
    }
    int w = s->n_workers;
    if (batch_alloc(&s->batches[w], s->o.max_batch_rows, s->o.kmax)) {
        b->ops->destroy(b);
        return layad_fail(err, 500, "out of memory (batch buffers)");
    }
    s->workers[w] = worker_create(b, device_index, worker_done_cb, s, err);
    if (!s->workers[w]) {
        b->ops->destroy(b);
        batch_free(&s->batches[w]);
        return -1;
    }
    s->n_workers++;
    return 0;
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

laya_backend *scheduler_backend(scheduler *s, int i)
{
    return i >= 0 && i < s->n_workers ? worker_backend(s->workers[i]) : NULL;
}

uv_loop_t *scheduler_loop(scheduler *s)
{
    return &s->loop;
}

int scheduler_submit(scheduler *s, serve_job *j, int *reason)
{
    /* Rows are validated here once so that the loop can trust them. */
    for (int i = 0; i < j->n_rows; i++)
        if (j->rows[i].n_markers < 1 || j->rows[i].n_markers > s->o.kmax || j->rows[i].len < 1 ||
            j->rows[i].len > s->o.max_batch_tokens) {
            *reason = -1;
            return -1;
        }
    double now = sched_now();
    uv_mutex_lock(&s->lock);
    if (s->draining) {
        uv_mutex_unlock(&s->lock);
        *reason = REJ_DRAINING;
        return -1;
    }
    if (s->depth >= s->o.max_queue) {
        uv_mutex_unlock(&s->lock);
        *reason = REJ_QUEUE_FULL;
        return -1;
    }
    job_ref(j);
    j->t_enqueue = now;
    j->deadline = now + s->o.request_timeout_s;
    j->queued = 1;
    j->next = NULL;
    if (s->tail)
        s->tail->next = j;
    else
        s->head = j;
    s->tail = j;
    s->depth++;
    s->q_rows += j->n_rows;
    s->q_tokens += j->n_tokens;
    update_depth_metric(s);
    uv_mutex_unlock(&s->lock);
    uv_async_send(&s->wake);
    return 0;
}

void scheduler_drain(scheduler *s)
{
    uv_mutex_lock(&s->lock);
    s->draining = 1;
    uv_mutex_unlock(&s->lock);
}

int scheduler_draining(const scheduler *s)
{
    uv_mutex_lock((uv_mutex_t *)&s->lock);
    int d = s->draining;
    uv_mutex_unlock((uv_mutex_t *)&s->lock);
    return d;
}

long scheduler_depth(const scheduler *s)
{
    uv_mutex_lock((uv_mutex_t *)&s->lock);
    long d = s->depth;
    uv_mutex_unlock((uv_mutex_t *)&s->lock);
    return d;
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
    free(s->dp_cost_from);
    free(s->dp_cost);
    free(s->order);
    free(s);
}
