/*
 * http.c - see http.h.
 *
 * Why the 413 for an over-long streamed body is written on the socket by
 * hand: libmicrohttpd 0.9.x only accepts a queued response right after the
 * headers or after the whole body; queueing one mid-upload fails, and the
 * alternatives are to keep reading (the attack we are defending against) or
 * to drop the connection silently. So at the first byte past the cap we send
 * a complete HTTP/1.1 413 with Connection: close, shut down our sending side
 * and tell MHD to close: the client gets its answer, the rest of the body is
 * never read.
 *
 * Suspend/resume race: the scheduler may finish a job before the handler has
 * suspended the connection; a small per-connection mutex orders the two
 * (done() resumes only a suspended connection, after releasing the mutex; a
 * handler that finds the job already done answers at once).
 *
 * Memory: each request lives in a request slot taken when its head arrives
 * (slots.h): the connection state, the body, the request, its job and the
 * response bytes, which MHD sends from the slot (MHD_RESPMEM_PERSISTENT). The
 * request-completed callback drops the connection's hold on the slot; the
 * job's last reference drops the other. Only GET bodies (health, metrics) are
 * still malloc'ed, off the decision path. With no free slot the request is
 * answered 503 at once from static bytes.
 *
 * The checks on a request head live in head.c, the listening socket's
 * set-up in listen.c (http_internal.h); this file handles the requests.
 */
#include "server/http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "model/base/clock.h"
#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"
#include "server/http/stages.h"
#include "server/http/conn_guard.h"
#include "server/http/http_internal.h"
#include "server/http/routes.h"
#include "server/http/slots.h"

struct http_server {
    struct MHD_Daemon *d;
    serve_app *app;
    int port;
    MHD_socket quiesced_fd; /* the listening socket after http_quiesce, closed after stop; else -1 */
    conn_guard *guard;      /* head/body deadlines and room under pressure (owned) */
    slot_pool *slots;       /* every request's memory (owned) */
};

static _Atomic long long g_last_request_ms; /* monotonic ms of the latest request start */

typedef struct conn_ctx {
    req_slot *slot;         /* where this context, the body and the request live */
    serve_app *app;
    struct MHD_Connection *conn;
    int endpoint, route_status;
    char rid[65];
    char method[12], path[160];
    double t_start, t_body, t_replied;
    http_stages st;       /* this thread's stages of a decision (Server-Timing) */
    char *body;           /* in the slot's arena */
    size_t len, cap;
    int strict, replied, status;
    serve_job *job;
    guard_conn *gc;       /* the connection's guard slot (NULL if untracked) */
    int close_after;      /* answer with Connection: close */
    pthread_mutex_t lock; /* orders suspend (handler) vs done (scheduler loop) */
    int suspended;
    _Atomic int completed; /* set under lock; read without it while polling */
    char error[160];
} conn_ctx;

static _Atomic unsigned long long g_rid_counter;
static unsigned long long g_rid_salt;

/* ---- helpers ---------------------------------------------------------------- */

static int is_decide(int ep)
{
    return routes_takes_body(ep);
}

/* Queues r on the connection, with the common headers; frees r's body. */
static enum MHD_Result send_reply(conn_ctx *x, http_reply *r)
{
    struct MHD_Response *resp =
        r->body ? MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE)
                : MHD_create_response_from_buffer(r->fixed ? r->len : 0, (void *)(r->fixed ? r->fixed : ""),
                                                  MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(r->body);
        return MHD_NO;
    }
    r->body = NULL;
    int ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                     r->content_type ? r->content_type : "application/json") == MHD_YES;
    ok &= MHD_add_response_header(resp, "X-Request-Id", x->rid) == MHD_YES;
    char tmp[160];
    if (r->retry_after) {
        snprintf(tmp, sizeof tmp, "%d", r->retry_after);
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, tmp) == MHD_YES;
    }
    if (r->status == 405)
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, routes_allow(x->endpoint)) == MHD_YES;
    if (r->csp)
        ok &= MHD_add_response_header(resp, "Content-Security-Policy", r->csp) == MHD_YES;
    if (r->status == 401)
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer") == MHD_YES;
    if (x->close_after || atomic_load(&x->app->state) == APP_DRAINING) /* no next request on this connection */
        ok &= MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES;
    if (is_decide(x->endpoint) && x->job) {
        char timing[400];
        stages_server_timing(x->job, &x->st, timing, sizeof timing);
        ok &= MHD_add_response_header(resp, "Server-Timing", timing) == MHD_YES;
    }
    x->status = r->status;
    snprintf(x->error, sizeof x->error, "%s", r->error);
    enum MHD_Result q = ok ? MHD_queue_response(x->conn, (unsigned int)r->status, resp) : MHD_NO;
    MHD_destroy_response(resp);
    x->replied = 1;
    x->t_replied = sched_now();
    guard_busy(x->gc); /* the rest is MHD's to send; no body deadline */
    return q;
}

