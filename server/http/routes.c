/*
 * routes.c - see routes.h.
 *
 * Busy answers (loading, draining, overloaded) carry Retry-After: 503 on /decide, and on
 * /v1/systemone and its /batch the configured systemone_busy_status: 503 by default, the
 * status the official laya client (laya.mcp.remote) reads as "busy" (it reports any other
 * as an upstream error), or 529 ("site overloaded") for Jev clients that retry on it.
 * A 500 never carries details to the client (request_error_write
 * replaces its message); the details go to the log line.
 */
#include "server/http/routes.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/openapi/openapi.h"
#include "server/http/docs/docs.h"
#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"

static const struct {
    const char *path;
    int endpoint;
    const char *methods; /* Allow header */
} table[] = {
    {"/decide", EP_DECIDE, "POST"},   {"/v1/systemone", EP_SYSTEMONE, "POST"},
    {"/v1/models", EP_MODELS, "GET, HEAD"}, {"/healthz", EP_HEALTHZ, "GET, HEAD"},
    {"/readyz", EP_READYZ, "GET, HEAD"},    {"/health", EP_HEALTH, "GET, HEAD"},
    {"/drain", EP_DRAIN, "POST"},     {"/metrics", EP_METRICS, "GET, HEAD"},
    {"/v1/systemone/batch", EP_SYSTEMONE_BATCH, "POST"},
    {"/openapi.json", EP_OPENAPI, "GET, HEAD"}, {"/docs", EP_DOCS, "GET, HEAD"},
};
#define N_ROUTES (sizeof table / sizeof table[0])

int routes_lookup(const char *method, const char *url, int *endpoint)
{
    *endpoint = EP_OTHER;
    size_t plen = strcspn(url, "?");
    for (size_t i = 0; i < N_ROUTES; i++) {
        if (strlen(table[i].path) != plen || strncmp(table[i].path, url, plen))
            continue;
        *endpoint = table[i].endpoint;
        int post = !strcmp(table[i].methods, "POST");
        if (post ? !strcmp(method, "POST") : (!strcmp(method, "GET") || !strcmp(method, "HEAD")))
            return 0;
        return 405;
    }
    return 404;
}

const char *routes_allow(int endpoint)
{
    for (size_t i = 0; i < N_ROUTES; i++)
        if (table[i].endpoint == endpoint)
            return table[i].methods;
    return "";
}

int routes_needs_auth(int endpoint)
{
    /* /docs is a static page without secrets (served at all only when config docs allows) */
    return endpoint != EP_HEALTHZ && endpoint != EP_READYZ && endpoint != EP_DOCS;
}

int routes_takes_body(int endpoint)
{
    return endpoint == EP_DECIDE || endpoint == EP_SYSTEMONE || endpoint == EP_SYSTEMONE_BATCH;
}

/* n bytes that outlive the reply (a literal, an embedded file) as its body, not copied. */
static void reply_fixed(http_reply *r, int status, const char *bytes, size_t n, const char *content_type)
{
    r->status = status;
    r->fixed = bytes;
    r->len = n;
    r->content_type = content_type;
}

static void reply_static(http_reply *r, int status, const char *body)
{
    reply_fixed(r, status, body, strlen(body), "application/json");
}

/* GET /docs: the embedded page, or 404 when config docs turns it off. */
static void reply_docs(serve_app *app, http_reply *r)
{
    if (!docs_enabled(app->cfg->docs, app->key_len > 0)) {
        routes_error(r, 404, NULL, "%s", !strcmp(app->cfg->docs, "false")
                                              ? "/docs is off (config docs = false)"
                                              : "/docs is off: a bearer key is set (config docs = true serves it)");
        return;
    }
    size_t n = 0;
    const char *page = docs_page(&n);
    reply_fixed(r, 200, page, n, "text/html; charset=utf-8");
    r->csp = DOCS_CSP;
}

/* Adds each device's worker counters to its /health entry (entry i is
 * worker i: both are created in the same order at start-up). */
static void add_worker_stats(serve_app *app, json_t *devs)
{
    if (!devs || !app->sched)
        return;
    for (size_t i = 0; i < json_array_size(devs); i++) {
        worker_stats st;
        json_t *d = json_array_get(devs, i);
        if (!json_is_object(d) || scheduler_worker_stats(app->sched, (int)i, &st))
            continue;
        json_object_set_new(d, "batches", json_integer(st.batches));
        json_object_set_new(d, "forwards", json_integer(st.forwards));
        json_object_set_new(d, "failed_forwards", json_integer(st.failed_forwards));
        json_object_set_new(d, "rows", json_integer(st.rows));
        json_object_set_new(d, "tokens", json_integer(st.tokens));
        json_object_set_new(d, "busy_seconds", json_real(st.busy_s));
    }
}

