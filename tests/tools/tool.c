/*
 * tool.c - see tool.h.
 */
#include "tests/tools/tool.h"

#include <stdlib.h>
#include <string.h>

#include "model/backend/cuda.h"
#include "server/telemetry/gpu_snapshot.h"

void tool_init(tool *t, const char *name, void (*usage)(FILE *f))
{
    memset(t, 0, sizeof *t);
    t->name = name;
    t->usage = usage;
    t->dtype = CUDA_DT_FP16;
}

int tool_usage_error(const tool *t)
{
    t->usage(stderr);
    return 2;
}

/* A common option into t: 0, or an exit status. */
static int common_opt(tool *t, int code, const char *arg)
{
    switch (code) {
    case TOOL_OPT_MODEL: t->model = arg; return 0;
    case TOOL_OPT_OUT: t->out = arg; return 0;
    case TOOL_OPT_DEVICE: t->device = atoi(arg); return 0;
    case TOOL_OPT_THREADS: t->threads = atoi(arg); return 0;
    case TOOL_OPT_DTYPE:
        if (cuda_dtype_parse(arg, &t->dtype)) {
            fprintf(stderr, "%s: unknown dtype '%s'\n", t->name, arg);
            return 2;
        }
        return 0;
    default: return tool_usage_error(t);
    }
}

int tool_parse(tool *t, int argc, char **argv, const char *shortopts, const struct option *opts,
               tool_opt_fn own, void *ctx)
{
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        int rc;
        if (c == 'h') {
            t->usage(stdout);
            return 0;
        }
        if (c == '?')
            return tool_usage_error(t);
        rc = c >= TOOL_OPT_MODEL && c <= TOOL_OPT_OUT ? common_opt(t, c, optarg) : own(ctx, c, optarg);
        if (rc)
            return rc;
    }
    return -1;
}

int tool_skip_without_gpu(void)
{
    if (cuda_device_count() > 0)
        return 0;
    printf("SKIP: no CUDA device%s\n", LAYAD_CUDA ? "" : " (built without CUDA)");
    return 1;
}

int tool_open_model(tool *t)
{
    t->ck = calloc(1, sizeof *t->ck);
    if (!t->ck)
        return layad_fail(&t->err, 500, "out of memory");
    if (checkpoint_open(t->ck, t->model, &t->err))
        return -1;
    t->ck_open = 1;
    return 0;
}

int tool_write_report(const tool *t, const char *path)
{
    if (!json_dump_file(t->rep, path, JSON_INDENT(2) | JSON_SORT_KEYS))
        return 0;
    fprintf(stderr, "%s: cannot write %s\n", t->name, path);
    return -1;
}

json_t *tool_argv_json(int argc, char **argv)
{
    json_t *a = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(a, json_string(argv[i]));
    return a;
}

int tool_fail(const tool *t)
{
    fprintf(stderr, "%s: %s\n", t->name, t->err.msg);
    return 2;
}

int tool_close(tool *t, int status)
{
    json_decref(t->rep);
    if (t->cpu)
        t->cpu->ops->destroy(t->cpu);
    if (t->gpu)
        t->gpu->ops->destroy(t->gpu);
    if (t->ck_open)
        checkpoint_close(t->ck);
    free(t->ck);
    memset(t, 0, sizeof *t);
    return status;
}

/* ---- NVML snapshot ------------------------------------------------------------ */

json_t *gpu_snapshot_json(void)
{
    static int started = -1;
    if (started < 0)
        started = gpu_snapshot_start();
    gpu_snapshot s;
    if (!started || !gpu_snapshot_get(&s))
        return json_null();
    json_t *devs = json_array();
    for (int i = 0; i < s.n; i++) {
        const gpu_dev_snapshot *d = &s.dev[i];
        json_t *o = json_pack("{s:i, s:s, s:s, s:s}", "index", d->index, "name", d->name, "uuid",
                              d->uuid, "pstate", d->pstate);
        if (d->have_mem) {
            json_object_set_new(o, "memory_used_mib", json_real(d->memory_used_bytes / 1048576.0));
            json_object_set_new(o, "memory_total_mib",
                                json_real(d->memory_total_bytes / 1048576.0));
        }
        if (d->have_util)
            json_object_set_new(o, "utilization_pct", json_real(100 * d->utilization_ratio));
        if (d->have_temp)
            json_object_set_new(o, "temperature_c", json_real(d->temperature_celsius));
        if (d->have_power)
            json_object_set_new(o, "power_w", json_real(d->power_watts));
        if (d->have_sm_clock)
            json_object_set_new(o, "sm_clock_mhz", json_real(d->sm_clock_hertz / 1e6));
        if (d->have_mem_clock)
            json_object_set_new(o, "memory_clock_mhz", json_real(d->memory_clock_hertz / 1e6));
        if (d->have_proc_mem)
            json_object_set_new(o, "process_memory_mib",
                                json_real(d->process_memory_bytes / 1048576.0));
        json_array_append_new(devs, o);
    }
    return json_pack("{s:s, s:o}", "driver", s.driver, "devices", devs);
}
