/*
 * jobs.c - a job's lifetime (see serve_job in scheduler.h).
 *
 * A job is reference counted: the HTTP side holds one reference from
 * job_create, the scheduler one from a successful scheduler_submit until
 * the job is finished and no batch or queue entry points at it any more.
 * The last job_unref frees the request with the job, on whichever thread; a
 * job in an arena is handed back through its release hook instead (the
 * daemon's request slot, which holds the request too).
 */
#include <stdlib.h>

#include "server/sched/internal.h"
#include "server/telemetry/metrics.h"

serve_job *job_create(arena *a, laya_request *r, void (*done)(serve_job *), void *user)
{
    serve_job *j = a ? arena_alloc(a, sizeof *j) : calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->mem = a;
    j->req = r;
    j->model = request_model(r);
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
    if (!j || atomic_fetch_sub(&j->refs, 1) != 1)
        return;
    if (j->mem) {
        if (j->release)
            j->release(j->release_ctx); /* j is gone after this */
        return;
    }
    request_free(j->req);
    free(j);
}

void job_finish(serve_job *j, int status, const layad_error *err)
{
    if (j->finished)
        return;
    j->finished = 1;
    j->status = status;
    if (err)
        j->err = *err;
    if (status == 504)
        metrics_reject(REJ_DEADLINE);
    if (status == 200)
        metrics_model_answer(j->model, j->n_tokens);
    j->done(j);
}

void job_release_if_idle(serve_job *j)
{
    if (j->finished && !j->queued && j->in_flight == 0)
        job_unref(j);
}
