/*
 * cuda_forward.c - one pack on the GPU: staging, the forward enqueued, results.
 *
 * Layout of one forward, for a bucket of T token slots (rows packed back to
 * back, row r at [cu[r], cu[r+1]), model/backend/batching.h), R row slots
 * (batch_rows_cap: a sixteenth of T, 8 to max_batch_rows) and G gathered slots (each row's CLS, then its markers; G is the
 * bucket's class: a sixteenth of T, or T + R):
 *
 *   H2D  cu, ids, pos, slot types, attention tiles, gathered slots (one copy)
 *   enc  res = LN(E[ids]) (fp32)               xn = 16-bit copy for layer 0
 *        per layer: qkv = xn Wqkv; RoPE (per-slot positions); attention within
 *                   each row (global / |i-j|<=64, over the tile list)
 *                   o = att Wo; res += o; xn = LN_mlp(res)
 *                   u = xn Wi; g = GeGLU(u); o = g Wo2
 *                   res += o; xn = LN_attn(next)(res)
 *                   (res += o in the GEMM's epilogue by default, else fused
 *                   into the LayerNorm kernel: residual_epilogue)
 *        res = LN_final(res) (fp32, in place)
 *   head layers 0..n-2 over all T slots (biased LN, in_proj with bias,
 *        res += type_emb[slot type] in the first LN's kernel,
 *        attention within each row, ReLU FFN), residual fp32;
 *   last head layer: K/V over all T slots, but queries, out_proj, LN2 and the
 *        FFN only over the G gathered slots (exact; bench/README.md);
 *   tail (fp32): scorer LN -> Linear(GELU) -> d->1 on the gathered slots (CLS
 *        slots masked to -1e4), confidence features per row, act head on the
 *        CLS slots.
 *   D2H  logits [G], act [R*2] (one copy), then the only synchronization.
 *
 * The two copies are kernels (kn_copy) on mapped pinned memory, not copy
 * nodes: in a graph a copy node cost ~6-9 us on the H200, a kernel boundary
 * ~0.5 us.
 *
 * Padding slots (past the pack's tokens) and padding rows run through the
 * per-slot kernels and GEMMs like real ones but are never read into a real
 * row: the graph of a bucket serves every pack that fits it. The residual-
 * branch projections (o) write fp32 for the fp32 residual add by default
 * (measured ~25% lower logit error than 16-bit o, 1-2% slower; branch16
 * writes the serving dtype, what bf16 autocast does upstream). The head
 * layers' biases are stored in the serving dtype: cuBLASLt applies a bias in
 * the output's dtype. The scorer/act-head weights keep the checkpoint's own
 * 16-bit dtype even when the encoder serves in bf16 (fp32 activations there),
 * and so does the token embedding table (a lookup, exact in its own dtype;
 * PyTorch's autocast never casts an embedding either).
 */
#include <string.h>

#include "model/backend/cuda_internal.h"
#include "model/base/clock.h"

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
        KN(kn_gemm_prepare(b->gemm, xdt, wdt, ydt, M, N, K, epi, bias != NULL, b->ks, X, W, Y));
        return 0;
    }
    KN(kn_gemm_ex(b->gemm, b->ks, X, xdt, W, wdt, bias, bdt, Y, ydt, M, N, K, epi));
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

#define STAGED(l, field, type) ((const type *)((const char *)b->a.in + (l)->field))

/* What the LayerNorm after a residual branch must still add into its residual:
 * nothing (o NULL), the branch o, or its parts partial products at a->o and
 * then the branch's bias (NULL for the encoder's, which have none). */
typedef struct pending_branch {
    const void *o;
    int parts;
    const float *bias;
} pending_branch;

/* Partial products of a split residual branch. Measured on the H200
 * (bench/results/experiments/split-branch/): at 48-128 rows four parts took
 * the MLP-out GEMM from 7.5-8.0 to 5.0-5.6 us and the attention-out one from
 * 4.7-5.0 to 3.8-4.2, and the forward at 16-120 tokens 4-7% down; two or
 * four parts at 160-256 tokens gained nothing in the forward (the LayerNorm
 * reads more). */
#define BRANCH_PARTS 4

/* Whether a T-slot bucket is small enough for split branches (o.split_tokens)
 * and their parts fit a->o (fp32 [Tmax, D] when the branches accumulate). */
