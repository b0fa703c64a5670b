/*
 * attention_cpu.c - multi-head attention over the packed QKV buffer, CPU fp32.
 *
 * qkv is [B*L, 3D] (Q | K | V, heads of 64 inside each block), out is [.., D].
 * Query i of row b sees key j iff j < lens[b] and (window < 0 || |i - j| <= window)
 * (key padding mask, inclusive sliding window). Scale 1/8 = 1/sqrt(64).
 *
 * Algorithm (shared with the CUDA sibling, flash-attention style):
 *   - Work item = (row b, head h, query tile of ATT_TQ = 64 queries). Items are
 *     independent; OpenMP splits them statically (thread-count independent).
 *   - Keys are walked in tiles of ATT_TK = 64 aligned at j = 0 (tile t covers
 *     [64t, 64t + 64)). Tile predicate: tiles outside [0, lens[b]) or outside
 *     the query tile's window band are skipped whole; element predicate: the
 *     visibility rule above, per (i, j). A skipped tile and a tile with no
 *     visible key for query i leave that query's state untouched, so padding
 *     (a larger L) never changes a result.
 *   - Online softmax per query in fp32: s_j = (q . k_j) * 0.125 (dot product in
 *     d order); per tile m' = max(m, max_j s_j); alpha = exp(m - m') (0 while m is
 *     -inf); l = l * alpha + sum_j exp(s_j - m'); acc = acc * alpha +
 *     sum_j exp(s_j - m') v_j (j ascending). At the end out = acc / l, or 0 when
 *     l == 0: a query with no visible key (every query of a row with lens[b] == 0,
 *     a padding query farther than the window from the last real key) gets
 *     finite zeros, never NaN.
 * A query selection (kn_cpu_attention_select) runs the same algorithm for a
 * subset of query positions per row: keys and values still span the row.
 */
#include <math.h>
#include <stddef.h>

#include "kernels/cpu.h"

#define ATT_TQ 64 /* queries per work item */
#define ATT_TK 64 /* keys per tile */
#define ATT_SCALE 0.125f

typedef struct att_args {
    const float *qkv;
    float *out;
    int B, L, D;
    const int32_t *lens;
    int window;
    const int32_t *qsel; /* NULL: queries 0..L-1; else nq positions per row */
    int nq;              /* queries per row */
} att_args;

/* One (b, h, query tile) work item. */
static void att_item(const att_args *a, int b, int h, int t0)
{
    const int D3 = 3 * a->D;
    const int len = a->lens[b] < a->L ? a->lens[b] : a->L;
    const int tq = a->nq - t0 < ATT_TQ ? a->nq - t0 : ATT_TQ;
    const float *base = a->qkv + (size_t)b * a->L * D3;
    float m[ATT_TQ], l[ATT_TQ], acc[ATT_TQ][KN_HEAD_DIM];
    int qi[ATT_TQ];
    int qmin = 0x7fffffff, qmax = -1;
    for (int t = 0; t < tq; t++) {
        qi[t] = a->qsel ? a->qsel[(size_t)b * a->nq + t0 + t] : t0 + t;
        qmin = qi[t] < qmin ? qi[t] : qmin;
        qmax = qi[t] > qmax ? qi[t] : qmax;
        m[t] = -INFINITY;
        l[t] = 0.0f;
        for (int d = 0; d < KN_HEAD_DIM; d++)
            acc[t][d] = 0.0f;
    }
    /* Key range any query of this tile can see. */
    int jlo = 0, jhi = len;
    if (a->window >= 0) {
        jlo = qmin - a->window > 0 ? qmin - a->window : 0;
        jhi = qmax + a->window + 1 < len ? qmax + a->window + 1 : len;
    }
    float s[ATT_TK];
    for (int j0 = (jlo / ATT_TK) * ATT_TK; j0 < jhi; j0 += ATT_TK) {
        const int j1 = j0 + ATT_TK < len ? j0 + ATT_TK : len;
        for (int t = 0; t < tq; t++) {
            const int i = qi[t];
            const float *q = base + (size_t)i * D3 + (size_t)h * KN_HEAD_DIM;
            int lo = j0, hi = j1;
            if (a->window >= 0) {
                lo = i - a->window > lo ? i - a->window : lo;
                hi = i + a->window + 1 < hi ? i + a->window + 1 : hi;
            }
            if (lo >= hi)
                continue; /* nothing visible in this tile for query i */
            float mt = -INFINITY;
            for (int j = lo; j < hi; j++) {
                const float *k = base + (size_t)j * D3 + a->D + (size_t)h * KN_HEAD_DIM;
                float dot = 0.0f;
                for (int d = 0; d < KN_HEAD_DIM; d++)
                    dot += q[d] * k[d];
                s[j - j0] = dot * ATT_SCALE;
                mt = s[j - j0] > mt ? s[j - j0] : mt;
            }
            const float mn = mt > m[t] ? mt : m[t];
            const float alpha = m[t] == -INFINITY ? 0.0f : expf(m[t] - mn);
            float psum = 0.0f;
            float *o = acc[t];
            for (int d = 0; d < KN_HEAD_DIM; d++)
                o[d] *= alpha;
            for (int j = lo; j < hi; j++) {
                const float p = expf(s[j - j0] - mn);
                const float *v = base + (size_t)j * D3 + 2 * (size_t)a->D + (size_t)h * KN_HEAD_DIM;
                psum += p;
                for (int d = 0; d < KN_HEAD_DIM; d++)
                    o[d] += p * v[d];
            }
            l[t] = l[t] * alpha + psum;
            m[t] = mn;
        }
    }
    for (int t = 0; t < tq; t++) {
        float *dst = a->out + ((size_t)b * a->nq + t0 + t) * a->D + (size_t)h * KN_HEAD_DIM;
        for (int d = 0; d < KN_HEAD_DIM; d++)
            dst[d] = l[t] > 0.0f ? acc[t][d] / l[t] : 0.0f;
    }
}

static void att_run(const att_args *a)
{
    const int H = a->D / KN_HEAD_DIM;
    const int nt = (a->nq + ATT_TQ - 1) / ATT_TQ;
    const long items = (long)a->B * H * nt;
#pragma omp parallel for schedule(static)
    for (long it = 0; it < items; it++) {
        int t = (int)(it % nt);
        int h = (int)((it / nt) % H);
        int b = (int)(it / ((long)nt * H));
        att_item(a, b, h, t * ATT_TQ);
    }
}

void kn_cpu_attention(const float *qkv, float *out, int B, int L, int D,
                      const int32_t *lens, int window)
{
    att_args a = {qkv, out, B, L, D, lens, window, NULL, L};
    att_run(&a);
}

void kn_cpu_attention_select(const float *qkv, float *out, int B, int L, int D,
                             const int32_t *lens, int window, const int32_t *qsel, int nq)
{
    att_args a = {qkv, out, B, L, D, lens, window, qsel, nq};
    att_run(&a);
}
