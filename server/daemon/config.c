/*
 * config.c - the option table behind serve_config, and its four sources.
 *
 * Strings are bounded copies (an over-long value is an error, never a silent
 * cut); numbers go through strtol/strtod with range checks, so that a typo in
 * a unit file fails the start instead of serving with a surprise value.
 */
#include "server/daemon/config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <stdlib.h>
#include <string.h>

#include "model/base/error.h"

typedef enum { OPT_STR, OPT_INT, OPT_LONG, OPT_BOOL, OPT_DOUBLE, OPT_LIST } opt_type;

typedef struct opt_def {
    const char *name;
    opt_type type;
    size_t off;
    size_t size;       /* buffer size for OPT_STR */
    const char *def;
    double min, max;   /* numeric range (inclusive) */
    const char *help;
} opt_def;

#define S(f) OPT_STR, offsetof(serve_config, f), sizeof(((serve_config *)0)->f)
#define I(f) OPT_INT, offsetof(serve_config, f), 0
#define L(f) OPT_LONG, offsetof(serve_config, f), 0
#define B(f) OPT_BOOL, offsetof(serve_config, f), 0
#define D(f) OPT_DOUBLE, offsetof(serve_config, f), 0
#define LST(f) OPT_LIST, offsetof(serve_config, f), 0

