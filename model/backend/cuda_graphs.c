/*
 * cuda_graphs.c - one CUDA graph per token bucket, all made before serving.
 *
 * A bucket's graph is the whole forward of cuda_enqueue for that capacity and
 * gathered class (batching.h: tiny, few, or up to one per token). At create
 * every distinct class of every bucket of the warm-up set (by default all of
 * batching.h's buckets) is prepared in three steps: its GEMM plans are chosen
 * (with tuning on, cuBLASLt's candidates are timed on the bucket's own operands,
 * or taken from the tuning cache), one eager run on an all-padding pack loads
 * every kernel module, then the graph is captured and instantiated (a bucket of
 * at most path_tune_tokens first times its kernel paths that way: cuda_paths.c).
 * Capture never queries heuristics and nothing is allocated during it. Graph
 * replay and the eager launches enqueue the very same sequence, so they compute
 * bit-identical outputs.
 *
 * A bucket outside the warm-up set runs eagerly the first time (its GEMM plans
 * come from the heuristic alone, as no request may wait for tuning) and is
 * marked pending; ops->idle, which the worker calls between batches, captures
 * one pending bucket per call, so the next pack of that size replays a graph.
 */
#include <stdio.h>
#include <string.h>

#include "model/backend/cuda_internal.h"
#include "model/base/clock.h"

int cuda_bucket_index(const cuda_backend *b, int cap)
{
    for (int i = 0; i < b->policy.n_buckets; i++)
        if (b->policy.bucket[i] == cap)
            return i;
    return -1;
}

/* The graph slot of bucket (T, G) in attention form att, or NULL for a capacity outside the set. */
static bucket_graph *slot(cuda_backend *b, int T, int G, int att)
{
    const int i = cuda_bucket_index(b, T);
    return i < 0 ? NULL : &b->graphs[i][batch_gclass(&b->policy, T, G)][att];
}

/* Plans of bucket (T, G)'s GEMMs (no launch but the tuning's). */
static int prepare(cuda_backend *b, int T, int G, layad_error *err)
{
    b->prepare_only = 1;
    int rc = cuda_enqueue(b, T, G, CUDA_ATT_GRID, err);
    b->prepare_only = 0;
    return rc;
}

/* Prepares bucket (T, G) and captures its forward, attention in form att, into *exec (*nodes: the
 * graph's nodes). */
int cuda_capture_exec(cuda_backend *b, int T, int G, int att, cudaGraphExec_t *exec, int *nodes,
                      layad_error *err)
{
    if (prepare(b, T, G, err))
        return -1;
    cudaGraph_t graph = NULL;
    CU(cudaStreamBeginCapture(b->ks.s, cudaStreamCaptureModeThreadLocal));
    int rc = cuda_enqueue(b, T, G, att, err);
    cudaError_t e = cudaStreamEndCapture(b->ks.s, &graph);
    if (!rc && e != cudaSuccess)
        rc = layad_fail(err, 500, "cuda backend: end capture of %d tokens: %s", T,
                        cudaGetErrorString(e));
    size_t n = 0;
    if (!rc && cudaGraphGetNodes(graph, NULL, &n) != cudaSuccess)
        rc = layad_fail(err, 500, "cuda backend: nodes of the graph of %d tokens", T);
    if (!rc) {
        *nodes = (int)n;
        e = cudaGraphInstantiate(exec, graph, 0);
        if (e != cudaSuccess)
            rc = layad_fail(err, 500, "cuda backend: instantiate %d tokens: %s", T,
                            cudaGetErrorString(e));
    }
    if (graph)
        cudaGraphDestroy(graph);
    if (rc)
        (void)cudaGetLastError();
    return rc ? -1 : 0;
}

