/*
 * cmd_bench.c - `layad-dev bench`: forward time per shape against the physical floor.
 *
 * For each ROWSxTOKENS shape (default 1x83, 1x512, 8x512, 64x512): the bucket
 * is captured at create (warm-up list = the shapes), three input sets of that
 * shape are rotated, ten forwards warm up, then five groups of --per-group
 * forwards are timed on the host clock around the whole forward (staging,
 * graph replay, copy back, synchronize: what the daemon's GPU worker pays).
 * Reported: median per-forward time, group spread, tokens/s, and the floor
 * max(FLOPs / peak, weight bytes / bandwidth) with the H200 ceilings of
 * bench/README.md (790 TFLOP/s bf16 dense, 4.3 TB/s copy), so time / floor is
 * the gap. scripts/device/run runs this next to scripts/bench_torch_forward.py (PyTorch
 * on the same GPU) and scripts/bench_report.py merges both into one JSON and a
 * chart.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cuda.h"
#include "model/base/clock.h"
#include "model/checkpoint/checkpoint.h"
#include "tests/tools/gpu_eval.h"
#include "tests/tools/synth_rows.h"
#include "tests/tools/tool.h"
#include "tests/tools/tools.h"

#define N_SETS 3
#define MAX_SHAPES 16
#define PEAK_FLOPS 790e12 /* bf16 dense, measured on the lent H200s (bench/README.md) */
#define PEAK_BYTES 4.3e12 /* device copy, same source */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: layad-dev bench --model DIR [options]\n"
            "  --dtype fp16|bf16   serving dtype (default fp16)\n"
            "  --shapes LIST       ROWSxTOKENS comma list (default 1x83,1x512,8x512,64x512)\n"
            "  --groups N          timed groups (default 5)\n"
            "  --per-group N       forwards per group (default 30)\n"
            "  --label NAME        geometry label in the report (default: encoder name)\n"
            "  --commit SHA        commit recorded in the report (default $LAYAD_COMMIT)\n"
            "  --branch16          residual-branch projections in the serving dtype (see model/backend/cuda.h)\n"

            "  --no-gemm-tune      cuBLASLt's heuristic algorithm, untimed (see model/backend/cuda.h)\n"
            "  --no-residual-epilogue  the residual add in the LayerNorm, not the GEMM's epilogue\n"
            "  --split-tokens N    split the branch GEMMs into partial products up to N tokens (default 128; 0 never)\n"
            "  --small-gemm-tokens N  the split products on our own kernel up to N tokens (default 64; 0 never)\n"
            "  --fused-proj-tokens N  Wqkv + RoPE and Wi + GeGLU in one kernel each to N tokens (default 48; 0 never)\n"
            "  --path-tune-tokens N  buckets up to N tokens time those paths at warm-up, keep the fastest (default 0)\n"
            "  --att-pack-tokens N  buckets up to N tokens run few-tile packs' attention in two groups (default 1024)\n"
            "  --att-wo-tokens N   buckets up to N tokens run a short row's attention and out-projection in one\n"
            "                      launch (default 48; 0 never)\n"
            "  --no-pdl            launch our kernels without programmatic dependent launch (kn_set_pdl)\n"
            "  --no-copy-timing    no events around the input / output copies (the serving path's h2d / d2h)\n"
            "  --tuning-cache FILE tuned GEMM algorithms read from FILE (and written after warm-up), so a\n"
            "                      second run times nothing at warm-up (e.g. under a profiler)\n"
            "  --device N          CUDA device (default 0)\n"
            "  --out FILE          JSON report (default bench.json)\n");
}

/* The tool's own options (the common ones are in tool). */
typedef struct bench_opts {
    const char *shapes, *label, *commit, *tuning_cache;
    int groups, per_group, branch16, tune, pdl, copy_timing, residual_epilogue, split_tokens, small_gemm_tokens;
    int fused_proj_tokens, path_tune_tokens, att_pack_tokens, att_wo_tokens;
} bench_opts;

