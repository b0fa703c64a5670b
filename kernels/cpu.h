/*
 * cpu.h - CPU fp32 specializations of layad's five kernels and the head ops.
 *
 * Each function keeps the algorithm of its CUDA sibling in kernels/ (.cu, the
 * same tiles, padding predicates, masks and online softmax) but runs in fp32
 * on the host, parallelized over independent output rows/tiles (OpenMP), so
 * results do not depend on the thread count. This is the exact reference
 * path: the whole model runs on it in CI, and the GPU kernels are tested
 * against it.
 *
 * Layouts: row-major; tokens packed (varlen), row r of a batch at slots
 * [cu[r], cu[r+1]) (kernels/cuda.h says the same for the GPU).
 * Linear weights are PyTorch-style W[N, K] (y = x W^T + b).
 */
#ifndef LAYAD_KERNELS_CPU_H
#define LAYAD_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* KN_EPI_ACC: Y += X . W^T (+ bias), one fp32 add into what Y holds: the
 * residual stream's add, done where the projection's sum is still in fp32. */
enum kn_epilogue { KN_EPI_NONE = 0, KN_EPI_GELU = 1 /* exact erf GELU */, KN_EPI_RELU = 2, KN_EPI_ACC = 3 };

#define KN_HEAD_DIM 64
#define KN_ROPE_HALF 32 /* head_dim / 2 frequencies */

/* Y[M,N] = epi(X[M,K] . W[N,K]^T + bias[N]); bias may be NULL. Any M, N, K >= 0.
 * With KN_EPI_ACC, Y[m,n] + (X . W^T + bias)[m,n]. */
void kn_cpu_gemm(const float *X, const float *W, const float *bias, float *Y,
                 int M, int N, int K, int epi);

/* The same GEMM over weights packed once at start-up (the CPU backend's path):
 * kn_cpu_pack_weights lays W[N,K] out as panels of KN_PACK_NR columns, k-major
 * (Wp[p][k][j] = W[p*16 + j][k], the last panel zero-padded), so the micro-
 * kernel broadcasts X and streams contiguous W. Wp holds kn_cpu_packed_size(N, K)
 * floats. kn_cpu_gemm_packed computes exactly what kn_cpu_gemm specifies (same
 * epilogues, bias, any M, N, K), summing each output in k order. */
#define KN_PACK_NR 16
size_t kn_cpu_packed_size(int N, int K);
void kn_cpu_pack_weights(const float *W, float *Wp, int N, int K);
void kn_cpu_gemm_packed(const float *X, const float *Wp, const float *bias, float *Y,
                        int M, int N, int K, int epi);

/* out[M,F] = gelu_erf(U[:, 0:F]) * U[:, F:2F], U is [M, 2F]. */
void kn_cpu_geglu(const float *U, float *out, int M, int F);

/* Per row m: if x != NULL then r[m] += x[m] (exact fp32 add, in place);
 * y[m] = (r[m] - mean) / sqrt(var + eps) * w + b (biased variance; b may be NULL).
 * y may alias r or x. */
void kn_cpu_layernorm(float *r, const float *x, const float *w, const float *b,
                      float *y, int M, int D, float eps);

/* Fills cos/sin tables [max_pos, 32] the way transformers does (fp32):
 * inv_freq[j] = 1 / theta^(2j/64) in float32, angle = (float)pos * inv_freq[j]. */
void kn_rope_tables(float *cos_tab, float *sin_tab, int max_pos, double theta);

/* Rotate-half RoPE in place on the Q block [0, D) and K block [D, 2D) of the
 * packed qkv [M, 3D] (V block untouched), heads of 64; row m has position pos[m]. */
void kn_cpu_rope(float *qkv, int M, int D, const int32_t *pos,
                 const float *cos_tab, const float *sin_tab);

/* Query tile of the attention kernels; a packed batch of R rows in T slots needs
 * at most kn_attention_tiles_cap(T, R) tiles (each row: ceil(len / KN_ATT_TQ)). */
#define KN_ATT_TQ 64
static inline int kn_attention_tiles_cap(int T, int R) { return T / KN_ATT_TQ + R; }

/* Fills tiles[2*i] = row, tiles[2*i+1] = first query (absolute slot) for every
 * query tile of the rows cu[0..R] (host memory), then row = -1 up to cap
 * entries. Returns the number of live tiles, or -1 if cap is too small. The
 * CPU and GPU attention both take this list (host code, kernels/attention_cpu.c). */
int kn_attention_tiles(const int32_t *cu, int R, int32_t *tiles, int cap);

/* Multi-head attention over packed qkv [T, 3D] -> out [T, D], heads of 64,
 * scale 1/8, over the query tiles of kn_attention_tiles (kernels/cuda.h; tiles
 * with row < 0 skipped). Query i of row r sees key j iff cu[r] <= j < cu[r+1]
 * and (window < 0 || |i - j| <= window). Online softmax in fp32 over key tiles
 * aligned to the row start; a query with no visible key gets zeros. */
void kn_cpu_attention(const float *qkv, float *out, int T, int D, const int32_t *cu,
                      const int32_t *tiles, int n_tiles, int window);

/* kn_cpu_attention for selected queries: query g is slot qpos[g] of row qrow[g]
 * (qrow < 0: zeros), written to out[g, :]; keys and values span the whole row.
 * Same algorithm and masks, so each output equals kn_cpu_attention's for that
 * slot bit for bit. */
void kn_cpu_attention_select(const float *qkv, float *out, int D, const int32_t *cu, int window,
                             const int32_t *qrow, const int32_t *qpos, int G);

/* ---- gathers and decision-head ops (laya-model.md §5) ---- */

/* out[m, :] = table[ids[m], :] for m < M (token embedding lookup); ids must be
 * valid rows of table (the caller checks them against the vocabulary). */
void kn_cpu_embed(const float *table, const int32_t *ids, float *out, int M, int D);

/* h[m, :] += type_emb[ttype[m], :] for m < M (ttype: each slot's row's type). */
void kn_cpu_add_type_emb(float *h, const float *type_emb, const int32_t *ttype, int M, int D);

/* out[g, :] = h[idx[g], :] for g < G. */
void kn_cpu_gather_rows(const float *h, const int32_t *idx, float *out, int G, int D);

/* logits[i] = mask[i] ? dot(x[i, :], w) + bias : -1e4, x is [n, D]. */
void kn_cpu_scorer_tail(const float *x, const float *w, float bias, const uint8_t *mask,
                        float *logits, int n, int D);

/* feats[r] = [top1, top1 - top2, entropy / ln(k), k / 255] from the
 * uncalibrated softmax of logits[goff[r] .. goff[r+1]) (the row's CLS slot and
 * markers), k = max(2, #mask); an empty row gets zeros. */
void kn_cpu_conf_features(const float *logits, const uint8_t *mask, const int32_t *goff,
                          float *feats, int R);

/* out[r] = concat(h[goff[r], :], feats[r, 0:4]) -> [R, D + 4]; empty rows get zeros. */
void kn_cpu_act_input(const float *h, const float *feats, const int32_t *goff, float *out, int R,
                      int D);

#ifdef __cplusplus
}
#endif

#endif
