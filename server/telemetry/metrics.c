/*
 * metrics.c - see metrics.h.
 *
 * Histogram bucket bounds are chosen per family: latencies span 50 us to
 * 60 s (a CPU forward of a big batch is seconds, a GPU one-question request
 * well under a millisecond); rows and tokens are powers of two up to the
 * largest budgets; the padding fraction has a bucket at exactly 0 (the CPU
 * backend runs packs at their exact size) and tenths above. Sums are doubles
 * updated with a CAS loop on their bit pattern.
 *
 * The request latency histogram has one series set per (endpoint, code), the
 * labels of laya_requests_total, preallocated (9 x 13 small histograms, about
 * 50 KB) so that recording stays lock- and allocation-free; a series set is
 * rendered once it has an observation, the 200s of the decide endpoints
 * always. Exact codes rather than classes: queries select a class with
 * code=~"5..", and the two families join on the same labels.
 *
 * laya_batch_padding_ratio (padded/real, >= 1) is the old name of the padding
 * measure; it breaks the convention that a _ratio is a 0..1 fraction, so
 * laya_batch_padding_fraction replaces it. The ratio stays, deprecated, for
 * one release so that existing dashboards keep working.
 */
#include "server/telemetry/metrics.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/pyexact/pyfloat.h"
#include "server/telemetry/build_info.h"
#include "server/telemetry/gpu_snapshot.h"
#include "server/telemetry/process.h"

#define MAX_BOUNDS 24

typedef struct hist {
    int n;                      /* bounds */
    double bound[MAX_BOUNDS];
    _Atomic uint64_t count[MAX_BOUNDS + 1]; /* per bucket (non-cumulative); last = +Inf */
    _Atomic uint64_t sum_bits;  /* double */
} hist;

static const int codes[] = {200, 400, 401, 403, 404, 405, 413, 422, 500, 503, 504, 529};
#define N_CODES (int)(sizeof codes / sizeof codes[0])

static const char *const ep_names[EP_COUNT] = {
    "/decide", "/v1/systemone", "/v1/models", "/healthz", "/readyz", "/health", "/drain", "/metrics",
    "/v1/systemone/batch", "/openapi.json", "/docs", "other"};
static const char *const stage_names[ST_COUNT] = {"parse", "wake",   "stage",  "run",    "launch",
                                                 "gpu",   "h2d",    "d2h",    "unpack", "back",
                                                 "resume", "format", "send"};
static const char *const rej_names[REJ_COUNT] = {"queue_full", "draining", "deadline", "body_too_large",
                                                 "unauthorized"};

static const struct {
    const char *name, *help;
} hist_meta[H_COUNT] = {
    {"laya_queue_wait_seconds", "Time a request waited in the scheduler queue before its first batch."},
    {"laya_tokenize_seconds", "Time to parse, validate and tokenize one request body."},
    {"laya_batch_rows", "Question rows per batch."},
    {"laya_batch_tokens", "Real (unpadded) tokens per batch."},
    {"laya_batch_padding_ratio", "Deprecated (use laya_batch_padding_fraction): padded over real tokens per batch."},
    {"laya_batch_padding_fraction", "Share of a batch's padded tokens that are padding: (padded - real) / padded."},
};

static struct {
    _Atomic uint64_t requests[EP_COUNT][N_CODES + 1]; /* last column: other codes */
    hist latency[EP_COUNT][N_CODES + 1];               /* laya_request_duration_seconds, same labels */
    _Atomic uint64_t rejects[REJ_COUNT];
    _Atomic uint64_t taken[TAKEN_COUNT];
    hist h[H_COUNT];
    hist infer[METRICS_MAX_DEVICES];
    hist stage[ST_COUNT];
    _Atomic int n_devices;     /* 0 until metrics_set_models */
    char device_label[METRICS_MAX_DEVICES][32];
    _Atomic long queue_depth;
    _Atomic long long graph_hits, graph_misses;
    int n_models;
    char model_name[METRICS_MAX_MODELS][256], sha256[METRICS_MAX_MODELS][80], dtype[16], device_kind[16];
    _Atomic uint64_t model_answers[METRICS_MAX_MODELS], model_tokens[METRICS_MAX_MODELS];
    _Atomic(const _Atomic int *) ready_state; /* metrics_watch_ready; NULL: laya_ready absent */
    int ready_value;
    build_info build;
    double start_time;              /* process_start_time at metrics_init */
} R;

