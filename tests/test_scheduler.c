/*
 * test_scheduler.c - the batching scheduler in-process, with a fake backend.
 *
 * The fake backend writes logits that are a pure function of each row's ids
 * (so a result routed to the wrong request, row or slot is caught), records
 * how many rows each forward saw (so batching across requests is observable),
 * can sleep (deadlines, overload, shutdown) and fails any forward that
 * contains a "poison" row (the one-by-one retry) or, as a device fault, its
 * next forwards whatever they hold. Requests are real ones (request_parse on
 * the tiny checkpoint). Several fakes make several workers (one per device):
 * where batches go, per-worker counters and answers across workers.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/checkpoint/checkpoint.h"
#include "server/api/request.h"
#include "server/telemetry/metrics.h"
#include "server/sched/scheduler.h"
#include "tests/lib/testutil.h"

static laya_checkpoint ck;

typedef struct fake {
    laya_backend base;
    int sleep_us;
    int poison_len;
    _Atomic int fail_next; /* fail this many forwards whatever their rows (a device fault) */
    float offset;          /* added to every logit: tells the backends of two models apart */
    _Atomic int calls, max_n, failed_calls;
} fake;

static float f_logit(const laya_row *r, int m)
{
    long s = 0;
    for (int t = 0; t < r->len; t++)
        s += (long)r->ids[t] * (t + 1);
    return (float)((s * (m + 3)) % 997) / 10.0f;
}

static int fake_forward(laya_backend *b, const laya_row *rows, int n, int K, float *logits, float *act,
                        layad_error *err)
{
    fake *f = (fake *)b;
    atomic_fetch_add(&f->calls, 1);
    int mx = atomic_load(&f->max_n);
    while (n > mx && !atomic_compare_exchange_weak(&f->max_n, &mx, n))
        ;
    if (f->sleep_us)
        usleep((useconds_t)f->sleep_us);
    int left = atomic_load(&f->fail_next);
    while (left > 0 && !atomic_compare_exchange_weak(&f->fail_next, &left, left - 1))
        ;
    if (left > 0) {
        atomic_fetch_add(&f->failed_calls, 1);
        return layad_fail(err, 500, "device fault (fake)");
    }
    for (int i = 0; i < n; i++)
        if (rows[i].len == f->poison_len) {
            atomic_fetch_add(&f->failed_calls, 1);
            return layad_fail(err, 500, "poison row (len %d)", rows[i].len);
        }
    for (int i = 0; i < n; i++) {
        if (rows[i].n_markers > K)
            return layad_fail(err, 500, "K too small");
        for (int m = 0; m < K; m++)
            logits[i * K + m] = m < rows[i].n_markers ? f_logit(&rows[i], m) + f->offset : LAYA_MASK_FILL;
        act[i * 2] = (float)rows[i].len;
        act[i * 2 + 1] = -1.0f;
    }
    return 0;
}

static void fake_destroy(laya_backend *b)
{
    free(b);
}

static const laya_backend_ops fake_ops = {"fake", fake_forward, fake_destroy, NULL};

/* ---- harness ------------------------------------------------------------------- */

#define MAX_FAKES 4

typedef struct harness {
    scheduler *s;
    fake *f;              /* worker 0's backend */
    fake *fw[MAX_FAKES];  /* every worker's backend */
    int n_workers;
    pthread_t loop;
    uv_async_t stop;
    _Atomic double grace; /* stop()'s, read by on_stop on the loop thread */
    _Atomic int done, status_count[600];
} harness;

static harness H;
static long g_max_request_tokens; /* sched_opts of the next start_n (0: no limit) */
static double g_max_queue_wait_s;
static int g_worker_spin_us;

static void *loop_main(void *arg)
{
    scheduler_run(arg);
    return NULL;
}

static void on_stop(uv_async_t *a)
{
    scheduler_shutdown(H.s, atomic_load(&H.grace));
    uv_close((uv_handle_t *)a, NULL);
}

/* A scheduler with n_workers fake backends; worker w sleeps sleep_us[w] per forward. */
static void start_n(int n_workers, int max_queue, int window_us, int max_rows, double timeout_s,
                    const int *sleep_us, int poison_len)
{
    memset(&H, 0, sizeof H);
    sched_opts o = {max_queue, window_us, max_rows, 4096, timeout_s, 255, 0, g_max_request_tokens,
                    g_max_queue_wait_s, g_worker_spin_us};
    layad_error err;
    H.s = scheduler_create(&o, &err);
    ck_assert_ptr_nonnull(H.s);
    for (int w = 0; w < n_workers; w++) {
        fake *f = calloc(1, sizeof *f);
        ck_assert_ptr_nonnull(f);
        f->base.ops = &fake_ops;
        f->sleep_us = sleep_us[w];
        f->poison_len = poison_len;
        H.fw[w] = f;
        ck_assert_int_eq(scheduler_add_worker(H.s, &f->base, w, &err), 0);
    }
    H.f = H.fw[0];
    H.n_workers = n_workers;
    ck_assert_int_eq(scheduler_n_workers(H.s), n_workers);
    ck_assert_int_eq(uv_async_init(scheduler_loop(H.s), &H.stop, on_stop), 0);
    ck_assert_int_eq(pthread_create(&H.loop, NULL, loop_main, H.s), 0);
}