static int split_bucket(const cuda_backend *b, int T)
{
    return b->acc && T <= b->o.split_tokens && (long)BRANCH_PARTS * T <= b->Tmax;
}

/* How many partial products the branch X W^T (K deep) of a T-slot bucket is
 * split into: 1 (not split) unless split_bucket lets it and both the split
 * GEMM and the LayerNorm over its parts take the buffers (every LayerNorm scale
 * is a 256-byte-aligned slice of the weight arena, so final_norm stands for the
 * one that follows). */
static int branch_parts(const cuda_backend *b, const void *X, const void *W, int T, int K)
{
    const int S = BRANCH_PARTS;
    const dev_acts *a = &b->a;
    if (!split_bucket(b, T))
        return 1;
    return kn_gemm_split_ok(b->dt, X, W, a->o, b->D, K, S) &&
                   kn_layernorm_parts_ok(a->res, a->o, (long)T * b->D, S, NULL, b->w.final_norm, NULL, a->xn,
                                         a->res, b->D)
               ? S
               : 1;
}

/* Whether the bucket being enqueued runs its split products on the own
 * small-pack kernel (its paths: o.small_gemm_tokens, or timed at warm-up). The
 * bucket decides, not M: the tail's few gathered rows of a larger bucket gained
 * nothing on it (0.6% slower at 1x512 with the multicast form, within 0.4% from
 * 1x83 to 1x512 with cp.async; bench/results/experiments/mcast/, wide/). */
static int small_bucket(const cuda_backend *b) { return (b->path_now & CUDA_PATH_SMALL) != 0; }

/* Whether the own split kernel would run in a T-slot bucket whose paths ask for it: the
 * branches split there and the kernel takes one of the encoder's two. */
int cuda_small_ok(const cuda_backend *b, int T)
{
    const dev_acts *a = &b->a;
    const dev_layer *L = &b->w.enc[0];
    return split_bucket(b, T) &&
           (kn_gemm_split_small_ok(b->dt, a->att, L->wo, a->o, T, b->D, b->D, BRANCH_PARTS) ||
            kn_gemm_split_small_ok(b->dt, a->g, L->wo2, a->o, T, b->D, b->F, BRANCH_PARTS));
}

/* The split product X W^T into S fp32 partial products at a->o (or, in
 * prepare mode, its plan): on the own kernel in small buckets, else on
 * cuBLASLt. */
static int split_gemm(cuda_backend *b, const void *X, const void *W, int M, int K, int S, layad_error *err)
{
    dev_acts *a = &b->a;
    if (small_bucket(b) && kn_gemm_split_small_ok(b->dt, X, W, a->o, M, b->D, K, S)) {
        if (!b->prepare_only)
            KN(kn_gemm_split_small(b->ks, X, W, b->dt, (float *)a->o, M, b->D, K, S));
        return 0;
    }
    if (b->prepare_only) /* cuBLASLt without an algorithm for it fails the warm-up's launch, loudly */
        KN(kn_gemm_prepare_split(b->gemm, b->dt, M, b->D, K, S, b->ks, X, W, (float *)a->o) < 0 ? -1 : 0);
    else
        KN(kn_gemm_split(b->gemm, b->ks, X, W, b->dt, (float *)a->o, M, b->D, K, S));
    return 0;
}

/* A residual branch o = X W^T (+ bias) ([M, D], K deep) for the LayerNorm
 * after it: split into partial products at a->o (branch_parts; the bias then
 * left to the LayerNorm), else added into r by the GEMM's epilogue (r given
 * and b->acc: the encoder's unbiased branches into res), else written whole to
 * out; *pending gets what the LayerNorm must still add. The head layers' biased
 * branches (out-proj, the FFN's second product) pass r NULL: at 12-96 rows
 * cuBLASLt ran the FFN's 4096-deep product as a split-K kernel plus a
 * reduction kernel of its own (9.3 + 3.7 us at 96 rows under Nsight Compute),
 * where the parts leave the sum to the LayerNorm, which reads the rows anyway. */