void routes_error_from(http_reply *r, const layad_error *e)
{
    /* 503/504/529 are not internal failures: their message is meant for the client */
    int service = e->status == 503 || e->status == 504 || e->status == 529;
    pj_buf b = pj_buf_in(r->a);
    request_error_write(&b, e, service);
    snprintf(r->error, sizeof r->error, "%.159s", e->msg);
    if (b.failed || !b.p) {
        pj_buf_free(&b);
        reply_static(r, e->status, "{\"error\": {\"message\": \"internal error\", \"field\": null}, "
                                   "\"detail\": \"internal error\"}");
        return;
    }
    r->status = e->status;
    if (r->a)
        r->fixed = b.p;
    else
        r->body = b.p;
    r->len = b.len;
    r->content_type = "application/json";
}

void routes_error(http_reply *r, int status, const char *field, const char *fmt, ...)
{
    layad_error e;
    layad_error_clear(&e);
    e.status = status;
    if (field)
        snprintf(e.field, sizeof e.field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    routes_error_from(r, &e);
}

/* Serializes j (stealing the reference) into r; 500 on failure. */
static void reply_json(http_reply *r, int status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!s) {
        routes_error(r, 500, NULL, "out of memory formatting a reply");
        return;
    }
    r->status = status;
    r->body = s;
    r->len = strlen(s);
    r->content_type = "application/json";
}

static const char *state_name(int st)
{
    return st == APP_READY ? "ready" : st == APP_DRAINING ? "draining" : "loading";
}

/* GET /readyz: 200 when ready, else 503 naming the state, with Retry-After: 1. */
static void reply_readyz(int st, http_reply *r)
{
    if (st == APP_READY)
        reply_static(r, 200, "{\"status\":\"ready\"}");
    else
        reply_json(r, 503, json_pack("{s:s}", "status", state_name(st)));
    if (st != APP_READY)
        r->retry_after = 1;
}

/* The Hugging Face commit a checkpoint directory was read from: the <sha> of a cache path
 * ".../snapshots/<40 hex>/...", else NULL (a plain directory, as laya reports local paths). */
static json_t *hf_revision(const char *dir)
{
    const char *p = strstr(dir, "/snapshots/");
    if (!p)
        return json_null();
    p += strlen("/snapshots/");
    size_t n = strspn(p, "0123456789abcdef");
    if (n != 40 || (p[n] && p[n] != '/'))
        return json_null();
    return json_stringn(p, n);
}

/* The fields laya-serve's /health has and the official client reads (laya.mcp.remote:
 * `loaded`, `revisions`; laya_status: `device_is_preference`, `checkpoint_devices`), for
 * every checkpoint layad serves, under its served name, the default first. */
static void add_laya_fields(serve_app *app, int loaded, json_t *h)
{
    json_t *names = json_array(), *revs = json_object(), *devs = json_object();
    for (int m = 0; loaded && m < app->models.n; m++) {
        const served_model *sm = &app->models.m[m];
        json_array_append_new(names, json_string(sm->name));
        json_object_set_new(revs, sm->name, hf_revision(sm->ck->dir));
        json_object_set_new(devs, sm->name, json_string(app->device_kind));
    }
    json_object_set_new(h, "loaded", names);
    json_object_set_new(h, "revisions", revs);
    json_object_set_new(h, "device_is_preference", json_false());
    json_object_set_new(h, "checkpoint_devices", devs);
}

/* Whether name reaches the default model only through the fallback (not one of its own names). */
static int find_exact_default(const model_table *t, const char *name)
{
    if (model_table_find(t, name, strlen(name)) != 0 || !strcmp(t->m[0].name, name))
        return 0;
    for (int a = 0; a < t->m[0].n_alias; a++)
        if (!strcmp(t->m[0].alias[a], name))
            return 0;
    return 1;
}

/* The served models, default first: {id, object, owned_by, aliases, sha256} for /v1/models,
 * {model, checkpoint, sha256, parameters, max_len, default} for /health. */