static const opt_def opts[] = {
    {"model", LST(model), "", 0, 0, "a checkpoint to serve, [name=]DIR or [name=]org/name[/subfolder][@rev] in the offline HF cache (required; repeat for several: the first is the default, each needs its own name)"},
    {"device", S(device), "auto", 0, 0, "backend: cpu, cuda, or auto (cuda when a GPU is visible)"},
    {"devices", S(devices), "", 0, 0, "CUDA device ordinals as numbered after CUDA_VISIBLE_DEVICES, one worker each, e.g. 0,1 (empty: every visible device)"},
    {"dtype", S(dtype), "fp16", 0, 0, "GPU weight/activation dtype: fp16 or bf16"},
    {"cpu_threads", I(cpu_threads), "0", 0, 4096, "CPU backend threads, all workers together (0: all cores)"},
    {"cpu_workers", I(cpu_workers), "1", 1, 16, "CPU backend workers, each with its own weights copy and cpu_threads/cpu_workers threads"},
    {"warm", S(warm), "all", 0, 0, "GPU buckets tuned and captured before ready: all, or only those of these shapes (rows x tokens, comma list; others then run eagerly once and are captured between batches)"},
    {"gemm_tune", B(gemm_tune), "true", 0, 1, "time up to 8 cuBLASLt algorithms per GEMM shape at warm-up and keep the fastest (false: the heuristic's, the same in every process)"},
    {"att_pack_tokens", I(att_pack_tokens), "1024", 0, 1 << 20, "GPU buckets of at most this many tokens also capture a graph whose attention runs two groups of warps a block, replayed for packs of few query tiles (a long row alone); the same bits (0: never)"},
    {"att_wo_tokens", I(att_wo_tokens), "48", 0, 4096, "GPU buckets of at most this many tokens run a pack of one or two query tiles (a short request alone) with the attention and its out-projection in one launch, one fp32 part a head summed by the LayerNorm after it (0: never)"},
    {"path_tune_tokens", I(path_tune_tokens), "64", 0, 4096, "GPU buckets of at most this many tokens time their own-kernel paths (split branch products, fused projections) against cuBLASLt at warm-up and keep the fastest (0: the built-in thresholds)"},
    {"state_dir", S(state_dir), "", 0, 0, "directory for state kept across restarts (the GEMM tuning cache); empty: $STATE_DIRECTORY from systemd, else none"},
    {"model_name", S(model_name), "", 0, 0, "served name of a model given without name= (empty: laya-rl-agent, what the official package answers)"},
    {"model_aliases", LST(model_aliases), "", 0, 0, "other names a request's \"model\" may give: [name=]alias,alias (without name=: the first model; repeatable). The official router's names are built in (server/api/README.md)"},
    {"bind", S(bind), "127.0.0.1", 0, 0, "listen address (IPv4 or IPv6 literal)"},
    {"port", I(port), "8080", 0, 65535, "listen port (0: any free port, printed at start)"},
    {"http_threads", I(http_threads), "4", 1, 1024, "HTTP worker threads (parse, tokenize, format)"},
    {"max_connections", I(max_connections), "1024", 1, 1000000, "concurrent connections"},
    {"connection_timeout_s", I(connection_timeout_s), "30", 1, 3600, "idle timeout of a connection whose request is complete (response not read), seconds"},
    {"header_timeout_s", D(header_timeout_s), "10", 0.05, 3600, "a connection's next request head must be complete within this many seconds of its opening or its previous response (also the keep-alive idle limit); else closed"},
    {"body_timeout_s", D(body_timeout_s), "10", 0.05, 3600, "a request body must be complete within this many seconds of its head; else 408 and closed"},
    {"max_connections_per_ip", I(max_connections_per_ip), "256", 0, 1000000, "concurrent connections from one client address; more are refused (0: no cap; raise it behind a proxy that connects from one address)"},
    {"reuse_port", B(reuse_port), "false", 0, 1, "let other processes listen on the same address and port (SO_REUSEPORT); false: a second daemon on the port fails to start"},
    {"max_body_bytes", L(max_body_bytes), "2097152", 1, 1e9, "request body limit, enforced while streaming (413)"},
    {"api_key", S(api_key), "", 0, 0, "bearer key required on every endpoint but /healthz, /readyz and /docs (empty: none)"},
    {"api_key_file", S(api_key_file), "", 0, 0, "file whose first line is the bearer key (at most 4096 bytes; keep it readable by the daemon's user only)"},
    {"allow_unauthenticated_remote", B(allow_unauthenticated_remote), "false", 0, 1, "start with a non-loopback bind and no bearer key (false: refuse to start so)"},
    {"docs", S(docs), "auto", 0, 0, "serve the web page GET /docs (try a decision, see its probabilities): auto (on unless a bearer key is set), true or false"},
    {"max_questions", I(max_questions), "64", 1, 100000, "questions per request (413 beyond)"},
    {"max_options", I(max_options), "255", 1, 100000, "options per choice question (413 beyond)"},
    {"max_levels", I(max_levels), "32", 1, 100000, "levels per score question (413 beyond)"},
    {"max_states", I(max_states), "64", 1, 100000, "states per /decide request (413 beyond)"},
    {"max_state_bytes", L(max_state_bytes), "0", 0, 1e9, "serialized state size limit (0: only the body limit)"},
    {"max_len", I(max_len), "0", 0, 1 << 20, "largest per-request max_len accepted (0: the checkpoint's)"},
    {"head_max_len", I(head_max_len), "0", 0, 1 << 20, "largest per-request head_max_len accepted (0: the checkpoint's)"},
    {"return_logits", B(return_logits), "true", 0, 1, "allow \"return_logits\": true in requests"},
    {"jev_strict", B(jev_strict), "false", 0, 1, "strict Jev answers for every request (else per request: X-Jev-Strict: 1)"},
    {"systemone_busy_status", I(systemone_busy_status), "503", 503, 529, "status of /v1/systemone (and /batch) when busy, draining or loading: 503, what the official laya client reads as busy, or 529 for Jev clients that retry on it"},
    {"max_queue", I(max_queue), "1024", 1, 1000000, "requests waiting for a batch; beyond: 503 (or systemone_busy_status on /v1/systemone)"},
    {"batch_window_us", I(batch_window_us), "100", 0, 10000000, "longest wait to gather rows into a batch while a worker is busy, microseconds"},
    {"worker_spin_us", I(worker_spin_us), "-1", -1, 100000, "after a batch a worker, and after any work the scheduler loop, polls this long for the next before it sleeps, microseconds (-1: 1000 on the GPU, 0 on the CPU)"},
    {"http_spin_us", I(http_spin_us), "-1", -1, 1000000, "an HTTP thread whose decision is the only one in flight polls this long for its answer before it suspends the connection, microseconds (-1: 2000 on the GPU, 0 on the CPU)"},
    {"max_batch_rows", I(max_batch_rows), "64", 1, 65536, "rows per batch"},
    {"max_batch_tokens", I(max_batch_tokens), "32768", 1, 1 << 30, "real tokens per batch"},
    {"max_request_tokens", L(max_request_tokens), "16384", 0, 1e9, "input tokens of one request, checked before any work; beyond: 413 (0: no limit). 16384 (32 rows of 512) is about 1.1 s of the 2-core CPU backend on the tiny model and 45 ms of an H200 on the large one"},
    {"max_queue_wait_s", D(max_queue_wait_s), "5", 0, 86400, "shed load: refuse a request when the work ahead of it (queued + in-flight tokens over the measured tokens/s) exceeds this many seconds: 503 (or systemone_busy_status on /v1/systemone) with Retry-After (0: only max_queue)"},
    {"request_timeout_s", D(request_timeout_s), "30", 0.001, 86400, "deadline from admission to the queue; past it: 504 and the late result is dropped"},
    {"shutdown_grace_s", D(shutdown_grace_s), "20", 0, 3600, "on SIGTERM/SIGINT: time to finish queued work before answering the rest 503"},
    {"log_file", S(log_file), "", 0, 0, "log file (empty: stderr); reopened on SIGHUP"},
    {"log_format", S(log_format), "text", 0, 0, "log line format: text or json"},
    {"log_requests", B(log_requests), "true", 0, 1, "one log line per request"},
    {"gpu_metrics", B(gpu_metrics), "true", 0, 1, "export the NVML GPU snapshot in /metrics when NVML is present"},
};
#define N_OPTS (sizeof opts / sizeof opts[0])

