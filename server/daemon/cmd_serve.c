/*
 * cmd_serve.c - `layad serve`: the daemon's lifecycle.
 *
 *   config (defaults < file < env < flags) -> log -> listen (readiness 503)
 *   -> open + verify every checkpoint (models.c) -> one worker per device,
 *      holding one backend per model (CUDA: every visible ordinal, or
 *      --devices; CPU: cpu_workers of them)
 *   -> warm + verify each backend with a synthetic row (finite logits)
 *   -> READY=1, readiness 200 -> serve on the scheduler loop
 *   SIGTERM/SIGINT: readiness 503, intake stops (new requests 503 with
 *   Connection: close), queued and in-flight work finishes within
 *   shutdown_grace_s, the rest is answered 503; then new connections are
 *   refused, every request begun is answered, and only then are connections
 *   closed. Exit 0, or 1 when a request received got no response.
 *   SIGHUP: reopen the log. WATCHDOG=1 from the loop when systemd asks.
 *
 * The scheduler loop runs on the main thread, so signals, the watchdog and
 * batch completion are all serialized there; HTTP runs on MHD's pool.
 * The bearer key is read and checked by keys.c, the backends built and
 * warmed by backends.c; this file keeps the order of the steps.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/backend/cuda.h"
#include "model/checkpoint/checkpoint.h"
#include "server/daemon/app.h"
#include "server/daemon/backends.h"
#include "server/cli/commands.h"
#include "server/daemon/config.h"
#include "server/daemon/keys.h"
#include "server/daemon/models.h"
#include "server/telemetry/gpu_snapshot.h"
#include "server/http/http.h"
#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"
#include "server/daemon/notify.h"
#include "server/sched/scheduler.h"

/* Everything cmd_serve owns; teardown() frees whatever of it was set up. */
typedef struct serve_state {
    serve_app *app;
    serve_config *cfg;
    laya_checkpoint *cks;   /* [MODELS_MAX] */
    int n_open;             /* checkpoints opened */
    http_server *http;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t watchdog, stats;
    int n_cuda;
    int stopping;
} serve_state;

/* Set by a SIGTERM / SIGINT that arrives while the checkpoints load (before the loop's own
 * handlers), read by the main thread once loaded. The signal can land on any thread (an HTTP
 * worker's, say), so the flag is a lock-free atomic, which a handler may store and another
 * thread read; a volatile sig_atomic_t is only safe within one thread. */
static atomic_int g_stop_while_loading;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a signal handler may store only a lock-free atomic");

static void early_stop(int sig)
{
    (void)sig;
    atomic_store(&g_stop_while_loading, 1);
}

/* ---- loop callbacks ------------------------------------------------------------- */

static void on_stop_signal(uv_signal_t *h, int sig)
{
    serve_state *st = h->data;
    if (st->stopping) {
        log_msg("info", "%s again: already draining", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return;
    }
    st->stopping = 1;
    log_msg("info", "%s: draining (grace %.1f s), readiness 503", sig == SIGTERM ? "SIGTERM" : "SIGINT",
            st->cfg->shutdown_grace_s);
    atomic_store(&st->app->state, APP_DRAINING);
    notify_stopping("draining");
    uv_timer_stop(&st->stats);
    scheduler_shutdown(st->app->sched, st->cfg->shutdown_grace_s);
}

static void on_hup(uv_signal_t *h, int sig)
{
    (void)h;
    (void)sig;
    if (log_reopen())
        log_msg("error", "SIGHUP: cannot reopen the log file; still writing to the old one");
    else
        log_msg("info", "SIGHUP: log reopened");
}

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    notify_watchdog();
}

static void on_stats(uv_timer_t *t)
{
    serve_state *st = t->data;
    long long hits = 0, misses = 0;
    for (int i = 0; i < st->n_cuda; i++)
        for (int m = 0; m < st->app->models.n; m++) {
            cuda_backend_stats s;
            cuda_backend_stats_get(scheduler_backend(st->app->sched, i, m), &s);
            hits += s.graph_hits;
            misses += s.graph_misses;
        }
    metrics_graph_cache(hits, misses);
}

/* ---- set-up, run, teardown -------------------------------------------------------- */

/* Configuration, the log and the early signal dispositions. 0 to go on, or -1
 * with *rc the exit status (0 after --help, 2 for a bad configuration). */