static int bench_opt(void *ctx, int c, const char *arg)
{
    bench_opts *b = ctx;
    switch (c) {
    case 's': b->shapes = arg; return 0;
    case 'g': b->groups = atoi(arg); return 0;
    case 'p': b->per_group = atoi(arg); return 0;
    case 'l': b->label = arg; return 0;
    case 'C': b->commit = arg; return 0;
    case 'B': b->branch16 = 1; return 0;
    case 'T': b->tune = 0; return 0;
    case 'N': b->pdl = 0; return 0;
    case 'E': b->copy_timing = 0; return 0;
    case 'R': b->residual_epilogue = 0; return 0;
    case 'S': b->split_tokens = atoi(arg); return 0;
    case 'O': b->small_gemm_tokens = atoi(arg); return 0;
    case 'P': b->fused_proj_tokens = atoi(arg); return 0;
    case 'Q': b->path_tune_tokens = atoi(arg); return 0;
    case 'A': b->att_pack_tokens = atoi(arg); return 0;
    case 'W': b->att_wo_tokens = atoi(arg); return 0;
    case 'U': b->tuning_cache = arg; return 0;
    default: usage(stderr); return 2;
    }
}

#define N_WARM 10 /* untimed forwards before a shape's groups */

typedef struct bench_run {
    laya_backend *b;
    synth_set *sets;
    fwd_out *out;
    laya_fwd_timing sum; /* the timed forwards' own account (launch call, device span), summed */
    int n;
    laya_fwd_timing first; /* the shape's first forward, its graph's first launch */
    double first_s;        /* and its host time */
} bench_run;

static int one_forward(void *ctx, int iter, layad_error *err)
{
    bench_run *r = ctx;
    synth_set *s = &r->sets[iter % N_SETS];
    fwd_out *o = &r->out[iter % N_SETS];
    const double t0 = layad_now();
    if (r->b->ops->forward(r->b, s->rows, s->n, o->K, o->logits, o->act, err))
        return -1;
    if (iter == 0) {
        r->first_s = layad_now() - t0;
        r->first = r->b->last;
    }
    if (iter >= N_WARM) {
        r->sum.run_s += r->b->last.run_s;
        r->sum.launch_s += r->b->last.launch_s;
        r->sum.gpu_s += r->b->last.gpu_s;
        r->n++;
    }
    return 0;
}

/* The CUDA backend with every shape's bucket captured at create (in t->gpu). */
static int create_backend(tool *t, const bench_opts *bo, const cuda_bucket *shapes, int n_shapes)
{
    int max_rows = 1, max_tokens = 16;
    for (int i = 0; i < n_shapes; i++) {
        max_rows = shapes[i].rows > max_rows ? shapes[i].rows : max_rows;
        max_tokens = shapes[i].tokens > max_tokens ? shapes[i].tokens : max_tokens;
    }
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    o.device = t->device;
    o.dtype = t->dtype;
    o.max_batch_rows = max_rows;
    o.max_len = max_tokens > t->ck->cfg.max_len ? max_tokens : t->ck->cfg.max_len;
    o.max_tokens = max_rows * o.max_len; /* every shape fits one pack */
    o.warm = shapes;
    o.n_warm = n_shapes;
    o.branch16 = bo->branch16;
    o.gemm_tune = bo->tune;
    o.pdl = bo->pdl;
    o.copy_timing = bo->copy_timing;
    o.residual_epilogue = bo->residual_epilogue;
    o.split_tokens = bo->split_tokens;
    o.small_gemm_tokens = bo->small_gemm_tokens;
    o.fused_proj_tokens = bo->fused_proj_tokens;
    o.path_tune_tokens = bo->path_tune_tokens;
    o.att_pack_tokens = bo->att_pack_tokens;
    o.att_wo_tokens = bo->att_wo_tokens;
    o.tuning_cache = bo->tuning_cache;
    return (t->gpu = cuda_backend_create(t->ck, &o, &t->err)) ? 0 : -1;
}

/* The shape's first forward, printed and added to its JSON j: a graph's first launch pays what
 * warm-up left to it (an upload, cold driver paths), which a lone request meets. */
static void first_forward(json_t *j, const bench_run *run)
{
    printf("  %8s first forward %.3f ms (launch call %.3f, device %.3f)\n", "", run->first_s * 1e3,
           run->first.launch_s * 1e3, run->first.gpu_s * 1e3);
    if (!j)
        return;
    json_object_set_new(j, "first_ms", json_real(run->first_s * 1e3));
    json_object_set_new(j, "first_launch_ms", json_real(run->first.launch_s * 1e3));
    json_object_set_new(j, "first_gpu_ms", json_real(run->first.gpu_s * 1e3));
}

