/*
 * stages.c - see stages.h. Server-Timing durations are milliseconds with
 * microsecond resolution; launch and gpu lie inside run, h2d and d2h inside
 * gpu (the host's launch call, and the device's own timing of the span and
 * the copies of the forward that finished the job).
 */
#include "server/http/stages.h"

#include <stdio.h>

#include "server/telemetry/metrics.h"

/* The stage values of j and h, indexed by enum metrics_stage (send excluded). */
static void stage_values(const serve_job *j, const http_stages *h, double v[ST_COUNT])
{
    v[ST_PARSE] = h->parse_s;
    v[ST_WAKE] = j->wake_s;
    v[ST_STAGE] = j->fwd.stage_s;
    v[ST_RUN] = j->fwd.run_s;
    v[ST_LAUNCH] = j->fwd.launch_s;
    v[ST_GPU] = j->fwd.gpu_s;
    v[ST_H2D] = j->fwd.h2d_s;
    v[ST_D2H] = j->fwd.d2h_s;
    v[ST_UNPACK] = j->fwd.unpack_s;
    v[ST_BACK] = j->back_s;
    v[ST_RESUME] = h->resume_s;
    v[ST_FORMAT] = h->format_s;
    v[ST_SEND] = 0;
}

void stages_server_timing(const serve_job *j, const http_stages *h, char *out, size_t n)
{
    int w = snprintf(out, n, "queue;dur=%.3f, infer;dur=%.3f", j->queue_s * 1e3, j->infer_s * 1e3);
    if (j->status != 200)
        return;
    double v[ST_COUNT];
    stage_values(j, h, v);
    for (int i = 0; i < ST_COUNT && w > 0 && (size_t)w < n; i++)
        if (i != ST_SEND)
            w += snprintf(out + w, n - (size_t)w, ", %s;dur=%.3f", metrics_stage_name(i), v[i] * 1e3);
}

void stages_observe(const serve_job *j, const http_stages *h, double send_s)
{
    if (j->status != 200)
        return;
    double v[ST_COUNT];
    stage_values(j, h, v);
    v[ST_SEND] = send_s;
    for (int i = 0; i < ST_COUNT; i++)
        metrics_stage(i, v[i]);
}