static int configure(serve_state *st, int argc, char **argv, int *rc)
{
    serve_config *cfg = st->cfg;
    layad_error err;
    layad_error_clear(&err);
    int c = serve_config_load(cfg, argc, argv, &err);
    *rc = 2;
    if (c == 1) {
        *rc = 0;
        return -1;
    }
    if (c < 0) {
        fprintf(stderr, "layad serve: %s\n", err.msg);
        return -1;
    }
    if (!cfg->model.n) {
        fprintf(stderr, "layad serve: --model is required (see layad serve --help)\n");
        return -1;
    }
    if (log_open(cfg->log_file, !strcmp(cfg->log_format, "json"))) {
        fprintf(stderr, "layad serve: cannot open log file %s\n", cfg->log_file);
        return -1;
    }
    if (keys_resolve(st->app, st->cfg, argc, argv, &err)) {
        log_msg("error", "%s", err.msg);
        return -1;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, early_stop);
    signal(SIGINT, early_stop);
    signal(SIGHUP, SIG_IGN);
    return 0;
}

/* The bearer key, metrics, the GPU snapshot and the HTTP front (readiness 503
 * while loading). Logs its failure. */
static int start_front(serve_state *st)
{
    serve_app *app = st->app;
    const serve_config *cfg = st->cfg;
    layad_error err;
    layad_error_clear(&err);
    app->cfg = cfg;
    app->start_time = sched_now();
    atomic_store(&app->state, APP_LOADING);
    metrics_init();
    metrics_watch_ready(&app->state, APP_READY);
    if (cfg->gpu_metrics && gpu_snapshot_start())
        log_msg("info", "NVML found: GPU snapshot exported in /metrics");

    st->http = http_start(app, &err);
    if (!st->http) {
        log_msg("error", "%s", err.msg);
        return -1;
    }
    log_msg("info", "listening on %s:%d (loading %s%s)", cfg->bind, http_port(st->http), cfg->model.item[0],
            cfg->model.n > 1 ? " and more" : "");
    notify_status("loading checkpoint");
    return 0;
}

/* The request options, routed through the model table. */
static void set_request_opts(serve_app *app, const serve_config *cfg)
{
    decide_opts_default(&app->opts);
    app->opts.jev_strict = cfg->jev_strict;
    app->opts.max_len_cap = cfg->max_len;
    app->opts.head_max_len_cap = cfg->head_max_len;
    app->opts.return_logits_allowed = cfg->return_logits;
    app->opts.max_questions = cfg->max_questions;
    app->opts.max_options = cfg->max_options;
    app->opts.max_levels = cfg->max_levels;
    app->opts.max_states = cfg->max_states;
    app->opts.max_state_bytes = (size_t)cfg->max_state_bytes;
    app->opts.models = &app->models;
}

/* Opens and verifies every checkpoint, then derives the request options. Logs its failure. */
static int load_models(serve_state *st)
{
    layad_error err;
    layad_error_clear(&err);
    if (models_open(st->cfg, st->cks, &st->n_open, &st->app->models, &err)) {
        log_msg("error", "%s", err.msg);
        return -1;
    }
    set_request_opts(st->app, st->cfg);
    return 0;
}

/* The scheduler, then one warmed backend + worker per device; the app is
 * loaded afterwards. Logs its failure. */
static int start_scheduler(serve_state *st)
{
    serve_app *app = st->app;
    const serve_config *cfg = st->cfg;
    layad_error err;
    layad_error_clear(&err);
    int max_len = cfg->max_len;
    for (int m = 0; m < app->models.n; m++)
        if (app->models.m[m].ck->cfg.max_len > max_len)
            max_len = app->models.m[m].ck->cfg.max_len;
    sched_opts so = {cfg->max_queue, cfg->batch_window_us, cfg->max_batch_rows,
                     cfg->max_batch_tokens, cfg->request_timeout_s, 2, 0, cfg->max_request_tokens,
                     cfg->max_queue_wait_s, 0};
    /* the CPU backend runs packs at their exact size: no bucket rounding in the cost */
    so.exact_cost = !(!strcmp(cfg->device, "cuda") || (!strcmp(cfg->device, "auto") && cuda_device_count() > 0));
    /* auto: poll on the GPU, where a worker waits on the device anyway; on the
     * CPU the cores are the backend's */
    so.worker_spin_us = cfg->worker_spin_us >= 0 ? cfg->worker_spin_us : so.exact_cost ? 0 : 1000;
    /* covers the forward of a short request on the GPU (1-2 ms on the H200) */
    app->http_spin_us = cfg->http_spin_us >= 0 ? cfg->http_spin_us : so.exact_cost ? 0 : 2000;
    if (so.kmax < cfg->max_options)
        so.kmax = cfg->max_options;
    if (so.kmax < cfg->max_levels)
        so.kmax = cfg->max_levels;
    if (so.max_batch_tokens < max_len) {
        log_msg("warn", "max_batch_tokens %d < max_len %d: raised so that any row fits", so.max_batch_tokens, max_len);
        so.max_batch_tokens = max_len;
        st->cfg->max_batch_tokens = max_len; /* every model's backend cuts the same packs as the scheduler */
    }
    app->sched = scheduler_create(&so, &err);
    if (!app->sched) {
        log_msg("error", "%s", err.msg);
        return -1;
    }
    double t0 = sched_now();
    if (backends_build(app, cfg, &st->n_cuda, &err)) {
        log_msg("error", "backend: %s", err.msg);
        return -1;
    }
    log_msg("info", "%s backend ready (%s, %s), warm-up %.2f s", app->device_kind, app->device_desc, app->dtype,
            sched_now() - t0);
    atomic_store(&app->loaded, 1);
    return 0;
}

