/*
 * cmd_serve.c - `layad serve`: the daemon's lifecycle.
 *
 *   config (defaults < file < env < flags) -> log -> listen (readiness 503)
 *   -> open + verify the checkpoint -> one backend + worker per device
 *      (CUDA: every visible ordinal, or --devices; CPU: cpu_workers of them)
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
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/backend/cpu.h"
#include "model/backend/cuda.h"
#include "model/checkpoint/checkpoint.h"
#include "server/daemon/app.h"
#include "server/cli/commands.h"
#include "server/daemon/config.h"
#include "server/telemetry/gpu_snapshot.h"
#include "server/http/http.h"
#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"
#include "server/daemon/notify.h"
#include "server/sched/scheduler.h"

#define MAX_DEVICES 16

/* Everything cmd_serve owns; teardown() frees whatever of it was set up. */
typedef struct serve_state {
    serve_app *app;
    serve_config *cfg;
    laya_checkpoint *ck;
    int ck_open;
    http_server *http;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_timer_t watchdog, stats;
    int n_cuda;
    int stopping;
} serve_state;

static volatile sig_atomic_t g_stop_while_loading;

static void early_stop(int sig)
{
    (void)sig;
    g_stop_while_loading = 1;
}

/* 0 when key (n bytes) can match a presented bearer key: the header's value
 * is trimmed of spaces and cannot carry control bytes. */
static int key_usable(const char *key, size_t n, const char *src, layad_error *err)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
            return layad_fail(err, 500, "%s: the key contains a control byte (at byte %zu)", src, i);
    if (key[0] == ' ' || key[n - 1] == ' ')
        return layad_fail(err, 500, "%s: the key starts or ends with a space, which no client can send", src);
    return 0;
}

/* The first line of path (without its line end) into out[SERVE_KEY_MAX + 1].
 * Refuses an empty first line and one over SERVE_KEY_MAX bytes (never cuts a
 * key: a cut key would let its prefix in). Warns when every user can read the file. */