static void start(int max_queue, int window_us, int max_rows, double timeout_s, int sleep_us, int poison_len)
{
    start_n(1, max_queue, window_us, max_rows, timeout_s, &sleep_us, poison_len);
}

static void stop(double grace)
{
    atomic_store(&H.grace, grace);
    uv_async_send(&H.stop);
    pthread_join(H.loop, NULL);
    scheduler_destroy(H.s);
}

static void on_done(serve_job *j)
{
    atomic_fetch_add(&H.status_count[j->status < 600 ? j->status : 0], 1);
    atomic_fetch_add(&H.done, 1);
}

static laya_request *parse(int words, int nq)
{
    char body[8192];
    size_t n = (size_t)snprintf(body, sizeof body, "{\"state\": \"");
    for (int i = 0; i < words; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, "%sw%d", i ? " " : "", i % 13);
    n += (size_t)snprintf(body + n, sizeof body - n, "\", \"questions\": {");
    for (int q = 0; q < nq; q++)
        n += (size_t)snprintf(body + n, sizeof body - n,
                              "%s\"q%d\": {\"type\": \"choice\", \"instructions\": \"pick %d\", \"criteria\": "
                              "[\"a\", \"b\", \"c%d\"]}",
                              q ? ", " : "", q, q, q);
    n += (size_t)snprintf(body + n, sizeof body - n, "}}");
    decide_opts o;
    decide_opts_default(&o);
    laya_request *r = NULL;
    layad_error err;
    ck_assert_msg(request_parse(&ck, body, n, &o, &r, &err) == 0, "parse: %s", err.msg);
    return r;
}

/* Whether j's results are the fake's with logits shifted by offset (0: model 0's backend). */
static int results_ok_off(serve_job *j, float offset)
{
    for (int i = 0; i < j->n_rows; i++) {
        const float *lg = request_row_logits(j->req, i);
        for (int m = 0; m < j->rows[i].n_markers; m++)
            if (lg[m] != f_logit(&j->rows[i], m) + offset)
                return 0;
        if (request_row_act(j->req, i)[0] != (float)j->rows[i].len)
            return 0;
    }
    return 1;
}

static int results_ok(serve_job *j)
{
    return results_ok_off(j, 0.0f);
}

static void wait_done(int n, double timeout_s)
{
    double end = sched_now() + timeout_s;
    while (atomic_load(&H.done) < n && sched_now() < end)
        usleep(1000);
    ck_assert_int_eq(atomic_load(&H.done), n);
}

/* ---- tests ---------------------------------------------------------------------- */

START_TEST(rows_of_many_requests_share_batches)
{
    /* The first job finds the worker idle and goes alone at once; the others
     * gather while its 20 ms forward runs. */
    start(1024, 20000, 64, 30, 20000, -1);
    enum { N = 40 };
    serve_job *jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(3 + i % 17, 1 + i % 4), on_done, NULL);
        int reason;
        ck_assert_int_eq(scheduler_submit(H.s, jobs[i], &reason), 0);
    }
    wait_done(N, 30);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(jobs[i]->status, 200);
        ck_assert_msg(results_ok(jobs[i]), "job %d got someone else's logits", i);
        ck_assert(jobs[i]->queue_s >= 0 && jobs[i]->infer_s >= 0);
        job_unref(jobs[i]);
    }
    ck_assert_msg(atomic_load(&H.f->max_n) > 4, "no forward carried rows of several requests (max %d rows)",
                  atomic_load(&H.f->max_n));
    stop(5);
}
END_TEST

/* Workers that poll for 0.3 s after each batch: one request at a time (each
 * found by a polling worker), then a burst, all answered right; the
 * scheduler stops at once while they poll (stop ends the poll). */
START_TEST(polling_workers_answer_and_stop)
{
    g_worker_spin_us = 300000;
    const int sleeps[2] = {200, 500};
    start_n(2, 1024, 100, 64, 30, sleeps, -1);
    g_worker_spin_us = 0;
    enum { N = 30 };
    serve_job *jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(3 + i % 7, 1 + i % 3), on_done, NULL);
        int reason;
        ck_assert_int_eq(scheduler_submit(H.s, jobs[i], &reason), 0);
        if (i < N / 2)
            wait_done(i + 1, 10);
    }
    wait_done(N, 10);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(jobs[i]->status, 200);
        ck_assert_msg(results_ok(jobs[i]), "job %d got someone else's logits", i);
        ck_assert(jobs[i]->wake_s >= 0 && jobs[i]->back_s >= 0);
        job_unref(jobs[i]);
    }
    const double t0 = sched_now();
    stop(5);
    ck_assert_msg(sched_now() - t0 < 0.25, "stopping took %.3f s with polling workers", sched_now() - t0);
}
END_TEST

