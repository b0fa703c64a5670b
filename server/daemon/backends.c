/*
 * backends.c - the backends `layad serve` runs: one worker per device,
 * holding one backend per served model, each warmed and verified before the
 * daemon says READY (see backends.h). Models share the device and its worker;
 * each keeps its own weights, buckets, graphs and activation arena, so a
 * batch of one model never waits for another's shapes.
 *
 * CUDA: every visible ordinal, or the devices option; each backend uploads
 * the weights, tunes its GEMMs (cached under state_dir) and captures its
 * buckets, logging a line per bucket. CPU: cpu_workers backends sharing
 * cpu_threads. Either way one synthetic row must give finite logits.
 */
#include "server/daemon/backends.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/backend/cpu.h"
#include "model/backend/cuda.h"
#include "server/telemetry/gpu_snapshot.h"
#include "server/telemetry/log.h"
#include "server/telemetry/metrics.h"

#define MAX_DEVICES 16

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

typedef struct warm_ctx {
    int dev;
    const char *model;
} warm_ctx;

/* Start-up progress: one line per warmed bucket. */
static void warm_progress(void *arg, int done, int total, int cap_tokens, double ms)
{
    const warm_ctx *w = arg;
    log_msg("info", "cuda:%d: %s: warm-up %d/%d: bucket of %d tokens ready in %.0f ms", w->dev, w->model, done,
            total, cap_tokens, ms);
}

static void log_warm_summary(int dev, const char *model, const cuda_backend_info *info)
{
    log_msg("info", "cuda:%d: %s: %d buckets up to %d tokens warmed in %.1f s (upload %.1f s; %d tuned GEMM "
            "shapes from the cache); activations %.0f MiB, weights %.0f MiB", dev, model, info->n_warm,
            info->max_tokens, info->warm_ms / 1e3, info->upload_ms / 1e3, info->tuning_loaded,
            info->act_bytes / 1048576.0, info->weight_bytes / 1048576.0);
    if (info->tuning_warning[0])
        log_msg("warn", "cuda:%d: GEMM tuning cache: %s", dev, info->tuning_warning);
    for (int i = 0; i < info->n_warm; i++) { /* the buckets that timed their kernel paths */
        const double *ms = info->warm_path_ms[i];
        if (ms[info->warm_path[i]] > 0)
            log_msg("info", "cuda:%d: %s: bucket of %d tokens runs %s (timed, ms: cublaslt %.4f, small-split "
                    "%.4f, fused-proj %.4f, both %.4f; 0: not applicable)", dev, model, info->warm_tokens[i],
                    cuda_path_name(info->warm_path[i]), ms[0], ms[CUDA_PATH_SMALL], ms[CUDA_PATH_FUSED],
                    ms[CUDA_PATH_SMALL | CUDA_PATH_FUSED]);
    }
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

/* Model m's CUDA backend on device dev, warmed; sums its memory into *info
 * (the first model's info otherwise). NULL on failure. */
static laya_backend *cuda_model_backend(const serve_app *app, const serve_config *cfg, int m, int dev,
                                        const cuda_bucket *warm, int nwarm, cuda_backend_info *info, int *have_info,
                                        layad_error *err)
{
    const laya_checkpoint *ck = app->models.m[m].ck;
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    o.device = dev;
    if (cuda_dtype_parse(cfg->dtype, &o.dtype)) {
        layad_fail(err, 500, "dtype '%s'", cfg->dtype);
        return NULL;
    }
    o.max_batch_rows = cfg->max_batch_rows;
    o.max_tokens = cfg->max_batch_tokens;
    o.max_len = cfg->max_len > ck->cfg.max_len ? cfg->max_len : 0;
    o.warm = warm;
    o.n_warm = nwarm;
    o.gemm_tune = cfg->gemm_tune;
    o.path_tune_tokens = cfg->path_tune_tokens;
    o.att_pack_tokens = cfg->att_pack_tokens;
    o.att_wo_tokens = cfg->att_wo_tokens;
    char cache[SERVE_STR_MAX + 64];
    o.tuning_cache = tuning_cache_path(cfg, dev, cache, sizeof cache);
    warm_ctx wc = {dev, app->models.m[m].name};
    o.progress = warm_progress;
    o.progress_arg = &wc;
    log_msg("info", "cuda:%d: %s: uploading weights (%s), then tuning and capturing %s buckets", dev,
            app->models.m[m].name, cfg->dtype, warm ? "the warm-up shapes'" : "all");
    laya_backend *b = cuda_backend_create(ck, &o, err);
    if (!b || warm_backend(b, ck, err)) {
        if (b)
            b->ops->destroy(b);
        return NULL;
    }
    cuda_backend_info mi;
    if (cuda_backend_info_get(b, &mi, err) == 0) {
        log_warm_summary(dev, app->models.m[m].name, &mi);
        if (!*have_info) {
            *info = mi;
            *have_info = 1;
        } else {
            info->weight_bytes += mi.weight_bytes;
            info->act_bytes += mi.act_bytes;
        }
    }
    return b;
}

/* Appends device dev (its name and the memory of all its models) to devices and device_desc. */
static void describe_cuda(serve_app *app, int i, int dev, const cuda_backend_info *info, int have_info,
                          json_t *devices, size_t *off)
{
    if (!have_info) {
        json_array_append_new(devices, json_pack("{s:i,s:s}", "index", dev, "kind", "cuda"));
        return;
    }
    *off += (size_t)snprintf(app->device_desc + *off, sizeof app->device_desc - *off, "%scuda:%d %s",
                             i ? ", " : "", dev, info->name);
    if (*off >= sizeof app->device_desc)
        *off = sizeof app->device_desc - 1;
    json_array_append_new(devices, json_pack("{s:i,s:s,s:s,s:s,s:i,s:I,s:I,s:I}", "index", dev, "kind", "cuda",
                                             "name", info->name, "pci_bus_id", info->pci_bus_id, "sm_count",
                                             info->sm_count, "memory_total_bytes", (json_int_t)info->mem_total,
                                             "weight_bytes", (json_int_t)info->weight_bytes, "activation_bytes",
                                             (json_int_t)info->act_bytes));
}

/* One CUDA worker per selected device, with a backend per model; appends each to devices. */
static int build_cuda(serve_app *app, const serve_config *cfg, int ncuda, int *n_cuda, json_t *devices,
                      const char **lab, int *nlab, layad_error *err)
{
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
        laya_backend *b[MODELS_MAX];
        cuda_backend_info info;
        int have_info = 0;
        for (int m = 0; m < app->models.n; m++) {
            b[m] = cuda_model_backend(app, cfg, m, devs[i], all ? NULL : warm, nwarm, &info, &have_info, err);
            if (!b[m]) {
                laya_backends_destroy(b, m);
                return -1;
            }
        }
        snprintf(g_labels[*nlab], sizeof g_labels[*nlab], "%d", devs[i]);
        lab[*nlab] = g_labels[*nlab];
        if (have_info && gpu_snapshot_label_device(info.pci_bus_id, g_labels[*nlab]) < 0)
            log_msg("warn", "cuda:%d (%s): not found in NVML; its laya_gpu_* series carry no device label", devs[i],
                    info.pci_bus_id);
        if (scheduler_add_worker_models(app->sched, b, app->models.n, *nlab, err))
            return -1;
        (*nlab)++;
        describe_cuda(app, i, devs[i], &info, have_info, devices, &off);
    }
    *n_cuda = n;
    snprintf(app->device_kind, sizeof app->device_kind, "cuda");
    snprintf(app->dtype, sizeof app->dtype, "%s", cfg->dtype);
    return 0;
}