static int branch(cuda_backend *b, const void *X, const void *W, const void *bias, void *out, float *r, int M,
                  int K, pending_branch *pending, layad_error *err)
{
    const int S = branch_parts(b, X, W, M, K), acc = b->acc && r;
    pending->o = S > 1 ? b->a.o : acc ? NULL : out;
    pending->parts = S;
    pending->bias = S > 1 ? (const float *)bias : NULL; /* fp32: the branches' dtype when they split */
    if (S > 1)
        return split_gemm(b, X, W, M, K, S, err);
    GEMM(X, b->dt, W, b->dt, bias, b->br_dt, acc ? (void *)r : out, b->br_dt, M, b->D, K,
         acc ? KN_EPI_ACC : KN_EPI_NONE);
    return 0;
}

/* The LayerNorm after a residual branch: r += what is pending, then y16 (dt)
 * and / or y32 = LN(r) with scale w and bias lb. */
static int branch_norm(cuda_backend *b, const pending_branch *p, float *r, const float *w, const float *lb,
                       void *y16, float *y32, int M, float eps, layad_error *err)
{
    if (p->parts > 1)
        LAUNCH(kn_layernorm_parts(b->ks, r, (const float *)p->o, p->parts, (long)M * b->D, p->bias, w, lb, y16,
                                  b->dt, y32, M, b->D, eps));
    else
        LAUNCH(kn_layernorm(b->ks, r, p->o, b->br_dt, w, lb, y16, b->dt, y32, M, b->D, eps));
    return 0;
}

/* Whether the encoder's projections of the bucket being enqueued run on the
 * own kernel with RoPE / GeGLU in their epilogue (its paths: o.fused_proj_tokens,
 * or timed at warm-up), where that kernel takes the shapes. */
int cuda_fused_ok(const cuda_backend *b, int T) { return b->F % 16 == 0 && kn_proj_small_ok(b->dt, T, b->D); }

/* Query tiles of bucket T's capacity (batching.h: tiles_cap). */
static int cap_tiles(const cuda_backend *b, int T) { return T / KN_ATT_TQ + batch_rows_cap(&b->policy, T); }

/* The largest bucket whose packs of few tiles run the attention with its out-projection
 * (o.att_wo_tokens; 0: none): one fp32 part a head in a->o, summed by the LayerNorm
 * after it. Asked once, after the weights and activations exist: nothing in it
 * depends on the bucket but the parts' rows. */
int cuda_att_wo_max(const cuda_backend *b)
{
    const int S = b->D / KN_HEAD_DIM;
    const dev_acts *a = &b->a;
    const int T = b->o.att_wo_tokens < b->orows / S ? b->o.att_wo_tokens : b->orows / S;
    const int ok = T > 0 && b->acc && b->att_wo_tiles > 0 &&
                   kn_attention_wo_ok(b->dt, a->qkv, b->w.enc[0].wo, (const float *)a->o, (long)T * b->D, b->D) &&
                   kn_layernorm_parts_ok(a->res, a->o, (long)T * b->D, S, NULL, b->w.final_norm, NULL, a->xn,
                                         a->res, b->D);
    return ok ? T : 0;
}

static int att_wo_bucket(const cuda_backend *b, int T) { return T <= b->att_wo_max; }

/* In a bucket of the fused launch the pack form holds only the tiles one wave of its
 * blocks takes (two at English width), so that form always runs it. */
int cuda_pack_tiles(const cuda_backend *b, int T)
{
    return att_wo_bucket(b, T) && b->att_wo_tiles < b->att_pack_tiles ? b->att_wo_tiles : b->att_pack_tiles;
}

int cuda_att_pack_ok(const cuda_backend *b, int T)
{
    const int p = cuda_pack_tiles(b, T);
    return T <= b->o.att_pack_tokens && p > 0 && cap_tiles(b, T) > p;
}

/* The query tiles the attention of bucket T launches in the form being enqueued. */
static int att_tiles(const cuda_backend *b, int T)
{
    return b->att_now == CUDA_ATT_PACK ? cuda_pack_tiles(b, T) : cap_tiles(b, T);
}

/* The attention of bucket T in the form being enqueued: over the capacity's
 * tiles by the grid, or two groups a block over the few tiles of a small pack
 * (CUDA_ATT_PACK is enqueued only where cuda_att_pack_ok). */

static int attention(cuda_backend *b, int T, const int32_t *cu, const int32_t *tiles, int window)
{
    dev_acts *a = &b->a;
    const int pack = b->att_now == CUDA_ATT_PACK;
    return kn_attention_grouped(b->ks, b->dt, a->qkv, a->att, T, b->D, cu, tiles, att_tiles(b, T), window,
                                pack ? 2 : 0);
}

