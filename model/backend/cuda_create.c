/*
 * cuda_create.c - the CUDA backend's life: create (weights, arenas, GEMM
 * context, warm-up of every bucket), the forward entry points, destroy, and
 * the counters the daemon reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cuda_internal.h"
#include "model/base/clock.h"

int cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

static int check_rows(cuda_backend *b, const laya_row *rows, int n, int K, layad_error *err)
{
    if (n < 1)
        return layad_fail(err, 500, "cuda backend: forward over %d rows", n);
    if (K < 1)
        return layad_fail(err, 500, "cuda backend: K = %d", K);
    for (int i = 0; i < n; i++) {
        const laya_row *r = &rows[i];
        if (r->len < 1 || r->len > b->o.max_len)
            return layad_fail(err, 500, "cuda backend: row %d has %d tokens (max_len %d)", i,
                              r->len, b->o.max_len);
        if (r->n_markers < 1 || r->n_markers > K || r->qtype < 0 || r->qtype > 2)
            return layad_fail(err, 500, "cuda backend: row %d: %d markers (K %d), type %d", i,
                              r->n_markers, K, r->qtype);
        for (int t = 0; t < r->len; t++)
            if (r->ids[t] < 0 || r->ids[t] >= b->cfg.vocab)
                return layad_fail(err, 500, "cuda backend: row %d: token id %d outside the vocab",
                                  i, r->ids[t]);
        for (int m = 0; m < r->n_markers; m++)
            if (r->markers[m] < 0 || r->markers[m] >= r->len ||
                (m && r->markers[m] <= r->markers[m - 1]))
                return layad_fail(err, 500, "cuda backend: row %d: marker %d at %d is out of "
                                  "order or past len %d", i, m, r->markers[m], r->len);
    }
    return 0;
}

int cuda_backend_forward_mode(laya_backend *base, const laya_row *rows, int n, int K,
                              float *logits, float *act, int use_graph, layad_error *err)
{
    cuda_backend *b = (cuda_backend *)base;
    b->base.last = (laya_fwd_timing){0};
    if (check_rows(b, rows, n, K, err))
        return -1;
    CU(cudaSetDevice(b->dev));
    for (int s = 0; s < n;) { /* one pack when the scheduler cut the batch */
        const int c = batch_take(&b->policy, rows + s, n - s);
        if (c < 1)
            return layad_fail(err, 500, "cuda backend: row %d does not fit a pack", s);
        if (cuda_run_pack(b, rows + s, c, K, logits + (size_t)s * K, act + (size_t)s * LAYA_N_ACT,
                          use_graph, err))
            return -1;
        s += c;
    }
    return 0;
}

static int cuda_forward(laya_backend *base, const laya_row *rows, int n, int K, float *logits,
                        float *act, layad_error *err)
{
    cuda_backend *b = (cuda_backend *)base;
    return cuda_backend_forward_mode(base, rows, n, K, logits, act, b->o.use_graphs, err);
}

static void cuda_destroy(laya_backend *base)
{
    cuda_backend *b = (cuda_backend *)base;
    if (!b)
        return;
    cudaSetDevice(b->dev);
    cuda_graphs_destroy(b);
    if (b->gemm)
        kn_gemm_ctx_destroy(b->gemm);
    if (b->pin_in)
        cudaFreeHost(b->pin_in);
    if (b->pin_out)
        cudaFreeHost(b->pin_out);
    if (b->aarena)
        cudaFree(b->aarena);
    if (b->warena)
        cudaFree(b->warena);
    for (int i = 0; i < 4; i++)
        if (b->ev[i])
            cudaEventDestroy(b->ev[i]);
    if (b->ks.s)
        cudaStreamDestroy(b->ks.s);
    free(b);
}

static const laya_backend_ops cuda_ops = {"cuda", cuda_forward, cuda_destroy, cuda_idle};

static int check_geometry(const laya_config *c, const cuda_backend_opts *o, layad_error *err)
{
    if (c->hidden % KN_HEAD_DIM || c->n_heads * KN_HEAD_DIM != c->hidden)
        return layad_fail(err, 500, "cuda backend: hidden %d / %d heads is not head_dim 64",
                          c->hidden, c->n_heads);
    if (c->head_layers < 1 || c->head_layers > LAYA_MAX_HEAD_LAYERS)
        return layad_fail(err, 500, "cuda backend: %d head layers", c->head_layers);
    if (c->n_act != LAYA_N_ACT)
        return layad_fail(err, 500, "cuda backend: act head width %d, expected %d", c->n_act,
                          LAYA_N_ACT);
    const int ndev = cuda_device_count();
    if (ndev == 0)
        return layad_fail(err, 500, "cuda backend: no CUDA device visible (driver missing, or "
                                    "CUDA_VISIBLE_DEVICES empty)");
    if (o->device < 0 || o->device >= ndev)
        return layad_fail(err, 500, "cuda backend: device %d does not exist (%d visible)",
                          o->device, ndev);
    return 0;
}