/* The fp32 CPU backend: cpu_workers workers, each with its own backend (its
 * own packed weights and arenas) and an equal share of cpu_threads. One
 * worker is labelled "cpu"; several are "cpu0", "cpu1", ... (metrics, /health). */
static int build_cpu(serve_app *app, const serve_config *cfg, json_t *devices, const char **lab, int *nlab,
                     layad_error *err)
{
    int threads = cfg->cpu_threads > 0 ? cfg->cpu_threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int nw = cfg->cpu_workers > 0 ? cfg->cpu_workers : 1;
    if (nw > MAX_DEVICES)
        return layad_fail(err, 500, "cpu_workers %d: at most %d", nw, MAX_DEVICES);
    int per = threads / nw > 0 ? threads / nw : 1;
    if (cfg->devices[0])
        log_msg("warn", "devices = %s ignored: the CPU backend runs cpu_workers = %d worker(s)", cfg->devices, nw);
    for (int i = 0; i < nw; i++) {
        laya_backend *b[MODELS_MAX];
        for (int m = 0; m < app->models.n; m++) {
            const laya_checkpoint *ck = app->models.m[m].ck;
            b[m] = cpu_backend_create(ck, cfg->max_batch_rows, per, err);
            if (!b[m] || warm_backend(b[m], ck, err)) {
                laya_backends_destroy(b, m + 1);
                return -1;
            }
        }
        if (nw == 1)
            snprintf(g_labels[*nlab], sizeof g_labels[*nlab], "cpu");
        else
            snprintf(g_labels[*nlab], sizeof g_labels[*nlab], "cpu%d", i);
        lab[*nlab] = g_labels[*nlab];
        if (scheduler_add_worker_models(app->sched, b, app->models.n, *nlab, err))
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

int backends_build(serve_app *app, const serve_config *cfg, int *n_cuda, layad_error *err)
{
    int ncuda = cuda_device_count();
    int use_cuda = !strcmp(cfg->device, "cuda") || (!strcmp(cfg->device, "auto") && ncuda > 0);
    const char *lab[MAX_DEVICES];
    int nlab = 0;
    json_t *devices = json_array();
    if (!devices)
        return layad_fail(err, 500, "out of memory");
    int rc = use_cuda ? build_cuda(app, cfg, ncuda, n_cuda, devices, lab, &nlab, err)
                      : build_cpu(app, cfg, devices, lab, &nlab, err);
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
    const char *names[MODELS_MAX], *sha[MODELS_MAX];
    for (int m = 0; m < app->models.n; m++) {
        names[m] = app->models.m[m].name;
        sha[m] = app->models.m[m].ck->sha256;
    }
    metrics_set_models(app->models.n, names, sha, app->dtype, app->device_kind, nlab, lab);
    return 0;
}