static int fused_bucket(const cuda_backend *b)
{
    return (b->path_now & CUDA_PATH_FUSED) && cuda_fused_ok(b, b->bucket);
}

/* qkv = Wqkv xn with RoPE applied: in one launch when fused (fused_bucket),
 * else the GEMM then kn_rope. */
static int qkv_rope(cuda_backend *b, const dev_layer *L, int T, int global, const int32_t *pos, int fused,
                    layad_error *err)
{
    dev_acts *a = &b->a;
    const float *ct = global ? a->cos_g : a->cos_l, *st = global ? a->sin_g : a->sin_l;
    if (fused) {
        LAUNCH(kn_proj_small_rope(b->ks, a->xn, L->wqkv, b->dt, a->qkv, T, b->D, b->D, pos, ct, st));
        return 0;
    }
    GEMM(a->xn, b->dt, L->wqkv, b->dt, NULL, b->dt, a->qkv, b->dt, T, 3 * b->D, b->D, KN_EPI_NONE);
    LAUNCH(kn_rope(b->ks, b->dt, a->qkv, T, b->D, pos, ct, st));
    return 0;
}

/* g = GeGLU(Wi xn): in one launch when fused (fused_bucket), else the GEMM
 * into u then kn_geglu. */
static int wi_geglu(cuda_backend *b, const dev_layer *L, int T, int fused, layad_error *err)
{
    dev_acts *a = &b->a;
    if (fused) {
        LAUNCH(kn_proj_small_geglu(b->ks, a->xn, L->wi, b->dt, a->g, T, b->F, b->D));
        return 0;
    }
    GEMM(a->xn, b->dt, L->wi, b->dt, NULL, b->dt, a->u, b->dt, T, 2 * b->F, b->D, KN_EPI_NONE);
    LAUNCH(kn_geglu(b->ks, b->dt, a->u, a->g, T, b->F));
    return 0;
}

/* The attention and its out-projection, pending for the LayerNorm after them: in one
 * launch when fused (att_wo_bucket, and the form's tiles one wave of its blocks), one
 * part a head; else the attention, then the branch. */
static int att_branch(cuda_backend *b, const dev_layer *L, int T, const int32_t *cu, const int32_t *tiles,
                      int window, int fused, pending_branch *o, layad_error *err)
{
    dev_acts *a = &b->a;
    if (fused) {
        LAUNCH(kn_attention_wo(b->ks, b->dt, a->qkv, L->wo, (float *)a->o, (long)T * b->D, T, b->D, cu, tiles,
                               att_tiles(b, T), window));
        *o = (pending_branch){.o = a->o, .parts = b->D / KN_HEAD_DIM, .bias = NULL};
        return 0;
    }
    LAUNCH(attention(b, T, cu, tiles, window));
    return branch(b, a->att, L->wo, NULL, a->o, a->res, T, b->D, o, err);
}

static int enqueue_encoder(cuda_backend *b, int T, const stage_layout *l, layad_error *err)
{
    const int D = b->D, F = b->F;
    const kn_dtype dt = b->dt;
    const float eps = (float)b->cfg.norm_eps;
    dev_acts *a = &b->a;
    const int32_t *ids = STAGED(l, ids, int32_t), *pos = STAGED(l, pos, int32_t);
    const int32_t *cu = STAGED(l, cu, int32_t), *tiles = STAGED(l, tiles, int32_t);
    const int fused = fused_bucket(b); /* asked once: it queries the device */
    const int wo_fused = att_wo_bucket(b, T) && att_tiles(b, T) <= b->att_wo_tiles;

    LAUNCH(kn_embed_layernorm(b->ks, ids, b->w.tok_emb, b->emb_dt, b->cfg.vocab, b->w.emb_norm, NULL,
                              a->res, a->xn, dt, a->res, T, D, eps));
    for (int i = 0; i < b->n_layers; i++) {
        const dev_layer *L = &b->w.enc[i];
        const int global = b->cfg.layer_global[i];
        if (qkv_rope(b, L, T, global, pos, fused, err))
            return -1;
        pending_branch o;
        if (att_branch(b, L, T, cu, tiles, global ? -1 : b->window, wo_fused, &o, err) ||
            branch_norm(b, &o, a->res, L->mlp_norm, NULL, a->xn, NULL, T, eps, err))
            return -1;
        if (wi_geglu(b, L, T, fused, err))
            return -1;
        if (branch(b, a->g, L->wo2, NULL, a->o, a->res, T, F, &o, err))
            return -1;
        /* the next layer's attention LayerNorm, or h_enc = final_norm(res), fp32, in place */
        const int last = i + 1 == b->n_layers;
        if (branch_norm(b, &o, a->res, last ? b->w.final_norm : b->w.enc[i + 1].attn_norm, NULL,
                        last ? NULL : a->xn, last ? a->res : NULL, T, eps, err))
            return -1;
    }
    return 0;
}