/* CPU time of the scheduler's loop thread so far, seconds. */
static double loop_cpu_s(void)
{
    clockid_t c;
    struct timespec t;
    ck_assert_int_eq(pthread_getcpuclockid(H.loop, &c), 0);
    ck_assert_int_eq(clock_gettime(c, &t), 0);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Submits j, waits until n jobs in all are done, and checks j's answer: 200, its own logits. */
static void submit_answered(serve_job *j, int n)
{
    int reason;
    ck_assert_int_eq(scheduler_submit(H.s, j, &reason), 0);
    wait_done(n, 30);
    ck_assert_int_eq(j->status, 200);
    ck_assert(results_ok(j));
}

/* n workers (1 ms a forward) whose threads poll for 200 ms after their last
 * work, and one job answered 200 (on worker 0: all idle, the lowest index). */
static void start_spin_workers(int n)
{
    g_worker_spin_us = 200000;
    const int sleeps[2] = {1000, 1000};
    ck_assert(n >= 1 && n <= 2);
    start_n(n, 1024, 100, 64, 30, sleeps, -1);
    g_worker_spin_us = 0;
    serve_job *j = job_create(NULL, parse(5, 1), on_done, NULL);
    submit_answered(j, 1);
    job_unref(j);
}

/* With worker_spin_us set, the loop thread polls for the spin time after its
 * last work (at least a fifth of a core, asserted below), then sleeps again:
 * an idle daemon must not keep a core busy. */
START_TEST(polling_loop_sleeps_when_idle)
{
    start_spin_workers(1);
    const double c0 = loop_cpu_s();
    usleep(100000); /* inside the 200 ms spin */
    const double polling = loop_cpu_s() - c0;
    usleep(250000); /* past it */
    const double c1 = loop_cpu_s();
    usleep(300000);
    const double idle = loop_cpu_s() - c1;
    ck_assert_msg(polling > 0.02, "the loop used only %.3f s of CPU in 0.1 s of its spin", polling);
    ck_assert_msg(idle < 0.03, "the loop used %.3f s of CPU over 0.3 s idle", idle);
    stop(5);
}
END_TEST

/* Worker w's wakes from sleep by a prewake. */
static long long prewakes_of(int w)
{
    worker_stats st;
    ck_assert_int_eq(scheduler_worker_stats(H.s, w, &st), 0);
    return st.prewakes;
}

/* With worker_spin_us set and both threads asleep, scheduler_prewake wakes the
 * worker (counted once) and sets the loop polling for the spin time; a
 * prewake while they are awake wakes nothing; afterwards both sleep again and
 * the next job is answered as ever. */
START_TEST(prewake_wakes_sleeping_threads)
{
    start_spin_workers(1);
    usleep(300000); /* past the spin: both asleep */
    double c0 = loop_cpu_s();
    usleep(100000);
    ck_assert_msg(loop_cpu_s() - c0 < 0.03, "the loop polls while idle");
    ck_assert_int_eq(prewakes_of(0), 0);
    scheduler_prewake(H.s);
    c0 = loop_cpu_s();
    for (int i = 0; i < 1000 && prewakes_of(0) == 0; i++)
        usleep(1000);
    ck_assert_int_eq(prewakes_of(0), 1);
    scheduler_prewake(H.s); /* the worker polls now: nothing to wake */
    usleep(100000);
    ck_assert_msg(loop_cpu_s() - c0 > 0.02, "the loop used only %.3f s of CPU after a prewake", loop_cpu_s() - c0);
    ck_assert_int_eq(prewakes_of(0), 1);
    usleep(250000); /* past the spin again */
    c0 = loop_cpu_s();
    usleep(300000);
    ck_assert_msg(loop_cpu_s() - c0 < 0.03, "the loop still polls after the prewake's spin");
    serve_job *j = job_create(NULL, parse(6, 2), on_done, NULL);
    submit_answered(j, 2);
    job_unref(j);
    stop(5);
}
END_TEST

/* With two workers a prewake wakes only the one the next batch goes to: after a first job on
 * worker 0 (both idle: the lower index), worker 1 (fewer tokens given so far), where the next
 * job then runs. */
START_TEST(prewake_wakes_the_next_worker)
{
    start_spin_workers(2);
    ck_assert_int_eq(atomic_load(&H.fw[0]->calls), 1);
    usleep(300000); /* past the spin: every thread asleep */
    scheduler_prewake(H.s);
    for (int i = 0; i < 1000 && prewakes_of(1) == 0; i++)
        usleep(1000);
    usleep(20000);
    ck_assert_int_eq(prewakes_of(1), 1);
    ck_assert_int_eq(prewakes_of(0), 0);
    serve_job *j = job_create(NULL, parse(6, 2), on_done, NULL);
    submit_answered(j, 2);
    job_unref(j);
    ck_assert_int_eq(atomic_load(&H.fw[1]->calls), 1);
    stop(5);
}
END_TEST

/* Without a spin (the CPU default) a prewake does nothing. */
START_TEST(prewake_without_spin_wakes_nothing)
{
    const int sleeps[1] = {1000};
    start_n(1, 1024, 100, 64, 30, sleeps, -1);
    usleep(50000);
    scheduler_prewake(H.s);
    usleep(50000);
    ck_assert_int_eq(prewakes_of(0), 0);
    stop(5);
}
END_TEST

/* One worker serving two models: each batch runs on the backend of its rows'
 * model (a row answered by the other model's backend would carry its offset),
 * and interleaved jobs of both are all answered. */
START_TEST(two_models_share_a_worker)
{
    memset(&H, 0, sizeof H);
    sched_opts o = {1024, 5000, 64, 4096, 30, 255, 0, 0, 0, 0};
    layad_error err;
    H.s = scheduler_create(&o, &err);
    ck_assert_ptr_nonnull(H.s);
    fake *f[2];
    laya_backend *b[2];
    for (int m = 0; m < 2; m++) {
        f[m] = calloc(1, sizeof *f[m]);
        ck_assert_ptr_nonnull(f[m]);
        f[m]->base.ops = &fake_ops;
        f[m]->poison_len = -1;
        f[m]->offset = m ? 1000.0f : 0.0f;
        b[m] = &f[m]->base;
    }
    ck_assert_int_eq(scheduler_add_worker_models(H.s, b, 2, 0, &err), 0);
    ck_assert_ptr_eq(scheduler_backend(H.s, 0, 1), b[1]);
    ck_assert_ptr_null(scheduler_backend(H.s, 0, 2));
    fake *lone = calloc(1, sizeof *lone); /* a worker with fewer models than the others: refused, freed */
    ck_assert_ptr_nonnull(lone);
    lone->base.ops = &fake_ops;
    ck_assert_int_eq(scheduler_add_worker(H.s, &lone->base, 1, &err), -1);
    ck_assert_int_eq(scheduler_n_workers(H.s), 1);
    H.f = f[0];
    H.n_workers = 1;
    ck_assert_int_eq(uv_async_init(scheduler_loop(H.s), &H.stop, on_stop), 0);
    ck_assert_int_eq(pthread_create(&H.loop, NULL, loop_main, H.s), 0);
    enum { N = 30 };
    serve_job *jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(3 + i % 11, 1 + i % 3), on_done, NULL);
        jobs[i]->model = (i % 3 == 1); /* set by the submitter before submit */
        int reason;
        ck_assert_int_eq(scheduler_submit(H.s, jobs[i], &reason), 0);
    }
    serve_job *stray = job_create(NULL, parse(3, 1), on_done, NULL); /* a model no worker serves */
    stray->model = 2;
    int why = 0;
    ck_assert_int_eq(scheduler_submit(H.s, stray, &why), -1);
    ck_assert_int_eq(why, SCHED_REJ_BAD_ROWS);
    job_unref(stray);
    wait_done(N, 30);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(jobs[i]->status, 200);
        ck_assert_msg(results_ok_off(jobs[i], jobs[i]->model ? 1000.0f : 0.0f),
                      "job %d (model %d) ran on the other model's backend", i, jobs[i]->model);
        job_unref(jobs[i]);
    }
    ck_assert_int_gt(atomic_load(&f[0]->calls), 0);
    ck_assert_int_gt(atomic_load(&f[1]->calls), 0);
    stop(5);
}
END_TEST

