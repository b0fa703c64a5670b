/*
 * cpu.c - the fp32 forward on the CPU kernels (laya-model.md §3, §5).
 *
 * Rows are taken in order into packs (model/backend/batching.h, exact policy:
 * no bucket rounding): the rows of a pack lie back to back in its token slots,
 * so a pack of unequal rows pays no padding. Per pack of T tokens:
 *
 *   encoder   h = LN(E[ids]); for each layer i:
 *               a = i ? LN_attn(h += pending) : h          (layer 0 has no attn_norm)
 *               qkv = a Wqkv^T; RoPE(theta_global | theta_local); ctx = attn(window)
 *               a = LN_mlp(h += ctx Wo^T); pending = GeGLU(a Wi^T) Wo_mlp^T
 *             h = LN_final(h += pending)
 *   head      h += type_emb[qtype of the slot's row]; head layers 0..HL-2 over
 *             all T slots (pre-norm, biased LN, attention within each row, ReLU
 *             FFN); the last head layer computes attention only for the G
 *             gathered slots it needs (each row's CLS and markers), with keys and
 *             values over the whole row, and runs its out-projection and FFN on
 *             those G rows only (exact: no other row reaches the outputs).
 *   scorer    logits = sc3 . GELU(sc1 LN_sc0(h_gathered)) + b; CLS slots -1e4
 *   act       feats from each row's uncalibrated logits; act = act2 GELU(act0 [h_cls, feats])
 *
 * Every linear layer runs kn_cpu_gemm_packed over weights packed once at create.
 * Residual adds are fused into the LayerNorm that follows them (kn_cpu_layernorm
 * updates the fp32 residual in place with plain fp32 adds). Buffers: one fp32
 * weight arena, one activation arena for T = max_rows x max_len token slots
 * and R = T + max_rows gathered rows (batch_layout's caps), both owned by the
 * backend and freed by destroy.
 */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu.h"
#include "model/backend/batching.h"
#include "model/backend/cpu.h"
#include "model/base/clock.h"

#define ACT_HIDDEN 256 /* act_head.0 width */

typedef struct cpu_enc_layer {
    const float *attn_norm; /* NULL on layer 0 */
    const float *wqkv, *wo, *mlp_norm, *wi, *mlp_wo;
    int global;
} cpu_enc_layer;

typedef struct cpu_head_layer {
    const float *in_w, *in_b, *out_w, *out_b, *l1_w, *l1_b, *l2_w, *l2_b;
    const float *n1_w, *n1_b, *n2_w, *n2_b;
} cpu_head_layer;

typedef struct cpu_backend {
    laya_backend base;
    /* geometry */
    int D, F, V, NL, HL, n_act, window, threads, pad_id;
    float eps;
    int max_rows;   /* rows per pack */
    long T;         /* token slots per pack */
    long R;         /* gathered rows: T + max_rows */
    batch_policy policy;
    int rope_len;   /* positions covered by the RoPE tables */
    /* weights (views into warena) */
    float *warena;
    const float *tok_emb, *emb_norm, *final_norm, *type_emb;
    const float *sc0_w, *sc0_b, *sc1_w, *sc1_b, *sc3_w, *act0_w, *act0_b, *act2_w, *act2_b;
    float sc3_b;
    cpu_enc_layer enc[LAYA_MAX_LAYERS];
    cpu_head_layer head[LAYA_MAX_HEAD_LAYERS];
    float *rope_cos[2], *rope_sin[2]; /* [0] global theta, [1] local theta */
    /* activations (views into aarena) */
    void *aarena;
    float *h, *a, *qkv, *ctx, *tmp, *u, *g, *sel;
    float *lg, *feats, *act_in, *act_hid, *act_out;
    batch_layout lay; /* the pack's layout arrays (views into aarena) */
} cpu_backend;

/* ---- create ---- */

/* Bump allocator over one arena: first pass measures, second pass hands out.
 * scratch (second pass) holds one weight in fp32 row-major before packing;
 * max_scratch (first pass) records the size it needs. */
typedef struct bump {
    char *base;
    size_t off;
    float *scratch;
    size_t max_scratch;
} bump;

