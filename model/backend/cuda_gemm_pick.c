/*
 * cuda_gemm_pick.c - the cuBLASLt algorithms of a small bucket's GEMMs chosen
 * by the forward's time (cuda_backend_opts.gemm_pick_tokens; an experiment).
 *
 * Tuning times each GEMM shape alone, ten launches in a row on one W, so from
 * the second launch on its weights come from the L2 the first one filled; in
 * the forward each layer's weights come from DRAM, between kernels of ours
 * launched programmatically. Timing the candidates with W cold instead (over
 * copies of it beyond the L2) picked algorithms that made the forward 4-13%
 * slower on an H100 (bench/results/experiments/tune-cold/): alone, hot or cold,
 * is not the forward. So here each shape with the bucket's rows runs, one after
 * the other, each of its heuristic candidates inside the bucket's captured
 * forward, timed as the kernel paths are (cuda_paths.c: interleaved rounds,
 * medians), and keeps the fastest; tuning's choice stays unless another beats
 * it by more than PICK_MARGIN, so noise does not move answers' last bits.
 */
#include "model/backend/cuda_internal.h"

#define PICK_MARGIN 0.003 /* a candidate replaces tuning's choice only when this much faster */
#define PICK_PLANS 32     /* shapes of one row count: the encoder's four, the head's, the tail's */

/* Times each candidate of plan in the forward of bucket (T, G) and keeps the fastest; *gain_ms
 * grows by what the forward gained, *shapes by one when candidates were timed. */
static int pick_one(cuda_backend *b, int T, int G, int plan, double *gain_ms, int *shapes, layad_error *err)
{
    int cur = -1;
    const int n = kn_gemm_plan_candidates(b->gemm, plan, &cur);
    if (n < 0)
        return layad_fail(err, 500, "cuda backend: GEMM candidates: %s", kn_cuda_last_error());
    if (n < 2 || cur < 0 || n > CUDA_TIMED_MAX)
        return 0;
    cudaGraphExec_t ex[CUDA_TIMED_MAX] = {NULL};
    double ms[CUDA_TIMED_MAX] = {0};
    int id[CUDA_TIMED_MAX], rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        int nodes = 0;
        id[i] = i;
        rc = kn_gemm_plan_use(b->gemm, plan, i)
                 ? layad_fail(err, 500, "cuda backend: GEMM candidate: %s", kn_cuda_last_error())
                 : cuda_capture_exec(b, T, G, CUDA_ATT_GRID, &ex[i], &nodes, err);
    }
    rc = rc || cuda_time_graphs(b, ex, n, ms, err);
    for (int i = 0; i < n; i++)
        if (ex[i])
            cudaGraphExecDestroy(ex[i]);
    const int best = rc ? cur : cuda_path_pick(id, ms, n, cur, PICK_MARGIN);
    if (kn_gemm_plan_use(b->gemm, plan, best) && !rc)
        rc = layad_fail(err, 500, "cuda backend: GEMM candidate: %s", kn_cuda_last_error());
    if (!rc) {
        *gain_ms += ms[cur] - ms[best];
        (*shapes)++;
    }
    return rc ? -1 : 0;
}

int cuda_pick_gemms(cuda_backend *b, int T, int G, double *gain_ms, int *shapes, layad_error *err)
{
    int idx[PICK_PLANS];
    *gain_ms = 0;
    *shapes = 0;
    if (cuda_warm_eager(b, T, G, CUDA_ATT_GRID, err)) /* the bucket's plans built and tuned */
        return -1;
    const int n = kn_gemm_ctx_plans_of_rows(b->gemm, T, idx, PICK_PLANS);
    for (int j = 0; j < n; j++)
        if (pick_one(b, T, G, idx[j], gain_ms, shapes, err))
            return -1;
    return 0;
}
