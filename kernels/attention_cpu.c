/*
 * attention_cpu.c - multi-head attention over the packed QKV buffer, CPU fp32.
 *
 * qkv is [T, 3D] (Q | K | V, heads of 64 inside each block), out is [T, D],
 * rows packed back to back: row r holds slots [cu[r], cu[r+1]). Query i of row
 * r sees key j of the same row iff (window < 0 || |i - j| <= window)
 * (inclusive sliding window). Scale 1/8 = 1/sqrt(64).
 *
 * Algorithm (shared with the CUDA sibling, flash-attention style):
 *   - Work item = (query tile, head h): a tile is ATT_TQ = 64 queries of one
 *     row, from the host-built list of kn_attention_tiles (row, first slot),
 *     the same list the CUDA kernel's grid walks. Items are independent;
 *     OpenMP splits them statically (thread-count independent).
 *   - Keys are walked in tiles of ATT_TK = 64 aligned at the row start (tile t
 *     covers row positions [64t, 64t + 64)). Tile predicate: tiles past the row
 *     or outside the query tile's window band are skipped whole; element
 *     predicate: the visibility rule above, per (i, j). A skipped tile and a
 *     tile with no visible key for query i leave that query's state untouched,
 *     so neither the row's place in the batch nor its neighbours change a
 *     result: a row packed with others is bit-identical to the row alone.
 *   - Scores of a (query tile, key tile) pair are computed as one small block,
 *     S = Q K^T * 0.125, in 3 x 4 register micro-tiles (partial micro-tiles read
 *     clamped rows and discard them); each dot product is 8 lane partial sums
 *     over d = l mod 8, reduced lane 0..7, so a score does not depend on the
 *     tile it was computed in.
 *   - Online softmax per query in fp32 over the tiles in order (the CUDA sibling
 *     rounds P to 16 bits, sums those rounded weights into l, and walks the
 *     tiles in two interleaved halves whose states it combines: roundings only,
 *     within the kernel tests' tolerance): per tile m' = max(m, max_j s_j);
 *     alpha = exp(m - m') (0 while m is
 *     -inf); l = l * alpha + sum_j exp(s_j - m'); acc = acc * alpha +
 *     sum_j exp(s_j - m') v_j (j ascending). At the end out = acc / l, or 0 when
 *     l == 0: a query with no visible key gets finite zeros, never NaN.
 * A query selection (kn_cpu_attention_select) runs the same algorithm for a
 * list of (row, slot) queries, grouped by row: keys and values still span
 * the row.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/cpu.h"

#define ATT_TQ 64 /* queries per work item */
#define ATT_TK 64 /* keys per tile */
#define ATT_SCALE 0.125f
#define ATT_VL 8 /* fp32 lanes of the dot-product partial sums */

typedef float v8f __attribute__((vector_size(ATT_VL * sizeof(float))));
#define LOAD8(dst, p) memcpy(&(dst), (p), sizeof(v8f))
#define STORE8(p, src) memcpy((p), &(src), sizeof(v8f))

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define ATT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define ATT_CLONES
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define ATT_CONTRACT __attribute__((optimize("fp-contract=fast"))) /* FMA in the clones */
#else
#define ATT_CONTRACT
#endif

typedef struct att_args {
    const float *qkv;
    float *out;
    int D;
    const int32_t *cu;
    int window;
} att_args;

/* One work item: tq (<= ATT_TQ) queries of row r, head h; query t is row
 * position qi[t] and writes output row oi[t]. */
typedef struct att_item_q {
    int r, h, tq;
    int qi[ATT_TQ], oi[ATT_TQ];
} att_item_q;

/* S[t][c] = (q_t . k_c) * 0.125 for a 3 x 4 micro-tile of (query, key) pairs:
 * each dot is 8 lane partial sums (lane l sums d = l mod 8) reduced lane 0..7,
 * so a pair's score never depends on which other pairs share its micro-tile. */