/* Geometry, dtypes and the pack policy from the checkpoint and the options. */
static int configure(cuda_backend *b, const laya_checkpoint *ck, const cuda_backend_opts *o,
                     layad_error *err)
{
    const laya_config *c = &ck->cfg;
    b->base.ops = &cuda_ops;
    b->cfg = *c;
    b->o = *o;
    b->o.n_warm = o->n_warm > CUDA_MAX_WARM ? CUDA_MAX_WARM : o->n_warm;
    if (b->o.n_warm > 0 && o->warm)
        memcpy(b->warm, o->warm, (size_t)b->o.n_warm * sizeof *b->warm);
    b->o.warm = b->warm;
    b->o.tuning_cache = NULL; /* the caller's string is only read during create */
    b->dev = o->device;
    b->ks.pdl = o->pdl;
    b->dt = o->dtype == CUDA_DT_BF16 ? KN_BF16 : KN_F16;
    b->br_dt = o->branch16 ? b->dt : KN_F32;
    b->acc = o->residual_epilogue && !o->branch16;
    /* the token embeddings as stored (16-bit): a lookup is exact there, as in PyTorch,
     * whose autocast never casts an embedding table */
    b->emb_dt = ck->w.tok_emb->dtype == ST_BF16 ? KN_BF16 : ck->w.tok_emb->dtype == ST_F16 ? KN_F16 : b->dt;
    b->tail_dt = ck->w.sc1_w->dtype == ST_BF16 ? KN_BF16
                 : ck->w.sc1_w->dtype == ST_F16 ? KN_F16 : b->dt;
    b->D = c->hidden;
    b->F = c->intermediate;
    b->H = c->n_heads;
    b->Dh4 = (int)ck->w.head[0].l1_w->shape[0];
    b->n_layers = c->n_layers;
    b->n_head_layers = c->head_layers;
    b->window = c->local_attention / 2;
    if (b->o.max_len <= 0 || b->o.max_len > c->max_position)
        b->o.max_len = b->o.max_len <= 0 ? c->max_len : c->max_position;
    if (b->o.max_batch_rows < 1)
        b->o.max_batch_rows = 64;
    if (b->o.path_rounds < 1 || b->o.path_rounds > CUDA_PATH_ROUNDS_MAX)
        b->o.path_rounds = CUDA_PATH_ROUNDS_MAX;
    if (b->o.path_replays < 1)
        b->o.path_replays = CUDA_PATH_REPLAYS;
    if (b->o.max_tokens <= 0)
        b->o.max_tokens = b->o.max_batch_rows * b->o.max_len;
    if (b->o.max_tokens < b->o.max_len)
        b->o.max_tokens = b->o.max_len;
    if (batch_policy_init(&b->policy, b->o.max_tokens, b->o.max_batch_rows, 0, err))
        return -1;
    b->Rmax = b->o.max_batch_rows;
    b->Tmax = b->policy.bucket[b->policy.n_buckets - 1];
    for (int i = 0; i < b->policy.n_buckets; i++) /* warm-up may time others */
        b->path[i] = (unsigned char)cuda_path_fixed(&b->o, b->policy.bucket[i]);
    return 0;
}

/* Device, weights, arenas and the GEMM context with its tuning cache. */
static int open_device(cuda_backend *b, const laya_checkpoint *ck, const cuda_backend_opts *o,
                       layad_error *err)
{
    CU(cudaSetDevice(b->dev));
    CU(cudaStreamCreateWithFlags(&b->ks.s, cudaStreamNonBlocking));
    for (int i = 0; b->o.copy_timing && i < 4; i++)
        CU(cudaEventCreate(&b->ev[i]));
    const double tu = 1e3 * layad_now();
    if (cuda_upload_weights(b, ck, err))
        return -1;
    b->info.upload_ms = 1e3 * layad_now() - tu;
    if (cuda_alloc_acts(b, err))
        return -1;
    b->att_pack_tiles = kn_attention_pack_tiles(b->D);
    b->att_wo_tiles = b->D % 128 == 0 ? kn_attention_wo_tiles(b->D) : 0;
    if (b->att_pack_tiles < 0 || b->att_wo_tiles < 0)
        return layad_fail(err, 500, "cuda backend: attention forms: %s", kn_cuda_last_error());
    b->att_wo_max = cuda_att_wo_max(b);
    b->gemm = kn_gemm_ctx_create(0, 8192); /* ~8 plans per bucket, ~50 buckets */
    if (!b->gemm)
        return layad_fail(err, 500, "cuda backend: cuBLASLt context: %s", kn_cuda_last_error());
    kn_gemm_ctx_set_tuning(b->gemm, b->o.gemm_tune);
    if (o->tuning_cache && b->o.gemm_tune) {
        const int n = kn_gemm_ctx_load_tuning(b->gemm, o->tuning_cache, b->info.tuning_warning,
                                              sizeof b->info.tuning_warning);
        b->info.tuning_loaded = n > 0 ? n : 0;
    }
    return 0;
}