static void *bump_take(bump *b, size_t bytes)
{
    void *p = b->base ? b->base + b->off : NULL;
    b->off += (bytes + 63) & ~(size_t)63;
    return p;
}

static const float *wconv(bump *b, const st_tensor *t)
{
    float *dst = bump_take(b, sizeof(float) * (size_t)t->numel);
    if (dst)
        st_to_f32(t, dst);
    return dst;
}

/* A linear weight [N, K]: converted to fp32, then packed for kn_cpu_gemm_packed. */
static const float *wpack(bump *b, const st_tensor *t)
{
    const int N = (int)t->shape[0], K = (int)t->shape[1];
    float *dst = bump_take(b, sizeof(float) * kn_cpu_packed_size(N, K));
    if ((size_t)t->numel > b->max_scratch)
        b->max_scratch = (size_t)t->numel;
    if (dst) {
        st_to_f32(t, b->scratch);
        kn_cpu_pack_weights(b->scratch, dst, N, K);
    }
    return dst;
}

/* Converts (or, with b->base == NULL, measures) every weight; GEMM weights are
 * stored packed (kernels/cpu.h), the rest row-major. */
static void take_weights(cpu_backend *cb, const laya_checkpoint *ck, bump *b)
{
    const laya_weights *w = &ck->w;
    cb->tok_emb = wconv(b, w->tok_emb);
    cb->emb_norm = wconv(b, w->emb_norm);
    cb->final_norm = wconv(b, w->final_norm);
    for (int i = 0; i < cb->NL; i++) {
        const laya_enc_layer *s = &w->enc[i];
        cpu_enc_layer *d = &cb->enc[i];
        d->attn_norm = s->attn_norm ? wconv(b, s->attn_norm) : NULL;
        d->wqkv = wpack(b, s->wqkv);
        d->wo = wpack(b, s->wo);
        d->mlp_norm = wconv(b, s->mlp_norm);
        d->wi = wpack(b, s->wi);
        d->mlp_wo = wpack(b, s->mlp_wo);
        d->global = ck->cfg.layer_global[i];
    }
    cb->type_emb = wconv(b, w->type_emb);
    for (int j = 0; j < cb->HL; j++) {
        const laya_head_layer *s = &w->head[j];
        cpu_head_layer *d = &cb->head[j];
        d->in_w = wpack(b, s->in_w), d->in_b = wconv(b, s->in_b);
        d->out_w = wpack(b, s->out_w), d->out_b = wconv(b, s->out_b);
        d->l1_w = wpack(b, s->l1_w), d->l1_b = wconv(b, s->l1_b);
        d->l2_w = wpack(b, s->l2_w), d->l2_b = wconv(b, s->l2_b);
        d->n1_w = wconv(b, s->n1_w), d->n1_b = wconv(b, s->n1_b);
        d->n2_w = wconv(b, s->n2_w), d->n2_b = wconv(b, s->n2_b);
    }
    cb->sc0_w = wconv(b, w->sc0_w), cb->sc0_b = wconv(b, w->sc0_b);
    cb->sc1_w = wpack(b, w->sc1_w), cb->sc1_b = wconv(b, w->sc1_b);
    cb->sc3_w = wconv(b, w->sc3_w);
    const float *sc3_b = wconv(b, w->sc3_b);
    if (sc3_b)
        cb->sc3_b = sc3_b[0];
    cb->act0_w = wpack(b, w->act0_w), cb->act0_b = wconv(b, w->act0_b);
    cb->act2_w = wpack(b, w->act2_w), cb->act2_b = wconv(b, w->act2_b);
    for (int t = 0; t < 2; t++) {
        cb->rope_cos[t] = bump_take(b, sizeof(float) * (size_t)cb->rope_len * KN_ROPE_HALF);
        cb->rope_sin[t] = bump_take(b, sizeof(float) * (size_t)cb->rope_len * KN_ROPE_HALF);
    }
}