static enum MHD_Result send_error(conn_ctx *x, int status, const char *fmt, const char *arg)
{
    http_reply r = {.a = &x->slot->a};
    routes_error(&r, status, NULL, fmt, arg);
    return send_reply(x, &r);
}

/* The 413 for a body that crossed the cap mid-stream (see the file comment). */
static enum MHD_Result refuse_streamed_body(conn_ctx *x)
{
    http_reply r = {.a = &x->slot->a};
    routes_error(&r, 413, NULL, "request body over the %ld-byte limit", x->app->cfg->max_body_bytes);
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "X-Request-Id: %s\r\nContent-Length: %zu\r\n\r\n",
                      x->rid, r.len);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci && hn > 0 && (size_t)hn < sizeof head) {
        /* Two small writes into an empty send buffer: they do not block. */
        const char *body = r.body ? r.body : r.fixed;
        if (send(ci->connect_fd, head, (size_t)hn, MSG_NOSIGNAL) == hn && body)
            (void)!send(ci->connect_fd, body, r.len, MSG_NOSIGNAL);
        shutdown(ci->connect_fd, SHUT_WR);
    }
    x->status = 413;
    snprintf(x->error, sizeof x->error, "body over the limit (streamed)");
    x->replied = 1;
    metrics_reject(REJ_BODY_TOO_LARGE);
    return MHD_NO; /* MHD closes the connection without reading further */
}

/* ---- completion hook (scheduler loop thread) ------------------------------------- */

static void job_done(serve_job *j)
{
    /* Resume only after unlocking: once resumed, an HTTP thread may answer,
     * complete and free x (and its mutex) before this thread runs again. */
    conn_ctx *x = j->user;
    atomic_fetch_sub_explicit(&x->app->decisions_running, 1, memory_order_relaxed);
    pthread_mutex_lock(&x->lock);
    x->completed = 1;
    int resume = x->suspended;
    struct MHD_Connection *c = x->conn;
    x->suspended = 0;
    pthread_mutex_unlock(&x->lock);
    if (resume)
        MHD_resume_connection(c); /* a suspended connection is never freed by MHD */
}

/* serve_job.gone (scheduler loop thread, before the job's rows run): the
 * client closed its connection. Only while the handler or the suspension
 * holds x, i.e. until done(); a peer that half-closes after its request counts
 * as gone too. */
static int client_gone(serve_job *j)
{
    conn_ctx *x = j->user;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return 0;
    struct pollfd p = {ci->connect_fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 0) != 1)
        return 0;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP))
        return 1;
    char c;
    return recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* ---- MHD callbacks --------------------------------------------------------------- */

static enum MHD_Result finish_decide(conn_ctx *x)
{
    http_reply r = {.a = &x->slot->a};
    const double t0 = sched_now();
    x->st.parse_s = x->job->t_enqueue - x->t_body;
    x->st.resume_s = x->job->t_done > 0 ? t0 - x->job->t_done : 0;
    routes_decide_end(x->app, x->endpoint, x->job, &r);
    x->st.format_s = sched_now() - t0;
    return send_reply(x, &r);
}