START_TEST(big_request_split_over_batches)
{
    start(1024, 0, 8, 30, 0, -1); /* 8 rows per batch, a request of 30 rows */
    serve_job *j = job_create(NULL, parse(5, 30), on_done, NULL);
    submit_answered(j, 1);
    ck_assert_int_ge(atomic_load(&H.f->calls), 4);
    ck_assert_int_le(atomic_load(&H.f->max_n), 8);
    job_unref(j);
    stop(5);
}
END_TEST

START_TEST(failed_batch_retried_one_by_one)
{
    laya_request *p = parse(40, 1);
    int poison = request_rows(p)[0].len;
    start(1024, 30000, 64, 30, 0, poison);
    enum { N = 12 };
    serve_job *jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, i == 5 ? p : parse(3 + i, 2), on_done, NULL);
        int reason;
        ck_assert_int_eq(scheduler_submit(H.s, jobs[i], &reason), 0);
    }
    wait_done(N, 30);
    for (int i = 0; i < N; i++) {
        if (i == 5) {
            ck_assert_int_eq(jobs[i]->status, 500);
        } else {
            ck_assert_msg(jobs[i]->status == 200, "neighbour %d failed with %d", i, jobs[i]->status);
            ck_assert(results_ok(jobs[i]));
        }
        job_unref(jobs[i]);
    }
    ck_assert_int_ge(atomic_load(&H.f->failed_calls), 2); /* the batch, then the poison alone */
    stop(5);
}
END_TEST

START_TEST(deadline_504_late_result_dropped)
{
    start(1024, 0, 64, 0.05, 300000, -1); /* each forward 300 ms, deadline 50 ms */
    serve_job *a = job_create(NULL, parse(4, 1), on_done, NULL), *b = job_create(NULL, parse(6, 1), on_done, NULL);
    int reason;
    ck_assert_int_eq(scheduler_submit(H.s, a, &reason), 0);
    usleep(20000);
    ck_assert_int_eq(scheduler_submit(H.s, b, &reason), 0); /* queued behind a */
    wait_done(2, 5);
    ck_assert_int_eq(a->status, 504); /* in flight past its deadline */
    ck_assert_int_eq(b->status, 504); /* expired in the queue */
    job_unref(a);
    job_unref(b);
    stop(5); /* the late batch returns and is dropped; LSan checks nothing leaks */
}
END_TEST

START_TEST(queue_full_rejects_at_once)
{
    start(2, 0, 64, 30, 100000, -1);
    enum { N = 8 };
    serve_job *jobs[N];
    int accepted = 0, full = 0;
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(4, 1), on_done, NULL);
        int reason = 0;
        if (scheduler_submit(H.s, jobs[i], &reason) == 0) {
            accepted++;
        } else {
            ck_assert_int_eq(reason, REJ_QUEUE_FULL);
            full++;
            job_unref(jobs[i]);
            jobs[i] = NULL;
        }
    }
    ck_assert_int_gt(full, 0);
    wait_done(accepted, 30);
    for (int i = 0; i < N; i++)
        if (jobs[i]) {
            ck_assert_int_eq(jobs[i]->status, 200);
            ck_assert(results_ok(jobs[i]));
            job_unref(jobs[i]);
        }
    stop(5);
}
END_TEST

