/*
 * cuda_paths.c - which kernels a small bucket's encoder runs, chosen by timing
 * at warm-up (cuda_backend_opts.path_tune_tokens).
 *
 * Two paths of the encoder are our own kernels where cuBLASLt plus a separate
 * kernel is the alternative: the split residual-branch products
 * (CUDA_PATH_SMALL) and Wqkv + RoPE / Wi + GeGLU in one launch each
 * (CUDA_PATH_FUSED). Which combination is fastest depends on the bucket, the
 * geometry (mmBERT's F makes other block counts than English's) and the card,
 * and the fixed thresholds were measured on one of each. So a bucket up to
 * path_tune_tokens captures one graph per combination that applies there
 * (bits that would not change its launches are dropped, so no two candidates
 * run the same graph), times them in interleaved rounds on the bucket's own
 * all-padding pack, and keeps the fastest; the thresholds' choice stays unless
 * another beats it by more than PATH_MARGIN, so timing noise between close
 * paths does not move answers' last bits from one start to the next. The
 * candidates' graphs are freed; warm-up then captures the bucket's graphs with
 * the kept paths. Timing on padding is fair here: the paths differ only in
 * GEMMs and elementwise kernels whose time does not depend on the values.
 */
#include "model/backend/cuda_internal.h"

#define PATH_MARGIN 0.01  /* the thresholds' choice stays unless another is faster by more */

int cuda_path_effective(const cuda_backend *b, int T, int p)
{
    if (!cuda_small_ok(b, T))
        p &= ~CUDA_PATH_SMALL;
    if (!cuda_fused_ok(b, T))
        p &= ~CUDA_PATH_FUSED;
    return p;
}

/* The distinct effective paths of bucket T, in bit order, into out; their count. */
static int candidates(const cuda_backend *b, int T, int out[CUDA_PATHS])
{
    int n = 0;
    for (int p = 0; p < CUDA_PATHS; p++) {
        const int e = cuda_path_effective(b, T, p);
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= out[j] == e;
        if (!seen)
            out[n++] = e;
    }
    return n;
}

static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n is at most CUDA_PATH_ROUNDS_MAX */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            const double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One round's sample of graph x: the mean of its replays between two events,
 * into *ms. The first error, or cudaSuccess. */
static cudaError_t time_once(cuda_backend *b, cudaGraphExec_t x, cudaEvent_t e[2], double *ms)
{
    float t = 0;
    const int replays = b->o.path_replays;
    cudaError_t r = cudaEventRecord(e[0], b->ks.s);
    for (int k = 0; k < replays && r == cudaSuccess; k++)
        r = cudaGraphLaunch(x, b->ks.s);
    if (r == cudaSuccess)
        r = cudaEventRecord(e[1], b->ks.s);
    if (r == cudaSuccess)
        r = cudaEventSynchronize(e[1]);
    if (r == cudaSuccess)
        r = cudaEventElapsedTime(&t, e[0], e[1]);
    *ms = t / replays;
    return r;
}

/* ms[i]: the median over the rounds of graph ex[i]'s mean replay, the graphs
 * taking turns within each round so that clock and power drift reach all alike. */
static int time_graphs(cuda_backend *b, cudaGraphExec_t *ex, int n, double *ms, layad_error *err)
{
    const int rounds = b->o.path_rounds; /* 1..CUDA_PATH_ROUNDS_MAX (cuda_create.c) */
    cudaEvent_t e[2] = {NULL, NULL};
    double r[CUDA_PATHS][CUDA_PATH_ROUNDS_MAX];
    cudaError_t c = cudaEventCreate(&e[0]);
    if (c == cudaSuccess)
        c = cudaEventCreate(&e[1]);
    for (int round = 0; round < rounds && c == cudaSuccess; round++)
        for (int i = 0; i < n && c == cudaSuccess; i++)
            c = time_once(b, ex[i], e, &r[i][round]);
    for (int i = 0; i < n && c == cudaSuccess; i++)
        ms[i] = median_of(r[i], rounds);
    for (int k = 0; k < 2; k++)
        if (e[k])
            cudaEventDestroy(e[k]);
    if (c != cudaSuccess) {
        (void)cudaGetLastError();
        return layad_fail(err, 500, "cuda backend: timing the kernel paths: %s", cudaGetErrorString(c));
    }
    return 0;
}

int cuda_choose_path(cuda_backend *b, int T, int G, double pm[CUDA_PATHS], layad_error *err)
{
    const int bi = cuda_bucket_index(b, T);
    int cand[CUDA_PATHS];
    const int n = candidates(b, T, cand);
    if (bi < 0 || n < 2)
        return 0;
    const int dflt = cuda_path_effective(b, T, b->path[bi]);
    cudaGraphExec_t ex[CUDA_PATHS] = {NULL};
    double ms[CUDA_PATHS] = {0};
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        int nodes = 0;
        b->path[bi] = (unsigned char)cand[i];
        rc = cuda_warm_eager(b, T, G, CUDA_ATT_GRID, err) ||
             cuda_capture_exec(b, T, G, CUDA_ATT_GRID, &ex[i], &nodes, err);
    }
    rc = rc || time_graphs(b, ex, n, ms, err);
    for (int i = 0; i < n; i++)
        if (ex[i])
            cudaGraphExecDestroy(ex[i]);
    b->path[bi] = (unsigned char)(rc ? dflt : cand[cuda_path_pick(cand, ms, n, dflt, PATH_MARGIN)]);
    for (int i = 0; i < n && !rc; i++)
        pm[cand[i]] = ms[i];
    return rc ? -1 : 0;
}
