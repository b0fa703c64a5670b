/*
 * routes.h - the endpoints of server/api/README.md, as functions from a request to a reply.
 *
 * The HTTP plumbing (http.c) owns connections, bodies and headers; this file
 * decides what each endpoint answers. Everything here runs on HTTP worker
 * threads: the decide endpoints parse, validate and tokenize in
 * routes_decide_begin and format in routes_decide_end, so the scheduler and
 * the workers only ever see rows and logits.
 */
#ifndef LAYAD_SERVER_ROUTES_H
#define LAYAD_SERVER_ROUTES_H

#include <stddef.h>

#include "server/daemon/app.h"
#include "server/sched/scheduler.h"

typedef struct http_reply {
    arena *a;            /* set by the caller: error and decision bodies are written here (the
                            request's slot, which lives until the response is sent) as `fixed`;
                            NULL: they are malloc'ed as `body` */
    int status;
    char *body;          /* malloc'ed, owned by the reply until sent */
    const char *fixed;   /* or a body that outlives the reply (a literal, an embedded file, the
                            request's arena): sent without a copy */
    size_t len;
    const char *content_type;
    int retry_after;     /* seconds; 0: no Retry-After header */
    const char *allow;   /* Allow header for 405 */
    int www_authenticate;
    const char *csp;     /* Content-Security-Policy header (static string), or NULL */
    char error[160];     /* the error message, for the log line only */
} http_reply;

/* Finds the endpoint for a path. Returns 0 (method allowed), 404 (unknown
 * path; *endpoint = EP_OTHER) or 405 (known path, wrong method). */
int routes_lookup(const char *method, const char *url, int *endpoint);
const char *routes_allow(int endpoint);
int routes_needs_auth(int endpoint); /* everything but the probes */
int routes_takes_body(int endpoint); /* POST /decide, /v1/systemone */

/* An error reply in the server/api/README.md shape (field may be NULL). Never fails: on
 * out-of-memory the body is a static minimal one. */
void routes_error(http_reply *r, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void routes_error_from(http_reply *r, const layad_error *e);

/* GET endpoints and POST /drain. peer_loopback: the client is on loopback
 * (for /drain without a key). */
void routes_simple(serve_app *app, int endpoint, int peer_loopback, http_reply *r);

/* /decide and /v1/systemone, first half: parse + validate + tokenize, then
 * submit. Returns 1 when *job was submitted (the caller suspends until
 * done(job) runs; done is called on the scheduler loop thread), 0 when r
 * holds the reply already (error, overload, or a request without rows).
 * The request, its job and its answer live in r->a (required). */
int routes_decide_begin(serve_app *app, int endpoint, const char *body, size_t len, int strict,
                        void (*done)(serve_job *), void *user, serve_job **job, http_reply *r);

/* Second half, after done(job): formats the answer or the job's error. */
void routes_decide_end(serve_app *app, int endpoint, serve_job *job, http_reply *r);

#endif
