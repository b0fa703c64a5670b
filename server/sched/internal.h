/*
 * internal.h - what the files of server/sched/ share; nothing outside includes it.
 *
 *   jobs.c       a job's lifetime: create, ref/unref, finish, release
 *   queue.c      the FIFO of jobs with rows left to dispatch (the only code
 *                that links or unlinks a job), submit and drain
 *   cut.c        cutting a batch into packs (the policy: model/backend/batching.h)
 *   scheduler.c  the loop: dispatch to workers, completion, deadlines, shutdown
 *   poll.c       the loop polling instead of sleeping while work is likely soon,
 *                and woken to poll when a request is on its way
 *
 * Threads: HTTP threads only touch the queue (under `lock`) and wake the loop
 * with uv_async_send; workers wake it the same way when a bucket is done;
 * everything else runs on the loop thread.
 */
#ifndef LAYAD_SERVER_SCHED_INTERNAL_H
#define LAYAD_SERVER_SCHED_INTERNAL_H

#include "server/sched/cut.h"
#include "server/sched/scheduler.h"

#define MAX_WORKERS 16

struct scheduler {
    sched_opts o;
    uv_loop_t loop;
    uv_async_t wake;       /* submit or batch done */
    uv_timer_t window;     /* batch window expiry */
    uv_timer_t tick;       /* deadlines */
    uv_timer_t grace;      /* shutdown grace */
    uv_async_t prewake;    /* a request is on its way: poll (scheduler_prewake) */
    uv_idle_t poll;        /* active: the loop polls instead of sleeping (poll.c) */
    _Atomic int polling;   /* poll is active (read by scheduler_prewake on any thread) */
    double poll_since;     /* the loop's last work, while polling */
    int window_armed;

    uv_mutex_t lock;       /* guards the queue fields and draining */
    serve_job *head, *tail;
    long depth;            /* jobs queued */
    long q_rows, q_tokens; /* rows/tokens not yet dispatched */
    long inflight_tokens;  /* tokens of batches handed to workers, not yet back */
    double rate_tok, rate_s; /* decayed sums of batch tokens and forward seconds: rate = tok/s */
    serve_job *dropped;    /* unlinked by queue_take_rows (gone, cancelled, late), to finish */
    int draining;

    int n_workers;
    int n_models;          /* backends per worker (the same on every worker) */
    serve_worker *workers[MAX_WORKERS];
    serve_batch batches[MAX_WORKERS];
    int busy[MAX_WORKERS];
    int buckets_seen[MAX_WORKERS]; /* buckets of the worker's batch already answered */
    long long given_tokens[MAX_WORKERS]; /* padded tokens dispatched to each worker so far */
    _Atomic int next_worker; /* pick_worker's choice as of the last launch or return (-1: none
                                idle), read by scheduler_prewake on any thread */
    unsigned long long seq;

    int shutting_down, grace_over, stopped;
    serve_job **scratch;   /* distinct jobs of a batch, [max_batch_rows] */
    sched_cut cut;         /* cut_buckets' scratch */
};

/* ---- jobs.c (loop thread) ---- */

/* Sets j's result and runs its done() hook, once: later calls do nothing.
 * A 504 counts as a deadline rejection. */
void job_finish(serve_job *j, int status, const layad_error *err);
/* Drops the scheduler's reference once j is finished and nothing of the
 * scheduler (queue, batch in flight) still points at it. */
void job_release_if_idle(serve_job *j);

/* ---- poll.c (loop thread) ---- */

/* Sets up s->poll (inactive) and s->prewake. */
void poll_init(scheduler *s);
/* The loop had work just now: it polls while a batch is in flight and for
 * worker_spin_us after this call (nothing when that is 0). */
void poll_keep(scheduler *s);

/* ---- queue.c: functions marked "lock held" expect s->lock taken ---- */

/* The one way into the queue (lock held): links j at the head or the tail and
 * counts all its rows as queued; j->next_row must be 0. */
void queue_insert(scheduler *s, serve_job *j, int at_head);
/* Unlinks j if it is queued and uncounts its rows not yet taken (lock held). */
void queue_remove(scheduler *s, serve_job *j);
/* Moves rows of queued jobs into b within the row and token budgets (lock
 * held): a solo job goes alone; otherwise jobs never dispatched first (capped
 * at half the budgets while a split job waits), then all in arrival order.
 * Jobs that are cancelled, gone or past their deadline are unlinked onto
 * s->dropped instead. Returns the rows taken; 0 only when the queue shrank. */
int queue_take_rows(scheduler *s, serve_batch *b, double now);
/* A batch of `tokens` real tokens came back after forward_s (lock held):
 * updates the throughput estimate and the in-flight count. */
void queue_batch_back(scheduler *s, long tokens, double forward_s);
/* Publishes the queue depth metric (lock held). */
void queue_depth_metric(const scheduler *s);
/* Puts all of j back at the queue head to run alone in its own batch, under a
 * new epoch (its rows still in flight are dropped when they return). Takes the lock. */
void queue_requeue_solo(scheduler *s, serve_job *j);
/* Unlinks the queued jobs whose deadline is <= now, that are cancelled or
 * finished, or all of them when `all`, and returns them linked through next,
 * last queued first, with s->dropped. Takes the lock. */
serve_job *queue_evict(scheduler *s, int all, double now);
/* Whether no job is queued. Takes the lock. */
int queue_empty(scheduler *s);

#endif
