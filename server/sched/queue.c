/*
 * queue.c - the scheduler's queue: jobs with rows not yet dispatched, FIFO.
 *
 * The only code that links or unlinks a job. HTTP threads enter here through
 * scheduler_submit, which also decides admission (token budget, queue bound
 * by count and by estimated wait). The loop fills batches fairly (see
 * queue_take_rows: a job larger than a batch is split, and jobs never
 * dispatched go ahead of its remaining rows, so one big request delays a
 * small one by one batch at most, while keeping at least half of every batch
 * the big one keeps moving), puts failed jobs back at the head to run alone,
 * and evicts jobs past their deadline, cancelled, or at shutdown. A batch
 * carries rows of one model (its worker runs one backend per batch): the
 * model of the oldest live job, so models share the workers in arrival order. Every field
 * here is guarded by s->lock; q_rows and q_tokens count the rows not yet
 * taken, so that the loop can tell a full batch without walking the queue.
 *
 * Why shed by time and not only by count: one queued job can be 1 row or
 * 4,096, so a count bound either rejects at light load or lets the wait run
 * past the request timeout (at 2x capacity, 1,024 queued jobs were 42 s).
 */
#include "server/sched/internal.h"
#include "server/telemetry/metrics.h"

void queue_insert(scheduler *s, serve_job *j, int at_head)
{
    j->queued = 1;
    if (at_head) {
        j->next = s->head;
        s->head = j;
        if (!s->tail)
            s->tail = j;
    } else {
        j->next = NULL;
        if (s->tail)
            s->tail->next = j;
        else
            s->head = j;
        s->tail = j;
    }
    s->depth++;
    s->q_rows += j->n_rows;
    s->q_tokens += j->n_tokens;
}

void queue_remove(scheduler *s, serve_job *j)
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

/* The first dispatch of j: its queue wait is final. */
static void mark_dispatched(serve_job *j, double now)
{
    j->in_flight++;
    if (j->t_dispatch == 0) {
        j->t_dispatch = now;
        j->queue_s = now - j->t_enqueue;
        metrics_observe(H_QUEUE_WAIT, j->queue_s);
    }
}

/* Whether j's rows must not run: it was cancelled (or its client found
 * gone) or finished, or its deadline passed (lock held). */
static int job_dead(serve_job *j, double now)
{
    return atomic_load_explicit(&j->cancelled, memory_order_relaxed) || j->finished || now >= j->deadline;
}

typedef struct fill {
    serve_batch *b;
    int n;        /* rows in b */
    long tokens;  /* real tokens in b */
} fill;

/* Moves j's next rows into the batch while it holds fewer than max_rows rows
 * and max_tokens tokens (the first row of a batch always fits). */
static void take_from(scheduler *s, fill *f, serve_job *j, int max_rows, long max_tokens, double now)
{
    if (j->next_row >= j->n_rows || f->n >= max_rows ||
        (f->n > 0 && f->tokens + j->rows[j->next_row].len > max_tokens))
        return;
    /* Asked only when rows are about to go, once per batch: a poll of the
     * client's socket per job and batch, not per job and loop turn. */
    if (j->gone && j->taken_seq != f->b->seq && j->gone(j)) {
        atomic_store_explicit(&j->cancelled, 1, memory_order_relaxed);
        return;
    }
    int took = 0;
    while (j->next_row < j->n_rows && f->n < max_rows) {
        const laya_row *r = &j->rows[j->next_row];
        if (f->n > 0 && f->tokens + r->len > max_tokens)
            break;
        f->b->rows[f->n] = *r;
        f->b->ent[f->n] = (batch_entry){j, j->next_row, j->epoch};
        f->tokens += r->len;
        s->q_tokens -= r->len;
        s->q_rows--;
        j->next_row++;
        f->n++;
        took = 1;
    }
    if (took && j->taken_seq != f->b->seq) { /* in_flight counts batches, not parts */
        j->taken_seq = f->b->seq;
        mark_dispatched(j, now);
    }
}

/* Unlinks the dead jobs onto s->dropped, and the jobs whose rows are all out. */
static void unlink_spent(scheduler *s, double now)
{
    for (serve_job *j = s->head, *nx; j; j = nx) {
        nx = j->next;
        if (j->next_row < j->n_rows && !job_dead(j, now))
            continue;
        int dead = j->next_row < j->n_rows;
        queue_remove(s, j);
        if (dead) {
            j->next = s->dropped;
            s->dropped = j;
        }
    }
}

int queue_take_rows(scheduler *s, serve_batch *b, double now)
{
    fill f = {b, 0, 0};
    const int R = s->o.max_batch_rows;
    const long T = s->o.max_batch_tokens;
    b->seq = ++s->seq;
    int split = 0, model = -1;
    for (serve_job *j = s->head; j; j = j->next) {
        if (job_dead(j, now))
            continue;
        if (j->solo) { /* a retry runs alone */
            b->model = j->model;
            take_from(s, &f, j, R, T, now);
            goto out;
        }
        if (model < 0)
            model = j->model; /* the oldest live job's model: FIFO across models */
    }
    b->model = model < 0 ? 0 : model;
    for (serve_job *j = s->head; j; j = j->next)
        split |= j->model == model && j->next_row > 0 && !job_dead(j, now);
    /* Pass 1: jobs not yet dispatched, in arrival order; while a split job
     * waits they get half the budgets, so they cannot starve it. */
    const int r1 = split ? (R + 1) / 2 : R;
    const long t1 = split ? (T + 1) / 2 : T;
    for (serve_job *j = s->head; j && f.n < r1 && f.tokens < t1; j = j->next)
        if (j->model == model && j->next_row == 0 && !job_dead(j, now))
            take_from(s, &f, j, r1, t1, now);
    /* Pass 2: the rest of the budgets to everyone, oldest first. */
    for (serve_job *j = s->head; j && f.n < R && f.tokens < T; j = j->next)
        if (j->model == model && !job_dead(j, now))
            take_from(s, &f, j, R, T, now);
out:
    unlink_spent(s, now);
    b->n_rows = f.n;
    s->inflight_tokens += f.tokens;
    return f.n;
}

