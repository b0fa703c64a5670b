/*
 * cuda_opts.c - the CUDA backend's options and names: built with or without
 * CUDA, so the daemon parses its configuration the same way on every build.
 */
#include <stdlib.h>
#include <string.h>

#include "model/backend/cuda.h"

void cuda_backend_opts_default(cuda_backend_opts *o)
{
    memset(o, 0, sizeof *o);
    o->device = 0;
    o->dtype = CUDA_DT_FP16;
    o->max_batch_rows = 64;
    o->use_graphs = 1;
    o->gemm_tune = 1;
    o->residual_epilogue = 1;
    o->split_tokens = 128;
    o->small_gemm_tokens = 64;
    o->fused_proj_tokens = 48;
    o->path_rounds = CUDA_PATH_ROUNDS_MAX;
    o->path_replays = CUDA_PATH_REPLAYS;
    o->att_pack_tokens = 1024;
    o->att_wo_tokens = 48;
    o->pdl = 1;
    o->copy_timing = 1;
}

int cuda_path_fixed(const cuda_backend_opts *o, int T)
{
    return (T <= o->small_gemm_tokens ? CUDA_PATH_SMALL : 0) | (T <= o->fused_proj_tokens ? CUDA_PATH_FUSED : 0);
}

const char *cuda_path_name(int path)
{
    static const char *const names[CUDA_PATHS] = {"cublaslt", "small-split", "fused-proj", "small-split+fused-proj"};
    return path >= 0 && path < CUDA_PATHS ? names[path] : "?";
}

int cuda_path_pick(const int *path, const double *ms, int n, int dflt, double margin)
{
    int best = 0, d = -1;
    for (int i = 0; i < n; i++) {
        if (ms[i] < ms[best])
            best = i;
        if (path[i] == dflt && d < 0)
            d = i;
    }
    return d >= 0 && ms[best] >= ms[d] * (1.0 - margin) ? d : best;
}

int cuda_dtype_parse(const char *s, int *dtype)
{
    if (!strcmp(s, "fp16") || !strcmp(s, "float16") || !strcmp(s, "f16")) {
        *dtype = CUDA_DT_FP16;
        return 0;
    }
    if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) {
        *dtype = CUDA_DT_BF16;
        return 0;
    }
    return -1;
}

const char *cuda_dtype_name(int dtype)
{
    return dtype == CUDA_DT_BF16 ? "bf16" : "fp16";
}

int cuda_bucket_list_parse(const char *s, cuda_bucket *out, int cap, layad_error *err)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        char *end;
        long r = strtol(p, &end, 10);
        if (end == p || (*end != 'x' && *end != 'X'))
            return layad_fail(err, 400, "shape list: expected ROWSxTOKENS at '%s'", p);
        p = end + 1;
        long t = strtol(p, &end, 10);
        if (end == p || r < 1 || t < 1 || r > 1 << 20 || t > 1 << 20)
            return layad_fail(err, 400, "shape list: bad shape near '%s'", p);
        if (n == cap)
            return layad_fail(err, 400, "shape list: more than %d shapes", cap);
        out[n++] = (cuda_bucket){(int)r, (int)t, 0};
        p = end;
        if (*p && *p != ',' && *p != ' ')
            return layad_fail(err, 400, "shape list: unexpected '%c'", *p);
    }
    return n;
}