START_TEST(shutdown_finishes_then_503)
{
    /* Generous grace: everything queued completes. */
    start(1024, 0, 2, 30, 20000, -1);
    enum { N = 10 };
    serve_job *jobs[N];
    int reason;
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(4, 2), on_done, NULL);
        ck_assert_int_eq(scheduler_submit(H.s, jobs[i], &reason), 0);
    }
    stop(10);
    ck_assert_int_eq(atomic_load(&H.done), N);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(jobs[i]->status, 200);
        job_unref(jobs[i]);
    }
    /* Tiny grace with slow forwards: the rest is answered 503, nothing hangs. */
    start(1024, 0, 2, 30, 200000, -1);
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(4, 2), on_done, NULL);
        ck_assert_int_eq(scheduler_submit(H.s, jobs[i], &reason), 0);
    }
    usleep(50000);
    stop(0.05);
    ck_assert_int_eq(atomic_load(&H.done), N);
    ck_assert_int_gt(atomic_load(&H.status_count[503]), 0);
    for (int i = 0; i < N; i++) {
        ck_assert(jobs[i]->status == 200 || jobs[i]->status == 503);
        job_unref(jobs[i]);
    }
}
END_TEST

START_TEST(drain_rejects_new_work)
{
    start(1024, 0, 64, 30, 0, -1);
    scheduler_drain(H.s);
    ck_assert(scheduler_draining(H.s));
    serve_job *j = job_create(NULL, parse(4, 1), on_done, NULL);
    int reason = 0;
    ck_assert_int_eq(scheduler_submit(H.s, j, &reason), -1);
    ck_assert_int_eq(reason, REJ_DRAINING);
    job_unref(j);
    stop(1);
}
END_TEST

/* ---- several workers (one per device) --------------------------------------------- */

static void submit_ok(serve_job *j)
{
    int reason;
    ck_assert_int_eq(scheduler_submit(H.s, j, &reason), 0);
}

/* Sums of the workers' counters. */
static worker_stats stats_total(void)
{
    worker_stats t = {0};
    for (int w = 0; w < H.n_workers; w++) {
        worker_stats st;
        ck_assert_int_eq(scheduler_worker_stats(H.s, w, &st), 0);
        t.batches += st.batches;
        t.forwards += st.forwards;
        t.failed_forwards += st.failed_forwards;
        t.rows += st.rows;
        t.tokens += st.tokens;
    }
    return t;
}

static worker_stats stats_of(int w)
{
    worker_stats st;
    ck_assert_int_eq(scheduler_worker_stats(H.s, w, &st), 0);
    return st;
}

START_TEST(busy_worker_gets_no_batch_while_others_are_free)
{
    /* Worker 0 takes the first batch and stays on it for 1.5 s; 30 requests
     * arriving meanwhile must all be answered by workers 1 and 2 before it is
     * back (round-robin would hand every third one to worker 0 and make them
     * wait for it). */
    const int sleeps[3] = {1500000, 2000, 2000};
    start_n(3, 1024, 0, 64, 30, sleeps, -1);
    serve_job *first = job_create(NULL, parse(9, 2), on_done, NULL);
    submit_ok(first);
    double end = sched_now() + 5;
    while (atomic_load(&H.fw[0]->calls) == 0 && sched_now() < end)
        usleep(1000);
    ck_assert_int_eq(atomic_load(&H.fw[0]->calls), 1);
    enum { N = 30 };
    serve_job *jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(3 + i % 11, 1 + i % 3), on_done, NULL);
        submit_ok(jobs[i]);
        usleep(1000);
    }
    /* All N answered while worker 0 still runs the first batch: exactly N done
     * (N + 1 would be the first too). The count is what the loop thread's
     * completions publish; the jobs' fields are read only after it. */
    wait_done(N, 5);
    ck_assert_int_eq(atomic_load(&H.fw[0]->calls), 1);
    for (int i = 0; i < N; i++) {
        ck_assert_msg(jobs[i]->finished && jobs[i]->status == 200, "job %d: finished %d status %d", i,
                      jobs[i]->finished, jobs[i]->status);
        ck_assert(results_ok(jobs[i]));
    }
    /* Both free workers were used (ties go to the one given fewer tokens). */
    ck_assert_int_gt(stats_of(1).batches, 0);
    ck_assert_int_gt(stats_of(2).batches, 0);
    ck_assert_int_eq(stats_of(0).batches, 0); /* still running its first */
    wait_done(N + 1, 10);
    ck_assert_int_eq(first->status, 200);
    ck_assert(results_ok(first));
    ck_assert_int_eq(stats_of(0).batches, 1);
    for (int i = 0; i < N; i++)
        job_unref(jobs[i]);
    job_unref(first);
    stop(5);
}
END_TEST

/* Runs the same N requests through n_workers workers (with the given
 * per-forward sleeps) and returns every row's logits and activations, in
 * job order, into out (malloc'ed). Checks the per-worker counters. */
enum { SAME_N = 48 };