static json_t *models_json(const serve_app *app, int openai)
{
    json_t *data = json_array();
    for (int m = 0; data && m < app->models.n; m++) {
        const served_model *sm = &app->models.m[m];
        json_t *e;
        if (openai) {
            json_t *aliases = json_array();
            for (int a = 0; aliases && a < sm->n_alias; a++)
                json_array_append_new(aliases, json_string(sm->alias[a]));
            for (const char *const *d = MODEL_DEFAULT_NAMES; aliases && m == 0 && *d; d++)
                if (find_exact_default(&app->models, *d))
                    json_array_append_new(aliases, json_string(*d));
            e = json_pack("{s:s,s:s,s:s,s:o*,s:s,s:b}", "id", sm->name, "object", "model", "owned_by", "layad",
                          "aliases", aliases, "sha256", sm->ck->sha256, "default", m == 0);
        } else {
            e = json_pack("{s:s,s:s,s:s,s:I,s:i,s:b}", "model", sm->name, "checkpoint", sm->ck->dir, "sha256",
                          sm->ck->sha256, "parameters", (json_int_t)sm->ck->n_params, "max_len",
                          sm->ck->cfg.max_len, "default", m == 0);
        }
        json_array_append_new(data, e);
    }
    return data;
}

/* GET /health: state, the default model and its checkpoint, and every model (once loaded),
 * devices with their worker stats, queue depth and limit, uptime, and laya-serve's fields. */
static void reply_health(serve_app *app, int st, int loaded, http_reply *r)
{
    json_t *h = json_pack("{s:s}", "status", state_name(st));
    if (h && loaded) {
        const laya_checkpoint *ck = app->models.m[0].ck;
        json_object_set_new(h, "model", json_string(app->models.m[0].name));
        json_object_set_new(h, "checkpoint", json_string(ck->dir));
        json_object_set_new(h, "sha256", json_string(ck->sha256));
        json_object_set_new(h, "parameters", json_integer(ck->n_params));
        json_object_set_new(h, "models", models_json(app, 0));
    }
    if (h) {
        json_object_set_new(h, "device", json_string(app->device_kind));
        json_t *devs = json_loads(app->devices_json, 0, NULL);
        if (loaded)
            add_worker_stats(app, devs);
        json_object_set_new(h, "devices", devs ? devs : json_array());
        json_object_set_new(h, "dtype", json_string(app->dtype));
        json_object_set_new(h, "queue_depth", json_integer(scheduler_depth(app->sched)));
    }
    if (h) {
        json_object_set_new(h, "max_queue", json_integer(app->cfg->max_queue));
        json_object_set_new(h, "uptime_seconds", json_real(sched_now() - app->start_time));
        add_laya_fields(app, loaded, h);
    }
    reply_json(r, 200, h);
}

/* GET /v1/models: every served model, default first, with its other names as aliases
 * (the built-in router names included); 503 while loading. */
static void reply_models(serve_app *app, int loaded, http_reply *r)
{
    if (!loaded) {
        routes_error(r, 503, NULL, "the model is still loading");
        r->retry_after = 1;
        return;
    }
    reply_json(r, 200, json_pack("{s:s,s:o*}", "object", "list", "data", models_json(app, 1)));
}

/* POST /drain (loopback or bearer key only): stops intake, readiness turns 503. */
static void reply_drain(serve_app *app, int loaded, int peer_loopback, http_reply *r)
{
    if (!app->key_len && !peer_loopback) {
        routes_error(r, 403, NULL, "/drain is allowed from loopback or with the bearer key only");
        return;
    }
    atomic_store(&app->state, APP_DRAINING);
    if (loaded)
        scheduler_drain(app->sched);
    log_msg("info", "drain requested: intake stopped, readiness 503");
    reply_json(r, 200, json_pack("{s:s,s:I}", "status", "draining", "queue_depth",
                                 (json_int_t)(loaded ? scheduler_depth(app->sched) : 0)));
}