static int read_key_file(const char *path, char *out, layad_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return layad_fail(err, 500, "api_key_file %s: cannot open (%s)", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (sb.st_mode & S_IROTH))
        log_msg("warn", "api_key_file %s is readable by every user (mode %04o): make it readable by the daemon's "
                "user only (chmod 600)", path, (unsigned)(sb.st_mode & 07777));
    char buf[SERVE_KEY_MAX + 2]; /* the longest key and its "\r\n" */
    size_t n = 0;
    while (n < sizeof buf) {
        ssize_t k = read(fd, buf + n, sizeof buf - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            close(fd);
            return layad_fail(err, 500, "api_key_file %s: cannot read (%s)", path, strerror(errno));
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    size_t len = 0;
    while (len < n && buf[len] != '\n')
        len++;
    int ended = len < n;
    if (len && buf[len - 1] == '\r')
        len--;
    if (len > SERVE_KEY_MAX || (!ended && n == sizeof buf))
        return layad_fail(err, 500, "api_key_file %s: the key is longer than %d bytes", path, SERVE_KEY_MAX);
    if (!len)
        return layad_fail(err, 500, "api_key_file %s: empty first line", path);
    memcpy(out, buf, len);
    out[len] = 0;
    char src[SERVE_STR_MAX + 16];
    snprintf(src, sizeof src, "api_key_file %s", path);
    return key_usable(out, len, src, err);
}

/* 1 for a loopback literal (127.0.0.0/8, ::1, ::ffff:127.x.y.z) or one that
 * is no address at all (http_start reports that); 0 otherwise. */
static int bind_is_loopback(const char *bind)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, bind, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, bind, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return 1;
}

/* 1 (--api-key VALUE) or 2 (--api-key=VALUE) for the flag that puts the key on the command line. */
static int api_key_flag(const char *a)
{
    if (strncmp(a, "--api", 5) || (a[5] != '-' && a[5] != '_') || strncmp(a + 6, "key", 3))
        return 0;
    return a[9] == 0 ? 1 : a[9] == '=' ? 2 : 0;
}

/* The bearer key into app->key (the file's over api_key), with the warnings
 * and the refusal to serve a non-loopback address without one. argv: the
 * subcommand's, where a key given as a flag is blanked once read. */
static int resolve_key(serve_state *st, int argc, char **argv, layad_error *err)
{
    serve_app *app = st->app;
    const serve_config *cfg = st->cfg;
    for (int i = 1; i < argc; i++) {
        int kind = api_key_flag(argv[i]);
        char *v = kind == 2 ? strchr(argv[i], '=') + 1 : kind == 1 && i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            continue;
        log_msg("warn", "--api-key on the command line: every local user can read it in ps and /proc while the "
                "process starts (blanked now); use api_key_file or LAYAD_API_KEY");
        memset(v, 'x', strlen(v));
    }
    if (cfg->api_key_file[0] && read_key_file(cfg->api_key_file, app->key, err))
        return -1;
    if (!app->key[0] && cfg->api_key[0]) {
        if (key_usable(cfg->api_key, strlen(cfg->api_key), "api_key", err))
            return -1;
        snprintf(app->key, sizeof app->key, "%s", cfg->api_key);
    }
    app->key_len = strlen(app->key);
    if (app->key_len || bind_is_loopback(cfg->bind))
        return 0;
    if (!cfg->allow_unauthenticated_remote)
        return layad_fail(err, 500, "bind %s is not a loopback address and no bearer key is set: anyone who can "
                          "reach it could use the model and /drain. Set api_key_file, or "
                          "allow_unauthenticated_remote = true to serve it so on purpose", cfg->bind);
    log_msg("warn", "serving %s without a bearer key (allow_unauthenticated_remote = true)", cfg->bind);
    return 0;
}

/* Splits a comma list into trimmed names (skipping empties and duplicates). */
static void add_names(serve_app *app, int *n, const char *list)
{
    const char *p = list;
    while (*p && *n < APP_MAX_NAMES) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        size_t t = len;
        while (t && p[t - 1] == ' ')
            t--;
        if (t && t < sizeof app->name_store[0]) {
            int dup = 0;
            for (int i = 0; i < *n; i++)
                dup |= strlen(app->names[i]) == t && !strncmp(app->names[i], p, t);
            if (!dup) {
                memcpy(app->name_store[*n], p, t);
                app->name_store[*n][t] = 0;
                app->names[*n] = app->name_store[*n];
                (*n)++;
            }
        }
        p += len;
    }
    app->names[*n] = NULL;
}

/* Runs one synthetic row through b: proves the weights, kernels and arenas
 * work before the daemon says READY (and warms caches / lazy state). */
static int warm_backend(laya_backend *b, const laya_checkpoint *ck, layad_error *err)
{
    enum { LEN = 24 };
    int32_t ids[LEN], markers[2] = {10, 14};
    for (int i = 0; i < LEN; i++)
        ids[i] = (int32_t)(5 + i % 50) % (int32_t)ck->cfg.vocab;
    ids[0] = ck->cfg.cls_id;
    ids[9] = ck->cfg.sep_id;
    ids[10] = ck->cfg.mask_id;
    ids[14] = ck->cfg.mask_id;
    ids[LEN - 1] = ck->cfg.sep_id;
    laya_row row = {ids, LEN, markers, 2, QTYPE_CHOICE};
    float logits[2], act[LAYA_N_ACT];
    if (b->ops->forward(b, &row, 1, 2, logits, act, err))
        return -1;
    if (!isfinite(logits[0]) || !isfinite(logits[1]) || !isfinite(act[0]) || !isfinite(act[1]))
        return layad_fail(err, 500, "warm-up forward produced non-finite logits");
    return 0;
}

/* The GEMM tuning cache of device dev: <state_dir>/gemm-tuning-cuda<dev>.txt,
 * state_dir from the config or systemd's $STATE_DIRECTORY; NULL without one. */