/* Name match treating '-' and '_' alike. */
static int name_eq(const char *a, const char *b, size_t blen)
{
    size_t i = 0;
    for (; i < blen && a[i]; i++) {
        char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
        if (x != y)
            return 0;
    }
    return i == blen && a[i] == 0;
}

static const opt_def *find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTS; i++)
        if (name_eq(opts[i].name, name, len))
            return &opts[i];
    return NULL;
}

static int parse_bool(const char *v, int *out)
{
    static const char *t[] = {"1", "true", "yes", "on"}, *f[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, t[i])) return *out = 1, 0;
        if (!strcasecmp(v, f[i])) return *out = 0, 0;
    }
    return -1;
}

/* Adds v to a repeatable option: entries from a new source replace the old
 * ones; in the environment (src LAYAD_*) v holds entries separated by spaces. */
static int apply_list(serve_list *l, const opt_def *o, const char *v, const char *src, layad_error *err)
{
    if (strcmp(l->source, src)) {
        l->n = 0;
        snprintf(l->source, sizeof l->source, "%s", src);
    }
    const int env = !strncmp(src, "LAYAD_", 6);
    while (*v) {
        size_t len = env ? strcspn(v, " \t") : strlen(v);
        if (len) {
            if (l->n >= SERVE_LIST_MAX)
                return layad_fail(err, 500, "%s: at most %d %s entries", src, SERVE_LIST_MAX, o->name);
            if (len >= sizeof l->item[0])
                return layad_fail(err, 500, "%s: %s entry longer than %zu bytes", src, o->name,
                                  sizeof l->item[0] - 1);
            memcpy(l->item[l->n], v, len);
            l->item[l->n++][len] = 0;
        }
        v += len;
        while (env && (*v == ' ' || *v == '\t'))
            v++;
    }
    return 0;
}