/* GET /metrics: the Prometheus text exposition; r takes the rendered buffer. */
static void reply_metrics(http_reply *r)
{
    size_t n = 0;
    char *m = metrics_render(&n);
    if (!m) {
        routes_error(r, 500, NULL, "out of memory rendering metrics");
        return;
    }
    r->status = 200;
    r->body = m;
    r->len = n;
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

void routes_simple(serve_app *app, int endpoint, int peer_loopback, http_reply *r)
{
    int st = atomic_load(&app->state);
    int loaded = atomic_load(&app->loaded);
    switch (endpoint) {
    case EP_HEALTHZ:
        reply_static(r, 200, "{\"status\":\"ok\"}");
        return;
    case EP_READYZ:
        reply_readyz(st, r);
        return;
    case EP_HEALTH:
        reply_health(app, st, loaded, r);
        return;
    case EP_MODELS:
        reply_models(app, loaded, r);
        return;
    case EP_DRAIN:
        reply_drain(app, loaded, peer_loopback, r);
        return;
    case EP_METRICS:
        reply_metrics(r);
        return;
    case EP_OPENAPI: {
        size_t n = 0;
        const char *doc = openapi_document(&n);
        reply_fixed(r, 200, doc, n, "application/json");
        return;
    }
    case EP_DOCS:
        reply_docs(app, r);
        return;
    default:
        routes_error(r, 404, NULL, "no such endpoint");
    }
}

static void overloaded(serve_app *app, http_reply *r, int endpoint, const char *why)
{
    int jev = endpoint == EP_SYSTEMONE || endpoint == EP_SYSTEMONE_BATCH;
    routes_error(r, jev ? app->cfg->systemone_busy_status : 503, NULL, "%s; retry later", why);
    r->retry_after = 1;
}

/* The reply to a job the scheduler refused (why in reason); the job is released. */
static void refused(serve_app *app, int endpoint, serve_job *j, int reason, http_reply *r)
{
    long ntok = j->n_tokens;
    int retry = j->retry_after;
    job_unref(j);
    if (reason == SCHED_REJ_TOO_LARGE) {
        routes_error(r, 413, NULL,
                     "the request has %ld input tokens, over the %ld-token limit per request "
                     "(max_request_tokens); split it into smaller requests",
                     ntok, app->cfg->max_request_tokens);
        return;
    }
    if (reason < 0) {
        routes_error(r, 500, NULL, "a row exceeds the scheduler's configured shape limits");
        return;
    }
    metrics_reject(reason);
    overloaded(app, r, endpoint, reason == REJ_DRAINING ? "the server is draining" : "the server is overloaded");
    if (retry > 0)
        r->retry_after = retry;
}

/* A request with no rows (no questions) is answered here, without the scheduler. */
static void reply_empty(laya_request *req, http_reply *r)
{
    layad_error e;
    layad_error_clear(&e);
    size_t n = 0;
    char *out = request_format(req, &n, &e);
    if (!out) {
        log_msg("error", "formatting an empty answer failed: %s", e.msg);
        routes_error_from(r, &e);
        return;
    }
    reply_fixed(r, 200, out, n, "application/json");
}

int routes_decide_begin(serve_app *app, int endpoint, const char *body, size_t len, int strict,
                        void (*done)(serve_job *), void *user, serve_job **job, http_reply *r)
{
    *job = NULL;
    int st = atomic_load(&app->state);
    if (st != APP_READY) {
        metrics_reject(REJ_DRAINING);
        overloaded(app, r, endpoint, st == APP_LOADING ? "the model is still loading" : "the server is draining");
        return 0;
    }
    decide_opts o = app->opts;
    o.systemone = endpoint == EP_SYSTEMONE || endpoint == EP_SYSTEMONE_BATCH;
    o.systemone_batch = endpoint == EP_SYSTEMONE_BATCH;
    o.jev_confidence = o.systemone;
    o.jev_strict = o.jev_strict || strict;
    layad_error e;
    layad_error_clear(&e);
    laya_request *req = NULL;
    double t0 = sched_now();
    int rc = request_parse_in(r->a, NULL, body, len, &o, &req, &e);
    metrics_observe(H_TOKENIZE, sched_now() - t0);
    if (rc) {
        routes_error_from(r, &e);
        return 0;
    }
    if (request_n_rows(req) == 0) {
        reply_empty(req, r);
        return 0;
    }
    serve_job *j = job_create(r->a, req, done, user);
    if (!j) {
        routes_error(r, 500, NULL, "out of memory (job)");
        return 0;
    }
    int reason = 0;
    j->gone = app->client_gone;
    if (scheduler_submit(app->sched, j, &reason)) {
        refused(app, endpoint, j, reason, r);
        return 0;
    }
    *job = j;
    return 1;
}

void routes_decide_end(serve_app *app, int endpoint, serve_job *j, http_reply *r)
{
    if (j->status == 503) {
        overloaded(app, r, endpoint, "the server is shutting down");
        return;
    }
    if (j->status != 200) {
        if (j->status >= 500)
            log_msg("error", "request failed: %s", j->err.msg);
        routes_error_from(r, &j->err);
        return;
    }
    layad_error e;
    layad_error_clear(&e);
    size_t n = 0;
    char *out = request_format(j->req, &n, &e);
    if (!out) {
        log_msg("error", "formatting an answer failed: %s", e.msg);
        e.status = 500;
        routes_error_from(r, &e);
        return;
    }
    reply_fixed(r, 200, out, n, "application/json");
}