static float *run_mix(int n_workers, const int *sleeps, size_t *n_out, int *workers_used)
{
    start_n(n_workers, 1024, 2000, 6, 30, sleeps, -1);
    serve_job *jobs[SAME_N];
    long long rows = 0, tokens = 0;
    for (int i = 0; i < SAME_N; i++) {
        jobs[i] = job_create(NULL, parse(2 + (i * 7) % 23, 1 + i % 5), on_done, NULL);
        rows += jobs[i]->n_rows;
        tokens += jobs[i]->n_tokens;
    }
    for (int i = 0; i < SAME_N; i++)
        submit_ok(jobs[i]);
    wait_done(SAME_N, 30);
    size_t n = 0;
    for (int i = 0; i < SAME_N; i++)
        n += (size_t)jobs[i]->n_rows * (255 + LAYA_N_ACT);
    float *out = calloc(n, sizeof *out);
    ck_assert_ptr_nonnull(out);
    size_t k = 0;
    for (int i = 0; i < SAME_N; i++) {
        ck_assert_int_eq(jobs[i]->status, 200);
        ck_assert(results_ok(jobs[i]));
        for (int r = 0; r < jobs[i]->n_rows; r++) {
            memcpy(out + k, request_row_logits(jobs[i]->req, r), (size_t)jobs[i]->rows[r].n_markers * sizeof(float));
            k += 255;
            memcpy(out + k, request_row_act(jobs[i]->req, r), LAYA_N_ACT * sizeof(float));
            k += LAYA_N_ACT;
        }
    }
    /* Counters: every row and token forwarded exactly once, by some worker. */
    worker_stats t = stats_total();
    ck_assert_int_eq(t.rows, rows);
    ck_assert_int_eq(t.tokens, tokens);
    ck_assert_int_eq(t.failed_forwards, 0);
    ck_assert_int_ge(t.forwards, t.batches);
    long long calls = 0;
    *workers_used = 0;
    for (int w = 0; w < n_workers; w++) {
        worker_stats st = stats_of(w);
        ck_assert_int_eq(st.forwards, atomic_load(&H.fw[w]->calls));
        calls += st.forwards;
        *workers_used += st.batches > 0;
    }
    ck_assert_int_eq(calls, t.forwards);
    worker_stats none;
    ck_assert_int_eq(scheduler_worker_stats(H.s, n_workers, &none), -1);
    for (int i = 0; i < SAME_N; i++)
        job_unref(jobs[i]);
    stop(5);
    *n_out = n;
    return out;
}

START_TEST(answers_identical_whichever_worker)
{
    const int one[1] = {3000}, four[4] = {3000, 1000, 6000, 2000};
    size_t n1, n4;
    int used1, used4;
    float *a = run_mix(1, one, &n1, &used1);
    float *b = run_mix(4, four, &n4, &used4);
    ck_assert_int_eq(used1, 1);
    ck_assert_msg(used4 >= 3, "only %d of 4 workers got a batch", used4);
    ck_assert_uint_eq(n1, n4);
    ck_assert_msg(memcmp(a, b, n1 * sizeof *a) == 0, "answers differ between 1 and 4 workers");
    free(a);
    free(b);
}
END_TEST

START_TEST(failing_worker_batch_retried_alone)
{
    /* Worker 1 faults on its first forward (whatever the rows): the requests
     * of that batch are retried one by one and answered; worker 0 and the
     * requests it carried are untouched, and both keep serving afterwards. */
    const int sleeps[2] = {100000, 1000};
    start_n(2, 1024, 0, 64, 30, sleeps, -1);
    atomic_store(&H.fw[1]->fail_next, 1);
    serve_job *first = job_create(NULL, parse(5, 1), on_done, NULL);
    submit_ok(first); /* -> worker 0 (tie: lowest index), busy for 100 ms */
    double end = sched_now() + 5;
    while (atomic_load(&H.fw[0]->calls) == 0 && sched_now() < end)
        usleep(1000);
    enum { N = 10 };
    serve_job *jobs[N];
    for (int i = 0; i < N; i++)
        jobs[i] = job_create(NULL, parse(4 + i, 1 + i % 2), on_done, NULL);
    for (int i = 0; i < N; i++)
        submit_ok(jobs[i]); /* worker 1 is the free one: it takes the first of these and faults */
    wait_done(N + 1, 30);
    ck_assert_int_eq(first->status, 200);
    ck_assert(results_ok(first));
    for (int i = 0; i < N; i++) {
        ck_assert_msg(jobs[i]->status == 200, "job %d: %d", i, jobs[i]->status);
        ck_assert(results_ok(jobs[i]));
    }
    ck_assert_int_eq(stats_of(1).failed_forwards, 1);
    ck_assert_int_eq(stats_of(0).failed_forwards, 0);
    /* The faulted batch's rows ran again: more rows forwarded than submitted. */
    long long rows = first->n_rows;
    for (int i = 0; i < N; i++)
        rows += jobs[i]->n_rows;
    ck_assert_int_gt(stats_total().rows, rows);
    /* Both workers still serve. */
    serve_job *more[N];
    for (int i = 0; i < N; i++) {
        more[i] = job_create(NULL, parse(6 + i, 2), on_done, NULL);
        submit_ok(more[i]);
        usleep(3000);
    }
    wait_done(2 * N + 1, 30);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(more[i]->status, 200);
        ck_assert(results_ok(more[i]));
        job_unref(more[i]);
        job_unref(jobs[i]);
    }
    ck_assert_int_gt(stats_of(0).batches, 1);
    ck_assert_int_gt(stats_of(1).batches, 1);
    job_unref(first);
    stop(5);
}
END_TEST

