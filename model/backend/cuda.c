/*
 * backend_cuda.c - the GPU forward over the kernels of kernels/cuda.h
 * (contract in backend_cuda.h).
 *
 * Layout of one forward, for a bucket of R rows x T tokens x S marker slots
 * (M = R*T token rows; G = R + R*S gathered rows: R CLS rows, then the
 * marker rows):
 *
 *   H2D  ids, pos, lens, qtype, gather positions, marker mask (one copy)
 *   enc  res = LN(E[ids]) (fp32)               xn = 16-bit copy for layer 0
 *        per layer: qkv = xn Wqkv; RoPE; attention (global / |i-j|<=64)
 *                   o = att Wo; res += o; xn = LN_mlp(res)
 *                   u = xn Wi; g = GeGLU(u); o = g Wo2
 *                   res += o; xn = LN_attn(next)(res)   (fused in one kernel)
 *        res = LN_final(res) (fp32, in place); res += type_emb[qtype]
 *   head layers 0..n-2 over all M rows (biased LN, in_proj with bias, full
 *        attention, ReLU FFN), residual fp32;
 *   last head layer: K/V over all M rows, but queries, out_proj, LN2 and the
 *        FFN only over the G CLS + marker rows (exact; performance.md);
 *   tail (fp32): scorer LN -> Linear(GELU) -> d->1 on the marker rows,
 *        confidence features, act head on the CLS rows.
 *   D2H  logits [R*S], act [R*2] (one copy), then the only synchronization.
 *
 * The residual-branch projections (o) write fp32 for the fp32 residual add by
 * default (measured ~25% lower logit error than 16-bit o, 1-2% slower;
 * branch16 writes the serving dtype, what bf16 autocast does upstream); the
 * residual itself, every LayerNorm and every softmax stay fp32. The head layers'
 * biases are stored in the serving dtype: cuBLASLt applies a bias in the
 * output's dtype, so an fp32 copy would only cost a conversion launch per
 * GEMM for the same rounding. The scorer/act-head weights are kept in the
 * checkpoint's own 16-bit dtype (exact) even when the encoder serves in bf16,
 * since that tail runs on fp32 activations (fp32 biases, CUDA-core GEMMs).
 *
 * Graphs: one cudaGraphExec per bucket shape, captured after the bucket's
 * GEMM plans were prepared (so capture never queries heuristics; with
 * gemm_tune the preparation launches each cuBLASLt GEMM once to time its
 * candidates), kept in an LRU. Eager mode enqueues the very same sequence on
 * the stream, so graph replay and eager launches compute bit-identical
 * outputs. Our kernels are launched with programmatic dependent launch
 * (kernels/cuda_util.cuh), which changes when they are scheduled, not what
 * they compute.
 */
#include "model/backend/cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- parts that need no CUDA ------------------------------------------------ */

