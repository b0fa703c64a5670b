/*
 * cmd_check.c - `layad-dev check`: is this GPU forward loadable, right and fast, in
 * a fresh process (what the seed's AOT check is for layad).
 *
 * Reports load time (checkpoint open + verify), weight upload time and bytes,
 * capture time per warm-up bucket, then for each shape (some in the warm-up
 * list, some not): the first call (a capture for non-warm shapes), latency as
 * the median of five groups of 30 forwards after ten warm-ups (graph replay
 * and eager launches, three rotating input sets), and max abs deltas of
 * logits, probabilities and both heads for graph vs eager vs CPU fp32 (the CPU
 * on the first --cpu-rows rows of each shape). NVML snapshots before and
 * after. Writes results.json. Without a GPU it prints SKIP and exits 0.
 * Kernels are compiled ahead of time (sm_90a SASS from nvcc; the binary links
 * no NVRTC), so nothing is compiled at load.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/backend/cpu.h"
#include "model/backend/cuda.h"
#include "model/checkpoint/checkpoint.h"
#include "tests/tools/gpu_eval.h"
#include "tests/tools/synth_rows.h"
#include "tests/tools/tool.h"
#include "tests/tools/tools.h"

#define N_SETS 3
#define MAX_SHAPES 16

static void usage(FILE *f)
{
    fprintf(f,
            "usage: layad-dev check --model DIR [options]\n"
            "  --dtype fp16|bf16   serving dtype (default fp16)\n"
            "  --warm LIST         warm-up buckets, ROWSxTOKENS comma list (default 1x96,1x512,8x512)\n"
            "  --shapes LIST       timed shapes (default 1x83,8x512,4x200,2x300)\n"
            "  --cpu-rows N        rows per shape compared with CPU fp32 (default 2)\n"
            "  --threads N         CPU threads (default: all cores)\n"
            "  --device N          CUDA device (default 0)\n"
            "  --out FILE          results file (default results.json)\n");
}

typedef struct shape_run {
    laya_backend *b;
    synth_set *sets;
    fwd_out *out;
    int use_graph;
} shape_run;

static int one_forward(void *ctx, int iter, layad_error *err)
{
    shape_run *r = ctx;
    synth_set *s = &r->sets[iter % N_SETS];
    fwd_out *o = &r->out[iter % N_SETS];
    return cuda_backend_forward_mode(r->b, s->rows, s->n, o->K, o->logits, o->act, r->use_graph,
                                     err);
}

static json_t *latency_json(const double *ms, int n)
{
    double lo = ms[0], hi = ms[0];
    json_t *groups = json_array();
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, ms[i]);
        hi = fmax(hi, ms[i]);
        json_array_append_new(groups, json_real(ms[i]));
    }
    return json_pack("{s:f, s:f, s:f, s:o}", "median_ms", median(ms, n), "min_group_ms", lo,
                     "max_group_ms", hi, "group_means_ms", groups);
}

/* Whether bucket cap was warmed (every bucket without a warm-up list). */
static int in_warm(laya_backend *b, int cap, const cuda_bucket *warm, int n)
{
    if (n <= 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (cuda_backend_capacity(b, (long)warm[i].rows * warm[i].tokens, warm[i].rows) == cap)
            return 1;
    return 0;
}

/* A fwd_out restricted to its first n rows (shares storage). */
static fwd_out head_rows(const fwd_out *o, int n)
{
    fwd_out h = *o;
    h.n = n;
    return h;
}

static int check_shape(const laya_checkpoint *ck, laya_backend *b, laya_backend **cpu,
                       int threads, cuda_bucket shape, int idx, int cpu_rows,
                       const cuda_bucket *warm, int n_warm, json_t *shapes, layad_error *err)
{
    synth_set sets[N_SETS] = {{0}};
    fwd_out out[N_SETS] = {{0}}, eager = {0}, cpu_out = {0};
    int rc = -1;
    for (int i = 0; i < N_SETS; i++)
        if (synth_uniform(&sets[i], &ck->cfg, shape.rows, shape.tokens, 3,
                          1000 + 10 * idx + i, err) ||
            fwd_out_alloc(&out[i], shape.rows, 3, err))
            goto out;
    if (fwd_out_alloc(&eager, shape.rows, 3, err))
        goto out;
    const int cap = cuda_backend_capacity(b, (long)sets[0].tokens, sets[0].n);
    const int warmed = in_warm(b, cap, warm, n_warm);
    shape_run run = {b, sets, out, 1};
    /* first call: eager (then a late capture between calls) unless warmed */
    double t0 = wall_ms();
    if (one_forward(&run, 0, err))
        goto out;
    const double first_ms = wall_ms() - t0;
    double g_ms[5], e_ms[5];
    if (time_groups(one_forward, &run, 10, 5, 30, g_ms, err))
        goto out;
    run.use_graph = 0;
    if (time_groups(one_forward, &run, 10, 5, 30, e_ms, err))
        goto out;
    /* deltas on set 0: graph (out[0] from the last graph pass is overwritten by
     * eager passes, so run each once more) */
    if (cuda_backend_forward_mode(b, sets[0].rows, sets[0].n, 3, out[0].logits, out[0].act, 1,
                                  err) ||
        cuda_backend_forward_mode(b, sets[0].rows, sets[0].n, 3, eager.logits, eager.act, 0, err))
        goto out;
    delta_stats ge[3] = {0}, geall = {0}, gc[3] = {0}, gcall = {0}, ec[3] = {0}, ecall = {0};
    delta_accum(ge, &geall, &ck->cfg, sets[0].rows, &eager, &out[0], 1e-2);
    const int nc = cpu_rows < shape.rows ? cpu_rows : shape.rows;
    if (nc > 0) {
        if (!*cpu && !(*cpu = cpu_backend_create(ck, 8, threads, err)))
            goto out;
        if (fwd_out_alloc(&cpu_out, nc, 3, err) ||
            (*cpu)->ops->forward(*cpu, sets[0].rows, nc, 3, cpu_out.logits, cpu_out.act, err))
            goto out;
        fwd_out g = head_rows(&out[0], nc), e = head_rows(&eager, nc);
        delta_accum(gc, &gcall, &ck->cfg, sets[0].rows, &cpu_out, &g, 1e-2);
        delta_accum(ec, &ecall, &ck->cfg, sets[0].rows, &cpu_out, &e, 1e-2);
    }
    const int identical = fwd_out_identical(&eager, &out[0]);
    printf("  %3dx%-4d bucket %5d tokens %-9s first %8.2f ms  graph %8.3f ms  eager %8.3f ms  "
           "graph==eager %s  max|dp| vs cpu %.2e  max|dlogit| %.2e\n",
           shape.rows, shape.tokens, cap, warmed ? "(warm)" : "(not warm)", first_ms,
           median(g_ms, 5), median(e_ms, 5), identical ? "bitwise" : "DIFFERS", gcall.max_dp,
           gcall.max_dlogit);
    char hash[24];
    snprintf(hash, sizeof hash, "%016" PRIx64, synth_hash(&sets[0]));
    json_array_append_new(
        shapes,
        json_pack("{s:i, s:i, s:i, s:b, s:f, s:o, s:o, s:b, s:{s:o, s:o, s:o}, "
                  "s:i, s:s}",
                  "rows", shape.rows, "tokens", shape.tokens, "bucket_tokens", cap,
                  "warm_up_shape", warmed, "first_call_ms", first_ms,
                  "graph_latency", latency_json(g_ms, 5), "eager_latency", latency_json(e_ms, 5),
                  "graph_bit_identical_to_eager", identical, "max_abs_deltas",
                  "graph_vs_eager", delta_json(ge, &geall), "graph_vs_cpu_fp32",
                  delta_json(gc, &gcall), "eager_vs_cpu_fp32", delta_json(ec, &ecall),
                  "cpu_rows_compared", nc, "input_hash", hash));
    rc = 0;
out:
    for (int i = 0; i < N_SETS; i++) {
        synth_free(&sets[i]);
        fwd_out_free(&out[i]);
    }
    fwd_out_free(&eager);
    fwd_out_free(&cpu_out);
    return rc;
}

/* The tool's own options (the common ones are in tool). */
typedef struct check_opts {
    const char *warm, *shapes;
    int cpu_rows;
} check_opts;

static int check_opt(void *ctx, int c, const char *arg)
{
    check_opts *o = ctx;
    switch (c) {
    case 'w': o->warm = arg; return 0;
    case 's': o->shapes = arg; return 0;
    case 'c': o->cpu_rows = atoi(arg); return 0;
    default: usage(stderr); return 2;
    }
}

/* rep["load"] and rep["device"] from the backend's info (printed as well). */
static void load_json(tool *t, const cuda_backend_info *info, double load_ms, double create_ms)
{
    printf("check: %s on %s (%s, %d SMs), %s\n", t->ck->dir, info->name, info->pci_bus_id,
           info->sm_count, cuda_dtype_name(t->dtype));
    printf("  load %.1f ms; upload %.1f ms for %.1f MB of weights; activations %.1f MB; "
           "create total %.1f ms\n",
           load_ms, info->upload_ms, info->weight_bytes / 1e6, info->act_bytes / 1e6, create_ms);
    json_t *caps = json_array();
    for (int i = 0; i < info->n_warm; i++) {
        printf("  warm-up bucket of %d tokens: %.1f ms (tuning + eager run + capture), %d graph nodes\n",
               info->warm_tokens[i], info->warm_capture_ms[i], info->warm_nodes[i]);
        json_array_append_new(caps, json_pack("{s:i, s:f, s:i}", "tokens", info->warm_tokens[i], "ms",
                                              info->warm_capture_ms[i], "graph_nodes", info->warm_nodes[i]));
    }
    json_object_set_new(
        t->rep, "load",
        json_pack("{s:s, s:s, s:f, s:f, s:I, s:I, s:I, s:I, s:f, s:f, s:o}", "model", t->ck->dir,
                  "model_sha256", t->ck->sha256, "checkpoint_open_ms", load_ms, "upload_ms",
                  info->upload_ms, "weight_bytes", (json_int_t)info->weight_bytes, "activation_bytes",
                  (json_int_t)info->act_bytes, "workspace_bytes", (json_int_t)info->workspace_bytes,
                  "pinned_bytes", (json_int_t)info->pinned_bytes, "create_ms", create_ms,
                  "init_before_warmup_ms", info->init_ms, "warm_up_captures", caps));
    json_object_set_new(
        t->rep, "device",
        json_pack("{s:i, s:s, s:s, s:s, s:i, s:I, s:s, s:s}", "index", info->device, "name",
                  info->name, "pci_bus_id", info->pci_bus_id, "compute_capability",
                  info->sm_major == 9 ? "9.0" : "other", "sm_count", info->sm_count,
                  "memory_total_bytes", (json_int_t)info->mem_total, "dtype",
                  cuda_dtype_name(t->dtype), "kernels",
                  "ahead of time: nvcc sm_90a SASS + compute_90 PTX; no NVRTC linked"));
}

/* Opens the checkpoint and creates the CUDA backend with the warm-up list,
 * timing both. 0, or -1 with t->err set. */
static int load(tool *t, const cuda_bucket *warm, int n_warm)
{
    double t0 = wall_ms();
    if (tool_open_model(t))
        return -1;
    const double load_ms = wall_ms() - t0;
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    o.device = t->device;
    o.dtype = t->dtype;
    o.warm = warm;
    o.n_warm = n_warm;
    t0 = wall_ms();
    if (!(t->gpu = cuda_backend_create(t->ck, &o, &t->err)))
        return -1;
    const double create_ms = wall_ms() - t0;
    cuda_backend_info info;
    if (cuda_backend_info_get(t->gpu, &info, &t->err))
        return -1;
    load_json(t, &info, load_ms, create_ms);
    return 0;
}

/* Every shape, then the graph counters and the NVML snapshot after the work. */
static int check_all(tool *t, const check_opts *co, const cuda_bucket *warm, int n_warm,
                     const cuda_bucket *shapes, int n_shapes)
{
    json_t *shape_arr = json_array();
    json_object_set_new(t->rep, "shapes", shape_arr);
    for (int i = 0; i < n_shapes; i++)
        if (check_shape(t->ck, t->gpu, &t->cpu, t->threads, shapes[i], i, co->cpu_rows, warm, n_warm,
                        shape_arr, &t->err))
            return -1;
    cuda_backend_stats st;
    cuda_backend_stats_get(t->gpu, &st);
    json_object_set_new(t->rep, "graph_cache",
                        json_pack("{s:I, s:I, s:I, s:i}", "hits", (json_int_t)st.graph_hits,
                                  "misses", (json_int_t)st.graph_misses, "late_captures",
                                  (json_int_t)st.late_captures, "cached", st.graphs_cached));
    usleep(1200 * 1000); /* let the NVML thread refresh after the work */
    json_object_set_new(t->rep, "nvml_after", gpu_snapshot_json());
    return 0;
}

int cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {
        TOOL_MODEL,  TOOL_DTYPE,
        {"warm", required_argument, 0, 'w'},   {"shapes", required_argument, 0, 's'},
        {"cpu-rows", required_argument, 0, 'c'}, TOOL_THREADS,
        TOOL_DEVICE, TOOL_OUT,
        TOOL_HELP,   {0, 0, 0, 0}};
    tool t;
    tool_init(&t, "check", usage);
    t.out = "results.json";
    check_opts co = {"1x96,1x512,8x512", "1x83,8x512,4x200,2x300", 2};
    int rc = tool_parse(&t, argc, argv, "h", opts, check_opt, &co);
    if (rc >= 0)
        return rc;
    if (!t.model)
        return tool_usage_error(&t);
    if (tool_skip_without_gpu())
        return 0;
    cuda_bucket warm[MAX_SHAPES], shapes[MAX_SHAPES];
    int n_warm = cuda_bucket_list_parse(co.warm, warm, MAX_SHAPES, &t.err);
    int n_shapes = n_warm < 0 ? -1 : cuda_bucket_list_parse(co.shapes, shapes, MAX_SHAPES, &t.err);
    if (n_warm < 0 || n_shapes < 0)
        return tool_fail(&t);
    t.rep = json_object();
    json_object_set_new(t.rep, "nvml_before", gpu_snapshot_json());
    if (load(&t, warm, n_warm) || check_all(&t, &co, warm, n_warm, shapes, n_shapes))
        return tool_close(&t, tool_fail(&t));
    if (tool_write_report(&t, t.out))
        return tool_close(&t, 2);
    printf("check: wrote %s\n", t.out);
    return tool_close(&t, 0);
}