static void hist_init(hist *h, const double *b, int n)
{
    h->n = n;
    for (int i = 0; i < n; i++)
        h->bound[i] = b[i];
}

static void hist_observe(hist *h, double v)
{
    int i = 0;
    while (i < h->n && v > h->bound[i])
        i++;
    atomic_fetch_add_explicit(&h->count[i], 1, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&h->sum_bits, memory_order_relaxed), nw;
    do {
        double d;
        memcpy(&d, &old, sizeof d);
        d += v;
        memcpy(&nw, &d, sizeof nw);
    } while (!atomic_compare_exchange_weak_explicit(&h->sum_bits, &old, nw, memory_order_relaxed,
                                                    memory_order_relaxed));
}

/* Copies a label value, escaping \ " and newlines as the exposition format requires. */
static void label_copy(char *dst, size_t cap, const char *s)
{
    size_t n = 0;
    for (; s && *s && n + 3 < cap; s++) {
        if (*s == '\\' || *s == '"') {
            dst[n++] = '\\';
            dst[n++] = *s;
        } else if (*s == '\n') {
            dst[n++] = '\\';
            dst[n++] = 'n';
        } else {
            dst[n++] = *s;
        }
    }
    dst[n] = 0;
}

void metrics_init(void)
{
    static const double lat[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
    static const double rows[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
    static const double toks[] = {16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
    static const double pad[] = {1, 1.05, 1.1, 1.25, 1.5, 2, 3, 4, 8, 16};
    static const double frac[] = {0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
    const int nlat = (int)(sizeof lat / sizeof lat[0]);
    memset(&R, 0, sizeof R);
    for (int e = 0; e < EP_COUNT; e++)
        for (int c = 0; c <= N_CODES; c++)
            hist_init(&R.latency[e][c], lat, nlat);
    hist_init(&R.h[H_QUEUE_WAIT], lat, nlat);
    hist_init(&R.h[H_TOKENIZE], lat, nlat);
    hist_init(&R.h[H_BATCH_ROWS], rows, (int)(sizeof rows / sizeof rows[0]));
    hist_init(&R.h[H_BATCH_TOKENS], toks, (int)(sizeof toks / sizeof toks[0]));
    hist_init(&R.h[H_PADDING_RATIO], pad, (int)(sizeof pad / sizeof pad[0]));
    hist_init(&R.h[H_PADDING_FRACTION], frac, (int)(sizeof frac / sizeof frac[0]));
    for (int d = 0; d < METRICS_MAX_DEVICES; d++)
        hist_init(&R.infer[d], lat, nlat);
    /* serving stages take microseconds: finer bounds below the latency ones */
    static const double st[] = {0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001,
                                0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.1, 1};
    for (int i = 0; i < ST_COUNT; i++)
        hist_init(&R.stage[i], st, (int)(sizeof st / sizeof st[0]));
    build_info_get(&R.build);
    R.start_time = process_start_time();
}

void metrics_set_models(int n_models, const char *const *model_names, const char *const *sha256,
                        const char *dtype, const char *device_kind, int n_devices, const char *const *device_labels)
{
    int n = n_devices < METRICS_MAX_DEVICES ? n_devices : METRICS_MAX_DEVICES;
    for (int d = 0; d < n; d++)
        label_copy(R.device_label[d], sizeof R.device_label[d], device_labels[d]);
    R.n_models = n_models < METRICS_MAX_MODELS ? n_models : METRICS_MAX_MODELS;
    for (int m = 0; m < R.n_models; m++) {
        label_copy(R.model_name[m], sizeof R.model_name[m], model_names[m]);
        label_copy(R.sha256[m], sizeof R.sha256[m], sha256[m]);
    }
    label_copy(R.dtype, sizeof R.dtype, dtype);
    label_copy(R.device_kind, sizeof R.device_kind, device_kind);
    atomic_store_explicit(&R.n_devices, n, memory_order_release); /* publishes the labels */
}

const char *metrics_endpoint_name(int ep)
{
    return ep >= 0 && ep < EP_COUNT ? ep_names[ep] : "other";
}

void metrics_request(int endpoint, int status, double seconds)
{
    if (endpoint < 0 || endpoint >= EP_COUNT)
        endpoint = EP_OTHER;
    int c = N_CODES;
    for (int i = 0; i < N_CODES; i++)
        if (codes[i] == status)
            c = i;
    atomic_fetch_add_explicit(&R.requests[endpoint][c], 1, memory_order_relaxed);
    hist_observe(&R.latency[endpoint][c], seconds);
}

void metrics_model_answer(int model, long tokens)
{
    if (model < 0 || model >= METRICS_MAX_MODELS)
        return;
    atomic_fetch_add_explicit(&R.model_answers[model], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&R.model_tokens[model], (uint64_t)tokens, memory_order_relaxed);
}

void metrics_reject(int reason)
{
    if (reason >= 0 && reason < REJ_COUNT)
        atomic_fetch_add_explicit(&R.rejects[reason], 1, memory_order_relaxed);
}

void metrics_answer_taken(int how)
{
    if (how >= 0 && how < TAKEN_COUNT)
        atomic_fetch_add_explicit(&R.taken[how], 1, memory_order_relaxed);
}

void metrics_observe(int h, double v)
{
    if (h >= 0 && h < H_COUNT)
        hist_observe(&R.h[h], v);
}

void metrics_stage(int stage, double seconds)
{
    if (stage >= 0 && stage < ST_COUNT)
        hist_observe(&R.stage[stage], seconds);
}

const char *metrics_stage_name(int stage)
{
    return stage >= 0 && stage < ST_COUNT ? stage_names[stage] : "?";
}

void metrics_batch(int rows, long real_tokens, long padded_tokens)
{
    hist_observe(&R.h[H_BATCH_ROWS], rows);
    hist_observe(&R.h[H_BATCH_TOKENS], (double)real_tokens);
    hist_observe(&R.h[H_PADDING_RATIO], real_tokens > 0 ? (double)padded_tokens / (double)real_tokens : 1.0);
    hist_observe(&R.h[H_PADDING_FRACTION],
                 padded_tokens > 0 ? (double)(padded_tokens - real_tokens) / (double)padded_tokens : 0.0);
}

void metrics_watch_ready(const _Atomic int *state, int ready_value)
{
    R.ready_value = ready_value;
    atomic_store_explicit(&R.ready_state, state, memory_order_release); /* publishes ready_value */
}

void metrics_inference(int device, double seconds)
{
    if (device >= 0 && device < METRICS_MAX_DEVICES)
        hist_observe(&R.infer[device], seconds);
}

void metrics_queue_depth(long depth)
{
    atomic_store_explicit(&R.queue_depth, depth, memory_order_relaxed);
}

void metrics_graph_cache(long long hits, long long misses)
{
    atomic_store_explicit(&R.graph_hits, hits, memory_order_relaxed);
    atomic_store_explicit(&R.graph_misses, misses, memory_order_relaxed);
}

/* ---- rendering (open_memstream: a FILE that grows a malloc'ed buffer) ---- */

/* A sample value or bucket bound: the shortest digits that round-trip (Python's repr:
 * "0.005", "1e-05", "0.98"), so the exposition reads like the configured numbers. */
static const char *num(char buf[32], double x)
{
    if (isinf(x))
        return x > 0 ? "+Inf" : "-Inf";
    if (isnan(x))
        return "NaN";
    py_float_repr(x, buf);
    return buf;
}

static void render_hist(FILE *b, const char *name, const char *labels, const hist *h)
{
    uint64_t cum = 0;
    char nb[32];
    const char *sep = labels[0] ? "," : "";
    for (int i = 0; i <= h->n; i++) {
        cum += atomic_load_explicit(&h->count[i], memory_order_relaxed);
        if (i < h->n)
            fprintf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep, num(nb, h->bound[i]),
                    (unsigned long long)cum);
        else
            fprintf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (unsigned long long)cum);
    }
    uint64_t bits = atomic_load_explicit(&h->sum_bits, memory_order_relaxed);
    double sum;
    memcpy(&sum, &bits, sizeof sum);
    if (labels[0]) {
        fprintf(b, "%s_sum{%s} %s\n", name, labels, num(nb, sum));
        fprintf(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)cum);
    } else {
        fprintf(b, "%s_sum %s\n%s_count %llu\n", name, num(nb, sum), name, (unsigned long long)cum);
    }
}

/* laya_requests_total: every endpoint's 200 series, the other codes once seen. */
static void render_request_counts(FILE *f)
{
    fprintf(f, "# HELP laya_requests_total HTTP requests answered, by endpoint and status code.\n"
                "# TYPE laya_requests_total counter\n");
    for (int e = 0; e < EP_COUNT; e++)
        for (int c = 0; c <= N_CODES; c++) {
            uint64_t v = atomic_load_explicit(&R.requests[e][c], memory_order_relaxed);
            if (!v && !(c < N_CODES && codes[c] == 200))
                continue; /* every endpoint shows its 200 series; others appear once seen */
            if (c == N_CODES)
                fprintf(f, "laya_requests_total{endpoint=\"%s\",code=\"other\"} %llu\n", ep_names[e],
                        (unsigned long long)v);
            else
                fprintf(f, "laya_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n", ep_names[e], codes[c],
                        (unsigned long long)v);
        }
}

/* laya_request_duration_seconds: a series set per (endpoint, code) seen, the decide 200s always. */
static void render_request_latency(FILE *f)
{
    fprintf(f, "# HELP laya_request_duration_seconds Time from the end of the request body to the response, by "
                "endpoint and status code.\n# TYPE laya_request_duration_seconds histogram\n");
    for (int e = 0; e < EP_COUNT; e++)
        for (int c = 0; c <= N_CODES; c++) {
            const hist *h = &R.latency[e][c];
            int always = (e == EP_DECIDE || e == EP_SYSTEMONE) && c < N_CODES && codes[c] == 200;
            if (!always && !atomic_load_explicit(&R.requests[e][c], memory_order_relaxed))
                continue;
            char lab[80];
            if (c == N_CODES)
                snprintf(lab, sizeof lab, "endpoint=\"%s\",code=\"other\"", ep_names[e]);
            else
                snprintf(lab, sizeof lab, "endpoint=\"%s\",code=\"%d\"", ep_names[e], codes[c]);
            render_hist(f, "laya_request_duration_seconds", lab, h);
        }
}

/* One laya_model_info series per served model (`model` is its served name;
 * `name` repeats it for dashboards written before there were several), and
 * the decisions and tokens each model answered. */
static void render_models(FILE *f)
{
    fprintf(f, "# HELP laya_model_info A served model (value is always 1); the first is the default.\n"
               "# TYPE laya_model_info gauge\n");
    for (int m = 0; m < R.n_models; m++)
        fprintf(f, "laya_model_info{model=\"%s\",name=\"%s\",sha256=\"%s\",dtype=\"%s\",device=\"%s\"} 1\n",
                R.model_name[m], R.model_name[m], R.sha256[m], R.dtype, R.device_kind);
    fprintf(f, "# HELP laya_model_decisions_total Decision requests with questions answered 200, by model.\n"
               "# TYPE laya_model_decisions_total counter\n");
    for (int m = 0; m < R.n_models; m++)
        fprintf(f, "laya_model_decisions_total{model=\"%s\"} %llu\n", R.model_name[m],
                (unsigned long long)atomic_load_explicit(&R.model_answers[m], memory_order_relaxed));
    fprintf(f, "# HELP laya_model_tokens_total Input tokens of the decisions answered 200, by model.\n"
               "# TYPE laya_model_tokens_total counter\n");
    for (int m = 0; m < R.n_models; m++)
        fprintf(f, "laya_model_tokens_total{model=\"%s\"} %llu\n", R.model_name[m],
                (unsigned long long)atomic_load_explicit(&R.model_tokens[m], memory_order_relaxed));
}

/* The pipeline histograms (queue wait, tokenize, batch shape) and laya_inference_seconds per
 * device published by metrics_set_models. Returns that device count, for render_state. */
static int render_pipeline(FILE *f)
{
    for (int h = 0; h < H_COUNT; h++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", hist_meta[h].name, hist_meta[h].help,
                hist_meta[h].name);
        render_hist(f, hist_meta[h].name, "", &R.h[h]);
    }
    fprintf(f, "# HELP laya_serving_stage_seconds Stages of the serving path of answered decisions "
                "(server/api/README.md).\n# TYPE laya_serving_stage_seconds histogram\n");
    for (int i = 0; i < ST_COUNT; i++) {
        char lab[40];
        snprintf(lab, sizeof lab, "stage=\"%s\"", stage_names[i]);
        render_hist(f, "laya_serving_stage_seconds", lab, &R.stage[i]);
    }
    fprintf(f, "# HELP laya_inference_seconds Time of one forward (one bucket) on a device.\n"
                "# TYPE laya_inference_seconds histogram\n");
    int ndev = atomic_load_explicit(&R.n_devices, memory_order_acquire);
    for (int d = 0; d < ndev; d++) {
        char lab[64];
        snprintf(lab, sizeof lab, "device=\"%s\"", R.device_label[d]);
        render_hist(f, "laya_inference_seconds", lab, &R.infer[d]);
    }
    return ndev;
}