/* Hands out (or measures) the activation buffers. */
static void take_acts(cpu_backend *cb, bump *b)
{
    const size_t T = (size_t)cb->T, R = (size_t)cb->R, D = (size_t)cb->D, F = (size_t)cb->F;
    const size_t B = (size_t)cb->max_rows;
    const size_t uw = 2 * F > 4 * D ? 2 * F : 4 * D; /* Wi output or head FFN hidden */
    cb->h = bump_take(b, sizeof(float) * T * D);
    cb->a = bump_take(b, sizeof(float) * R * D);
    cb->qkv = bump_take(b, sizeof(float) * T * 3 * D);
    cb->ctx = bump_take(b, sizeof(float) * R * D);
    cb->tmp = bump_take(b, sizeof(float) * R * D);
    cb->u = bump_take(b, sizeof(float) * R * uw);
    cb->g = bump_take(b, sizeof(float) * T * F);
    cb->sel = bump_take(b, sizeof(float) * R * D);
    cb->lg = bump_take(b, sizeof(float) * R);
    cb->feats = bump_take(b, sizeof(float) * B * 4);
    cb->act_in = bump_take(b, sizeof(float) * B * (D + 4));
    cb->act_hid = bump_take(b, sizeof(float) * B * ACT_HIDDEN);
    cb->act_out = bump_take(b, sizeof(float) * B * (size_t)cb->n_act);
    batch_layout *l = &cb->lay;
    batch_layout_caps(l, (int)T, (int)B, (int)R);
    l->cu = bump_take(b, sizeof(int32_t) * (B + 1));
    l->goff = bump_take(b, sizeof(int32_t) * (B + 1));
    l->ids = bump_take(b, sizeof(int32_t) * T);
    l->pos = bump_take(b, sizeof(int32_t) * T);
    l->ttype = bump_take(b, sizeof(int32_t) * T);
    l->tiles = bump_take(b, sizeof(int32_t) * 2 * (size_t)l->tiles_cap);
    l->gpos = bump_take(b, sizeof(int32_t) * (size_t)l->gcap);
    l->grow = bump_take(b, sizeof(int32_t) * (size_t)l->gcap);
    l->gmask = bump_take(b, (size_t)l->gcap);
}

static void cpu_destroy(laya_backend *base)
{
    cpu_backend *cb = (cpu_backend *)base;
    if (!cb)
        return;
    free(cb->warena);
    free(cb->aarena);
    free(cb);
}

static int cpu_forward(laya_backend *base, const laya_row *rows, int n, int K,
                       float *logits, float *act, layad_error *err);

static const laya_backend_ops cpu_ops = {"cpu", cpu_forward, cpu_destroy, NULL};