static const char *tuning_cache_path(const serve_config *cfg, int dev, char *buf, size_t len)
{
    const char *dir = cfg->state_dir[0] ? cfg->state_dir : getenv("STATE_DIRECTORY");
    if (!dir || !dir[0])
        return NULL;
    char first[SERVE_STR_MAX];
    snprintf(first, sizeof first, "%s", dir);
    first[strcspn(first, ":")] = 0; /* systemd lists several directories with ':' */
    snprintf(buf, len, "%s/gemm-tuning-cuda%d.txt", first, dev);
    return buf;
}

/* Start-up progress: one line per warmed bucket. */
static void warm_progress(void *arg, int done, int total, int cap_tokens, double ms)
{
    log_msg("info", "cuda:%d: warm-up %d/%d: bucket of %d tokens ready in %.0f ms", *(const int *)arg,
            done, total, cap_tokens, ms);
}

static void log_warm_summary(int dev, const cuda_backend_info *info)
{
    log_msg("info", "cuda:%d: %d buckets up to %d tokens warmed in %.1f s (upload %.1f s; %d tuned GEMM "
            "shapes from the cache); activations %.0f MiB, weights %.0f MiB", dev, info->n_warm,
            info->max_tokens, info->warm_ms / 1e3, info->upload_ms / 1e3, info->tuning_loaded,
            info->act_bytes / 1048576.0, info->weight_bytes / 1048576.0);
    if (info->tuning_warning[0])
        log_msg("warn", "cuda:%d: GEMM tuning cache: %s", dev, info->tuning_warning);
}

/* The devices option into CUDA ordinals (out[], at most MAX_DEVICES). Ordinals
 * are the ones CUDA sees, i.e. after CUDA_VISIBLE_DEVICES renumbering; empty
 * means every visible device. Returns the count, or -1 (out of range, not a
 * number, a duplicate). */