/* The JSON of one timed shape (ms[0..groups): per-forward ms of each group; run: the timed
 * forwards' own account). */
static json_t *shape_json(tool *t, const synth_set *set, cuda_bucket sh, const double *ms, int groups,
                          double flops, const bench_run *run)
{
    const double wbytes = forward_weight_bytes(&t->ck->cfg);
    const double t_flop = flops / PEAK_FLOPS * 1e3, t_byte = wbytes / PEAK_BYTES * 1e3;
    const double floor_ms = fmax(t_flop, t_byte), med = median(ms, groups);
    double lo = ms[0], hi = ms[0];
    json_t *g = json_array();
    for (int k = 0; k < groups; k++) {
        lo = fmin(lo, ms[k]);
        hi = fmax(hi, ms[k]);
        json_array_append_new(g, json_real(ms[k]));
    }
    const double toks = (double)set->tokens;
    const int cap = cuda_backend_capacity(t->gpu, (long)set->tokens, set->n);
    char hash[24];
    snprintf(hash, sizeof hash, "%016" PRIx64, synth_hash(set));
    const double per = run->n > 0 ? 1e3 / run->n : 0;
    printf("  %3dx%-5d %10.3f %10.3f %10.3f %9.3f %12.0f %9.2f %9.1f %9.1f\n", sh.rows, sh.tokens, med, lo, hi,
           floor_ms, toks / (med / 1e3), med / floor_ms, run->sum.launch_s * per * 1e3,
           (run->sum.run_s - run->sum.gpu_s) * per * 1e3);
    json_t *j = json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:o, s:f, s:f, "
                          "s:f, s:s, s:f, s:f, s:s, s:f, s:f, s:f}",
                          "rows", sh.rows, "tokens", sh.tokens, "bucket_tokens", cap,
                          "real_tokens", toks,
                          "median_ms", med, "min_group_ms", lo, "max_group_ms", hi,
                          "group_means_ms", g, "tokens_per_s", toks / (med / 1e3), "flops",
                          flops, "floor_ms", floor_ms, "floor_bound",
                          t_flop > t_byte ? "compute" : "weight bandwidth",
                          "ratio_to_floor", med / floor_ms, "weight_bytes", wbytes,
                          "input_hash", hash, "run_mean_ms", run->sum.run_s * per, "launch_mean_ms",
                          run->sum.launch_s * per, "gpu_mean_ms", run->sum.gpu_s * per);
    first_forward(j, run);
    return j;
}

/* Times shape i (three rotating input sets) and appends its JSON to arr. 0 or -1. */
static int bench_shape(tool *t, const bench_opts *bo, cuda_bucket sh, int i, json_t *arr)
{
    const laya_config *cfg = &t->ck->cfg;
    synth_set sets[N_SETS] = {{0}};
    fwd_out outs[N_SETS] = {{0}};
    int ok = 1;
    for (int k = 0; k < N_SETS && ok; k++)
        ok = !synth_uniform(&sets[k], cfg, sh.rows, sh.tokens, 3, 7000 + 10 * i + k, &t->err) &&
             !fwd_out_alloc(&outs[k], sh.rows, 3, &t->err);
    double ms[100];
    bench_run run = {.b = t->gpu, .sets = sets, .out = outs};
    if (ok)
        ok = !time_groups(one_forward, &run, N_WARM, bo->groups, bo->per_group, ms, &t->err);
    if (ok) {
        int *lens = malloc((size_t)sh.rows * sizeof *lens);
        ok = lens != NULL;
        for (int r = 0; ok && r < sh.rows; r++)
            lens[r] = sets[0].rows[r].len;
        const double flops = ok ? forward_flops(cfg, lens, sh.rows) : 0;
        free(lens);
        json_array_append_new(arr, shape_json(t, &sets[0], sh, ms, bo->groups, flops, &run));
    }
    for (int k = 0; k < N_SETS; k++) {
        synth_free(&sets[k]);
        fwd_out_free(&outs[k]);
    }
    return ok ? 0 : -1;
}