laya_backend *cpu_backend_create(const laya_checkpoint *ck, int max_rows, int threads, layad_error *err)
{
    const laya_config *c = &ck->cfg;
    if (max_rows < 1) {
        layad_fail(err, 500, "cpu backend: max_rows must be >= 1 (got %d)", max_rows);
        return NULL;
    }
    if (c->hidden % KN_HEAD_DIM || c->hidden <= 0 || c->n_layers > LAYA_MAX_LAYERS ||
        c->head_layers > LAYA_MAX_HEAD_LAYERS || c->head_layers < 0 || c->max_len < 1 ||
        c->n_act < 1 || c->max_position < c->max_len) {
        layad_fail(err, 500, "cpu backend: unsupported geometry (hidden %d, layers %d, head layers %d, "
                   "max_len %d, max_position %d)", c->hidden, c->n_layers, c->head_layers, c->max_len,
                   c->max_position);
        return NULL;
    }
    cpu_backend *cb = calloc(1, sizeof *cb);
    if (!cb) {
        layad_fail(err, 500, "cpu backend: out of memory");
        return NULL;
    }
    cb->base.ops = &cpu_ops;
    cb->D = c->hidden, cb->F = c->intermediate, cb->V = c->vocab;
    cb->NL = c->n_layers, cb->HL = c->head_layers, cb->n_act = c->n_act;
    cb->window = c->local_attention / 2;
    cb->eps = (float)c->norm_eps;
    cb->pad_id = c->pad_id >= 0 && c->pad_id < c->vocab ? c->pad_id : 0; /* pads are masked anyway */
    cb->threads = threads;
    cb->max_rows = max_rows;
    cb->T = (long)max_rows * c->max_len;
    cb->R = cb->T + max_rows;
    if (cb->T > (1L << 30) || batch_policy_init(&cb->policy, (int)cb->T, max_rows, 1, err)) {
        if (cb->T > (1L << 30))
            layad_fail(err, 500, "cpu backend: %d rows x %d tokens is too large", max_rows, c->max_len);
        free(cb);
        return NULL;
    }
    cb->rope_len = cb->T < c->max_position ? (int)cb->T : c->max_position;

    bump wb = {NULL, 0, NULL, 0}, ab = {NULL, 0, NULL, 0};
    take_weights(cb, ck, &wb);
    take_acts(cb, &ab);
    cb->warena = aligned_alloc(64, wb.off);
    cb->aarena = aligned_alloc(64, ab.off ? ab.off : 64);
    float *scratch = malloc(sizeof(float) * (wb.max_scratch ? wb.max_scratch : 1));
    if (!cb->warena || !cb->aarena || !scratch) {
        layad_fail(err, 500, "cpu backend: out of memory (%zu MiB of weights, %zu MiB of activations)",
                   wb.off >> 20, ab.off >> 20);
        free(scratch);
        cpu_destroy(&cb->base);
        return NULL;
    }
    wb = (bump){(char *)cb->warena, 0, scratch, 0};
    ab = (bump){(char *)cb->aarena, 0, NULL, 0};
    take_weights(cb, ck, &wb);
    take_acts(cb, &ab);
    free(scratch);
    kn_rope_tables(cb->rope_cos[0], cb->rope_sin[0], cb->rope_len, c->rope_theta_global);
    kn_rope_tables(cb->rope_cos[1], cb->rope_sin[1], cb->rope_len, c->rope_theta_local);
    return &cb->base;
}

/* ---- forward ---- */

/* Checks a row against the backend's contract (rows.h) and capacity. */
static int check_row(const cpu_backend *cb, const laya_row *r, int i, int K, layad_error *err)
{
    if (r->len < 1 || r->n_markers < 1 || r->n_markers > K || r->qtype < 0 || r->qtype > 2)
        return layad_fail(err, 500, "cpu backend: row %d is malformed (len %d, markers %d, K %d, qtype %d)",
                          i, r->len, r->n_markers, K, r->qtype);
    if (r->len > cb->T || r->len > cb->rope_len)
        return layad_fail(err, 413, "row %d has %d tokens; the CPU backend holds at most %ld per row", i, r->len,
                          cb->T < cb->rope_len ? cb->T : (long)cb->rope_len);
    for (int t = 0; t < r->len; t++)
        if (r->ids[t] < 0 || r->ids[t] >= cb->V)
            return layad_fail(err, 500, "cpu backend: row %d token %d id %d outside the vocabulary (%d)",
                              i, t, r->ids[t], cb->V);
    for (int k = 0; k < r->n_markers; k++)
        if (r->markers[k] < 0 || r->markers[k] >= r->len || (k && r->markers[k] <= r->markers[k - 1]))
            return layad_fail(err, 500, "cpu backend: row %d marker %d at %d is out of order or range",
                              i, k, r->markers[k]);
    return 0;
}