void cuda_backend_opts_default(cuda_backend_opts *o)
{
    memset(o, 0, sizeof *o);
    o->device = 0;
    o->dtype = CUDA_DT_FP16;
    o->max_batch_rows = 64;
    o->max_len = 0;
    o->max_k = 0;
    o->graph_cache = 32;
    o->use_graphs = 1;
    o->gemm_tune = 1;
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

int cuda_bucket_rows(int n)
{
    int r = 1;
    while (r < n)
        r *= 2;
    return r;
}

int cuda_bucket_tokens(int len)
{
    if (len < 1)
        len = 1;
    if (len <= 256)
        return (len + 15) / 16 * 16;
    return (len + 63) / 64 * 64;
}

/* Marker slots: a power of two >= 8, so one graph serves every K <= 8. */
static int bucket_slots(int K)
{
    int s = 8;
    while (s < K)
        s *= 2;
    return s;
}

cuda_bucket cuda_bucket_for(int n, int max_len, int K)
{
    cuda_bucket b = {cuda_bucket_rows(n), cuda_bucket_tokens(max_len), bucket_slots(K)};
    return b;
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
            return layad_fail(err, 400, "warm-up list: expected ROWSxTOKENS at '%s'", p);
        p = end + 1;
        long t = strtol(p, &end, 10);
        if (end == p || r < 1 || t < 1 || r > 1 << 20 || t > 1 << 20)
            return layad_fail(err, 400, "warm-up list: bad shape near '%s'", p);
        if (n == cap)
            return layad_fail(err, 400, "warm-up list: more than %d shapes", cap);
        out[n++] = (cuda_bucket){(int)r, (int)t, 0};
        p = end;
        if (*p && *p != ',' && *p != ' ')
            return layad_fail(err, 400, "warm-up list: unexpected '%c'", *p);
    }
    return n;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#if !LAYAD_CUDA

int cuda_device_count(void)
{
    return 0;
}

laya_backend *cuda_backend_create(const laya_checkpoint *ck, const cuda_backend_opts *o,
                                  layad_error *err)
{
    (void)ck;
    (void)o;
    (void)now_ms;
    layad_fail(err, 500, "cuda backend: this layad was built without CUDA (nvcc was not found "
                         "at build time); use the CPU backend (--device cpu)");
    return NULL;
}

void cuda_backend_set_pdl(int on) { (void)on; }

int cuda_backend_forward_mode(laya_backend *b, const laya_row *rows, int n, int K,
                              float *logits, float *act, int use_graph, layad_error *err)
{
    (void)b, (void)rows, (void)n, (void)K, (void)logits, (void)act, (void)use_graph;
    return layad_fail(err, 500, "cuda backend: built without CUDA");
}

void cuda_backend_stats_get(laya_backend *b, cuda_backend_stats *s)
{
    (void)b;
    memset(s, 0, sizeof *s);
}

int cuda_backend_info_get(laya_backend *b, cuda_backend_info *info, layad_error *err)
{
    (void)b;
    memset(info, 0, sizeof *info);
    return layad_fail(err, 500, "cuda backend: built without CUDA");
}

#else /* LAYAD_CUDA */

#include <cuda_runtime.h>

#include "kernels/cuda.h"

#define ALIGN 256

#define CU(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess)                                                          \
            return layad_fail(err, 500, "cuda backend: %s:%d: %s: %s", __FILE__,        \
                              __LINE__, #call, cudaGetErrorString(e_));                 \
    } while (0)

/* A kernels/ launcher failed: its own message says which statement. */
#define KN(call)                                                                        \
    do {                                                                                \
        if ((call) != 0)                                                                \
            return layad_fail(err, 500, "cuda backend: %s:%d: %s: %s", __FILE__,        \
                              __LINE__, #call, kn_cuda_last_error());                   \
    } while (0)

typedef struct dev_layer {
    const float *attn_norm; /* NULL on layer 0 */
    const void *wqkv, *wo, *wi, *wo2;
    const float *mlp_norm;
} dev_layer;

typedef struct dev_head_layer {
    const void *in_w, *out_w, *l1_w, *l2_w;
    const void *in_b, *l1_b;  /* serving dtype, out_b/l2_b: branch dtype; cuBLASLt takes */
    const void *out_b, *l2_b; /* the bias in the output's dtype: no per-call conversion */
    const float *n1_w, *n1_b, *n2_w, *n2_b;
} dev_head_layer;

typedef struct dev_weights {
    const void *tok_emb;
    const float *emb_norm, *final_norm, *type_emb;
    dev_layer enc[LAYA_MAX_LAYERS];
    dev_head_layer head[LAYA_MAX_HEAD_LAYERS];
    const float *sc0_w, *sc0_b, *sc1_b, *sc3_w, *sc3_b, *act0_b, *act2_b;
    const void *sc1_w, *act0_w, *act2_w; /* tail_dt */
} dev_weights;

/* Device activation buffers, sized for the largest bucket. */
typedef struct dev_acts {
    float *res;          /* [M, D] fp32 residual stream */
    void *xn;            /* [M, D] normalized GEMM input */
    void *qkv;           /* [M, 3D] */
    void *att;           /* [M, D] */
    void *o;             /* [M, D] projection outputs */
    void *u;             /* [M, max(2F, 4D)] Wi output / head FFN hidden */
    void *g;             /* [M, F] GeGLU output */
    float *hg;           /* [G, D] fp32 residual of the gathered rows */
    void *attg, *og, *xg, *f2g; /* [G, D] */
    void *fg;            /* [G, 4D] */
    float *sn, *s1;      /* [G, D] fp32 scorer LN / scorer hidden */
    float *feats;        /* [R, 4] */
    float *actin;        /* [R, D + 4] */
    float *a1;           /* [R, 256] */
    float *cos_g, *sin_g, *cos_l, *sin_l; /* [Tmax, 32] */
    void *in;            /* device copy of the staged inputs */
    void *out;           /* logits [R*S] then act [R*2] */
} dev_acts;

/* Offsets of the staged inputs and outputs for one bucket shape (bytes).
 * Gathered rows are [R, 1 + S]: slot 0 is the CLS row, slots 1..S the markers;
 * sel holds their positions within the row, mask is 0 for CLS and dead slots. */
typedef struct stage_layout {
    size_t ids, pos, lens, qtype, sel, mask, in_bytes;
    size_t logits, act, out_bytes;
} stage_layout;

typedef struct graph_entry {
    cuda_bucket key;
    cudaGraphExec_t exec;
    unsigned long long last_used;
    int used;
} graph_entry;

typedef struct cuda_backend {
    laya_backend base;
    laya_config cfg;
    cuda_backend_opts o;
    cuda_bucket warm[CUDA_MAX_WARM];
    int dev;
    kn_dtype dt;      /* encoder / head-layer weights and 16-bit activations */
    kn_dtype tail_dt; /* scorer / act-head weights */
    kn_dtype br_dt;   /* residual-branch projection outputs: fp32, or dt with branch16 */
    int D, F, H, Dh4, n_layers, n_head_layers, window;
    int Rmax, Tmax, Smax;
    cudaStream_t stream;
    kn_gemm_ctx *gemm;
    int prepare_only; /* 1: gemm() prepares plans, nothing is launched */
    void *warena;
    size_t wbytes;
    dev_weights w;
    void *aarena;
    size_t abytes;
    dev_acts a;
    unsigned char *pin_in, *pin_out; /* pinned staging, largest bucket */
    size_t pin_bytes;
    graph_entry *graphs;
    unsigned long long tick;
    int *order;       /* sort scratch */
    int order_cap;
    cuda_backend_stats st;
    cuda_backend_info info;
} cuda_backend;

static const laya_backend_ops cuda_ops;

void cuda_backend_set_pdl(int on) { kn_set_pdl(on); }

int cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

static size_t align_up(size_t x)
{
    return (x + ALIGN - 1) / ALIGN * ALIGN;
}

static stage_layout layout_for(int R, int T, int S)
{
    stage_layout l;
    size_t off = 0;
    const size_t M = (size_t)R * T, G = (size_t)R * (1 + (size_t)S);
    l.ids = off, off = align_up(off + M * 4);
    l.pos = off, off = align_up(off + M * 4);
    l.lens = off, off = align_up(off + (size_t)R * 4);
    l.qtype = off, off = align_up(off + (size_t)R * 4);
    l.sel = off, off = align_up(off + G * 4);
    l.mask = off, off = align_up(off + G);
    l.in_bytes = off;
    l.logits = 0;
    l.act = align_up(G * 4);
    l.out_bytes = l.act + (size_t)R * LAYA_N_ACT * 4;
    return l;
}

/* ---- weight upload ------------------------------------------------------------ */

typedef struct upload_item {
    const st_tensor *t;
    kn_dtype want;
    const void **dst;
    size_t off, bytes;
} upload_item;

typedef struct upload_plan {
    upload_item items[LAYA_MAX_LAYERS * 8 + LAYA_MAX_HEAD_LAYERS * 16 + 32];
    int n;
    size_t total, max_convert;
} upload_plan;

static kn_dtype st_to_kn(st_dtype d)
{
    return d == ST_F16 ? KN_F16 : d == ST_BF16 ? KN_BF16 : KN_F32;
}

static void plan_add(upload_plan *p, const st_tensor *t, kn_dtype want, const void **dst)
{
    upload_item *it = &p->items[p->n++];
    it->t = t;
    it->want = want;
    it->dst = dst;
    it->bytes = (size_t)t->numel * kn_dtype_size(want);
    it->off = p->total;
    p->total = align_up(p->total + it->bytes);
    if (st_to_kn(t->dtype) != want && t->nbytes > p->max_convert)
        p->max_convert = t->nbytes;
}

static void plan_weights(cuda_backend *b, const laya_weights *w, upload_plan *p)
{
    dev_weights *d = &b->w;
    const kn_dtype dt = b->dt, f32 = KN_F32;
    memset(p, 0, sizeof *p);
    plan_add(p, w->tok_emb, dt, &d->tok_emb);
    plan_add(p, w->emb_norm, f32, (const void **)&d->emb_norm);
    plan_add(p, w->final_norm, f32, (const void **)&d->final_norm);
    plan_add(p, w->type_emb, f32, (const void **)&d->type_emb);
    for (int i = 0; i < b->n_layers; i++) {
        const laya_enc_layer *l = &w->enc[i];
        dev_layer *dl = &d->enc[i];
        if (l->attn_norm)
            plan_add(p, l->attn_norm, f32, (const void **)&dl->attn_norm);
        plan_add(p, l->wqkv, dt, &dl->wqkv);
        plan_add(p, l->wo, dt, &dl->wo);
        plan_add(p, l->mlp_norm, f32, (const void **)&dl->mlp_norm);
        plan_add(p, l->wi, dt, &dl->wi);
        plan_add(p, l->mlp_wo, dt, &dl->wo2);
    }
    for (int j = 0; j < b->n_head_layers; j++) {
        const laya_head_layer *l = &w->head[j];
        dev_head_layer *dl = &d->head[j];
        plan_add(p, l->in_w, dt, &dl->in_w);
        plan_add(p, l->in_b, dt, &dl->in_b);
        plan_add(p, l->out_w, dt, &dl->out_w);
        plan_add(p, l->out_b, b->br_dt, &dl->out_b);
        plan_add(p, l->l1_w, dt, &dl->l1_w);
        plan_add(p, l->l1_b, dt, &dl->l1_b);
        plan_add(p, l->l2_w, dt, &dl->l2_w);
        plan_add(p, l->l2_b, b->br_dt, &dl->l2_b);
        plan_add(p, l->n1_w, f32, (const void **)&dl->n1_w);
        plan_add(p, l->n1_b, f32, (const void **)&dl->n1_b);
        plan_add(p, l->n2_w, f32, (const void **)&dl->n2_w);
        plan_add(p, l->n2_b, f32, (const void **)&dl->n2_b);
    }
    plan_add(p, w->sc0_w, f32, (const void **)&d->sc0_w);
    plan_add(p, w->sc0_b, f32, (const void **)&d->sc0_b);
    plan_add(p, w->sc1_w, b->tail_dt, &d->sc1_w);
    plan_add(p, w->sc1_b, f32, (const void **)&d->sc1_b);
    plan_add(p, w->sc3_w, f32, (const void **)&d->sc3_w);
    plan_add(p, w->sc3_b, f32, (const void **)&d->sc3_b);
    plan_add(p, w->act0_w, b->tail_dt, &d->act0_w);
    plan_add(p, w->act0_b, f32, (const void **)&d->act0_b);
    plan_add(p, w->act2_w, b->tail_dt, &d->act2_w);
    plan_add(p, w->act2_b, f32, (const void **)&d->act2_b);
}

/* One arena; tensors already in the wanted dtype are copied straight from the
 * map, the others through a device scratch buffer and kn_convert. */
static int upload_weights(cuda_backend *b, const laya_checkpoint *ck, layad_error *err)
{
    upload_plan *p = malloc(sizeof *p);
    if (!p)
        return layad_fail(err, 500, "cuda backend: out of memory");
    plan_weights(b, &ck->w, p);
    void *scratch = NULL;
    int rc = -1;
    if (cudaMalloc(&b->warena, p->total) != cudaSuccess) {
        (void)cudaGetLastError();
        layad_fail(err, 500, "cuda backend: cannot allocate %zu bytes of weights on device %d",
                   p->total, b->dev);
        goto out;
    }
    b->wbytes = p->total;
    if (p->max_convert && cudaMalloc(&scratch, p->max_convert) != cudaSuccess) {
        (void)cudaGetLastError();
        layad_fail(err, 500, "cuda backend: cannot allocate %zu bytes of upload scratch",
                   p->max_convert);
        goto out;
    }
    for (int i = 0; i < p->n; i++) {
        upload_item *it = &p->items[i];
        void *dst = (char *)b->warena + it->off;
        kn_dtype have = st_to_kn(it->t->dtype);
        cudaError_t e;
        if (have == it->want) {
            e = cudaMemcpyAsync(dst, it->t->data, it->t->nbytes, cudaMemcpyHostToDevice, b->stream);
        } else {
            e = cudaMemcpyAsync(scratch, it->t->data, it->t->nbytes, cudaMemcpyHostToDevice,
                                b->stream);
            if (e == cudaSuccess &&
                kn_convert(b->stream, scratch, have, dst, it->want, (size_t)it->t->numel)) {
                layad_fail(err, 500, "cuda backend: converting %s: %s", it->t->name,
                           kn_cuda_last_error());
                goto out;
            }
            /* the scratch is reused by the next tensor: order the copy after the convert */
        }
        if (e != cudaSuccess) {
            layad_fail(err, 500, "cuda backend: uploading %s: %s", it->t->name,
                       cudaGetErrorString(e));
            goto out;
        }
        *it->dst = dst;
    }
    if (cudaStreamSynchronize(b->stream) != cudaSuccess) {
        layad_fail(err, 500, "cuda backend: weight upload failed: %s",
                   cudaGetErrorString(cudaGetLastError()));
        goto out;
    }
    rc = 0;
out:
    if (scratch)
        cudaFree(scratch);
    free(p);
    return rc;
}

/* ---- activation arena ------------------------------------------------------------ */

static int alloc_acts(cuda_backend *b, layad_error *err)
{
    const size_t M = (size_t)b->Rmax * b->Tmax, R = (size_t)b->Rmax;
    const size_t G = R * (1 + (size_t)b->Smax), D = (size_t)b->D, es = kn_dtype_size(b->dt);
    const size_t bs = kn_dtype_size(b->br_dt);
    const size_t hid = (size_t)(2 * b->F > b->Dh4 ? 2 * b->F : b->Dh4);
    stage_layout big = layout_for(b->Rmax, b->Tmax, b->Smax);
    struct {
        void **p;
        size_t bytes;
    } parts[] = {
        {(void **)&b->a.res, M * D * 4},
        {&b->a.xn, M * D * es},
        {&b->a.qkv, M * 3 * D * es},
        {&b->a.att, M * D * es},
        {&b->a.o, M * D * bs},
        {&b->a.u, M * hid * es},
        {&b->a.g, M * (size_t)b->F * es},
        {(void **)&b->a.hg, G * D * 4},
        {&b->a.attg, G * D * es},
        {&b->a.og, G * D * bs},
        {&b->a.xg, G * D * es},
        {&b->a.f2g, G * D * bs},
        {&b->a.fg, G * (size_t)b->Dh4 * es},
        {(void **)&b->a.sn, G * D * 4},
        {(void **)&b->a.s1, G * D * 4},
        {(void **)&b->a.feats, R * 4 * 4},
        {(void **)&b->a.actin, R * (D + 4) * 4},
        {(void **)&b->a.a1, R * 256 * 4},
        {(void **)&b->a.cos_g, (size_t)b->Tmax * KN_ROPE_HALF * 4},
        {(void **)&b->a.sin_g, (size_t)b->Tmax * KN_ROPE_HALF * 4},
        {(void **)&b->a.cos_l, (size_t)b->Tmax * KN_ROPE_HALF * 4},
        {(void **)&b->a.sin_l, (size_t)b->Tmax * KN_ROPE_HALF * 4},
        {&b->a.in, big.in_bytes},
        {&b->a.out, big.out_bytes},
    };
    const int n = (int)(sizeof parts / sizeof parts[0]);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total = align_up(total + parts[i].bytes);
    if (cudaMalloc(&b->aarena, total) != cudaSuccess) {
        (void)cudaGetLastError();
        return layad_fail(err, 500,
                          "cuda backend: cannot allocate %zu bytes of activations for %d x %d "
                          "(lower max_batch_rows or max_len)",
                          total, b->Rmax, b->Tmax);
    }
    b->abytes = total;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        *parts[i].p = (char *)b->aarena + off;
        off = align_up(off + parts[i].bytes);
    }
    /* Poison once so that a read of never-written memory shows as NaN, not as a
     * plausible zero. */
    CU(cudaMemsetAsync(b->aarena, 0xff, total, b->stream));
    KN(kn_rope_tables_gpu(b->stream, b->a.cos_g, b->a.sin_g, b->Tmax, b->cfg.rope_theta_global));
    KN(kn_rope_tables_gpu(b->stream, b->a.cos_l, b->a.sin_l, b->Tmax, b->cfg.rope_theta_local));
    b->pin_bytes = big.in_bytes + big.out_bytes;
    CU(cudaHostAlloc((void **)&b->pin_in, big.in_bytes, cudaHostAllocDefault));
    CU(cudaHostAlloc((void **)&b->pin_out, big.out_bytes, cudaHostAllocDefault));
    CU(cudaStreamSynchronize(b->stream));
    return 0;
}

/* ---- the forward, enqueued ------------------------------------------------------ */

/* kn_gemm, or only its plan in prepare mode (same arguments, so the plan
 * prepared is the one the launch will look up). */
static int gemm(cuda_backend *b, const void *X, kn_dtype xdt, const void *W, kn_dtype wdt,
                const void *bias, kn_dtype bdt, void *Y, kn_dtype ydt, int M, int N, int K,
                int epi, layad_error *err)
{
    if (b->prepare_only) {
        if (!kn_gemm_uses_cublaslt(xdt, wdt, ydt, X, W, Y, N, K, epi))
            return 0;
        /* with tuning on, times the shape's candidates on these operands (once per shape) */
        KN(kn_gemm_prepare(b->gemm, xdt, wdt, ydt, M, N, K, epi, bias != NULL, b->stream, X, W, Y));
        return 0;
    }
    KN(kn_gemm_ex(b->gemm, b->stream, X, xdt, W, wdt, bias, bdt, Y, ydt, M, N, K, epi));
    return 0;
}

#define GEMM(...)                                                                       \
    do {                                                                                \
        if (gemm(b, __VA_ARGS__, err))                                                  \
            return -1;                                                                  \
    } while (0)

/* Non-GEMM launches are skipped in prepare mode. */
#define LAUNCH(call)                                                                    \
    do {                                                                                \
        if (!b->prepare_only)                                                           \
            KN(call);                                                                   \
    } while (0)

static int enqueue_encoder(cuda_backend *b, cuda_bucket k, const stage_layout *l,
                           layad_error *err)
{
    const int R = k.rows, T = k.tokens, M = R * T, D = b->D, F = b->F;
    const kn_dtype dt = b->dt, br = b->br_dt;
    const float eps = (float)b->cfg.norm_eps;
    dev_acts *a = &b->a;
    const int32_t *ids = (const int32_t *)((char *)a->in + l->ids);
    const int32_t *pos = (const int32_t *)((char *)a->in + l->pos);
    const int32_t *lens = (const int32_t *)((char *)a->in + l->lens);

    LAUNCH(kn_embed_layernorm(b->stream, ids, b->w.tok_emb, dt, b->cfg.vocab, b->w.emb_norm, NULL,
                              a->res, a->xn, dt, a->res, M, D, eps));
    for (int i = 0; i < b->n_layers; i++) {
        const dev_layer *L = &b->w.enc[i];
        const int global = b->cfg.layer_global[i];
        GEMM(a->xn, dt, L->wqkv, dt, NULL, dt, a->qkv, dt, M, 3 * D, D, KN_EPI_NONE);
        LAUNCH(kn_rope(b->stream, dt, a->qkv, M, D, pos, global ? a->cos_g : a->cos_l,
                       global ? a->sin_g : a->sin_l));
        LAUNCH(kn_attention(b->stream, dt, a->qkv, a->att, R, T, D, lens,
                            global ? -1 : b->window));
        GEMM(a->att, dt, L->wo, dt, NULL, dt, a->o, br, M, D, D, KN_EPI_NONE);
        LAUNCH(kn_layernorm(b->stream, a->res, a->o, br, L->mlp_norm, NULL, a->xn, dt, NULL, M, D,
                            eps));
        GEMM(a->xn, dt, L->wi, dt, NULL, dt, a->u, dt, M, 2 * F, D, KN_EPI_NONE);
        LAUNCH(kn_geglu(b->stream, dt, a->u, a->g, M, F));
        GEMM(a->g, dt, L->wo2, dt, NULL, dt, a->o, br, M, D, F, KN_EPI_NONE);
        if (i + 1 < b->n_layers)
            LAUNCH(kn_layernorm(b->stream, a->res, a->o, br, b->w.enc[i + 1].attn_norm, NULL, a->xn,
                                dt, NULL, M, D, eps));
        else /* h_enc = final_norm(res), fp32, in place */
            LAUNCH(kn_layernorm(b->stream, a->res, a->o, br, b->w.final_norm, NULL, NULL, dt,
                                a->res, M, D, eps));
    }
    return 0;
}

static int enqueue_head(cuda_backend *b, cuda_bucket k, const stage_layout *l, layad_error *err)
{
    const int R = k.rows, T = k.tokens, S = k.slots, M = R * T, D = b->D, D4 = b->Dh4;
    const int Q = 1 + S, G = R * Q; /* gathered rows per row / in all */
    const kn_dtype dt = b->dt, br = b->br_dt, f32 = KN_F32;
    const float eps = 1e-5f; /* nn.TransformerEncoderLayer / nn.LayerNorm default */
    dev_acts *a = &b->a;
    const int32_t *lens = (const int32_t *)((char *)a->in + l->lens);
    const int32_t *qtype = (const int32_t *)((char *)a->in + l->qtype);
    const int32_t *sel = (const int32_t *)((char *)a->in + l->sel);
    const uint8_t *mask = (const uint8_t *)((char *)a->in + l->mask);
    float *logits = (float *)((char *)a->out + l->logits);
    float *act = (float *)((char *)a->out + l->act);

    LAUNCH(kn_add_type_emb(b->stream, a->res, b->w.type_emb, qtype, R, T, D));
    const int nl = b->n_head_layers;
    for (int j = 0; j < nl; j++) {
        const dev_head_layer *L = &b->w.head[j];
        /* a = LN1(h), folding in the previous layer's pending FFN output */
        LAUNCH(kn_layernorm(b->stream, a->res, j ? a->o : NULL, br, L->n1_w, L->n1_b, a->xn, dt,
                            NULL, M, D, eps));
        GEMM(a->xn, dt, L->in_w, dt, L->in_b, dt, a->qkv, dt, M, 3 * D, D, KN_EPI_NONE);
        if (j + 1 < nl) {
            LAUNCH(kn_attention(b->stream, dt, a->qkv, a->att, R, T, D, lens, -1));
            GEMM(a->att, dt, L->out_w, dt, L->out_b, br, a->o, br, M, D, D, KN_EPI_NONE);
            LAUNCH(kn_layernorm(b->stream, a->res, a->o, br, L->n2_w, L->n2_b, a->xn, dt, NULL, M,
                                D, eps));
            GEMM(a->xn, dt, L->l1_w, dt, L->l1_b, dt, a->u, dt, M, D4, D, KN_EPI_RELU);
            GEMM(a->u, dt, L->l2_w, dt, L->l2_b, br, a->o, br, M, D, D4, KN_EPI_NONE);
            continue;
        }
        /* Last layer: only the CLS and marker rows go on (keys/values span all). */
        LAUNCH(kn_attention_select(b->stream, dt, a->qkv, a->attg, R, T, D, lens, -1, sel, Q));
        GEMM(a->attg, dt, L->out_w, dt, L->out_b, br, a->og, br, G, D, D, KN_EPI_NONE);
        LAUNCH(kn_gather_rows(b->stream, f32, a->res, sel, a->hg, R, T, Q, D));
        LAUNCH(kn_layernorm(b->stream, a->hg, a->og, br, L->n2_w, L->n2_b, a->xg, dt, NULL, G, D,
                            eps));
        GEMM(a->xg, dt, L->l1_w, dt, L->l1_b, dt, a->fg, dt, G, D4, D, KN_EPI_RELU);
        GEMM(a->fg, dt, L->l2_w, dt, L->l2_b, br, a->f2g, br, G, D, D4, KN_EPI_NONE);
    }
    /* Tail, fp32, over all G rows (the CLS slot's scorer output is masked to
     * -1e4, which leaves the softmax and the confidence features unchanged,
     * so slot 0 rides along instead of costing a second layout):
     * h = hg + f2g; logits = scorer(h); features; act head on h[CLS]. */
    LAUNCH(kn_layernorm(b->stream, a->hg, a->f2g, br, b->w.sc0_w, b->w.sc0_b, NULL, dt, a->sn, G,
                        D, eps));
    GEMM(a->sn, f32, b->w.sc1_w, b->tail_dt, b->w.sc1_b, f32, a->s1, f32, G, D, D, KN_EPI_GELU);
    LAUNCH(kn_scorer_tail(b->stream, a->s1, f32, b->w.sc3_w, b->w.sc3_b, mask, logits, G, D));
    LAUNCH(kn_conf_features(b->stream, logits, mask, a->feats, R, Q));
    LAUNCH(kn_act_input(b->stream, a->hg, a->feats, a->actin, f32, R, Q, D));
    GEMM(a->actin, f32, b->w.act0_w, b->tail_dt, b->w.act0_b, f32, a->a1, f32, R, 256, D + 4,
         KN_EPI_GELU);
    GEMM(a->a1, f32, b->w.act2_w, b->tail_dt, b->w.act2_b, f32, act, f32, R, LAYA_N_ACT, 256,
         KN_EPI_NONE);
    return 0;
}

/* The whole bucket: inputs in, forward, outputs out (no synchronization). */
static int enqueue(cuda_backend *b, cuda_bucket k, layad_error *err)
{
    stage_layout l = layout_for(k.rows, k.tokens, k.slots);
    if (!b->prepare_only)
        CU(cudaMemcpyAsync(b->a.in, b->pin_in, l.in_bytes, cudaMemcpyHostToDevice, b->stream));
    if (enqueue_encoder(b, k, &l, err) || enqueue_head(b, k, &l, err))
        return -1;
    if (!b->prepare_only)
        CU(cudaMemcpyAsync(b->pin_out, b->a.out, l.out_bytes, cudaMemcpyDeviceToHost, b->stream));
    return 0;
}

static int prepare(cuda_backend *b, cuda_bucket k, layad_error *err)
{
    b->prepare_only = 1;
    int rc = enqueue(b, k, err);
    b->prepare_only = 0;
    return rc;
}

/* ---- staging ------------------------------------------------------------------- */

/* Fills the pinned inputs for rows[order[0..n)] in bucket k; rows past n are
 * padding (length 0, one dead marker at position 0). */
static void stage_inputs(cuda_backend *b, cuda_bucket k, const laya_row *rows, const int *order,
                         int n)
{
    stage_layout l = layout_for(k.rows, k.tokens, k.slots);
    const int R = k.rows, T = k.tokens, S = k.slots;
    int32_t *ids = (int32_t *)(b->pin_in + l.ids), *pos = (int32_t *)(b->pin_in + l.pos);
    int32_t *lens = (int32_t *)(b->pin_in + l.lens), *qt = (int32_t *)(b->pin_in + l.qtype);
    int32_t *sel = (int32_t *)(b->pin_in + l.sel);
    uint8_t *mask = b->pin_in + l.mask;
    for (int r = 0; r < R; r++) {
        const laya_row *row = r < n ? &rows[order[r]] : NULL;
        const int len = row ? row->len : 0, nm = row ? row->n_markers : 0;
        int32_t *ri = ids + (size_t)r * T, *rp = pos + (size_t)r * T;
        if (len)
            memcpy(ri, row->ids, (size_t)len * sizeof *ri);
        for (int t = len; t < T; t++)
            ri[t] = b->cfg.pad_id;
        for (int t = 0; t < T; t++)
            rp[t] = t;
        lens[r] = len;
        qt[r] = row ? row->qtype : 0;
        sel[r * (S + 1)] = 0; /* CLS */
        mask[r * (S + 1)] = 0;
        for (int s = 0; s < S; s++) {
            sel[r * (S + 1) + 1 + s] = s < nm ? row->markers[s] : 0;
            mask[r * (S + 1) + 1 + s] = s < nm;
        }
    }
}

/* ---- graphs ------------------------------------------------------------------- */

static int same_bucket(cuda_bucket x, cuda_bucket y)
{
    return x.rows == y.rows && x.tokens == y.tokens && x.slots == y.slots;
}

static graph_entry *graph_find(cuda_backend *b, cuda_bucket k)
{
    for (int i = 0; i < b->o.graph_cache; i++)
        if (b->graphs[i].used && same_bucket(b->graphs[i].key, k))
            return &b->graphs[i];
    return NULL;
}

/* Captures bucket k (plans prepared first) into a free or the least recently
 * used slot. */
static graph_entry *graph_capture(cuda_backend *b, cuda_bucket k, layad_error *err)
{
    if (prepare(b, k, err))
        return NULL;
    graph_entry *slot = NULL;
    for (int i = 0; i < b->o.graph_cache; i++) {
        graph_entry *g = &b->graphs[i];
        if (!g->used) {
            slot = g;
            break;
        }
        if (!slot || g->last_used < slot->last_used)
            slot = g;
    }
    if (slot->used) {
        cudaGraphExecDestroy(slot->exec);
        slot->used = 0;
        __atomic_fetch_add(&b->st.graph_evictions, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub(&b->st.graphs_cached, 1, __ATOMIC_RELAXED);
    }
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        layad_fail(err, 500, "cuda backend: begin capture: %s", cudaGetErrorString(e));
        return NULL;
    }
    int rc = enqueue(b, k, err);
    e = cudaStreamEndCapture(b->stream, &graph);
    if (rc)
        goto fail;
    if (e != cudaSuccess) {
        layad_fail(err, 500, "cuda backend: end capture: %s", cudaGetErrorString(e));
        goto fail;
    }
    e = cudaGraphInstantiate(&slot->exec, graph, 0);
    cudaGraphDestroy(graph);
    graph = NULL;
    if (e != cudaSuccess) {
        layad_fail(err, 500, "cuda backend: instantiate %dx%dx%d: %s", k.rows, k.tokens, k.slots,
                   cudaGetErrorString(e));
        goto fail;
    }
    slot->used = 1;
    slot->key = k;
    slot->last_used = ++b->tick;
    __atomic_fetch_add(&b->st.graphs_cached, 1, __ATOMIC_RELAXED);
    return slot;
fail:
    if (graph)
        cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return NULL;
}

/* Runs bucket k on the staged inputs and waits for the outputs in pin_out. */
static int run_bucket(cuda_backend *b, cuda_bucket k, int use_graph, layad_error *err)
{
    if (use_graph) {
        graph_entry *g = graph_find(b, k);
        if (g) {
            __atomic_fetch_add(&b->st.graph_hits, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_fetch_add(&b->st.graph_misses, 1, __ATOMIC_RELAXED);
            if (!(g = graph_capture(b, k, err)))
                return -1;
        }
        g->last_used = ++b->tick;
        CU(cudaGraphLaunch(g->exec, b->stream));
    } else if (enqueue(b, k, err)) {
        return -1;
    }
    CU(cudaStreamSynchronize(b->stream));
    __atomic_fetch_add(&b->st.forwards, 1, __ATOMIC_RELAXED);
    return 0;
}

/* ---- forward ------------------------------------------------------------------ */

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
        if (r->n_markers < 1 || r->n_markers > K || r->n_markers > b->Smax || r->qtype < 0 ||
            r->qtype > 2)
            return layad_fail(err, 500, "cuda backend: row %d: %d markers (K %d, max_k %d), type %d",
                              i, r->n_markers, K, b->Smax, r->qtype);
        for (int t = 0; t < r->len; t++)
            if (r->ids[t] < 0 || r->ids[t] >= b->cfg.vocab)
                return layad_fail(err, 500, "cuda backend: row %d: token id %d outside the vocab",
                                  i, r->ids[t]);
        for (int m = 0; m < r->n_markers; m++)
            if (r->markers[m] < 0 || r->markers[m] >= r->len)
                return layad_fail(err, 500, "cuda backend: row %d: marker %d at %d >= len %d", i,
                                  m, r->markers[m], r->len);
    }
    return 0;
}