static int apply(serve_config *c, const opt_def *o, const char *v, const char *src, layad_error *err)
{
    char *base = (char *)c + o->off;
    char *end = NULL;
    switch (o->type) {
    case OPT_LIST:
        return apply_list((serve_list *)base, o, v, src, err);
    case OPT_STR:
        if (strlen(v) >= o->size)
            return layad_fail(err, 500, "%s: %s is longer than %zu bytes", src, o->name, o->size - 1);
        memcpy(base, v, strlen(v) + 1);
        return 0;
    case OPT_BOOL:
        if (parse_bool(v, (int *)base))
            return layad_fail(err, 500, "%s: %s must be true or false, not '%s'", src, o->name, v);
        return 0;
    case OPT_INT:
    case OPT_LONG: {
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end || x < o->min || x > o->max)
            return layad_fail(err, 500, "%s: %s must be an integer in [%.0f, %.0f], not '%s'", src,
                              o->name, o->min, o->max, v);
        if (o->type == OPT_INT)
            *(int *)base = (int)x;
        else
            *(long *)base = (long)x;
        return 0;
    }
    case OPT_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !(x >= o->min && x <= o->max))
            return layad_fail(err, 500, "%s: %s must be a number in [%g, %g], not '%s'", src, o->name,
                              o->min, o->max, v);
        *(double *)base = x;
        return 0;
    }
    }
    return layad_fail(err, 500, "internal: option type");
}

int serve_config_set(serve_config *c, const char *name, const char *value, const char *source,
                     layad_error *err)
{
    const opt_def *o = find_opt(name, strlen(name));
    if (!o)
        return layad_fail(err, 500, "%s: unknown option '%s'", source, name);
    return apply(c, o, value, source, err);
}

void serve_config_defaults(serve_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_OPTS; i++) {
        layad_error e;
        if (apply(c, &opts[i], opts[i].def, "", &e))
            abort(); /* a bad default is a programming error */
    }
}

static void env_name(const char *opt, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "LAYAD_");
    for (; *opt && n + 1 < cap; opt++)
        out[n++] = (char)toupper((unsigned char)*opt);
    out[n] = 0;
}

typedef struct ini_ctx {
    serve_config *c;
    const char *path;
    layad_error *err;
    int failed;
} ini_ctx;

static int ini_cb(void *user, const char *section, const char *name, const char *value)
{
    ini_ctx *x = user;
    char src[SERVE_STR_MAX + 16];
    if (x->failed)
        return 0;
    if (section[0] && strcmp(section, "serve")) {
        snprintf(src, sizeof src, "%s", x->path);
        layad_fail(x->err, 500, "%s: unknown section [%s] (options go at the top or under [serve])", src, section);
        x->failed = 1;
        return 0;
    }
    snprintf(src, sizeof src, "%s", x->path);
    if (serve_config_set(x->c, name, value, src, x->err)) {
        x->failed = 1;
        return 0;
    }
    return 1;
}

void serve_config_help(FILE *f)
{
    fprintf(f,
            "usage: layad serve [--config FILE] [--OPTION VALUE]...\n\n"
            "Serves a Laya checkpoint over HTTP (server/api/README.md). Every option can be set in the config\n"
            "file (name = value), in the environment (LAYAD_NAME) or as a flag (--name VALUE or\n"
            "--name=VALUE; a bare boolean flag means true). Precedence: flags > env > file > defaults.\n\n"
            "  --config FILE                  config file (env LAYAD_CONFIG; default: none)\n"
            "  --help                         this text\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        char flag[64], env[64];
        snprintf(flag, sizeof flag, "--%s", opts[i].name);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        env_name(opts[i].name, env, sizeof env);
        fprintf(f, "  %-30s %s\n  %-30s env %s, default '%s'\n", flag, opts[i].help, "", env, opts[i].def);
    }
}

/* Pass 1 over the arguments: 1 on --help (printed), -1 on a --config without a
 * file, else 0 with *cfg the config file (--config, else $LAYAD_CONFIG, or NULL). */
