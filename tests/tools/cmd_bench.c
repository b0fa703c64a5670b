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
#include "model/checkpoint/checkpoint.h"
#include "tests/tools/gpu_eval.h"
#include "tests/tools/synth_rows.h"
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
            "  --branch16          residual-branch projections in the serving dtype (see backend_cuda.h)\n"

            "  --no-gemm-tune      cuBLASLt's heuristic algorithm, untimed (see backend_cuda.h)\n"
            "  --no-pdl            launch our kernels without programmatic dependent launch (kn_set_pdl)\n"
            "  --device N          CUDA device (default 0)\n"
            "  --out FILE          JSON report (default bench.json)\n");
}

typedef struct bench_run {
    laya_backend *b;
    synth_set *sets;
    fwd_out *out;
} bench_run;

static int one_forward(void *ctx, int iter, layad_error *err)
{
    bench_run *r = ctx;
    synth_set *s = &r->sets[iter % N_SETS];
    fwd_out *o = &r->out[iter % N_SETS];
    return r->b->ops->forward(r->b, s->rows, s->n, o->K, o->logits, o->act, err);
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},  {"dtype", required_argument, 0, 'd'},
        {"shapes", required_argument, 0, 's'}, {"groups", required_argument, 0, 'g'},
        {"per-group", required_argument, 0, 'p'}, {"label", required_argument, 0, 'l'},
        {"commit", required_argument, 0, 'C'}, {"device", required_argument, 0, 'D'},
        {"out", required_argument, 0, 'o'},    {"help", no_argument, 0, 'h'},
        {"branch16", no_argument, 0, 'B'},     
        {"no-gemm-tune", no_argument, 0, 'T'}, {"no-pdl", no_argument, 0, 'N'},
        {0, 0, 0, 0}};
    const char *model = NULL, *shapes_s = "1x83,1x512,8x512,64x512", *label = NULL;
    const char *out = "bench.json", *commit = getenv("LAYAD_COMMIT");
    int dtype = CUDA_DT_FP16, groups = 5, per_group = 30, device = 0, branch16 = 0, tune = 1, pdl = 1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'd':
            if (cuda_dtype_parse(optarg, &dtype)) {
                fprintf(stderr, "bench: unknown dtype '%s'\n", optarg);
                return 2;
            }
            break;
        case 's': shapes_s = optarg; break;
        case 'g': groups = atoi(optarg); break;
        case 'p': per_group = atoi(optarg); break;
        case 'l': label = optarg; break;
        case 'C': commit = optarg; break;
        case 'D': device = atoi(optarg); break;
        case 'o': out = optarg; break;
        case 'B': branch16 = 1; break;
        case 'T': tune = 0; break;
        case 'N': pdl = 0; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!model || groups < 1 || groups > 100 || per_group < 1) {
        usage(stderr);
        return 2;
    }
    if (cuda_device_count() == 0) {
        printf("SKIP: no CUDA device%s\n", LAYAD_CUDA ? "" : " (built without CUDA)");
        return 0;
    }
    layad_error err = {0};
    cuda_bucket shapes[MAX_SHAPES];
    const int n_shapes = cuda_bucket_list_parse(shapes_s, shapes, MAX_SHAPES, &err);
    if (n_shapes < 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 2;
    }
    laya_checkpoint *ck = calloc(1, sizeof *ck);
    laya_backend *b = NULL;
    json_t *rep = json_object(), *arr = json_array();
    int status = 2, opened = 0, max_rows = 1, max_tokens = 16;
    if (!ck || checkpoint_open(ck, model, &err))
        goto fail;
    opened = 1;
    for (int i = 0; i < n_shapes; i++) {
        max_rows = shapes[i].rows > max_rows ? shapes[i].rows : max_rows;
        max_tokens = shapes[i].tokens > max_tokens ? shapes[i].tokens : max_tokens;
    }
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    o.device = device;
    o.dtype = dtype;
    o.max_batch_rows = max_rows;
    o.max_len = max_tokens > ck->cfg.max_len ? max_tokens : ck->cfg.max_len;
    o.max_tokens = max_rows * o.max_len; /* every shape fits one pack */
    o.warm = shapes;
    o.n_warm = n_shapes;
    o.branch16 = branch16;
    o.gemm_tune = tune;
    o.pdl = pdl;
    if (!(b = cuda_backend_create(ck, &o, &err)))
        goto fail;
    cuda_backend_info info;
    if (cuda_backend_info_get(b, &info, &err))
        goto fail;
    const laya_config *cfg = &ck->cfg;
    const double wbytes = forward_weight_bytes(cfg);
    printf("bench: %s on %s, %s, hidden %d x %d layers\n", ck->dir, info.name,
           cuda_dtype_name(dtype), cfg->hidden, cfg->n_layers);
    printf("  %-9s %10s %10s %10s %9s %12s %9s\n", "shape", "median ms", "min", "max", "floor ms",
           "tokens/s", "x floor");
    for (int i = 0; i < n_shapes; i++) {
        const cuda_bucket sh = shapes[i];
        synth_set sets[N_SETS] = {{0}};
        fwd_out outs[N_SETS] = {{0}};
        int ok = 1;
        for (int k = 0; k < N_SETS && ok; k++)
            ok = !synth_uniform(&sets[k], cfg, sh.rows, sh.tokens, 3, 7000 + 10 * i + k, &err) &&
                 !fwd_out_alloc(&outs[k], sh.rows, 3, &err);
        double ms[100];
        bench_run run = {b, sets, outs};
        if (ok)
            ok = !time_groups(one_forward, &run, 10, groups, per_group, ms, &err);
        if (ok) {
            int *lens = malloc((size_t)sh.rows * sizeof *lens);
            ok = lens != NULL;
            for (int r = 0; ok && r < sh.rows; r++)
                lens[r] = sets[0].rows[r].len;
            const double flops = ok ? forward_flops(cfg, lens, sh.rows) : 0;
            free(lens);
            const double t_flop = flops / PEAK_FLOPS * 1e3, t_byte = wbytes / PEAK_BYTES * 1e3;
            const double floor_ms = fmax(t_flop, t_byte), med = median(ms, groups);
            double lo = ms[0], hi = ms[0];
            json_t *g = json_array();
            for (int k = 0; k < groups; k++) {
                lo = fmin(lo, ms[k]);
                hi = fmax(hi, ms[k]);
                json_array_append_new(g, json_real(ms[k]));
            }
            const double toks = (double)sets[0].tokens;
            const int cap = cuda_backend_capacity(b, (long)sets[0].tokens);
            char hash[24];
            snprintf(hash, sizeof hash, "%016" PRIx64, synth_hash(&sets[0]));
            printf("  %3dx%-5d %10.3f %10.3f %10.3f %9.3f %12.0f %9.2f\n", sh.rows, sh.tokens,
                   med, lo, hi, floor_ms, toks / (med / 1e3), med / floor_ms);
            json_array_append_new(
                arr, json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:o, s:f, s:f, "
                               "s:f, s:s, s:f, s:f, s:s}",
                               "rows", sh.rows, "tokens", sh.tokens, "bucket_tokens", cap,
                               "real_tokens", toks,
                               "median_ms", med, "min_group_ms", lo, "max_group_ms", hi,
                               "group_means_ms", g, "tokens_per_s", toks / (med / 1e3), "flops",
                               flops, "floor_ms", floor_ms, "floor_bound",
                               t_flop > t_byte ? "compute" : "weight bandwidth",
                               "ratio_to_floor", med / floor_ms, "weight_bytes", wbytes,
                               "input_hash", hash));
        }
        for (int k = 0; k < N_SETS; k++) {
            synth_free(&sets[k]);
            fwd_out_free(&outs[k]);
        }
        if (!ok)
            goto fail;
    }
    cuda_backend_stats st;
    cuda_backend_stats_get(b, &st);
    json_t *argv_j = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(argv_j, json_string(argv[i]));
    json_object_set_new(
        rep, "run",
        json_pack("{s:s, s:s, s:o, s:s, s:s, s:s, s:s, s:i, s:f, s:f, s:s, s:s, s:s, s:b}", "tool", "layad",
                  "label", label ? label : cfg->encoder_name, "command", argv_j, "commit",
                  commit ? commit : "unknown", "model_sha256", ck->sha256, "device", info.name,
                  "dtype", cuda_dtype_name(dtype), "sm_count", info.sm_count, "peak_flops",
                  PEAK_FLOPS, "peak_bytes_per_s", PEAK_BYTES, "timing",
                  "host clock around the whole forward (staging + graph replay + copy back + "
                  "sync); median of group means, 3 rotating input sets", "residual_branch",
                  branch16 ? "serving dtype" : "fp32", "cublaslt_algorithm",
                  tune ? "fastest of up to 8 heuristic candidates, timed at warm-up" : "heuristic's first",
                  "programmatic_dependent_launch", pdl));
    json_object_set_new(rep, "geometry",
                        json_pack("{s:i, s:i, s:i, s:i, s:i}", "hidden", cfg->hidden, "layers",
                                  cfg->n_layers, "intermediate", cfg->intermediate, "vocab",
                                  cfg->vocab, "head_layers", cfg->head_layers));
    json_object_set_new(rep, "shapes", arr);
    arr = NULL;
    json_object_set_new(rep, "graph_cache",
                        json_pack("{s:I, s:I, s:i}", "hits", (json_int_t)st.graph_hits, "misses",
                                  (json_int_t)st.graph_misses, "buckets", info.n_buckets));
    if (json_dump_file(rep, out, JSON_INDENT(2) | JSON_SORT_KEYS)) {
        fprintf(stderr, "bench: cannot write %s\n", out);
        goto done;
    }
    status = 0;
    goto done;
fail:
    fprintf(stderr, "bench: %s\n", err.msg);
done:
    json_decref(arr);
    json_decref(rep);
    if (b)
        b->ops->destroy(b);
    if (opened)
        checkpoint_close(ck);
    free(ck);
    return status;
}