static inline void scores_3x4(const float *const qr[3], const float *const kr[4], float out[3][4])
{
    const v8f zero = {0};
    v8f c[3][4];
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++)
        c[i / 4][i % 4] = zero;
    for (int d = 0; d < KN_HEAD_DIM; d += ATT_VL) {
        v8f a0, a1, a2;
        LOAD8(a0, qr[0] + d);
        LOAD8(a1, qr[1] + d);
        LOAD8(a2, qr[2] + d);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            v8f b;
            LOAD8(b, kr[j] + d);
            c[0][j] += a0 * b;
            c[1][j] += a1 * b;
            c[2][j] += a2 * b;
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) {
        const v8f v = c[i / 4][i % 4];
        float sum = v[0];
#pragma GCC unroll 8
        for (int l = 1; l < ATT_VL; l++)
            sum += v[l];
        out[i / 4][i % 4] = sum * ATT_SCALE;
    }
}

/* Scores of one key tile [j0, j0 + tk) for the item's tq queries into S, in 3 x 4 micro-tiles
 * (partial micro-tiles read clamped rows and discard them). */
ATT_CONTRACT ATT_CLONES static void tile_scores(const float *qbase, const float *kbase, size_t D3, const int *qi,
                                                int tq, int j0, int tk, float S[ATT_TQ][ATT_TK])
{
    for (int t = 0; t < tq; t += 3) {
        const float *qr[3];
        for (int i = 0; i < 3; i++)
            qr[i] = qbase + (size_t)qi[t + i < tq ? t + i : tq - 1] * D3;
        for (int c = 0; c < tk; c += 4) {
            const float *kr[4];
            for (int j = 0; j < 4; j++)
                kr[j] = kbase + (size_t)(j0 + (c + j < tk ? c + j : tk - 1)) * D3;
            float o[3][4];
            scores_3x4(qr, kr, o);
            for (int i = 0; i < 3 && t + i < tq; i++)
                for (int j = 0; j < 4 && c + j < tk; j++)
                    S[t + i][c + j] = o[i][j];
        }
    }
}

/* One query's online softmax step over the visible keys [lo, hi) of a tile: st holds its
 * scores indexed by key position (turned into probabilities in place); m, l and acc are
 * its running max, sum and output row, updated. */
