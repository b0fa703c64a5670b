/*
 * cuda_weights.c - the CUDA backend's device memory: the weight arena (one
 * cudaMalloc, tensors converted to the serving dtype on the device), the
 * activation arena sized for the largest bucket, and the pinned staging of
 * one pack. All of it is allocated at create; nothing here runs per request.
 */
#include <stdlib.h>
#include <string.h>

#include "model/backend/cuda_internal.h"

size_t cuda_align_up(size_t x)
{
    return (x + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
}

/* The staged arrays of a batch_layout with these caps, back to back. */
stage_layout cuda_stage_layout(int cap, int rows_cap, int gcap)
{
    batch_layout caps;
    batch_layout_caps(&caps, cap, rows_cap, gcap);
    stage_layout l;
    size_t off = 0;
    const size_t T = (size_t)cap, R = (size_t)rows_cap, G = (size_t)caps.gcap;
    l.cu = off, off = cuda_align_up(off + (R + 1) * 4);
    l.ids = off, off = cuda_align_up(off + T * 4);
    l.pos = off, off = cuda_align_up(off + T * 4);
    l.ttype = off, off = cuda_align_up(off + T * 4);
    l.tiles = off, off = cuda_align_up(off + (size_t)caps.tiles_cap * 2 * 4);
    l.goff = off, off = cuda_align_up(off + (R + 1) * 4);
    l.gpos = off, off = cuda_align_up(off + G * 4);
    l.grow = off, off = cuda_align_up(off + G * 4);
    l.gmask = off, off = cuda_align_up(off + G);
    l.in_bytes = off;
    l.logits = 0;
    l.act = cuda_align_up(G * 4);
    l.out_bytes = l.act + R * LAYA_N_ACT * 4;
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
    p->total = cuda_align_up(p->total + it->bytes);
    if (st_to_kn(t->dtype) != want && t->nbytes > p->max_convert)
        p->max_convert = t->nbytes;
}

/* Which tensors take the serving dtype here is restated by the bf16-weights
 * reference of the parity tools (tests/tools/ckpt_round.c, served_in_bf16):
 * change both together. */
static void plan_weights(cuda_backend *b, const laya_weights *w, upload_plan *p)
{
    dev_weights *d = &b->w;
    const kn_dtype dt = b->dt, f32 = KN_F32;
    memset(p, 0, sizeof *p);
    plan_add(p, w->tok_emb, b->emb_dt, &d->tok_emb);
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
int cuda_upload_weights(cuda_backend *b, const laya_checkpoint *ck, layad_error *err)
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
            e = cudaMemcpyAsync(dst, it->t->data, it->t->nbytes, cudaMemcpyHostToDevice, b->ks.s);
        } else {
            e = cudaMemcpyAsync(scratch, it->t->data, it->t->nbytes, cudaMemcpyHostToDevice,
                                b->ks.s);
            if (e == cudaSuccess &&
                kn_convert(b->ks, scratch, have, dst, it->want, (size_t)it->t->numel)) {
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
    if (cudaStreamSynchronize(b->ks.s) != cudaSuccess) {
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

/* The new arena's first contents: poison, the RoPE tables, and the mapped pinned staging
 * of a pack's inputs and outputs. */
static int acts_init(cuda_backend *b, const stage_layout *big, layad_error *err)
{
    const size_t P = (size_t)b->o.max_len;
    /* Poison once so that a read of never-written memory shows as NaN, not as a
     * plausible zero. Padding slots past a pack's rows may keep such values: no
     * kernel reads them into a row. */
    CU(cudaMemsetAsync(b->aarena, 0xff, b->abytes, b->ks.s));
    KN(kn_rope_tables_gpu(b->ks, b->a.cos_g, b->a.sin_g, (int)P, b->cfg.rope_theta_global));
    KN(kn_rope_tables_gpu(b->ks, b->a.cos_l, b->a.sin_l, (int)P, b->cfg.rope_theta_local));
    b->pin_bytes = big->in_bytes + big->out_bytes;
    /* mapped: the forward's first and last kernels read and write them (kn_copy) */
    CU(cudaHostAlloc((void **)&b->pin_in, big->in_bytes, cudaHostAllocMapped));
    CU(cudaHostAlloc((void **)&b->pin_out, big->out_bytes, cudaHostAllocMapped));
    CU(cudaHostGetDevicePointer(&b->pin_in_dev, b->pin_in, 0));
    CU(cudaHostGetDevicePointer(&b->pin_out_dev, b->pin_out, 0));
    CU(cudaStreamSynchronize(b->ks.s));
    return 0;
}

/* Rows of a->o: a split branch's parts fit Tmax (its buckets are small enough), the
 * attention's per-head parts of buckets up to att_wo_tokens may need more. */
static int o_rows(const cuda_backend *b)
{
    int rows = b->Tmax;
    for (int i = 0; i < b->policy.n_buckets; i++) {
        const int T = b->policy.bucket[i], need = b->D / KN_HEAD_DIM * T;
        if (T <= b->o.att_wo_tokens && need > rows)
            rows = need;
    }
    return rows;
}

int cuda_alloc_acts(cuda_backend *b, layad_error *err)
{
    const size_t M = (size_t)b->Tmax, R = (size_t)b->Rmax, G = M + R, D = (size_t)b->D;
    const size_t es = kn_dtype_size(b->dt), bs = kn_dtype_size(b->br_dt);
    const size_t hid = (size_t)(2 * b->F > b->Dh4 ? 2 * b->F : b->Dh4);
    const size_t P = (size_t)b->o.max_len;
    const stage_layout big = cuda_stage_layout(b->Tmax, b->Rmax, (int)G);
    struct {
        void **p;
        size_t bytes;
    } parts[] = {
        {(void **)&b->a.res, M * D * 4},
        {&b->a.xn, M * D * es},
        {&b->a.qkv, M * 3 * D * es},
        {&b->a.att, M * D * es},
        {&b->a.o, (size_t)(b->orows = o_rows(b)) * D * bs},
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
        {(void **)&b->a.actin, R * (D + 4) * 4},
        {(void **)&b->a.a1, R * 256 * 4},
        {(void **)&b->a.cos_g, P * KN_ROPE_HALF * 4},
        {(void **)&b->a.sin_g, P * KN_ROPE_HALF * 4},
        {(void **)&b->a.cos_l, P * KN_ROPE_HALF * 4},
        {(void **)&b->a.sin_l, P * KN_ROPE_HALF * 4},
        {&b->a.in, big.in_bytes},
        {&b->a.out, big.out_bytes},
    };
    const int n = (int)(sizeof parts / sizeof parts[0]);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total = cuda_align_up(total + parts[i].bytes);
    if (cudaMalloc(&b->aarena, total) != cudaSuccess) {
        (void)cudaGetLastError();
        return layad_fail(err, 500,
                          "cuda backend: cannot allocate %zu bytes of activations for packs of %d "
                          "tokens (lower max_batch_tokens)", total, b->Tmax);
    }
    b->abytes = total;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        *parts[i].p = (char *)b->aarena + off;
        off = cuda_align_up(off + parts[i].bytes);
    }
    return acts_init(b, &big, err);
}