static int config_arg(int argc, char **argv, const char **cfg, layad_error *err)
{
    *cfg = getenv("LAYAD_CONFIG");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            serve_config_help(stdout);
            return 1;
        }
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc)
                return layad_fail(err, 500, "--config needs a file");
            *cfg = argv[++i];
        } else if (!strncmp(argv[i], "--config=", 9)) {
            *cfg = argv[i] + 9;
        }
    }
    return 0;
}

/* The config file's settings, then the environment's (LAYAD_<NAME>). */
static int apply_file_and_env(serve_config *c, const char *cfg, layad_error *err)
{
    if (cfg && cfg[0]) {
        if (strlen(cfg) >= sizeof c->config_path)
            return layad_fail(err, 500, "config path too long");
        ini_ctx x = {c, cfg, err, 0};
        int rc = ini_parse(cfg, ini_cb, &x);
        if (x.failed)
            return -1;
        if (rc < 0)
            return layad_fail(err, 500, "%s: cannot read config file", cfg);
        if (rc > 0)
            return layad_fail(err, 500, "%s:%d: syntax error", cfg, rc);
        snprintf(c->config_path, sizeof c->config_path, "%s", cfg);
    }
    for (size_t i = 0; i < N_OPTS; i++) {
        char env[64];
        env_name(opts[i].name, env, sizeof env);
        const char *v = getenv(env);
        if (v && apply(c, &opts[i], v, env, err))
            return -1;
    }
    return 0;
}

/* The flags (--name=value, --name value, a bare --bool), last, over everything else. */
static int apply_flags(serve_config *c, int argc, char **argv, layad_error *err)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        if (strncmp(a, "--", 2))
            return layad_fail(err, 500, "unexpected argument '%s' (see layad serve --help)", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const opt_def *o = find_opt(name, nlen);
        if (!o)
            return layad_fail(err, 500, "unknown option '%s' (see layad serve --help)", a);
        const char *v;
        if (eq) {
            v = eq + 1;
        } else if (o->type == OPT_BOOL && (i + 1 >= argc || argv[i + 1][0] == '-' ||
                                           parse_bool(argv[i + 1], &(int){0}))) {
            v = "true";
        } else {
            if (i + 1 >= argc)
                return layad_fail(err, 500, "option '%s' needs a value", a);
            v = argv[++i];
        }
        char src[80];
        snprintf(src, sizeof src, "--%.*s", (int)(nlen > 60 ? 60 : nlen), name);
        if (apply(c, o, v, src, err))
            return -1;
    }
    return 0;
}

/* The options whose values are one of a few words or numbers. */
static int check_choices(const serve_config *c, layad_error *err)
{
    if (strcmp(c->device, "cpu") && strcmp(c->device, "cuda") && strcmp(c->device, "auto"))
        return layad_fail(err, 500, "device must be cpu, cuda or auto, not '%s'", c->device);
    if (strcmp(c->log_format, "text") && strcmp(c->log_format, "json"))
        return layad_fail(err, 500, "log_format must be text or json, not '%s'", c->log_format);
    if (strcmp(c->docs, "auto") && strcmp(c->docs, "true") && strcmp(c->docs, "false"))
        return layad_fail(err, 500, "docs must be auto, true or false, not '%s'", c->docs);
    if (strcmp(c->dtype, "fp16") && strcmp(c->dtype, "bf16"))
        return layad_fail(err, 500, "dtype must be fp16 or bf16, not '%s'", c->dtype);
    if (c->systemone_busy_status != 503 && c->systemone_busy_status != 529)
        return layad_fail(err, 500, "systemone_busy_status must be 503 or 529, not %d", c->systemone_busy_status);
    return 0;
}

int serve_config_load(serve_config *c, int argc, char **argv, layad_error *err)
{
    serve_config_defaults(c);
    const char *cfg = NULL;
    const int rc = config_arg(argc, argv, &cfg, err); /* the file is read before env and flags */
    if (rc)
        return rc;
    return apply_file_and_env(c, cfg, err) || apply_flags(c, argc, argv, err) || check_choices(c, err) ? -1 : 0;
}