/* The encoder over cb->h: the pack's M token slots (layout already staged). */
static void encoder(cpu_backend *cb, int M)
{
    const int D = cb->D, F = cb->F;
    const batch_layout *l = &cb->lay;
    kn_cpu_embed(cb->tok_emb, l->ids, cb->h, M, D);
    kn_cpu_layernorm(cb->h, NULL, cb->emb_norm, NULL, cb->h, M, D, cb->eps);
    for (int i = 0; i < cb->NL; i++) {
        const cpu_enc_layer *ly = &cb->enc[i];
        const float *a_in = cb->h;
        if (i > 0) { /* a = LN_attn(h); the branch GEMMs add into h (KN_EPI_ACC), as on the GPU */
            kn_cpu_layernorm(cb->h, NULL, ly->attn_norm, NULL, cb->a, M, D, cb->eps);
            a_in = cb->a;
        }
        const int t = ly->global ? 0 : 1;
        kn_cpu_gemm_packed(a_in, ly->wqkv, NULL, cb->qkv, M, 3 * D, D, KN_EPI_NONE);
        kn_cpu_rope(cb->qkv, M, D, l->pos, cb->rope_cos[t], cb->rope_sin[t]);
        kn_cpu_attention(cb->qkv, cb->ctx, M, D, l->cu, l->tiles, l->n_tiles,
                         ly->global ? -1 : cb->window);
        kn_cpu_gemm_packed(cb->ctx, ly->wo, NULL, cb->h, M, D, D, KN_EPI_ACC);
        kn_cpu_layernorm(cb->h, NULL, ly->mlp_norm, NULL, cb->a, M, D, cb->eps);
        kn_cpu_gemm_packed(cb->a, ly->wi, NULL, cb->u, M, 2 * F, D, KN_EPI_NONE);
        kn_cpu_geglu(cb->u, cb->g, M, F);
        kn_cpu_gemm_packed(cb->g, ly->mlp_wo, NULL, cb->h, M, D, F, KN_EPI_ACC);
    }
    kn_cpu_layernorm(cb->h, NULL, cb->final_norm, NULL, cb->h, M, D, cb->eps);
}

/* Head layers 0..HL-2 over all M slots; returns 1 when an FFN output is still
 * pending in cb->tmp (to be added to h by the next LayerNorm). */
static int head_layers(cpu_backend *cb, int M)
{
    const int D = cb->D;
    const batch_layout *l = &cb->lay;
    int pending = 0;
    for (int j = 0; j + 1 < cb->HL; j++) {
        const cpu_head_layer *ly = &cb->head[j];
        kn_cpu_layernorm(cb->h, pending ? cb->tmp : NULL, ly->n1_w, ly->n1_b, cb->a, M, D, cb->eps);
        kn_cpu_gemm_packed(cb->a, ly->in_w, ly->in_b, cb->qkv, M, 3 * D, D, KN_EPI_NONE);
        kn_cpu_attention(cb->qkv, cb->ctx, M, D, l->cu, l->tiles, l->n_tiles, -1);
        kn_cpu_gemm_packed(cb->ctx, ly->out_w, ly->out_b, cb->tmp, M, D, D, KN_EPI_NONE);
        kn_cpu_layernorm(cb->h, cb->tmp, ly->n2_w, ly->n2_b, cb->a, M, D, cb->eps);
        kn_cpu_gemm_packed(cb->a, ly->l1_w, ly->l1_b, cb->u, M, 4 * D, D, KN_EPI_RELU);
        kn_cpu_gemm_packed(cb->u, ly->l2_w, ly->l2_b, cb->tmp, M, D, 4 * D, KN_EPI_NONE);
        pending = 1;
    }
    return pending;
}

/* The decision head over cb->h (M slots, G gathered slots, B rows); writes
 * cb->lg [G] and cb->act_out [B, n_act]. */