/* Phase 1, headers in: a context for the connection in a free slot, with its
 * request id (the client's when sane, else generated) and strict flag; NULL
 * when no slot is free (or its mutex cannot be made). */
static conn_ctx *conn_ctx_new(http_server *h, struct MHD_Connection *c, const char *url, const char *method)
{
    serve_app *app = h->app;
    req_slot *slot = slot_get(h->slots);
    conn_ctx *x = slot ? arena_alloc(&slot->a, sizeof *x) : NULL;
    if (!x || pthread_mutex_init(&x->lock, NULL)) {
        if (slot)
            slot_unref(slot);
        return NULL;
    }
    x->slot = slot;
    x->app = app;
    x->conn = c;
    atomic_fetch_add(&app->requests_open, 1);
    x->t_start = sched_now();
    atomic_store(&g_last_request_ms, (long long)(x->t_start * 1e3));
    snprintf(x->method, sizeof x->method, "%s", method);
    snprintf(x->path, sizeof x->path, "%s", url);
    const char *rid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    if (rid && http_rid_ok(rid))
        snprintf(x->rid, sizeof x->rid, "%s", rid);
    else
        snprintf(x->rid, sizeof x->rid, "%016llx",
                 (atomic_fetch_add(&g_rid_counter, 1) + 1) * 0x9E3779B97F4A7C15ULL ^ g_rid_salt);
    const char *st = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Jev-Strict");
    x->strict = st && (!strcmp(st, "1") || !strcasecmp(st, "true"));
    const union MHD_ConnectionInfo *gi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    x->gc = gi ? gi->socket_context : NULL;
    guard_head_in(x->gc); /* the head is in: the body deadline starts */
    return x;
}

/* Phase 1, continued: routing (404/405), the bearer key (401) and a declared
 * Content-Length over the cap (413) are answered before any body is read. */
static enum MHD_Result admit(conn_ctx *x, const char *url, const char *method, const char *version)
{
    serve_app *app = x->app;
    const char *bad = http_framing_error(x->conn, version, &x->close_after);
    if (bad)
        return send_error(x, 400, "%s", bad);
    x->route_status = routes_lookup(method, url, &x->endpoint);
    if (x->route_status == 404)
        return send_error(x, 404, "no such endpoint: %s", x->path);
    if (x->route_status == 405)
        return send_error(x, 405, "method not allowed; use %s", routes_allow(x->endpoint));
    if (app->key_len && routes_needs_auth(x->endpoint) && !http_auth_ok(app, x->conn)) {
        metrics_reject(REJ_UNAUTHORIZED);
        return send_error(x, 401, "%s", "missing or wrong bearer key");
    }
    const char *cl = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        char *end = NULL;
        unsigned long long n = strtoull(cl, &end, 10);
        if (end != cl && n > (unsigned long long)app->cfg->max_body_bytes) {
            metrics_reject(REJ_BODY_TOO_LARGE);
            http_reply r = {.a = &x->slot->a};
            routes_error(&r, 413, NULL, "request body over the %ld-byte limit", app->cfg->max_body_bytes);
            return send_reply(x, &r);
        }
    }
    /* a decision is on its way: the scheduler's sleeping threads wake while its body is read
     * (acquire: the scheduler was created before the store that made the state READY) */
    if (is_decide(x->endpoint) && atomic_load_explicit(&app->state, memory_order_acquire) == APP_READY)
        scheduler_prewake(app->sched);
    return MHD_YES;
}

/* Phase 2, body bytes: counted against the cap for every endpoint; kept only
 * where a body is meaningful. Consumes all of *size. */