/* Head layers 0..n-2 over all T slots and the first half of the last one
 * (LN1 and in_proj over all slots: keys and values span every row). */
static int enqueue_head_layers(cuda_backend *b, int T, const stage_layout *l, layad_error *err)
{
    const int D = b->D, D4 = b->Dh4, nl = b->n_head_layers;
    const kn_dtype dt = b->dt;
    const float eps = 1e-5f; /* nn.TransformerEncoderLayer / nn.LayerNorm default */
    dev_acts *a = &b->a;
    const int32_t *cu = STAGED(l, cu, int32_t), *tiles = STAGED(l, tiles, int32_t);

    pending_branch o = {.o = NULL, .parts = 1};
    for (int j = 0; j < nl; j++) {
        const dev_head_layer *L = &b->w.head[j];
        /* a = LN1(h): before the first layer h += type_emb[slot type] folded in,
         * after it the previous layer's pending FFN output */
        if (j == 0)
            LAUNCH(kn_type_emb_layernorm(b->ks, a->res, b->w.type_emb, STAGED(l, ttype, int32_t), L->n1_w, L->n1_b,
                                         a->xn, dt, NULL, T, D, eps));
        else if (branch_norm(b, &o, a->res, L->n1_w, L->n1_b, a->xn, NULL, T, eps, err))
            return -1;
        GEMM(a->xn, dt, L->in_w, dt, L->in_b, dt, a->qkv, dt, T, 3 * D, D, KN_EPI_NONE);
        if (j + 1 == nl)
            break;
        LAUNCH(attention(b, T, cu, tiles, -1));
        if (branch(b, a->att, L->out_w, L->out_b, a->o, NULL, T, D, &o, err) ||
            branch_norm(b, &o, a->res, L->n2_w, L->n2_b, a->xn, NULL, T, eps, err))
            return -1;
        GEMM(a->xn, dt, L->l1_w, dt, L->l1_b, dt, a->u, dt, T, D4, D, KN_EPI_RELU);
        if (branch(b, a->u, L->l2_w, L->l2_b, a->o, NULL, T, D4, &o, err))
            return -1;
    }
    return 0;
}

/* The last head layer on the gathered slots only, then the fp32 tail. The CLS
 * slot's scorer output is masked to -1e4, which leaves each row's softmax and
 * confidence features unchanged, so CLS slots ride along with the markers. */