START_TEST(poison_row_fails_alone_with_several_workers)
{
    laya_request *p = parse(40, 1);
    int poison = request_rows(p)[0].len;
    const int sleeps[3] = {2000, 2000, 2000};
    start_n(3, 1024, 5000, 8, 30, sleeps, poison);
    enum { N = 24 };
    serve_job *jobs[N];
    for (int i = 0; i < N; i++)
        jobs[i] = job_create(NULL, i == 7 ? p : parse(3 + i % 9, 1 + i % 3), on_done, NULL);
    for (int i = 0; i < N; i++)
        submit_ok(jobs[i]);
    wait_done(N, 30);
    for (int i = 0; i < N; i++) {
        if (i == 7)
            ck_assert_int_eq(jobs[i]->status, 500);
        else
            ck_assert_msg(jobs[i]->status == 200 && results_ok(jobs[i]), "neighbour %d: %d", i, jobs[i]->status);
        job_unref(jobs[i]);
    }
    ck_assert_int_ge(stats_total().failed_forwards, 2); /* its batch, then itself alone */
    stop(5);
}
END_TEST

/* ---- overload: token budget, interleaving, cancellation, shedding by time ------------ */

static _Atomic int g_calls_at_done[64]; /* the fake's forward count when job i finished */

static void on_done_calls(serve_job *j)
{
    int i = (int)(intptr_t)j->user;
    atomic_store(&g_calls_at_done[i], atomic_load(&H.f->calls));
    on_done(j);
}

START_TEST(token_budget_refused_before_work)
{
    g_max_request_tokens = 200;
    start(1024, 0, 64, 30, 0, -1);
    serve_job *big = job_create(NULL, parse(60, 4), on_done, NULL), *small = job_create(NULL, parse(3, 1), on_done, NULL);
    ck_assert_int_gt(big->n_tokens, 200);
    ck_assert_int_le(small->n_tokens, 200);
    int reason = 0;
    ck_assert_int_eq(scheduler_submit(H.s, big, &reason), -1);
    ck_assert_int_eq(reason, SCHED_REJ_TOO_LARGE);
    ck_assert_int_eq(scheduler_submit(H.s, small, &reason), 0);
    wait_done(1, 10);
    ck_assert_int_eq(small->status, 200);
    ck_assert_int_eq(stats_total().rows, small->n_rows); /* none of the big one's rows ran */
    job_unref(big);
    job_unref(small);
    stop(5);
}
END_TEST

START_TEST(small_job_waits_one_batch_behind_big)
{
    /* 8 rows per batch, 50 ms per forward; a 30-row job is 4 batches alone. */
    start(1024, 0, 8, 30, 50000, -1);
    serve_job *big = job_create(NULL, parse(5, 30), on_done_calls, (void *)(intptr_t)0);
    serve_job *small = job_create(NULL, parse(4, 1), on_done_calls, (void *)(intptr_t)1);
    submit_ok(big);
    while (atomic_load(&H.f->calls) < 1)
        usleep(500);
    submit_ok(small); /* behind the big one, its first batch in flight */
    wait_done(2, 10);
    ck_assert_int_eq(small->status, 200);
    ck_assert_int_eq(big->status, 200);
    ck_assert(results_ok(small) && results_ok(big));
    ck_assert_msg(atomic_load(&g_calls_at_done[1]) <= 2, "the small job finished with forward %d",
                  atomic_load(&g_calls_at_done[1]));
    ck_assert_int_le(atomic_load(&H.f->max_n), 8);
    job_unref(big);
    job_unref(small);
    stop(5);
}
END_TEST

START_TEST(split_job_not_starved_by_small_ones)
{
    /* A stream of fresh jobs fills batches; the big one still gets half of each. */
    start(1024, 0, 8, 30, 5000, -1);
    serve_job *big = job_create(NULL, parse(5, 24), on_done_calls, (void *)(intptr_t)0);
    submit_ok(big);
    enum { N = 60 };
    serve_job *small[N];
    for (int i = 0; i < N; i++) {
        small[i] = job_create(NULL, parse(3, 2), on_done_calls, (void *)(intptr_t)(i + 1));
        submit_ok(small[i]);
    }
    wait_done(N + 1, 20);
    ck_assert_int_eq(big->status, 200);
    ck_assert(results_ok(big));
    /* 24 rows at 4 or more per batch: done by the 6th forward of the 15 the small ones need */
    int last = 0;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(small[i]->status, 200);
        if (atomic_load(&g_calls_at_done[i + 1]) > last)
            last = atomic_load(&g_calls_at_done[i + 1]);
        job_unref(small[i]);
    }
    ck_assert_msg(atomic_load(&g_calls_at_done[0]) <= 6 && last >= 15, "big done at forward %d, small by %d",
                  atomic_load(&g_calls_at_done[0]), last);
    ck_assert_int_eq(atomic_load(&H.status_count[200]), N + 1);
    job_unref(big);
    stop(5);
}
END_TEST

static int always_gone(serve_job *j)
{
    (void)j;
    return 1;
}