static enum MHD_Result take_body(conn_ctx *x, const char *data, size_t *size)
{
    size_t max = (size_t)x->app->cfg->max_body_bytes;
    if (x->replied) {
        *size = 0;
        return MHD_YES;
    }
    if (*size > max - x->len)
        return refuse_streamed_body(x);
    if (routes_takes_body(x->endpoint)) {
        if (x->len + *size > x->cap) {
            size_t nc = x->cap ? x->cap : 16384;
            while (nc < x->len + *size)
                nc *= 2;
            if (nc > max)
                nc = max;
            char *nb = arena_grow(&x->slot->a, x->body, x->cap, nc);
            if (!nb)
                return MHD_NO;
            x->body = nb;
            x->cap = nc;
        }
        memcpy(x->body + x->len, data, *size);
    }
    x->len += *size;
    *size = 0;
    return MHD_YES;
}

/* While x's decision is the only one in flight, polls for its answer for up
 * to the configured spin. Resuming a suspended connection wakes its HTTP
 * thread out of epoll (~40 us on the H200 host, and the thread then formats
 * on cold caches); a thread that polls answers within a microsecond of the
 * scheduler. The poll stops as soon as another decision is pending, so under
 * load the threads suspend as before and serve their other connections. */
static void await_lone_answer(conn_ctx *x)
{
    const double until = layad_now() + x->app->http_spin_us * 1e-6;
    while (!atomic_load_explicit(&x->completed, memory_order_acquire) &&
           atomic_load_explicit(&x->app->decisions_running, memory_order_relaxed) <= 1 &&
           atomic_load_explicit(&x->app->state, memory_order_relaxed) == APP_READY && layad_now() < until)
        for (int i = 0; i < 32; i++)
            layad_cpu_relax();
}

/* Phase 3, a decide request with its whole body: validated and submitted
 * (or answered at once with its 4xx/5xx); the connection is suspended until
 * job_done, unless the job finished already (or while the thread polled). */
static enum MHD_Result submit_decide(conn_ctx *x)
{
    http_reply r = {.a = &x->slot->a};
    serve_job *job = NULL;
    /* counted before the job exists, so that its job_done always finds it counted */
    const long running = atomic_fetch_add_explicit(&x->app->decisions_running, 1, memory_order_relaxed);
    if (!routes_decide_begin(x->app, x->endpoint, x->body ? x->body : "", x->len, x->strict, job_done, x, &job,
                             &r)) {
        atomic_fetch_sub_explicit(&x->app->decisions_running, 1, memory_order_relaxed);
        return send_reply(x, &r);
    }
    x->job = job;
    /* The job's hold on the slot, dropped by its last reference; set while this side's
     * reference is held, so the scheduler's unref cannot be the last before it. */
    slot_ref(x->slot);
    job->release = slot_unref;
    job->release_ctx = x->slot;
    atomic_fetch_add(&x->app->responses_pending, 1);
    if (running == 0 && x->app->http_spin_us > 0)
        await_lone_answer(x);
    pthread_mutex_lock(&x->lock);
    int done_already = x->completed;
    if (!done_already) {
        x->suspended = 1;
        MHD_suspend_connection(x->conn);
    }
    pthread_mutex_unlock(&x->lock);
    if (!done_already)
        return MHD_YES;
    metrics_answer_taken(TAKEN_POLLED);
    return finish_decide(x);
}

/* Phase 3, the request is complete (or resumed after its job finished): answer it. */
static enum MHD_Result dispatch(conn_ctx *x)
{
    if (x->replied)
        return MHD_YES;
    guard_busy(x->gc); /* the whole request is in */
    if (x->job) { /* resumed after the scheduler finished the job */
        metrics_answer_taken(TAKEN_RESUMED);
        return finish_decide(x);
    }
    x->t_body = sched_now();
    if (!routes_takes_body(x->endpoint)) {
        http_reply r = {.a = &x->slot->a};
        routes_simple(x->app, x->endpoint, http_peer_is_loopback(x->conn), &r);
        return send_reply(x, &r);
    }
    return submit_decide(x);
}

/* The context of a request answered 503 for want of a slot: it has no state. */
static char g_no_slot;

/* Every slot in use: 503 (or /v1/systemone's busy status) with Retry-After,
 * from static bytes; the body, if any, is read and dropped. */
