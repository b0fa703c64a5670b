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
 * Layouts: row-major; tokens are laid out padded, [B, L] -> M = B*L rows.
 * Linear weights are PyTorch-style W[N, K] (y = x W^T + b).
 */
#ifndef LAYAD_KERNELS_CPU_H
#define LAYAD_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

enum kn_epilogue { KN_EPI_NONE = 0, KN_EPI_GELU = 1 /* exact erf GELU */, KN_EPI_RELU = 2 };

#define KN_HEAD_DIM 64
#define KN_ROPE_HALF 32 /* head_dim / 2 frequencies */

/* Y[M,N] = epi(X[M,K] . W[N,K]^T + bias[N]); bias may be NULL. Any M, N, K >= 0. */
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

/* Multi-head attention over packed qkv [B*L, 3D] -> out [B*L, D], heads of 64,
 * scale 1/8. Query i of row b sees key j iff j < lens[b] and (window < 0 ||
 * |i - j| <= window). Online softmax in fp32 over key tiles; a query with no
 * visible key (including every query of a row with lens[b] == 0) gets zeros.
 * Query rows past lens[b] follow the same rule and stay finite. */
void kn_cpu_attention(const float *qkv, float *out, int B, int L, int D,
                      const int32_t *lens, int window);

/* kn_cpu_attention for a subset of queries: row b's queries are the positions
 * qsel[b*nq + t] (t < nq, each < L), written to out[(b*nq + t), :]; keys and
 * values still span the whole row (the last head layer needs only CLS and the
 * markers). Same algorithm and masks, so each selected output equals the
 * corresponding kn_cpu_attention output bit for bit. */
void kn_cpu_attention_select(const float *qkv, float *out, int B, int L, int D,
                             const int32_t *lens, int window, const int32_t *qsel, int nq);

/* ---- gathers and decision-head ops (laya-model.md §5) ---- */

/* out[m, :] = table[ids[m], :] for m < M (token embedding lookup); ids must be
 * valid rows of table (the caller checks them against the vocabulary). */
void kn_cpu_embed(const float *table, const int32_t *ids, float *out, int M, int D);

/* h[b, t, :] += type_emb[qtype[b], :] for every t < L (pads included). */
void kn_cpu_add_type_emb(float *h, const float *type_emb, const int32_t *qtype,
                         int B, int L, int D);

/* out[b*K + k, :] = h[b, pos[b*K + k], :]; pos indexes within row b. */
void kn_cpu_gather_rows(const float *h, const int32_t *pos, float *out,
                        int B, int L, int K, int D);

/* logits[i] = mask[i] ? dot(x[i, :], w) + bias : -1e4, x is [n, D]. */
void kn_cpu_scorer_tail(const float *x, const float *w, float bias, const uint8_t *mask,
                        float *logits, int n, int D);

/* feats[b] = [top1, top1 - top2, entropy / ln(k), k / 255] from the
 * uncalibrated softmax of logits[b, 0:K] (all K slots), k = max(2, #mask). */
void kn_cpu_conf_features(const float *logits, const uint8_t *mask, float *feats, int B, int K);

/* out[b] = concat(h[b, 0, :], feats[b, 0:4]) -> [B, D + 4]. */
void kn_cpu_act_input(const float *h, const float *feats, float *out, int B, int L, int D);

#endif