static int parse_devices(const char *s, int count, int *out, layad_error *err)
{
    int n = 0;
    if (!s[0]) {
        for (int i = 0; i < count && i < MAX_DEVICES; i++)
            out[n++] = i;
        return n;
    }
    const char *p = s;
    while (*p) {
        char *end;
        long d = strtol(p, &end, 10);
        if (end == p || d < 0 || d >= count || n >= MAX_DEVICES)
            return layad_fail(err, 500, "devices: '%s' is not a list of visible CUDA ordinals (0..%d)", s, count - 1);
        for (int i = 0; i < n; i++)
            if (out[i] == d) /* two workers on one device would only split its memory */
                return layad_fail(err, 500, "devices: '%s' names device %ld twice", s, d);
        out[n++] = (int)d;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return n;
}

static char g_labels[MAX_DEVICES][16]; /* device labels of the metrics (live for the process) */

/* One CUDA backend + worker per selected device; appends each to devices. */
static int build_cuda(serve_state *st, const laya_checkpoint *ck, int ncuda, json_t *devices, const char **lab,
                      int *nlab, layad_error *err)
{
    serve_app *app = st->app;
    const serve_config *cfg = st->cfg;
    if (ncuda == 0)
        return layad_fail(err, 500, "device = cuda but no CUDA device is visible%s",
                          LAYAD_CUDA ? "" : " (this build has no CUDA)");
    int devs[MAX_DEVICES];
    int n = parse_devices(cfg->devices, ncuda, devs, err);
    if (n < 0)
        return -1;
    cuda_bucket warm[CUDA_MAX_WARM];
    const int all = !cfg->warm[0] || !strcmp(cfg->warm, "all");
    int nwarm = all ? 0 : cuda_bucket_list_parse(cfg->warm, warm, CUDA_MAX_WARM, err);
    if (nwarm < 0)
        return -1;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cuda_backend_opts o;
        cuda_backend_opts_default(&o);
        o.device = devs[i];
        if (cuda_dtype_parse(cfg->dtype, &o.dtype))
            return layad_fail(err, 500, "dtype '%s'", cfg->dtype);
        o.max_batch_rows = cfg->max_batch_rows;
        o.max_tokens = cfg->max_batch_tokens;
        o.max_len = cfg->max_len > ck->cfg.max_len ? cfg->max_len : 0;
        o.warm = all ? NULL : warm;
        o.n_warm = nwarm;
        o.gemm_tune = cfg->gemm_tune;
        char cache[SERVE_STR_MAX + 64];
        o.tuning_cache = tuning_cache_path(cfg, devs[i], cache, sizeof cache);
        o.progress = warm_progress;
        o.progress_arg = &devs[i];
        log_msg("info", "cuda:%d: uploading weights (%s), then tuning and capturing %s buckets", devs[i],
                cfg->dtype, all ? "all" : "the warm-up shapes'");
        laya_backend *b = cuda_backend_create(ck, &o, err);
        if (!b || warm_backend(b, ck, err)) {
            if (b)
                b->ops->destroy(b);
            return -1;
        }
        cuda_backend_info info;
        int have_info = cuda_backend_info_get(b, &info, err) == 0;
        if (have_info)
            log_warm_summary(devs[i], &info);
        snprintf(g_labels[*nlab], sizeof g_labels[*nlab], "%d", devs[i]);
        lab[*nlab] = g_labels[*nlab];
        if (have_info && gpu_snapshot_label_device(info.pci_bus_id, g_labels[*nlab]) < 0)
            log_msg("warn", "cuda:%d (%s): not found in NVML; its laya_gpu_* series carry no device label", devs[i],
                    info.pci_bus_id);
        if (scheduler_add_worker(app->sched, b, *nlab, err))
            return -1;
        (*nlab)++;
        if (have_info) {
            off += (size_t)snprintf(app->device_desc + off, sizeof app->device_desc - off, "%scuda:%d %s",
                                    i ? ", " : "", devs[i], info.name);
            if (off >= sizeof app->device_desc)
                off = sizeof app->device_desc - 1;
            json_array_append_new(devices, json_pack("{s:i,s:s,s:s,s:s,s:i,s:I,s:I,s:I}", "index", devs[i], "kind",
                                                     "cuda", "name", info.name, "pci_bus_id", info.pci_bus_id,
                                                     "sm_count", info.sm_count, "memory_total_bytes",
                                                     (json_int_t)info.mem_total, "weight_bytes",
                                                     (json_int_t)info.weight_bytes, "activation_bytes",
                                                     (json_int_t)info.act_bytes));
        } else {
            json_array_append_new(devices, json_pack("{s:i,s:s}", "index", devs[i], "kind", "cuda"));
        }
    }
    st->n_cuda = n;
    snprintf(app->device_kind, sizeof app->device_kind, "cuda");
    snprintf(app->dtype, sizeof app->dtype, "%s", cfg->dtype);
    return 0;
}

/* The fp32 CPU backend: cpu_workers workers, each with its own backend (its
 * own packed weights and arenas) and an equal share of cpu_threads. One
 * worker is labelled "cpu"; several are "cpu0", "cpu1", ... (metrics, /health). */
static int build_cpu(serve_state *st, const laya_checkpoint *ck, json_t *devices, const char **lab, int *nlab,
                     layad_error *err)
{
    serve_app *app = st->app;
    const serve_config *cfg = st->cfg;
    int threads = cfg->cpu_threads > 0 ? cfg->cpu_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int nw = cfg->cpu_workers > 0 ? cfg->cpu_workers : 1;
    if (nw > MAX_DEVICES)
        return layad_fail(err, 500, "cpu_workers %d: at most %d", nw, MAX_DEVICES);
    int per = threads / nw > 0 ? threads / nw : 1;
    if (cfg->devices[0])
        log_msg("warn", "devices = %s ignored: the CPU backend runs cpu_workers = %d worker(s)", cfg->devices, nw);
    for (int i = 0; i < nw; i++) {
        laya_backend *b = cpu_backend_create(ck, cfg->max_batch_rows, per, err);
        if (!b || warm_backend(b, ck, err)) {
            if (b)
                b->ops->destroy(b);
            return -1;
        }
        if (nw == 1)
            snprintf(g_labels[*nlab], sizeof g_labels[*nlab], "cpu");
        else
            snprintf(g_labels[*nlab], sizeof g_labels[*nlab], "cpu%d", i);
        lab[*nlab] = g_labels[*nlab];
        if (scheduler_add_worker(app->sched, b, *nlab, err))
            return -1;
        (*nlab)++;
        json_array_append_new(devices, json_pack("{s:i,s:s,s:s,s:i}", "index", i, "kind", "cpu", "name", "cpu fp32",
                                                 "threads", per));
    }
    snprintf(app->device_kind, sizeof app->device_kind, "cpu");
    if (nw == 1)
        snprintf(app->device_desc, sizeof app->device_desc, "cpu (%d threads)", per);
    else
        snprintf(app->device_desc, sizeof app->device_desc, "cpu (%d workers x %d threads)", nw, per);
    snprintf(app->dtype, sizeof app->dtype, "fp32");
    return 0;
}