static enum MHD_Result refuse_no_slot(http_server *h, struct MHD_Connection *c, const char *url, const char *method)
{
    static const char body[] = "{\"error\": {\"message\": \"the server is overloaded; retry later\", "
                               "\"field\": null}, \"detail\": \"the server is overloaded; retry later\"}";
    int endpoint = 0;
    (void)routes_lookup(method, url, &endpoint);
    int jev = endpoint == EP_SYSTEMONE || endpoint == EP_SYSTEMONE_BATCH;
    metrics_reject(REJ_QUEUE_FULL);
    struct MHD_Response *resp = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    int ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") == MHD_YES &&
             MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1") == MHD_YES;
    enum MHD_Result q =
        ok ? MHD_queue_response(c, jev ? (unsigned)h->app->cfg->systemone_busy_status : 503, resp) : MHD_NO;
    MHD_destroy_response(resp);
    return q;
}

/* MHD calls this once with the headers, once per chunk of body, then once
 * with *size == 0 when the body is complete (and again after a resume). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *data, size_t *size, void **con_cls)
{
    conn_ctx *x = *con_cls;
    if ((void *)x == &g_no_slot) {
        *size = 0;
        return MHD_YES;
    }
    if (!x) {
        x = conn_ctx_new(cls, c, url, method);
        if (!x) {
            *con_cls = &g_no_slot;
            return refuse_no_slot(cls, c, url, method);
        }
        *con_cls = x;
        return admit(x, url, method, version);
    }
    if (*size)
        return take_body(x, data, size);
    return dispatch(x);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    serve_app *app = ((http_server *)cls)->app;
    conn_ctx *x = *con_cls;
    if (!x || (void *)x == &g_no_slot) {
        *con_cls = NULL;
        return;
    }
    *con_cls = NULL;
    guard_request_done(x->gc); /* waiting for the next head, if the connection stays */
    if (guard_reason_of(x->gc) == GUARD_BODY_LATE) {
        snprintf(x->error, sizeof x->error, "request body not received within body_timeout_s");
        x->status = 408;
    } else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && x->status != 413) {
        /* The answer did not reach the client (it hung up, timed out, or
         * the daemon is stopping): the log says so instead of the status. */
        static const char *why[] = {"completed", "error", "timeout", "daemon shutdown", "read error",
                                    "client abort"};
        snprintf(x->error, sizeof x->error, "connection ended before the response was sent (%s)",
                 (unsigned)toe < sizeof why / sizeof why[0] ? why[toe] : "unknown");
        x->status = 0;
        if (toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
            atomic_fetch_add(&app->requests_dropped, 1);
    }
    atomic_fetch_sub(&app->requests_open, 1);
    double total = sched_now() - x->t_start;
    metrics_request(x->endpoint, x->status, x->t_body > 0 ? sched_now() - x->t_body : total);
    if (app->cfg->log_requests) {
        log_request_line l = {x->rid, x->method, x->path, x->status, x->job ? x->job->n_rows : 0,
                              x->job ? x->job->n_tokens : 0, x->job ? x->job->queue_s * 1e3 : 0,
                              x->job ? x->job->infer_s * 1e3 : 0, total * 1e3, x->error[0] ? x->error : NULL,
                              x->job ? app->models.m[x->job->model].name : NULL};
        log_request(&l);
    }
    if (x->job) {
        if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && x->t_replied > 0)
            stages_observe(x->job, &x->st, sched_now() - x->t_replied);
        job_unref(x->job);
        atomic_fetch_sub(&app->responses_pending, 1);
    }
    pthread_mutex_destroy(&x->lock);
    slot_unref(x->slot); /* x is gone after this */
}

/* Every connection's open and close (MHD's threads): its guard slot, kept as
 * MHD's socket context. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code)
{
    http_server *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx = ci ? guard_open(h->guard, ci->connect_fd) : NULL;
    } else {
        guard_close(*socket_ctx);
        *socket_ctx = NULL;
    }
}

/* ---- start / stop ---------------------------------------------------------------- */

