/*
 * app.h - the state the HTTP front shares with the rest of the daemon.
 *
 * One serve_app per process, built by cmd_serve: configuration, the served
 * models (set before the state becomes READY and read-only afterwards),
 * the scheduler, the request options derived from the configuration, and the
 * lifecycle state that /readyz and /health report.
 */
#ifndef LAYAD_SERVER_APP_H
#define LAYAD_SERVER_APP_H

#include <stdatomic.h>
#include <stddef.h>

#include "model/checkpoint/checkpoint.h"
#include "server/api/models.h"
#include "server/api/request.h"
#include "server/daemon/config.h"
#include "server/sched/scheduler.h"

enum app_state { APP_LOADING = 0, APP_READY = 1, APP_DRAINING = 2 };

typedef struct serve_app {
    const serve_config *cfg;
    _Atomic int state;            /* enum app_state */
    _Atomic int loaded;           /* 1 once models, sched and the fields below are set */
    model_table models;           /* the served checkpoints, the first the default; valid once loaded */
    scheduler *sched;             /* valid once loaded */
    decide_opts opts;             /* request limits; opts.models = &models */
    char device_kind[16];         /* "cpu" or "cuda" */
    char device_desc[256];        /* e.g. "cpu (2 threads)", "cuda:0 NVIDIA H200" (logs, sd_notify) */
    char devices_json[4096];      /* JSON array, one object per worker's device (/health) */
    char dtype[16];               /* "fp32", "fp16", "bf16" */
    double start_time;            /* sched_now() at start */
    char key[SERVE_KEY_MAX + 1];  /* bearer key ("" = none) */
    size_t key_len;
    _Atomic long responses_pending; /* suspended/decided requests not yet sent */
    _Atomic long decisions_running; /* submitted decisions whose job is not done yet */
    _Atomic long requests_open;   /* requests begun (headers in) and not yet completed */
    _Atomic long requests_dropped; /* requests ended by the daemon stopping, without their response */
    int (*client_gone)(serve_job *j); /* the HTTP front's serve_job.gone (set by http_start) */
    int http_spin_us;             /* resolved http_spin_us; valid once loaded */
} serve_app;

#endif