static int capture(cuda_backend *b, int T, int G, int att, bucket_graph *g, layad_error *err)
{
    if (cuda_capture_exec(b, T, G, att, &g->exec, &g->nodes, err))
        return -1;
    g->ready = 1;
    g->pending = 0;
    __atomic_fetch_add(&b->st.graphs_cached, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Runs bucket (T, G) on the staged inputs, attention in form att, and waits for the outputs in
 * pin_out. */
int cuda_launch(cuda_backend *b, int T, int G, int att, int use_graph, double *launch_s, layad_error *err)
{
    bucket_graph *g = slot(b, T, G, att);
    const double t0 = layad_now(); /* the clock of cuda_run_pack's stages */
    if (use_graph && g && g->ready) {
        __atomic_fetch_add(&b->st.graph_hits, 1, __ATOMIC_RELAXED);
        CU(cudaGraphLaunch(g->exec, b->ks.s));
    } else {
        if (use_graph && g) {
            __atomic_fetch_add(&b->st.graph_misses, 1, __ATOMIC_RELAXED);
            g->pending = 1;
        }
        if (cuda_enqueue(b, T, G, att, err))
            return -1;
    }
    if (launch_s)
        *launch_s += layad_now() - t0;
    CU(cudaStreamSynchronize(b->ks.s));
    __atomic_fetch_add(&b->st.forwards, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Whether bucket T runs one of the warm-up shapes (all buckets without a list). */
static int wanted(const cuda_backend *b, int T)
{
    if (b->o.n_warm <= 0)
        return 1;
    for (int i = 0; i < b->o.n_warm; i++) {
        const long tokens = (long)b->warm[i].rows * b->warm[i].tokens;
        if (batch_capacity(&b->policy, tokens, b->warm[i].rows) == T)
            return 1;
    }
    return 0;
}

/* Prepares bucket (T, G) and runs it once eagerly on an all-padding pack, attention in form att
 * (every kernel module loaded before a capture). */
int cuda_warm_eager(cuda_backend *b, int T, int G, int att, layad_error *err)
{
    batch_layout l;
    return prepare(b, T, G, err) || cuda_stage(b, T, G, NULL, 0, &l, err) ||
                   cuda_launch(b, T, G, att, 0, NULL, err)
               ? -1
               : 0;
}

/* Prepares, runs once (all padding), captures and replays bucket (T, G) in each attention form it
 * has. */
static int warm_bucket(cuda_backend *b, int T, int G, layad_error *err)
{
    const int forms = cuda_att_pack_ok(b, T) ? CUDA_ATT_FORMS : 1;
    for (int att = 0; att < forms; att++) {
        if (cuda_warm_eager(b, T, G, att, err))
            return -1;
        bucket_graph *g = slot(b, T, G, att);
        if (b->o.use_graphs && !g->ready && capture(b, T, G, att, g, err))
            return -1;
        /* A graph's first launch took 0.3-0.8 ms more than later ones on an H100 (why was not
         * measured): replayed once here, not in the bucket's first request. An explicit
         * cudaGraphUpload at capture removed that cost too, but every later replay then ran
         * ~0.13 ms slower at 83 tokens. */
        if (g->ready && cuda_launch(b, T, G, att, 1, NULL, err))
            return -1;
    }
    return 0;
}

/* Warms every gathered class bucket T owns, its paths chosen by timing first where asked
 * (path_tune_tokens), and records the bucket in info. */
static int warm_cap(cuda_backend *b, int T, int *done, int total, layad_error *err)
{
    const double t1 = 1e3 * layad_now();
    double pm[CUDA_PATHS] = {0};
    int nodes = 0, first = 1;
    for (int c = 0; c < BATCH_GCLASSES; c++) {
        if (!batch_gclass_own(&b->policy, T, c))
            continue;
        const int G = batch_gcap(&b->policy, T, c);
        if (first && T <= b->o.path_tune_tokens && b->o.use_graphs && cuda_choose_path(b, T, G, pm, err))
            return -1;
        if (warm_bucket(b, T, G, err))
            return -1;
        if (first && b->o.use_graphs)
            nodes = slot(b, T, G, CUDA_ATT_GRID)->nodes;
        first = 0;
        (*done)++;
    }
    const double ms = 1e3 * layad_now() - t1;
    cuda_backend_info *in = &b->info;
    if (in->n_warm < CUDA_MAX_WARM) {
        const int k = in->n_warm++;
        in->warm_tokens[k] = T;
        in->warm_nodes[k] = nodes;
        in->warm_capture_ms[k] = ms;
        in->warm_path[k] = cuda_path_effective(b, T, b->path[cuda_bucket_index(b, T)]);
        memcpy(in->warm_path_ms[k], pm, sizeof pm);
    }
    if (b->o.progress)
        b->o.progress(b->o.progress_arg, *done, total, T, ms);
    return 0;
}

int cuda_warm_up(cuda_backend *b, layad_error *err)
{
    int total = 0, done = 0;
    for (int i = 0; i < b->policy.n_buckets; i++) {
        const int T = b->policy.bucket[i];
        for (int c = 0; c < BATCH_GCLASSES && wanted(b, T); c++)
            total += batch_gclass_own(&b->policy, T, c);
    }
    const double t0 = 1e3 * layad_now();
    for (int i = 0; i < b->policy.n_buckets; i++)
        if (wanted(b, b->policy.bucket[i]) && warm_cap(b, b->policy.bucket[i], &done, total, err))
            return -1;
    b->info.warm_ms = 1e3 * layad_now() - t0;
    return 0;
}

int cuda_idle(laya_backend *base)
{
    cuda_backend *b = (cuda_backend *)base;
    for (int i = 0; i < b->policy.n_buckets; i++)
        for (int k = 0; k < BATCH_GCLASSES * CUDA_ATT_FORMS; k++) {
            const int c = k / CUDA_ATT_FORMS, att = k % CUDA_ATT_FORMS;
            bucket_graph *g = &b->graphs[i][c][att];
            if (!g->pending || g->ready)
                continue;
            const int T = b->policy.bucket[i], G = batch_gcap(&b->policy, T, c);
            layad_error err = {0};
            if (cudaSetDevice(b->dev) != cudaSuccess || capture(b, T, G, att, g, &err)) {
                g->pending = 0; /* stays eager; the failure is not a request's */
                fprintf(stderr, "layad: cuda backend: late capture of %d tokens failed: %s\n", T,
                        err.msg);
                return 1;
            }
            __atomic_fetch_add(&b->st.late_captures, 1, __ATOMIC_RELAXED);
            return 1;
        }
    return 0;
}

void cuda_graphs_destroy(cuda_backend *b)
{
    for (int i = 0; i < BATCH_MAX_BUCKETS; i++)
        for (int c = 0; c < BATCH_GCLASSES; c++)
            for (int att = 0; att < CUDA_ATT_FORMS; att++)
                if (b->graphs[i][c][att].ready)
                    cudaGraphExecDestroy(b->graphs[i][c][att].exec);
}
