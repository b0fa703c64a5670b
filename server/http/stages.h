/*
 * stages.h - where an answered decision spent its time between the end of its
 * body and its last byte: the scheduler's and the backend's stages (serve_job)
 * plus the HTTP thread's own (parse, resume, format, send). They go out as the
 * Server-Timing header and into laya_serving_stage_seconds{stage}.
 */
#ifndef LAYAD_HTTP_STAGES_H
#define LAYAD_HTTP_STAGES_H

#include <stddef.h>

#include "server/sched/scheduler.h"

typedef struct http_stages {
    double parse_s;  /* body complete -> submitted */
    double resume_s; /* job finished (loop thread) -> an HTTP thread took it up */
    double format_s; /* response body */
} http_stages;

/* The Server-Timing value for job j (finished): queue and infer always, the
 * stages when it was answered 200. Writes at most n bytes. */
void stages_server_timing(const serve_job *j, const http_stages *h, char *out, size_t n);

/* Observes every stage of a job answered 200 (send_s: queued -> last byte). */
void stages_observe(const serve_job *j, const http_stages *h, double send_s);

#endif