static int enqueue_tail(cuda_backend *b, int T, int G, const stage_layout *l, layad_error *err)
{
    const int D = b->D, D4 = b->Dh4, R = batch_rows_cap(&b->policy, T);
    const kn_dtype dt = b->dt, f32 = KN_F32;
    const float eps = 1e-5f;
    dev_acts *a = &b->a;
    const dev_head_layer *L = &b->w.head[b->n_head_layers - 1];
    const int32_t *cu = STAGED(l, cu, int32_t), *goff = STAGED(l, goff, int32_t);
    const int32_t *gpos = STAGED(l, gpos, int32_t), *grow = STAGED(l, grow, int32_t);
    const uint8_t *gmask = STAGED(l, gmask, uint8_t);
    float *logits = (float *)((char *)a->out + l->logits);
    float *act = (float *)((char *)a->out + l->act);

    LAUNCH(kn_attention_select(b->ks, dt, a->qkv, a->attg, D, cu, -1, grow, gpos, G));
    pending_branch o;
    if (branch(b, a->attg, L->out_w, L->out_b, a->og, NULL, G, D, &o, err))
        return -1;
    /* hg = res[gathered slots] + out-proj, xg = LN2(hg): the gather inside the LayerNorm's
     * kernel when the branch is split, else a launch of its own */
    if (o.parts > 1)
        LAUNCH(kn_layernorm_parts_gather(b->ks, a->hg, a->res, gpos, (const float *)o.o, o.parts, (long)G * D, o.bias,
                                         L->n2_w, L->n2_b, a->xg, dt, NULL, G, D, eps));
    else {
        LAUNCH(kn_gather_rows(b->ks, f32, a->res, gpos, a->hg, G, D));
        if (branch_norm(b, &o, a->hg, L->n2_w, L->n2_b, a->xg, NULL, G, eps, err))
            return -1;
    }
    GEMM(a->xg, dt, L->l1_w, dt, L->l1_b, dt, a->fg, dt, G, D4, D, KN_EPI_RELU);
    /* h = hg + f2g; logits = scorer(h); features; act head on h[CLS]. */
    if (branch(b, a->fg, L->l2_w, L->l2_b, a->f2g, NULL, G, D4, &o, err) ||
        branch_norm(b, &o, a->hg, b->w.sc0_w, b->w.sc0_b, NULL, a->sn, G, eps, err))
        return -1;
    GEMM(a->sn, f32, b->w.sc1_w, b->tail_dt, b->w.sc1_b, f32, a->s1, f32, G, D, D, KN_EPI_GELU);
    LAUNCH(kn_decision_tail(b->ks, a->s1, b->w.sc3_w, b->w.sc3_b, gmask, a->hg, goff, logits, a->actin, G,
                            R, D));
    GEMM(a->actin, f32, b->w.act0_w, b->tail_dt, b->w.act0_b, f32, a->a1, f32, R, 256, D + 4,
         KN_EPI_GELU);
    GEMM(a->a1, f32, b->w.act2_w, b->tail_dt, b->w.act2_b, f32, act, f32, R, LAYA_N_ACT, 256,
         KN_EPI_NONE);
    return 0;
}

/* Event i of copy_timing. Inside a stream capture the record is made an
 * external event node of the graph, so graph replays are timed too; outside
 * one that flag is invalid and a plain record does. */
static int mark(cuda_backend *b, int i, layad_error *err)
{
    if (!b->o.copy_timing)
        return 0;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CU(cudaStreamIsCapturing(b->ks.s, &cs));
    CU(cudaEventRecordWithFlags(b->ev[i], b->ks.s,
                                cs == cudaStreamCaptureStatusActive ? cudaEventRecordExternal
                                                                    : cudaEventRecordDefault));
    return 0;
}

/* The whole bucket of T slots: inputs in, forward, outputs out (no
 * synchronization), the attention in form att (CUDA_ATT_*). In prepare mode
 * only the GEMM plans are made. */
int cuda_enqueue(cuda_backend *b, int T, int G, int att, layad_error *err)
{
    const stage_layout l = cuda_stage_layout(T, batch_rows_cap(&b->policy, T), G);
    const int bi = cuda_bucket_index(b, T);
    b->bucket = T;
    b->att_now = att;
    b->path_now = bi < 0 ? cuda_path_fixed(&b->o, T) : b->path[bi];
    if (!b->prepare_only) {
        if (mark(b, 0, err))
            return -1;
        KN(kn_copy(b->ks, b->a.in, b->pin_in_dev, l.in_bytes));
        if (mark(b, 1, err))
            return -1;
    }
    if (enqueue_encoder(b, T, &l, err) || enqueue_head_layers(b, T, &l, err) ||
        enqueue_tail(b, T, G, &l, err))
        return -1;
    if (!b->prepare_only) {
        if (mark(b, 2, err))
            return -1;
        KN(kn_copy(b->ks, b->pin_out_dev, b->a.out, l.out_bytes));
        if (mark(b, 3, err))
            return -1;
    }
    return 0;
}

/* Adds the device times of the forward that just synchronized: its copies
 * and its whole span. The times are diagnostics: one that cannot be read
 * counts 0 and never fails the forward (the error is not sticky; it is
 * cleared). */
