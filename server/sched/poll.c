/*
 * poll.c - the loop thread polls instead of sleeping while it is likely to be
 * woken soon: while a batch is in flight and for the workers' spin time after
 * it last had work.
 *
 * A submit and a finished bucket reach the loop through uv_async_send. A
 * sleeping loop thread then costs tens of microseconds to wake on a virtual
 * machine, for the same reason the workers poll after a batch. An active idle
 * handle makes libuv poll its events with a zero timeout on every turn, so the
 * async is seen within a turn. Measured on the H200 at concurrency 1 (English,
 * bench/results/experiments/loop-poll/): the `back` stage 40.6 -> 4.7 us,
 * the one-question 83-token request p50 1.317-1.336 -> 1.266-1.267 ms, p99
 * 1.65-1.67 -> 1.48-1.53 ms. The cost is about one CPU core while requests
 * keep coming; with worker_spin_us 0 (the default on the CPU, where two
 * polling threads on a 2-core machine slowed the CPU forward by 40%) the loop
 * sleeps as before.
 */
#include "server/sched/internal.h"

static void on_poll(uv_idle_t *h)
{
    scheduler *s = h->data;
    if (scheduler_busy(s) == 0 && sched_now() - s->poll_since > s->o.worker_spin_us * 1e-6) {
        atomic_store_explicit(&s->polling, 0, memory_order_relaxed);
        uv_idle_stop(h);
    }
}

static void on_prewake(uv_async_t *a)
{
    poll_keep(a->data);
}

void poll_init(scheduler *s)
{
    uv_idle_init(&s->loop, &s->poll);
    uv_async_init(&s->loop, &s->prewake, on_prewake);
    s->poll.data = s->prewake.data = s;
}

void poll_keep(scheduler *s)
{
    if (s->o.worker_spin_us <= 0)
        return;
    s->poll_since = sched_now();
    if (!uv_is_active((uv_handle_t *)&s->poll)) {
        atomic_store_explicit(&s->polling, 1, memory_order_relaxed);
        uv_idle_start(&s->poll, on_poll);
    }
}

/* A request's wakes, started while its body is read and parsed: the loop's
 * (its async, seen at once while it polls anyway) and the workers'. On an
 * H100 host with 2-20 ms pauses between requests (bench/results/experiments/
 * sporadic/) the queue and wake stages took 26-62 us each, two sleeping
 * threads woken one after the other, and 2-14 us with this; after 200 ms
 * pauses the worker's wake stayed hidden (5-22 us) and the loop's only in
 * one of three runs (queue 18 us; 47 and 50 in the others). Only the worker
 * the next batch would go to is woken (next_worker, published by the loop):
 * on a daemon of several GPUs the others would poll for their spin for
 * nothing. When another request takes that worker first, this one's wake is
 * serial again, as without a prewake. */
void scheduler_prewake(scheduler *s)
{
    if (s->o.worker_spin_us <= 0)
        return;
    if (!atomic_load_explicit(&s->polling, memory_order_relaxed))
        uv_async_send(&s->prewake);
    const int w = atomic_load_explicit(&s->next_worker, memory_order_relaxed);
    if (w >= 0 && w < s->n_workers)
        worker_prewake(s->workers[w]);
}