START_TEST(cancelled_and_gone_jobs_do_not_run)
{
    start(1024, 0, 8, 30, 100000, -1);
    serve_job *a = job_create(NULL, parse(4, 1), on_done, NULL);
    submit_ok(a);
    while (atomic_load(&H.f->calls) < 1)
        usleep(500);
    /* queued behind a: one cancelled by the HTTP side, one whose client is gone */
    serve_job *b = job_create(NULL, parse(5, 3), on_done, NULL), *c = job_create(NULL, parse(6, 2), on_done, NULL);
    c->gone = always_gone;
    submit_ok(b);
    submit_ok(c);
    scheduler_cancel(H.s, b);
    /* in flight: a 30-row job cancelled after its first batch started */
    serve_job *d = job_create(NULL, parse(7, 30), on_done, NULL);
    submit_ok(d);
    wait_done(3, 5);
    while (!d->t_dispatch)
        usleep(500);
    double t0 = sched_now();
    scheduler_cancel(H.s, d);
    wait_done(4, 5);
    ck_assert_msg(sched_now() - t0 < 0.3, "cancel took %.3f s", sched_now() - t0); /* not its 4 batches */
    ck_assert_int_eq(a->status, 200);
    ck_assert_int_eq(b->status, 499);
    ck_assert_int_eq(c->status, 499);
    ck_assert_int_eq(d->status, 499);
    usleep(250000);
    /* a's row and at most the one batch of d already running */
    ck_assert_int_le(stats_total().rows, 1 + 8);
    job_unref(a);
    job_unref(b);
    job_unref(c);
    job_unref(d);
    stop(5);
}
END_TEST

START_TEST(shed_by_estimated_wait_with_retry_after)
{
    g_max_queue_wait_s = 0.15;
    start(1024, 0, 4, 30, 50000, -1); /* 50 ms a batch of up to 4 rows */
    serve_job *w = job_create(NULL, parse(10, 4), on_done, NULL);
    submit_ok(w); /* one batch back: the throughput is measured */
    wait_done(1, 5);
    double tps = 0;
    scheduler_est_wait(H.s, &tps);
    ck_assert_msg(tps > 0, "no throughput measured");
    enum { N = 40 };
    serve_job *jobs[N];
    int accepted = 0, shed = 0;
    for (int i = 0; i < N; i++) {
        jobs[i] = job_create(NULL, parse(10, 4), on_done, NULL);
        int reason = 0;
        if (scheduler_submit(H.s, jobs[i], &reason) == 0) {
            accepted++;
            continue;
        }
        ck_assert_int_eq(reason, REJ_QUEUE_FULL);
        ck_assert_int_ge(jobs[i]->retry_after, 1);
        ck_assert_int_le(jobs[i]->retry_after, 60);
        shed++;
        job_unref(jobs[i]);
        jobs[i] = NULL;
    }
    /* each job is one 50 ms batch: about 0.15 s / 50 ms (+ the one in flight) get in */
    ck_assert_msg(accepted >= 2 && accepted <= 6, "accepted %d", accepted);
    ck_assert_int_eq(accepted + shed, N);
    wait_done(1 + accepted, 10);
    for (int i = 0; i < N; i++)
        if (jobs[i]) {
            ck_assert_int_eq(jobs[i]->status, 200);
            ck_assert_msg(jobs[i]->queue_s < 0.15 + 0.1, "waited %.3f s", jobs[i]->queue_s);
            job_unref(jobs[i]);
        }
    job_unref(w);
    stop(5);
}
END_TEST

static void setup(void)
{
    layad_error err;
    if (checkpoint_open(&ck, tu_tiny(), &err)) {
        fprintf(stderr, "tiny checkpoint: %s\n", err.msg);
        exit(1);
    }
    metrics_init();
    g_max_request_tokens = 0;
    g_max_queue_wait_s = 0;
}

static void teardown(void)
{
    checkpoint_close(&ck);
}

Suite *suite(void)
{
    Suite *s = suite_create("scheduler");
    TCase *tc = tcase_create("scheduler");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, rows_of_many_requests_share_batches);
    tcase_add_test(tc, two_models_share_a_worker);
    tcase_add_test(tc, polling_workers_answer_and_stop);
    tcase_add_test(tc, polling_loop_sleeps_when_idle);
    tcase_add_test(tc, prewake_wakes_sleeping_threads);
    tcase_add_test(tc, prewake_without_spin_wakes_nothing);
    tcase_add_test(tc, prewake_wakes_the_next_worker);
    tcase_add_test(tc, big_request_split_over_batches);
    tcase_add_test(tc, failed_batch_retried_one_by_one);
    tcase_add_test(tc, deadline_504_late_result_dropped);
    tcase_add_test(tc, queue_full_rejects_at_once);
    tcase_add_test(tc, shutdown_finishes_then_503);
    tcase_add_test(tc, drain_rejects_new_work);
    tcase_add_test(tc, busy_worker_gets_no_batch_while_others_are_free);
    tcase_add_test(tc, answers_identical_whichever_worker);
    tcase_add_test(tc, failing_worker_batch_retried_alone);
    tcase_add_test(tc, poison_row_fails_alone_with_several_workers);
    tcase_add_test(tc, token_budget_refused_before_work);
    tcase_add_test(tc, small_job_waits_one_batch_behind_big);
    tcase_add_test(tc, split_job_not_starved_by_small_ones);
    tcase_add_test(tc, cancelled_and_gone_jobs_do_not_run);
    tcase_add_test(tc, shed_by_estimated_wait_with_retry_after);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