laya_backend *cuda_backend_create(const laya_checkpoint *ck, const cuda_backend_opts *o,
                                  layad_error *err)
{
    const double t0 = 1e3 * layad_now();
    if (check_geometry(&ck->cfg, o, err))
        return NULL;
    cuda_backend *b = calloc(1, sizeof *b);
    if (!b) {
        layad_fail(err, 500, "cuda backend: out of memory");
        return NULL;
    }
    if (configure(b, ck, o, err) || open_device(b, ck, o, err))
        goto fail;
    b->info.init_ms = 1e3 * layad_now() - t0;
    if (cuda_warm_up(b, err))
        goto fail;
    /* Shapes met from now on run at once with the heuristic's algorithm: no
     * request waits for tuning. */
    kn_gemm_ctx_set_tuning(b->gemm, 0);
    if (o->tuning_cache && b->o.gemm_tune) {
        char warn[256] = "";
        if (kn_gemm_ctx_save_tuning(b->gemm, o->tuning_cache, warn, sizeof warn) && warn[0])
            snprintf(b->info.tuning_warning, sizeof b->info.tuning_warning, "%s", warn);
    }
    b->st.graph_misses = 0; /* warm-up runs are not requests' misses or hits */
    b->st.graph_hits = 0;
    b->st.forwards = 0;
    return &b->base;
fail:
    cuda_destroy(&b->base);
    return NULL;
}

void cuda_backend_stats_get(laya_backend *base, cuda_backend_stats *s)
{
    cuda_backend *b = (cuda_backend *)base;
    s->forwards = __atomic_load_n(&b->st.forwards, __ATOMIC_RELAXED);
    s->graph_hits = __atomic_load_n(&b->st.graph_hits, __ATOMIC_RELAXED);
    s->graph_misses = __atomic_load_n(&b->st.graph_misses, __ATOMIC_RELAXED);
    s->late_captures = __atomic_load_n(&b->st.late_captures, __ATOMIC_RELAXED);
    s->att_pack_runs = __atomic_load_n(&b->st.att_pack_runs, __ATOMIC_RELAXED);
    s->graphs_cached = __atomic_load_n(&b->st.graphs_cached, __ATOMIC_RELAXED);
    s->rows = __atomic_load_n(&b->st.rows, __ATOMIC_RELAXED);
    s->tokens = __atomic_load_n(&b->st.tokens, __ATOMIC_RELAXED);
    s->padded_tokens = __atomic_load_n(&b->st.padded_tokens, __ATOMIC_RELAXED);
}

int cuda_backend_info_get(laya_backend *base, cuda_backend_info *info, layad_error *err)
{
    cuda_backend *b = (cuda_backend *)base;
    *info = b->info;
    info->device = b->dev;
    info->dtype = b->o.dtype;
    info->weight_bytes = b->wbytes;
    info->act_bytes = b->abytes;
    info->workspace_bytes = kn_gemm_ctx_workspace_bytes(b->gemm);
    info->pinned_bytes = b->pin_bytes;
    info->max_batch_rows = b->Rmax;
    info->max_tokens = b->o.max_tokens;
    info->max_len = b->o.max_len;
    info->n_buckets = b->policy.n_buckets;
    struct cudaDeviceProp p;
    CU(cudaGetDeviceProperties(&p, b->dev));
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->sm_major = p.major;
    info->sm_minor = p.minor;
    info->sm_count = p.multiProcessorCount;
    CU(cudaDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, b->dev));
    /* cudaMemGetInfo reports the current device: set it on this thread first */
    CU(cudaSetDevice(b->dev));
    CU(cudaMemGetInfo(&info->mem_free, &info->mem_total));
    return 0;
}

int cuda_backend_capacity(laya_backend *base, long tokens, int rows)
{
    return batch_capacity(&((cuda_backend *)base)->policy, tokens, rows);
}