void queue_batch_back(scheduler *s, long tokens, double forward_s)
{
    s->inflight_tokens -= tokens;
    if (forward_s > 0 && tokens > 0) {
        /* Ratio of decayed sums, not a mean of ratios: big (busy) batches
         * weigh by their time, so a quiet spell of one-row batches does not
         * drag the estimate down for the next burst. */
        s->rate_tok = 0.9 * s->rate_tok + (double)tokens;
        s->rate_s = 0.9 * s->rate_s + forward_s;
    }
}

void queue_depth_metric(const scheduler *s)
{
    metrics_queue_depth(s->depth);
}

void queue_requeue_solo(scheduler *s, serve_job *j)
{
    j->epoch++;
    j->solo = 1;
    j->rows_done = 0;
    uv_mutex_lock(&s->lock);
    if (j->queued) { /* rows of it still queued: count the taken ones again */
        for (int r = 0; r < j->next_row; r++)
            s->q_tokens += j->rows[r].len;
        s->q_rows += j->next_row;
        j->next_row = 0;
    } else {
        j->next_row = 0;
        queue_insert(s, j, 1);
    }
    queue_depth_metric(s);
    uv_mutex_unlock(&s->lock);
}

serve_job *queue_evict(scheduler *s, int all, double now)
{
    serve_job *list = NULL;
    uv_mutex_lock(&s->lock);
    for (serve_job *j = s->head, *nx; j; j = nx) {
        nx = j->next;
        if (all || now >= j->deadline || j->finished || atomic_load(&j->cancelled)) {
            queue_remove(s, j);
            j->next = list;
            list = j;
        }
    }
    while (s->dropped) {
        serve_job *j = s->dropped;
        s->dropped = j->next;
        j->next = list;
        list = j;
    }
    queue_depth_metric(s);
    uv_mutex_unlock(&s->lock);
    return list;
}

int queue_empty(scheduler *s)
{
    uv_mutex_lock(&s->lock);
    int empty = s->head == NULL;
    uv_mutex_unlock(&s->lock);
    return empty;
}

/* ---- public: submit and drain (any thread) ------------------------------- */

/* Whether the loop can trust j's rows: markers and length within the limits. */
static int rows_valid(const scheduler *s, const serve_job *j)
{
    if (j->model < 0 || j->model >= s->n_models)
        return 0;
    for (int i = 0; i < j->n_rows; i++)
        if (j->rows[i].n_markers < 1 || j->rows[i].n_markers > s->o.kmax || j->rows[i].len < 1 ||
            j->rows[i].len > s->o.max_batch_tokens)
            return 0;
    return 1;
}

/* Seconds of work ahead of a new job, and the throughput (lock held). */
static double est_wait(const scheduler *s, double *rate_out)
{
    double rate = s->rate_s > 0 ? s->rate_tok / s->rate_s * (s->n_workers > 0 ? s->n_workers : 1) : 0;
    if (rate_out)
        *rate_out = rate;
    return rate > 0 ? (double)(s->q_tokens + s->inflight_tokens) / rate : 0;
}

static int retry_after_s(double seconds)
{
    return seconds < 1 ? 1 : seconds > 60 ? 60 : (int)(seconds + 0.999);
}

int scheduler_submit(scheduler *s, serve_job *j, int *reason)
{
    if (!rows_valid(s, j)) {
        *reason = SCHED_REJ_BAD_ROWS;
        return -1;
    }
    if (s->o.max_request_tokens > 0 && j->n_tokens > s->o.max_request_tokens) {
        *reason = SCHED_REJ_TOO_LARGE;
        return -1;
    }
    double now = sched_now();
    uv_mutex_lock(&s->lock);
    if (s->draining) {
        uv_mutex_unlock(&s->lock);
        *reason = REJ_DRAINING;
        return -1;
    }
    double wait = est_wait(s, NULL);
    int over_time = s->o.max_queue_wait_s > 0 && wait > s->o.max_queue_wait_s;
    if (s->depth >= s->o.max_queue || over_time) {
        uv_mutex_unlock(&s->lock);
        /* back when the work ahead is within the budget again */
        j->retry_after = retry_after_s(over_time ? wait - s->o.max_queue_wait_s : wait);
        *reason = REJ_QUEUE_FULL;
        return -1;
    }
    job_ref(j);
    j->t_enqueue = now;
    j->deadline = now + s->o.request_timeout_s;
    queue_insert(s, j, 0);
    queue_depth_metric(s);
    uv_mutex_unlock(&s->lock);
    uv_async_send(&s->wake);
    return 0;
}

void scheduler_cancel(scheduler *s, serve_job *j)
{
    (void)s; /* the tick sweeps cancelled jobs (queued and in flight) */
    atomic_store(&j->cancelled, 1);
}

double scheduler_est_wait(scheduler *s, double *tokens_per_s)
{
    uv_mutex_lock(&s->lock);
    double w = est_wait(s, tokens_per_s);
    uv_mutex_unlock(&s->lock);
    return w;
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