http_server *http_start(serve_app *app, layad_error *err)
{
    const serve_config *cfg = app->cfg;
    if (getrandom(&g_rid_salt, sizeof g_rid_salt, 0) != sizeof g_rid_salt)
        g_rid_salt = (unsigned long long)getpid() * 0x2545F4914F6CDD1DULL;
    http_server *h = calloc(1, sizeof *h);
    if (!h) {
        layad_fail(err, 500, "out of memory (http)");
        return NULL;
    }
    h->app = app;
    h->quiesced_fd = MHD_INVALID_SOCKET;
    app->client_gone = client_gone;
    int ipv6 = 0, fd = http_open_listener(cfg, &ipv6, err);
    if (fd < 0)
        goto fail;
    h->guard = guard_create(cfg->max_connections, cfg->header_timeout_s, cfg->body_timeout_s, err);
    if (!h->guard)
        goto fail;
    h->slots = slots_create(cfg->max_connections + cfg->max_queue, (size_t)cfg->max_body_bytes, err);
    if (!h->slots)
        goto fail;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_POLL;
    flags |= ipv6 ? MHD_USE_IPv6 : 0;
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->http_threads,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cfg->max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)cfg->max_connections_per_ip,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->connection_timeout_s,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    if (!h->d) {
        /* fd is not closed here: MHD may have closed it already; the process is exiting */
        layad_fail(err, 500, "cannot start the HTTP server on %s:%d", cfg->bind, cfg->port);
        goto fail;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    h->port = cfg->port;
    if (!getsockname(fd, (struct sockaddr *)&bound, &bl))
        h->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    return h;
fail:
    slots_destroy(h->slots);
    guard_destroy(h->guard);
    free(h);
    return NULL;
}

int http_port(const http_server *h)
{
    return h->port;
}

int http_wait_idle(http_server *h, double timeout_s)
{
    double end = sched_now() + timeout_s;
    while (atomic_load(&h->app->responses_pending) > 0) {
        if (sched_now() > end)
            return -1;
        usleep(2000);
    }
    return 0;
}

void http_wait_quiet(http_server *h, double quiet_s, double max_s)
{
    (void)h;
    double end = sched_now() + max_s;
    while (sched_now() < end && sched_now() * 1e3 - (double)atomic_load(&g_last_request_ms) < quiet_s * 1e3)
        usleep(5000);
}

void http_quiesce(http_server *h)
{
    if (h->quiesced_fd != MHD_INVALID_SOCKET)
        return;
    h->quiesced_fd = MHD_quiesce_daemon(h->d);
    if (h->quiesced_fd == MHD_INVALID_SOCKET)
        return;
    /* Connections the kernel completed but MHD had not accepted yet: a client
     * has sent its request on each, so they are served (503, draining) like
     * the others; then the socket refuses new ones (shut down, not closed:
     * MHD's threads may still hold its number until MHD_stop_daemon). */
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(h->quiesced_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            break;
        if (MHD_add_connection(h->d, fd, (struct sockaddr *)&sa, sl) != MHD_YES)
            log_msg("warn", "a connection accepted while stopping could not be served");
    }
    shutdown(h->quiesced_fd, SHUT_RD);
}

int http_wait_answered(http_server *h, double timeout_s)
{
    /* A connection taken before the quiesce may not have shown MHD its request
     * yet (requests_open does not count it): wait for every connection to
     * close (each closes after its response while draining), or, for idle
     * keep-alive ones, for 0.3 s without a request beginning. */
    double end = sched_now() + timeout_s;
    for (;;) {
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        long open = atomic_load(&h->app->requests_open);
        double idle_s = sched_now() - (double)atomic_load(&g_last_request_ms) * 1e-3;
        if (open == 0 && ((di && di->num_connections == 0) || idle_s >= 0.3))
            return 0;
        if (sched_now() > end)
            return -1;
        usleep(2000);
    }
}

void http_stop(http_server *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    guard_destroy(h->guard); /* after MHD closed every connection */
    slots_destroy(h->slots);
    if (h->quiesced_fd != MHD_INVALID_SOCKET)
        close(h->quiesced_fd);
    free(h);
}