/* Creates the backends and their workers, publishes the model/device labels. */
static int build_backends(serve_state *st, const laya_checkpoint *ck, layad_error *err)
{
    serve_app *app = st->app;
    int ncuda = cuda_device_count();
    int use_cuda = !strcmp(st->cfg->device, "cuda") || (!strcmp(st->cfg->device, "auto") && ncuda > 0);
    const char *lab[MAX_DEVICES];
    int nlab = 0;
    json_t *devices = json_array();
    if (!devices)
        return layad_fail(err, 500, "out of memory");
    int rc = use_cuda ? build_cuda(st, ck, ncuda, devices, lab, &nlab, err)
                      : build_cpu(st, ck, devices, lab, &nlab, err);
    char *dj = rc ? NULL : json_dumps(devices, JSON_COMPACT);
    json_decref(devices);
    if (rc)
        return -1;
    if (!dj || strlen(dj) >= sizeof app->devices_json) {
        free(dj);
        return layad_fail(err, 500, "device list too long");
    }
    memcpy(app->devices_json, dj, strlen(dj) + 1);
    free(dj);
    metrics_set_model(app->served_name, ck->sha256, app->dtype, app->device_kind, nlab, lab);
    return 0;
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
    for (int i = 0; i < st->n_cuda; i++) {
        cuda_backend_stats s;
        cuda_backend_stats_get(scheduler_backend(st->app->sched, i), &s);
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
    if (!cfg->model[0]) {
        fprintf(stderr, "layad serve: --model is required (see layad serve --help)\n");
        return -1;
    }
    if (log_open(cfg->log_file, !strcmp(cfg->log_format, "json"))) {
        fprintf(stderr, "layad serve: cannot open log file %s\n", cfg->log_file);
        return -1;
    }
    if (resolve_key(st, argc, argv, &err)) {
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
    log_msg("info", "listening on %s:%d (loading %s)", cfg->bind, http_port(st->http), cfg->model);
    notify_status("loading checkpoint");
    return 0;
}

/* The names a request's "model" may carry, and the request options. */
static void set_request_opts(serve_app *app, const serve_config *cfg, const laya_checkpoint *ck)
{
    snprintf(app->served_name, sizeof app->served_name, "%s",
             cfg->model_name[0] ? cfg->model_name : ck->cfg.model_name[0] ? ck->cfg.model_name : "laya-rl-agent");
    int nn = 0;
    add_names(app, &nn, app->served_name);
    /* The name every response carries ("model": "laya-rl-agent", as the official package
     * answers) must also be accepted back, for clients that echo it. */
    add_names(app, &nn, cfg->model_name[0] ? cfg->model_name : "laya-rl-agent");
    add_names(app, &nn, cfg->model_aliases);
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
    app->opts.response_model = cfg->model_name[0] ? cfg->model_name : NULL;
    app->opts.model_names = app->names;
}

/* Opens and verifies the checkpoint, then derives the request options. Logs its failure. */
static int load_model(serve_state *st)
{
    laya_checkpoint *ck = st->ck;
    layad_error err;
    layad_error_clear(&err);
    double t0 = sched_now();
    if (checkpoint_open(ck, st->cfg->model, &err)) {
        log_msg("error", "checkpoint: %s", err.msg);
        return -1;
    }
    st->ck_open = 1;
    if (ck->clamp_warning[0])
        log_msg("warn", "%s", ck->clamp_warning);
    log_msg("info", "checkpoint %s verified: %lld parameters, sha256 %s (%.2f s)", ck->dir, ck->n_params,
            ck->sha256, sched_now() - t0);
    set_request_opts(st->app, st->cfg, ck);
    return 0;
}

/* The scheduler, then one warmed backend + worker per device; the app is
 * loaded afterwards. Logs its failure. */
static int start_scheduler(serve_state *st)
{
    serve_app *app = st->app;
    const serve_config *cfg = st->cfg;
    const laya_checkpoint *ck = st->ck;
    layad_error err;
    layad_error_clear(&err);
    int max_len = cfg->max_len > ck->cfg.max_len ? cfg->max_len : ck->cfg.max_len;
    sched_opts so = {cfg->max_queue, cfg->batch_window_us, cfg->max_batch_rows,
                     cfg->max_batch_tokens, cfg->request_timeout_s, 2, 0, cfg->max_request_tokens,
                     cfg->max_queue_wait_s};
    /* the CPU backend runs packs at their exact size: no bucket rounding in the cost */
    so.exact_cost = !(!strcmp(cfg->device, "cuda") || (!strcmp(cfg->device, "auto") && cuda_device_count() > 0));
    if (so.kmax < cfg->max_options)
        so.kmax = cfg->max_options;
    if (so.kmax < cfg->max_levels)
        so.kmax = cfg->max_levels;
    if (so.max_batch_tokens < max_len) {
        log_msg("warn", "max_batch_tokens %d < max_len %d: raised so that any row fits", so.max_batch_tokens, max_len);
        so.max_batch_tokens = max_len;
    }
    app->sched = scheduler_create(&so, &err);
    if (!app->sched) {
        log_msg("error", "%s", err.msg);
        return -1;
    }
    double t0 = sched_now();
    if (build_backends(st, ck, &err)) {
        log_msg("error", "backend: %s", err.msg);
        return -1;
    }
    log_msg("info", "%s backend ready (%s, %s), warm-up %.2f s", app->device_kind, app->device_desc, app->dtype,
            sched_now() - t0);
    app->ck = ck;
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
    snprintf(status, sizeof status, "serving %.100s on %.64s:%d (%.120s)", app->served_name, st->cfg->bind,
             http_port(st->http), app->device_desc);
    notify_ready(status);
    log_msg("info", "ready: %s", status);
    if (g_stop_while_loading)
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
    if (st->ck_open)
        checkpoint_close(st->ck);
    gpu_snapshot_stop();
}

int cmd_serve(int argc, char **argv)
{
    serve_state st = {0};
    int rc = 1;
    st.cfg = calloc(1, sizeof *st.cfg);
    st.app = calloc(1, sizeof *st.app);
    st.ck = calloc(1, sizeof *st.ck);
    if (!st.cfg || !st.app || !st.ck) {
        fprintf(stderr, "layad serve: out of memory\n");
        goto out;
    }
    if (configure(&st, argc, argv, &rc))
        goto out;
    rc = 1;
    if (start_front(&st) || load_model(&st) || start_scheduler(&st))
        goto out;
    start_loop_handles(&st);
    run(&st);
    rc = 0;
    log_msg("info", "stopped");
out:
    teardown(&st);
    if (rc == 1 && g_stop_while_loading)
        rc = 0;
    long dropped = st.app ? atomic_load(&st.app->requests_dropped) : 0;
    if (dropped) {
        log_msg("error", "%ld requests received got no response (connection closed at exit)", dropped);
        if (rc == 0)
            rc = 1;
    }
    log_close();
    free(st.ck);
    free(st.app);
    free(st.cfg);
    return rc;
}
