/*
 * queue.c - the scheduler's queue: jobs with rows not yet dispatched, FIFO.
 *
 * The only code that links or unlinks a job. HTTP threads enter here through
 * scheduler_submit; the loop takes rows from the head (a job larger than the
 * budgets is split over several batches: it stays at the head until all its
 * rows are out), puts failed jobs back at the head to run alone, and evicts
 * jobs past their deadline or at shutdown. Every field here is guarded by
 * s->lock; q_rows and q_tokens count the rows not yet taken, so that the loop
 * can tell a full batch without walking the queue.
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

int queue_take_rows(scheduler *s, serve_batch *b, double now)
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
        if (took)
            mark_dispatched(j, now);
        if (j->next_row < j->n_rows)
            break; /* budget full; the rest of j goes next */
        queue_remove(s, j); /* all its rows are out: only unlinks it */
        if (j->solo)
            break;
    }
    b->n_rows = n;
    return n;
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
        if (all || now >= j->deadline) {
            queue_remove(s, j);
            j->next = list;
            list = j;
        }
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
    for (int i = 0; i < j->n_rows; i++)
        if (j->rows[i].n_markers < 1 || j->rows[i].n_markers > s->o.kmax || j->rows[i].len < 1 ||
            j->rows[i].len > s->o.max_batch_tokens)
            return 0;
    return 1;
}

int scheduler_submit(scheduler *s, serve_job *j, int *reason)
{
    if (!rows_valid(s, j)) {
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
    queue_insert(s, j, 0);
    queue_depth_metric(s);
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