ATT_CONTRACT ATT_CLONES static void query_step(float *st, const float *vbase, size_t D3, int lo, int hi, float *m,
                                               float *l, float acc[KN_HEAD_DIM])
{
    float mt = -INFINITY;
    for (int j = lo; j < hi; j++)
        mt = st[j] > mt ? st[j] : mt;
    const float mn = mt > *m ? mt : *m;
    const float alpha = *m == -INFINITY ? 0.0f : expf(*m - mn);
    float psum = 0.0f;
    for (int j = lo; j < hi; j++) { /* scores -> probabilities, in place */
        st[j] = expf(st[j] - mn);
        psum += st[j];
    }
    v8f o[KN_HEAD_DIM / ATT_VL];
#pragma GCC unroll 8
    for (int c = 0; c < KN_HEAD_DIM / ATT_VL; c++) {
        LOAD8(o[c], acc + c * ATT_VL);
        o[c] *= alpha;
    }
    for (int j = lo; j < hi; j++) {
        const float p = st[j];
        const float *v = vbase + (size_t)j * D3;
#pragma GCC unroll 8
        for (int c = 0; c < KN_HEAD_DIM / ATT_VL; c++) {
            v8f vv;
            LOAD8(vv, v + c * ATT_VL);
            o[c] += p * vv;
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < KN_HEAD_DIM / ATT_VL; c++)
        STORE8(acc + c * ATT_VL, o[c]);
    *l = *l * alpha + psum;
    *m = mn;
}

/* One work item (see att_item_q); positions are relative to the row start. */
ATT_CONTRACT ATT_CLONES static void att_item(const att_args *a, const att_item_q *w)
{
    const int D3 = 3 * a->D, tq = w->tq;
    const int len = a->cu[w->r + 1] - a->cu[w->r];
    const int *qi = w->qi;
    const float *base = a->qkv + (size_t)a->cu[w->r] * D3;
    const float *qbase = base + (size_t)w->h * KN_HEAD_DIM;
    const float *kbase = qbase + a->D, *vbase = qbase + 2 * (size_t)a->D;
    float m[ATT_TQ], l[ATT_TQ], acc[ATT_TQ][KN_HEAD_DIM], S[ATT_TQ][ATT_TK];
    int qmin = 0x7fffffff, qmax = -1;
    for (int t = 0; t < tq; t++) {
        qmin = qi[t] < qmin ? qi[t] : qmin;
        qmax = qi[t] > qmax ? qi[t] : qmax;
        m[t] = -INFINITY;
        l[t] = 0.0f;
        memset(acc[t], 0, sizeof acc[t]);
    }
    /* Key range any query of this tile can see. */
    int jlo = 0, jhi = len;
    if (a->window >= 0) {
        jlo = qmin - a->window > 0 ? qmin - a->window : 0;
        jhi = qmax + a->window + 1 < len ? qmax + a->window + 1 : len;
    }
    for (int j0 = (jlo / ATT_TK) * ATT_TK; j0 < jhi; j0 += ATT_TK) {
        const int j1 = j0 + ATT_TK < len ? j0 + ATT_TK : len;
        tile_scores(qbase, kbase, (size_t)D3, qi, tq, j0, j1 - j0, S);
        /* Per query: mask, online softmax update, P.V with the output row in registers. */
        for (int t = 0; t < tq; t++) {
            const int i = qi[t];
            int lo = j0, hi = j1;
            if (a->window >= 0) {
                lo = i - a->window > lo ? i - a->window : lo;
                hi = i + a->window + 1 < hi ? i + a->window + 1 : hi;
            }
            if (lo < hi) /* else nothing visible in this tile for query i */
                query_step(S[t] - j0, vbase, (size_t)D3, lo, hi, &m[t], &l[t], acc[t]);
        }
    }
    for (int t = 0; t < tq; t++) {
        float *dst = a->out + (size_t)w->oi[t] * a->D + (size_t)w->h * KN_HEAD_DIM;
        for (int d = 0; d < KN_HEAD_DIM; d++)
            dst[d] = l[t] > 0.0f ? acc[t][d] / l[t] : 0.0f;
    }
}

int kn_attention_tiles(const int32_t *cu, int R, int32_t *tiles, int cap)
{
    int n = 0;
    for (int r = 0; r < R; r++)
        for (int q = cu[r]; q < cu[r + 1]; q += ATT_TQ) {
            if (n >= cap)
                return -1;
            tiles[2 * n] = r;
            tiles[2 * n + 1] = q;
            n++;
        }
    for (int i = n; i < cap; i++) {
        tiles[2 * i] = -1;
        tiles[2 * i + 1] = 0;
    }
    return n;
}

void kn_cpu_attention(const float *qkv, float *out, int T, int D, const int32_t *cu,
                      const int32_t *tiles, int n_tiles, int window)
{
    (void)T;
    const att_args a = {qkv, out, D, cu, window};
    const int H = D / KN_HEAD_DIM;
    const long items = (long)n_tiles * H;
#pragma omp parallel for schedule(static)
    for (long it = 0; it < items; it++) {
        const int i = (int)(it / H), r = tiles[2 * i], q0 = tiles[2 * i + 1];
        if (r < 0)
            continue;
        att_item_q w = {.r = r, .h = (int)(it % H)};
        const int end = cu[r + 1];
        w.tq = end - q0 < ATT_TQ ? end - q0 : ATT_TQ;
        for (int t = 0; t < w.tq; t++) {
            w.qi[t] = q0 - cu[r] + t;
            w.oi[t] = q0 + t;
        }
        att_item(&a, &w);
    }
}

/* Selected queries: one item per (query, head). A score does not depend on the
 * tile it was computed in, so this equals kn_cpu_attention's output bit for
 * bit; the head's last layer selects only a few queries per row. */
void kn_cpu_attention_select(const float *qkv, float *out, int D, const int32_t *cu, int window,
                             const int32_t *qrow, const int32_t *qpos, int G)
{
    const att_args a = {qkv, out, D, cu, window};
    const int H = D / KN_HEAD_DIM;
    const long items = (long)G * H;
#pragma omp parallel for schedule(static)
    for (long it = 0; it < items; it++) {
        const int g = (int)(it / H), h = (int)(it % H);
        if (qrow[g] < 0) {
            memset(out + (size_t)g * D + (size_t)h * KN_HEAD_DIM, 0, sizeof(float) * KN_HEAD_DIM);
            continue;
        }
        att_item_q w = {.r = qrow[g], .h = h, .tq = 1};
        w.qi[0] = qpos[g] - cu[w.r];
        w.oi[0] = g;
        att_item(&a, &w);
    }
}