/* Insertion sort of row indices by length (stable, n small per window). */
static void sort_by_len(const laya_row *rows, int *order, int n)
{
    for (int i = 0; i < n; i++) {
        int v = order[i], j = i;
        while (j > 0 && rows[order[j - 1]].len > rows[v].len) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
}

int cuda_backend_forward_mode(laya_backend *base, const laya_row *rows, int n, int K,
                              float *logits, float *act, int use_graph, layad_error *err)
{
    cuda_backend *b = (cuda_backend *)base;
    if (check_rows(b, rows, n, K, err))
        return -1;
    CU(cudaSetDevice(b->dev));
    for (int w0 = 0; w0 < n; w0 += b->order_cap) {
        const int wn = n - w0 < b->order_cap ? n - w0 : b->order_cap;
        for (int i = 0; i < wn; i++)
            b->order[i] = w0 + i;
        sort_by_len(rows, b->order, wn);
        for (int c0 = 0; c0 < wn; c0 += b->Rmax) {
            const int cn = wn - c0 < b->Rmax ? wn - c0 : b->Rmax;
            const int *ord = b->order + c0;
            int maxlen = 0, maxk = 1;
            long toks = 0;
            for (int i = 0; i < cn; i++) {
                const laya_row *r = &rows[ord[i]];
                maxlen = r->len > maxlen ? r->len : maxlen;
                maxk = r->n_markers > maxk ? r->n_markers : maxk;
                toks += r->len;
            }
            cuda_bucket k = cuda_bucket_for(cn, maxlen, maxk);
            if (k.tokens > b->Tmax)
                k.tokens = b->Tmax;
            stage_inputs(b, k, rows, ord, cn);
            if (run_bucket(b, k, use_graph, err))
                return -1;
            stage_layout l = layout_for(k.rows, k.tokens, k.slots);
            const float *lg = (const float *)(b->pin_out + l.logits);
            const float *ac = (const float *)(b->pin_out + l.act);
            for (int i = 0; i < cn; i++) {
                const int r = ord[i];
                for (int s = 0; s < K; s++)
                    logits[(size_t)r * K + s] =
                        s < rows[r].n_markers ? lg[(size_t)i * (k.slots + 1) + 1 + s]
                                              : LAYA_MASK_FILL;
                for (int q = 0; q < LAYA_N_ACT; q++)
                    act[(size_t)r * LAYA_N_ACT + q] = ac[i * LAYA_N_ACT + q];
            }
            __atomic_fetch_add(&b->st.rows, cn, __ATOMIC_RELAXED);
            __atomic_fetch_add(&b->st.tokens, toks, __ATOMIC_RELAXED);
            __atomic_fetch_add(&b->st.padded_tokens, (long long)k.rows * k.tokens,
                               __ATOMIC_RELAXED);
        }
    }
    return 0;
}

static int cuda_forward(laya_backend *base, const laya_row *rows, int n, int K, float *logits,
                        float *act, layad_error *err)
{
    cuda_backend *b = (cuda_backend *)base;
    return cuda_backend_forward_mode(base, rows, n, K, logits, act, b->o.use_graphs, err);
}

/* ---- create / destroy --------------------------------------------------------- */

static void cuda_destroy(laya_backend *base)
{
    cuda_backend *b = (cuda_backend *)base;
    if (!b)
        return;
    cudaSetDevice(b->dev);
    if (b->graphs) {
        for (int i = 0; i < b->o.graph_cache; i++)
            if (b->graphs[i].used)
                cudaGraphExecDestroy(b->graphs[i].exec);
        free(b->graphs);
    }
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
    if (b->stream)
        cudaStreamDestroy(b->stream);
    free(b->order);
    free(b);
}

static const laya_backend_ops cuda_ops = {"cuda", cuda_forward, cuda_destroy};

/* Runs an all-padding forward of bucket k eagerly (loads every kernel module
 * before any capture), then captures its graph. */
static int warm_bucket(cuda_backend *b, cuda_bucket k, double *ms, layad_error *err)
{
    double t0 = now_ms();
    stage_inputs(b, k, NULL, NULL, 0);
    if (prepare(b, k, err) || run_bucket(b, k, 0, err))
        return -1;
    if (graph_find(b, k) == NULL && !graph_capture(b, k, err))
        return -1;
    *ms = now_ms() - t0;
    return 0;
}

laya_backend *cuda_backend_create(const laya_checkpoint *ck, const cuda_backend_opts *o,
                                  layad_error *err)
{
    const double t0 = now_ms();
    const laya_config *c = &ck->cfg;
    if (c->hidden % KN_HEAD_DIM || c->n_heads * KN_HEAD_DIM != c->hidden) {
        layad_fail(err, 500, "cuda backend: hidden %d / %d heads is not head_dim 64", c->hidden,
                   c->n_heads);
        return NULL;
    }
    if (c->head_layers < 1 || c->head_layers > LAYA_MAX_HEAD_LAYERS) {
        layad_fail(err, 500, "cuda backend: %d head layers", c->head_layers);
        return NULL;
    }
    if (c->n_act != LAYA_N_ACT) {
        layad_fail(err, 500, "cuda backend: act head width %d, expected %d", c->n_act, LAYA_N_ACT);
        return NULL;
    }
    int ndev = cuda_device_count();
    if (ndev == 0) {
        layad_fail(err, 500, "cuda backend: no CUDA device visible (driver missing, or "
                             "CUDA_VISIBLE_DEVICES empty)");
        return NULL;
    }
    if (o->device < 0 || o->device >= ndev) {
        layad_fail(err, 500, "cuda backend: device %d does not exist (%d visible)", o->device,
                   ndev);
        return NULL;
    }
    cuda_backend *b = calloc(1, sizeof *b);
    if (!b) {
        layad_fail(err, 500, "cuda backend: out of memory");
        return NULL;
    }
    b->base.ops = &cuda_ops;
    b->cfg = *c;
    b->o = *o;
    if (o->n_warm > CUDA_MAX_WARM)
        b->o.n_warm = CUDA_MAX_WARM;
    if (b->o.n_warm > 0 && o->warm)
        memcpy(b->warm, o->warm, (size_t)b->o.n_warm * sizeof *b->warm);
    b->o.warm = b->warm;
    b->dev = o->device;
    b->dt = o->dtype == CUDA_DT_BF16 ? KN_BF16 : KN_F16;
    b->br_dt = o->branch16 ? b->dt : KN_F32;
    b->tail_dt = ck->w.sc1_w->dtype == ST_BF16 ? KN_BF16 : ck->w.sc1_w->dtype == ST_F16 ? KN_F16
                                                                                          : b->dt;
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
    if (b->o.graph_cache < 1)
        b->o.graph_cache = 1;
    int budget = c->head_max_len < b->o.max_len ? c->head_max_len : b->o.max_len;
    if (b->o.max_k <= 0)
        b->o.max_k = budget;
    b->Rmax = cuda_bucket_rows(b->o.max_batch_rows);
    b->Tmax = cuda_bucket_tokens(b->o.max_len);
    b->Smax = bucket_slots(b->o.max_k);
    b->o.max_batch_rows = b->Rmax;
    b->order_cap = b->Rmax * 64 > 4096 ? b->Rmax * 64 : 4096;
    b->order = malloc((size_t)b->order_cap * sizeof *b->order);
    b->graphs = calloc((size_t)b->o.graph_cache, sizeof *b->graphs);
    if (!b->order || !b->graphs) {
        layad_fail(err, 500, "cuda backend: out of memory");
        goto fail;
    }
    cudaError_t e = cudaSetDevice(b->dev);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        layad_fail(err, 500, "cuda backend: device %d: %s", b->dev, cudaGetErrorString(e));
        goto fail;
    }
    double tu = now_ms();
    if (upload_weights(b, ck, err))
        goto fail;
    b->info.upload_ms = now_ms() - tu;
    if (alloc_acts(b, err))
        goto fail;
    b->gemm = kn_gemm_ctx_create(0, 4096); /* ~8 plans per token count; see docs */
    if (!b->gemm) {
        layad_fail(err, 500, "cuda backend: cuBLASLt context: %s", kn_cuda_last_error());
        goto fail;
    }
    kn_gemm_ctx_set_tuning(b->gemm, b->o.gemm_tune);
    b->info.init_ms = now_ms() - t0;
    b->info.n_warm = 0;
    for (int i = 0; i < b->o.n_warm; i++) {
        cuda_bucket k = cuda_bucket_for(b->warm[i].rows, b->warm[i].tokens,
                                        b->warm[i].slots > 0 ? b->warm[i].slots : 1);
        if (k.rows > b->Rmax || k.tokens > b->Tmax || k.slots > b->Smax) {
            layad_fail(err, 500, "cuda backend: warm-up shape %dx%d exceeds %dx%d", k.rows,
                       k.tokens, b->Rmax, b->Tmax);
            goto fail;
        }
        double ms = 0;
        if (warm_bucket(b, k, &ms, err))
            goto fail;
        b->info.warm[b->info.n_warm] = k;
        b->info.warm_capture_ms[b->info.n_warm++] = ms;
    }
    /* warm-up captures are not request misses */
    b->st.graph_misses = 0;
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
    s->graph_evictions = __atomic_load_n(&b->st.graph_evictions, __ATOMIC_RELAXED);
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
    info->max_len = b->o.max_len;
    info->max_k = b->Smax;
    info->graph_cache = b->o.graph_cache;
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

#endif /* LAYAD_CUDA */