/* rep["run"]: how this report was made. */
static json_t *run_json(const tool *t, const bench_opts *bo, const cuda_backend_info *info, int argc,
                        char **argv)
{
    const laya_config *cfg = &t->ck->cfg;
    return json_pack("{s:s, s:s, s:o, s:s, s:s, s:s, s:s, s:i, s:f, s:f, s:s, s:s, s:s, s:b, s:b, s:b, s:i, s:i, s:i, "
                     "s:i, s:i, s:i}",
                     "tool", "layad", "label", bo->label ? bo->label : cfg->encoder_name, "command",
                     tool_argv_json(argc, argv),
                     "commit", bo->commit ? bo->commit : "unknown", "model_sha256", t->ck->sha256, "device",
                     info->name, "dtype", cuda_dtype_name(t->dtype), "sm_count", info->sm_count, "peak_flops",
                     PEAK_FLOPS, "peak_bytes_per_s", PEAK_BYTES, "timing",
                     "host clock around the whole forward (staging + graph replay + copy back + "
                     "sync); median of group means, 3 rotating input sets", "residual_branch",
                     bo->branch16 ? "serving dtype" : "fp32", "cublaslt_algorithm",
                     bo->tune ? "fastest of up to 8 heuristic candidates, timed at warm-up" : "heuristic's first",
                     "programmatic_dependent_launch", bo->pdl, "copy_timing_events", bo->copy_timing,
                     "residual_add_in_gemm_epilogue", bo->residual_epilogue, "split_branch_tokens",
                     bo->split_tokens, "small_gemm_tokens", bo->small_gemm_tokens,
                     "fused_proj_tokens", bo->fused_proj_tokens, "path_tune_tokens", bo->path_tune_tokens,
                     "att_pack_tokens", bo->att_pack_tokens, "att_wo_tokens", bo->att_wo_tokens);
}

/* The launches a forward makes, bucket by bucket, and the paths each took: by the
 * thresholds, or timed (path_ms: each timed path's median forward, by name). */
static json_t *warm_json(const cuda_backend_info *info)
{
    json_t *warm = json_array();
    for (int i = 0; i < info->n_warm; i++) {
        json_t *pm = json_object();
        for (int p = 0; p < CUDA_PATHS; p++)
            if (info->warm_path_ms[i][p] > 0)
                json_object_set_new(pm, cuda_path_name(p), json_real(info->warm_path_ms[i][p]));
        json_array_append_new(warm, json_pack("{s:i, s:i, s:f, s:s, s:o}", "tokens", info->warm_tokens[i],
                                              "graph_nodes", info->warm_nodes[i], "warm_ms",
                                              info->warm_capture_ms[i], "path", cuda_path_name(info->warm_path[i]),
                                              "path_ms", pm));
    }
    return warm;
}