/* The gauges and counters of the daemon's state: queue depth, rejections, graph cache, model
 * (once ndev > 0), build, readiness (once watched). */
static void render_state(FILE *f, int ndev)
{
    fprintf(f, "# HELP laya_queue_depth Requests waiting in the scheduler queue.\n"
                "# TYPE laya_queue_depth gauge\nlaya_queue_depth %ld\n",
            atomic_load_explicit(&R.queue_depth, memory_order_relaxed));
    fprintf(f, "# HELP laya_rejections_total Requests turned away, by reason.\n"
                "# TYPE laya_rejections_total counter\n");
    for (int r = 0; r < REJ_COUNT; r++)
        fprintf(f, "laya_rejections_total{reason=\"%s\"} %llu\n", rej_names[r],
                (unsigned long long)atomic_load_explicit(&R.rejects[r], memory_order_relaxed));
    fprintf(f, "# HELP laya_http_answers_total Decisions whose answer their HTTP thread found ready (polled: it "
               "waited for the only decision in flight) or took up after a suspend (resumed).\n"
               "# TYPE laya_http_answers_total counter\n"
               "laya_http_answers_total{how=\"polled\"} %llu\nlaya_http_answers_total{how=\"resumed\"} %llu\n",
            (unsigned long long)atomic_load_explicit(&R.taken[TAKEN_POLLED], memory_order_relaxed),
            (unsigned long long)atomic_load_explicit(&R.taken[TAKEN_RESUMED], memory_order_relaxed));
    fprintf(f, "# HELP laya_graph_cache_total CUDA graph lookups by bucket shape (0 on the CPU backend).\n"
                "# TYPE laya_graph_cache_total counter\n"
                "laya_graph_cache_total{result=\"hit\"} %lld\nlaya_graph_cache_total{result=\"miss\"} %lld\n",
            atomic_load_explicit(&R.graph_hits, memory_order_relaxed),
            atomic_load_explicit(&R.graph_misses, memory_order_relaxed));
    if (ndev > 0)
        render_models(f);
    fprintf(f, "# HELP laya_build_info The running binary: version, git commit, CUDA runtime and cuBLAS (always 1).\n"
               "# TYPE laya_build_info gauge\n"
               "laya_build_info{version=\"%s\",commit=\"%s\",cuda=\"%s\",cublas=\"%s\"} 1\n",
            R.build.version, R.build.commit, R.build.cuda, R.build.cublas);
    const _Atomic int *ready = atomic_load_explicit(&R.ready_state, memory_order_acquire);
    if (ready)
        fprintf(f, "# HELP laya_ready 1 while the daemon accepts decisions (/readyz 200), 0 while loading or draining.\n"
                   "# TYPE laya_ready gauge\nlaya_ready %d\n",
                atomic_load_explicit(ready, memory_order_relaxed) == R.ready_value);
}

char *metrics_render(size_t *len)
{
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    if (!f)
        return NULL;
    render_request_counts(f);
    render_request_latency(f);
    int ndev = render_pipeline(f);
    render_state(f, ndev);
    process_render(f, R.start_time);
    gpu_snapshot_render(f);
    int bad = ferror(f);
    if (fclose(f) || bad) {
        free(p);
        return NULL;
    }
    *len = n;
    return p;
}