static void add_device_times(cuda_backend *b, laya_fwd_timing *tm)
{
    float h2d = 0, d2h = 0, gpu = 0;
    if (!b->o.copy_timing)
        return;
    if (cudaEventElapsedTime(&h2d, b->ev[0], b->ev[1]) != cudaSuccess ||
        cudaEventElapsedTime(&d2h, b->ev[2], b->ev[3]) != cudaSuccess ||
        cudaEventElapsedTime(&gpu, b->ev[0], b->ev[3]) != cudaSuccess) {
        (void)cudaGetLastError();
        h2d = d2h = gpu = 0;
    }
    tm->h2d_s += h2d * 1e-3;
    tm->d2h_s += d2h * 1e-3;
    tm->gpu_s += gpu * 1e-3;
}

/* Packs rows[0..n) into the pinned input buffer laid out for bucket (T, G)
 * (cuda_stage_layout); l gets the layout's views. */
int cuda_stage(cuda_backend *b, int T, int G, const laya_row *rows, int n, batch_layout *l,
               layad_error *err)
{
    const int R = batch_rows_cap(&b->policy, T);
    const stage_layout s = cuda_stage_layout(T, R, G);
    unsigned char *p = b->pin_in;
    batch_layout_caps(l, T, R, G);
    l->cu = (int32_t *)(p + s.cu);
    l->ids = (int32_t *)(p + s.ids);
    l->pos = (int32_t *)(p + s.pos);
    l->ttype = (int32_t *)(p + s.ttype);
    l->tiles = (int32_t *)(p + s.tiles);
    l->goff = (int32_t *)(p + s.goff);
    l->gpos = (int32_t *)(p + s.gpos);
    l->grow = (int32_t *)(p + s.grow);
    l->gmask = p + s.gmask;
    return batch_pack(rows, n, b->cfg.pad_id >= 0 && b->cfg.pad_id < b->cfg.vocab ? b->cfg.pad_id : 0,
                      l, err);
}

/* One pack (it fits the largest bucket): stage, run, copy its rows' results. */
int cuda_run_pack(cuda_backend *b, const laya_row *rows, int n, int K, float *logits, float *act,
                  int use_graph, layad_error *err)
{
    long tokens = 0;
    for (int i = 0; i < n; i++)
        tokens += rows[i].len;
    const int T = batch_capacity(&b->policy, tokens, n);
    if (T < 0)
        return layad_fail(err, 500, "cuda backend: %d rows of %ld tokens exceed the largest pack", n,
                          tokens);
    const int G = batch_gcap(&b->policy, T, batch_gclass(&b->policy, T, batch_gathered(rows, n)));
    batch_layout l;
    laya_fwd_timing *tm = &b->base.last;
    const double t0 = layad_now();
    if (cuda_stage(b, T, G, rows, n, &l, err))
        return -1;
    const double t1 = layad_now();
    const int att = cuda_att_pack_ok(b, T) && l.n_tiles <= cuda_pack_tiles(b, T) ? CUDA_ATT_PACK : CUDA_ATT_GRID;
    if (att == CUDA_ATT_PACK)
        __atomic_fetch_add(&b->st.att_pack_runs, 1, __ATOMIC_RELAXED);
    if (cuda_launch(b, T, G, att, use_graph, &tm->launch_s, err))
        return -1;
    const double t2 = layad_now();
    add_device_times(b, tm);
    const stage_layout s = cuda_stage_layout(T, batch_rows_cap(&b->policy, T), G);
    const float *lg = (const float *)(b->pin_out + s.logits);
    const float *ac = (const float *)(b->pin_out + s.act);
    for (int r = 0; r < n; r++) {
        const int g0 = l.goff[r] + 1; /* slot g0 - 1 is the row's CLS */
        for (int k = 0; k < K; k++)
            logits[(size_t)r * K + k] = k < rows[r].n_markers ? lg[g0 + k] : LAYA_MASK_FILL;
        for (int q = 0; q < LAYA_N_ACT; q++)
            act[(size_t)r * LAYA_N_ACT + q] = ac[r * LAYA_N_ACT + q];
    }
    tm->stage_s += t1 - t0;
    tm->run_s += t2 - t1;
    tm->unpack_s += layad_now() - t2;
    __atomic_fetch_add(&b->st.rows, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&b->st.tokens, tokens, __ATOMIC_RELAXED);
    __atomic_fetch_add(&b->st.padded_tokens, (long long)T, __ATOMIC_RELAXED);
    return 0;
}