/* Runs every shape into t->rep. 0, or -1 with t->err set. */
static int bench_all(tool *t, const bench_opts *bo, const cuda_bucket *shapes, int n_shapes, int argc,
                     char **argv)
{
    cuda_backend_info info;
    if (cuda_backend_info_get(t->gpu, &info, &t->err))
        return -1;
    const laya_config *cfg = &t->ck->cfg;
    printf("bench: %s on %s, %s, hidden %d x %d layers\n", t->ck->dir, info.name,
           cuda_dtype_name(t->dtype), cfg->hidden, cfg->n_layers);
    if (bo->tuning_cache)
        printf("  tuning cache %s: %d algorithms read%s%s\n", bo->tuning_cache, info.tuning_loaded,
               info.tuning_warning[0] ? "; " : "", info.tuning_warning);
    for (int i = 0; i < info.n_warm; i++) /* the buckets that timed their paths */
        if (info.warm_path_ms[i][info.warm_path[i]] > 0)
            printf("  paths of %d tokens, ms: cublaslt %.4f, small-split %.4f, fused-proj %.4f, both %.4f "
                   "(0: n/a): kept %s\n", info.warm_tokens[i], info.warm_path_ms[i][0],
                   info.warm_path_ms[i][CUDA_PATH_SMALL], info.warm_path_ms[i][CUDA_PATH_FUSED],
                   info.warm_path_ms[i][CUDA_PATH_SMALL | CUDA_PATH_FUSED], cuda_path_name(info.warm_path[i]));
    printf("  %-9s %10s %10s %10s %9s %12s %9s %9s %9s\n", "shape", "median ms", "min", "max", "floor ms",
           "tokens/s", "x floor", "launch us", "host us");
    json_t *arr = json_array();
    json_object_set_new(t->rep, "shapes", arr);
    for (int i = 0; i < n_shapes; i++)
        if (bench_shape(t, bo, shapes[i], i, arr))
            return -1;
    cuda_backend_stats st;
    cuda_backend_stats_get(t->gpu, &st);
    json_t *run = run_json(t, bo, &info, argc, argv);
    if (bo->tuning_cache) /* the algorithms read from it: 0 means warm-up timed them all */
        json_object_set_new(run, "tuning_cache_loaded", json_integer(info.tuning_loaded));
    json_object_set_new(t->rep, "run", run);
    json_object_set_new(t->rep, "geometry",
                        json_pack("{s:i, s:i, s:i, s:i}", "hidden", cfg->hidden, "layers",
                                  cfg->n_layers, "intermediate", cfg->intermediate, "vocab",
                                  cfg->vocab, "head_layers", cfg->head_layers));
    json_object_set_new(t->rep, "graph_cache",
                        json_pack("{s:I, s:I, s:i}", "hits", (json_int_t)st.graph_hits, "misses",
                                  (json_int_t)st.graph_misses, "buckets", info.n_buckets));
    json_object_set_new(t->rep, "warm_buckets", warm_json(&info));
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        TOOL_MODEL,  TOOL_DTYPE,
        {"shapes", required_argument, 0, 's'}, {"groups", required_argument, 0, 'g'},
        {"per-group", required_argument, 0, 'p'}, {"label", required_argument, 0, 'l'},
        {"commit", required_argument, 0, 'C'}, TOOL_DEVICE,
        TOOL_OUT,    TOOL_HELP,
        {"branch16", no_argument, 0, 'B'},
        {"no-gemm-tune", no_argument, 0, 'T'}, {"no-pdl", no_argument, 0, 'N'},
        {"no-copy-timing", no_argument, 0, 'E'},
        {"no-residual-epilogue", no_argument, 0, 'R'},
        {"split-tokens", required_argument, 0, 'S'},
        {"small-gemm-tokens", required_argument, 0, 'O'},
        {"fused-proj-tokens", required_argument, 0, 'P'},
        {"path-tune-tokens", required_argument, 0, 'Q'},
        {"att-pack-tokens", required_argument, 0, 'A'},
        {"att-wo-tokens", required_argument, 0, 'W'},
        {"tuning-cache", required_argument, 0, 'U'},
        {0, 0, 0, 0}};
    tool t;
    tool_init(&t, "bench", usage);
    t.out = "bench.json";
    cuda_backend_opts d; /* the backend's defaults, which the flags turn off or change */
    cuda_backend_opts_default(&d);
    bench_opts bo = {"1x83,1x512,8x512,64x512", NULL, getenv("LAYAD_COMMIT"), NULL, 5, 30, d.branch16, d.gemm_tune, d.pdl,
                     d.copy_timing, d.residual_epilogue, d.split_tokens, d.small_gemm_tokens,
                     d.fused_proj_tokens, d.path_tune_tokens, d.att_pack_tokens, d.att_wo_tokens};
    int rc = tool_parse(&t, argc, argv, "h", opts, bench_opt, &bo);
    if (rc >= 0)
        return rc;
    if (!t.model || bo.groups < 1 || bo.groups > 100 || bo.per_group < 1 || bo.split_tokens < 0 ||
        bo.small_gemm_tokens < 0 || bo.fused_proj_tokens < 0 || bo.path_tune_tokens < 0 || bo.att_pack_tokens < 0 ||
        bo.att_wo_tokens < 0)
        return tool_usage_error(&t);
    if (tool_skip_without_gpu())
        return 0;
    cuda_bucket shapes[MAX_SHAPES];
    const int n_shapes = cuda_bucket_list_parse(bo.shapes, shapes, MAX_SHAPES, &t.err);
    if (n_shapes < 0)
        return tool_fail(&t);
    t.rep = json_object();
    if (tool_open_model(&t) || create_backend(&t, &bo, shapes, n_shapes) ||
        bench_all(&t, &bo, shapes, n_shapes, argc, argv))
        return tool_close(&t, tool_fail(&t));
    return tool_close(&t, tool_write_report(&t, t.out) ? 2 : 0);
}