static void head(cpu_backend *cb, int M, int G, int B)
{
    const int D = cb->D;
    const batch_layout *l = &cb->lay;
    kn_cpu_add_type_emb(cb->h, cb->type_emb, l->ttype, M, D);
    const int pending = head_layers(cb, M);
    if (cb->HL > 0) {
        const cpu_head_layer *ly = &cb->head[cb->HL - 1];
        kn_cpu_layernorm(cb->h, pending ? cb->tmp : NULL, ly->n1_w, ly->n1_b, cb->a, M, D, cb->eps);
        kn_cpu_gemm_packed(cb->a, ly->in_w, ly->in_b, cb->qkv, M, 3 * D, D, KN_EPI_NONE);
        kn_cpu_gather_rows(cb->h, l->gpos, cb->sel, G, D);
        kn_cpu_attention_select(cb->qkv, cb->ctx, D, l->cu, -1, l->grow, l->gpos, G);
        kn_cpu_gemm_packed(cb->ctx, ly->out_w, ly->out_b, cb->tmp, G, D, D, KN_EPI_NONE);
        kn_cpu_layernorm(cb->sel, cb->tmp, ly->n2_w, ly->n2_b, cb->a, G, D, cb->eps);
        kn_cpu_gemm_packed(cb->a, ly->l1_w, ly->l1_b, cb->u, G, 4 * D, D, KN_EPI_RELU);
        kn_cpu_gemm_packed(cb->u, ly->l2_w, ly->l2_b, cb->tmp, G, D, 4 * D, KN_EPI_NONE);
        /* sel += FFN output (final residual), a = scorer LN of every gathered row */
        kn_cpu_layernorm(cb->sel, cb->tmp, cb->sc0_w, cb->sc0_b, cb->a, G, D, cb->eps);
    } else {
        kn_cpu_gather_rows(cb->h, l->gpos, cb->sel, G, D);
        kn_cpu_layernorm(cb->sel, NULL, cb->sc0_w, cb->sc0_b, cb->a, G, D, cb->eps);
    }
    kn_cpu_gemm_packed(cb->a, cb->sc1_w, cb->sc1_b, cb->ctx, G, D, D, KN_EPI_GELU);
    kn_cpu_scorer_tail(cb->ctx, cb->sc3_w, cb->sc3_b, l->gmask, cb->lg, G, D);
    kn_cpu_conf_features(cb->lg, l->gmask, l->goff, cb->feats, B);
    kn_cpu_act_input(cb->sel, cb->feats, l->goff, cb->act_in, B, D);
    kn_cpu_gemm_packed(cb->act_in, cb->act0_w, cb->act0_b, cb->act_hid, B, ACT_HIDDEN, D + 4, KN_EPI_GELU);
    kn_cpu_gemm_packed(cb->act_hid, cb->act2_w, cb->act2_b, cb->act_out, B, cb->n_act, ACT_HIDDEN, KN_EPI_NONE);
}

/* Runs one pack rows[0..B) and writes its rows' logits [B, K] and act. */
static int run_pack(cpu_backend *cb, const laya_row *rows, int B, int K, float *logits, float *act,
                    layad_error *err)
{
    batch_layout *l = &cb->lay;
    laya_fwd_timing *tm = &cb->base.last;
    const double t0 = layad_now();
    if (batch_pack(rows, B, cb->pad_id, l, err))
        return -1;
    const double t1 = layad_now();
    encoder(cb, l->tokens);
    head(cb, l->tokens, l->gathered, B);
    const double t2 = layad_now();
    for (int b = 0; b < B; b++) {
        const int g0 = l->goff[b] + 1, nm = rows[b].n_markers; /* slot g0 - 1 is the CLS */
        for (int k = 0; k < K; k++)
            logits[(size_t)b * K + k] = k < nm ? cb->lg[g0 + k] : LAYA_MASK_FILL;
        for (int c = 0; c < cb->n_act; c++)
            act[(size_t)b * cb->n_act + c] = cb->act_out[b * cb->n_act + c];
    }
    tm->stage_s += t1 - t0;
    tm->run_s += t2 - t1;
    tm->unpack_s += layad_now() - t2;
    return 0;
}

static int cpu_forward(laya_backend *base, const laya_row *rows, int n, int K,
                       float *logits, float *act, layad_error *err)
{
    cpu_backend *cb = (cpu_backend *)base;
    cb->base.last = (laya_fwd_timing){0};
    if (n < 0 || (n > 0 && K < 1))
        return layad_fail(err, 500, "cpu backend: bad batch (n %d, K %d)", n, K);
    for (int i = 0; i < n; i++)
        if (check_row(cb, &rows[i], i, K, err))
            return -1;
    if (cb->threads > 0)
        omp_set_num_threads(cb->threads);
    for (int s = 0; s < n;) {
        const int B = batch_take(&cb->policy, rows + s, n - s);
        if (B < 1)
            return layad_fail(err, 500, "cpu backend: row %d does not fit a pack", s);
        if (run_pack(cb, rows + s, B, K, logits + (size_t)s * K, act + (size_t)s * cb->n_act, err))
            return -1;
        s += B;
    }
    return 0;
}