/* Signals, the watchdog and the stats timer on the scheduler loop. */
static void start_loop_handles(serve_state *st)
{
    uv_loop_t *loop = scheduler_loop(st->app->sched);
    uv_signal_init(loop, &st->sig_term);
    uv_signal_init(loop, &st->sig_int);
    uv_signal_init(loop, &st->sig_hup);
    uv_timer_init(loop, &st->watchdog);
    uv_timer_init(loop, &st->stats);
    st->sig_term.data = st->sig_int.data = st->sig_hup.data = st->stats.data = st;
    uv_signal_start(&st->sig_term, on_stop_signal, SIGTERM);
    uv_signal_start(&st->sig_int, on_stop_signal, SIGINT);
    uv_signal_start(&st->sig_hup, on_hup, SIGHUP);
    uint64_t wd = notify_watchdog_interval_us();
    if (wd) {
        uint64_t ms = wd / 1000 ? wd / 1000 : 1;
        uv_timer_start(&st->watchdog, on_watchdog, ms, ms);
    }
    uv_timer_start(&st->stats, on_stats, 1000, 1000);
}

/* READY, then the loop until shutdown completes, then the last responses out. */
static void run(serve_state *st)
{
    serve_app *app = st->app;
    int expected = APP_LOADING;
    if (!atomic_compare_exchange_strong(&app->state, &expected, APP_READY))
        scheduler_drain(app->sched); /* /drain arrived while loading */
    char status[320];
    snprintf(status, sizeof status, "serving %.100s%s on %.64s:%d (%.120s)", app->models.m[0].name,
             app->models.n > 1 ? " and more" : "", st->cfg->bind, http_port(st->http), app->device_desc);
    notify_ready(status);
    log_msg("info", "ready: %s", status);
    if (atomic_load(&g_stop_while_loading))
        uv_kill(getpid(), SIGTERM); /* a stop asked for while loading: drain (nothing queued) and exit */

    scheduler_run(app->sched); /* returns once every job accepted is finished */

    if (http_wait_idle(st->http, 5.0))
        log_msg("warn", "some responses were not sent before exit");
    http_wait_quiet(st->http, 0.2, 2.0); /* clients talking to us at the signal get their 503 */
    http_quiesce(st->http);              /* then refuse new connections */
    if (http_wait_answered(st->http, 5.0))
        log_msg("warn", "%ld requests still unanswered at exit", atomic_load(&app->requests_open));
}

/* Frees whatever of st was set up, in reverse order; the log closes last. */
static void teardown(serve_state *st)
{
    if (st->http)
        http_stop(st->http);
    if (st->app && st->app->sched)
        scheduler_destroy(st->app->sched);
    models_close(st->cks, st->n_open);
    gpu_snapshot_stop();
}

int cmd_serve(int argc, char **argv)
{
    serve_state st = {0};
    int rc = 1;
    st.cfg = calloc(1, sizeof *st.cfg);
    st.app = calloc(1, sizeof *st.app);
    st.cks = calloc(MODELS_MAX, sizeof *st.cks);
    if (!st.cfg || !st.app || !st.cks) {
        fprintf(stderr, "layad serve: out of memory\n");
        goto out;
    }
    if (configure(&st, argc, argv, &rc))
        goto out;
    rc = 1;
    if (start_front(&st) || load_models(&st) || start_scheduler(&st))
        goto out;
    start_loop_handles(&st);
    run(&st);
    rc = 0;
    log_msg("info", "stopped");
out:
    teardown(&st);
    if (rc == 1 && atomic_load(&g_stop_while_loading))
        rc = 0;
    long dropped = st.app ? atomic_load(&st.app->requests_dropped) : 0;
    if (dropped) {
        log_msg("error", "%ld requests received got no response (connection closed at exit)", dropped);
        if (rc == 0)
            rc = 1;
    }
    log_close();
    free(st.cks);
    free(st.app);
    free(st.cfg);
    return rc;
}
