/*
 * cuda.h - launchers of layad's five fast kernels and the head ops on the GPU.
 *
 * C-callable (extern "C"); implemented in the kernels/ .cu files for fp16 and bf16. Each
 * launcher takes a cudaStream_t and a dtype, validates its shapes on the host,
 * launches, checks cudaGetLastError() and returns 0 or -1. None of them
 * allocates or synchronizes, so every call can be captured in a CUDA graph; the
 * only objects with state (the GEMM context, its workspace and algorithm cache)
 * are created at start-up. On -1 the failing statement, file and line are
 * printed on stderr and kept for kn_cuda_last_error().
 *
 * Each kernel shares its algorithm with the CPU fp32 specialization in
 * kernels/cpu.h (tiles, padding predicates, masks, online softmax); the tests
 * in tests/gpu_kernels.c compare the two on identical inputs.
 *
 * Conventions (all pointers are device pointers unless said otherwise):
 *   - row-major; tokens laid out padded, [B, L] -> M = B*L rows;
 *   - linear weights PyTorch-style W[N, K] in the serving dtype (y = x W^T + b);
 *   - vector parameters (biases, LayerNorm weight/bias, type embedding, the
 *     scorer's last row) in fp32: they are small and the reference is fp32;
 *   - the residual stream, LayerNorm statistics, softmax and everything from
 *     the scorer on are fp32;
 *   - integer side data (lengths, positions, ids, marker positions) int32,
 *     masks uint8 (0/1).
 * Device pointers passed to 16-bit kernels should be 16-byte aligned (every
 * cudaMalloc'd arena slice at a 256-byte boundary is); launchers that need it
 * for a fast path check it and fall back to a general path otherwise.
 */
#ifndef LAYAD_KERNELS_CUDA_H
#define LAYAD_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "kernels/cpu.h" /* enum kn_epilogue, KN_HEAD_DIM, KN_ROPE_HALF */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kn_dtype { KN_F16 = 0, KN_BF16 = 1, KN_F32 = 2 } kn_dtype;

/* Bytes per element of a dtype; 0 for an unknown one. */
size_t kn_dtype_size(kn_dtype dt);

/* Programmatic dependent launch of our kernels (kernels/cuda_util.cuh: each may
 * be scheduled while its predecessor runs and waits at its first statement).
 * On by default; off (0) launches them plainly. Process-wide: set it before
 * any launch, for the benchmark's same-run comparison. */
void kn_set_pdl(int on);
const char *kn_dtype_name(kn_dtype dt); /* "fp16", "bf16", "fp32" */

/* The last failure of a launcher on this thread ("file:line: statement: error"),
 * "" if none. */
const char *kn_cuda_last_error(void);

/* ---- conversion ----------------------------------------------------------- */

/* dst[i] = (dst dtype) src[i] for i < n, round to nearest even (f32 -> 16-bit,
 * f16 <-> bf16 via f32). Used to upload weights in the serving dtype and by the
 * tests. src and dst must not overlap. */
int kn_convert(cudaStream_t s, const void *src, kn_dtype sdt, void *dst, kn_dtype ddt, size_t n);

/* ---- GEMM: Y[M,N] = epi(X[M,K] . W[N,K]^T + bias[N]) ----------------------- */

/* A GEMM context: one cuBLASLt handle, its own workspace (allocated at create)
 * and a cache of per-shape plans (descriptors + the heuristic's algorithm).
 * Not thread-safe: one per GPU worker thread / device. */
typedef struct kn_gemm_ctx kn_gemm_ctx;

/* Creates a context on the current device with a workspace of workspace_bytes
 * (0: 32 MiB) and room for max_plans shapes (0: 256). NULL on failure. */
kn_gemm_ctx *kn_gemm_ctx_create(size_t workspace_bytes, int max_plans);
void kn_gemm_ctx_destroy(kn_gemm_ctx *ctx);
size_t kn_gemm_ctx_workspace_bytes(const kn_gemm_ctx *ctx);

/*
 * Y = epi(X . W^T + bias) with fp32 accumulation.
 *   xdt: KN_F16 / KN_BF16 (= wdt), or KN_F32 (an fp32 activation times 16-bit
 *        weights, e.g. the scorer: computed in fp32 on the CUDA cores);
 *   wdt: KN_F16 / KN_BF16;  ydt: KN_F16 / KN_BF16 / KN_F32;
 *   bias: fp32 [N] or NULL;  epi: KN_EPI_NONE / KN_EPI_GELU (exact erf) /
 *   KN_EPI_RELU. Any M, N, K >= 0 (M == 0 or N == 0: nothing happens;
 *   K == 0: Y = epi(bias)).
 * Paths: cuBLASLt (epilogues DEFAULT/BIAS/RELU/RELU_BIAS) when xdt == wdt and
 * K, N and the pointers are 16-byte aligned; the erf GELU (cuBLASLt's GELU is
 * the tanh form) is then one in-place pass over Y after cuBLASLt with bias.
 * Otherwise our own kernels: up to 64 rows a weight-streaming kernel, beyond
 * that 64 x 64 tiles (tensor cores for 16-bit X, fp32 CUDA cores for fp32 X);
 * see bench/results/kernels-h200.md for what each costs. The cuBLASLt algorithm of each
 * shape is chosen once (the first call, or kn_gemm_prepare at warm-up), cached
 * and reused, so results are bit-identical run to run and capture does not
 * query heuristics. Returns -1 when the plan cache is full.
 * cuBLASLt takes the bias only in the output's dtype: with an fp32 bias and a
 * 16-bit Y, kn_gemm first converts the bias into the context's scratch on s
 * (one small launch; the bias is then rounded to the output dtype, as in a
 * 16-bit PyTorch Linear). kn_gemm_ex takes the bias in wdt and skips that.
 * A context's GEMMs must be issued on one stream at a time (shared scratch).
 */
int kn_gemm(kn_gemm_ctx *ctx, cudaStream_t s, const void *X, kn_dtype xdt,
            const void *W, kn_dtype wdt, const float *bias, void *Y, kn_dtype ydt,
            int M, int N, int K, int epi);

/* kn_gemm with the bias in bdt: KN_F32 (as kn_gemm) or wdt (16-bit, no
 * conversion launch when Y has that dtype too). */
int kn_gemm_ex(kn_gemm_ctx *ctx, cudaStream_t s, const void *X, kn_dtype xdt,
               const void *W, kn_dtype wdt, const void *bias, kn_dtype bdt, void *Y,
               kn_dtype ydt, int M, int N, int K, int epi);

/* Tuning (off by default; the GPU backend turns it on unless told not to):
 * the plan of a shape keeps up to 8 of cuBLASLt's heuristic candidates and
 * the first launch outside graph capture times them on its own operands and
 * keeps the fastest (kernels/gemm.cu: gemm_tune). Set before the first GEMM.
 * Timing noise can make two processes pick different algorithms (last-bit
 * differences between processes); within a context the choice never changes. */
void kn_gemm_ctx_set_tuning(kn_gemm_ctx *ctx, int on);

/* Chooses and caches the plan of a shape (call at warm-up, before graph
 * capture). has_bias: whether calls will pass a bias. X, W, Y: the operands the
 * calls will use, or all NULL (then assumed 16-byte aligned); with operands and
 * tuning on, the shape's candidates are timed on them on stream s (the only
 * launches it makes, once per shape); without, nothing is launched. */
int kn_gemm_prepare(kn_gemm_ctx *ctx, kn_dtype xdt, kn_dtype wdt, kn_dtype ydt,
                    int M, int N, int K, int epi, int has_bias, cudaStream_t s, const void *X,
                    const void *W, void *Y);

/* Which path kn_gemm takes for these arguments: 1 cuBLASLt, 0 own kernel. */
int kn_gemm_uses_cublaslt(kn_dtype xdt, kn_dtype wdt, kn_dtype ydt, const void *X,
                          const void *W, const void *Y, int N, int K, int epi);

/* The own GEMM kernel alone (no cuBLASLt), same contract as kn_gemm; for the
 * tests and the benchmark. */
int kn_gemm_own(cudaStream_t s, const void *X, kn_dtype xdt, const void *W, kn_dtype wdt,
                const float *bias, void *Y, kn_dtype ydt, int M, int N, int K, int epi);

/* ---- GeGLU ----------------------------------------------------------------- */

/* out[M,F] = gelu_erf(U[:, 0:F]) * U[:, F:2F]; U [M, 2F] and out in dt (16-bit),
 * math in fp32, one pass over U. */
int kn_geglu(cudaStream_t s, kn_dtype dt, const void *U, void *out, int M, int F);

/* ---- LayerNorm with residual ------------------------------------------------ */

/*
 * Per row m < M (D columns):
 *   if x != NULL: r[m] += x[m]   (x in xdt: KN_F16 / KN_BF16 / KN_F32; fp32 add,
 *                                 r updated in place, exactly the CPU's sum);
 *   y = (r[m] - mean) / sqrt(var + eps) * w + b   (biased variance, b may be NULL)
 *   y16[m] = (ydt) y if y16 != NULL (ydt KN_F16 / KN_BF16);
 *   y32[m] = y       if y32 != NULL (y32 may equal r: in-place normalization).
 * r, w, b, y32 fp32. At least one of y16, y32.
 */
int kn_layernorm(cudaStream_t s, float *r, const void *x, kn_dtype xdt,
                 const float *w, const float *b, void *y16, kn_dtype ydt, float *y32,
                 int M, int D, float eps);

/* ---- RoPE ------------------------------------------------------------------- */

/* Fills cos_tab/sin_tab [max_pos, 32] (fp32) on the device, the CPU's formula
 * (kn_rope_tables): inv_freq[j] = (float)(1 / theta^(2j/64)), angle =
 * (float)pos * inv_freq[j]. Call once at load. */
int kn_rope_tables_gpu(cudaStream_t s, float *cos_tab, float *sin_tab, int max_pos, double theta);

/* Rotate-half RoPE in place on the Q block [0, D) and K block [D, 2D) of
 * qkv [M, 3D] (dt), V untouched, heads of 64; row m has position pos[m]
 * (0 <= pos[m] < max_pos of the tables); math in fp32. D % 64 == 0. */
int kn_rope(cudaStream_t s, kn_dtype dt, void *qkv, int M, int D, const int32_t *pos,
            const float *cos_tab, const float *sin_tab);

/* ---- attention ---------------------------------------------------------------- */

/*
 * Multi-head attention over packed qkv [B*L, 3D] (dt; Q | K | V, heads of 64,
 * D % 64 == 0) -> out [B*L, D] (dt). Query i of row b sees key j iff
 * j < lens[b] and (window < 0 || |i - j| <= window); scale 1/8; online softmax
 * in fp32 over key tiles of 64; key tiles wholly outside the window or past
 * lens[b] are skipped. A query with no visible key (every query of a row with
 * lens[b] == 0, or a pad query far past the last key in a sliding layer) gets
 * zeros; all outputs are finite. lens: int32 [B] on the device, 0 <= lens[b] <= L.
 */
int kn_attention(cudaStream_t s, kn_dtype dt, const void *qkv, void *out,
                 int B, int L, int D, const int32_t *lens, int window);

/* The same attention for a selection of queries (the last head layer needs only
 * the CLS and marker rows): row b's queries are the positions qsel[b*nq + t]
 * (t < nq, 0 <= qsel < L; int32 on the device), written to out[b*nq + t, :]
 * (out [B*nq, D], dt); keys and values still span the whole row. Same masks as
 * kn_attention (kn_cpu_attention_select is its CPU sibling). */
int kn_attention_select(cudaStream_t s, kn_dtype dt, const void *qkv, void *out,
                        int B, int L, int D, const int32_t *lens, int window,
                        const int32_t *qsel, int nq);

/* ---- decision-head and embedding ops ------------------------------------------ */

/* Embedding + its LayerNorm (no bias in the encoder; b may be NULL):
 * r[m] = table[ids[m]] (fp32), then y16 / y32 = LN(r[m]) as kn_layernorm.
 * table [V, D] in tdt (16-bit); ids int32 [M], 0 <= ids[m] < V. */
int kn_embed_layernorm(cudaStream_t s, const int32_t *ids, const void *table, kn_dtype tdt,
                       int V, const float *w, const float *b, float *r,
                       void *y16, kn_dtype ydt, float *y32, int M, int D, float eps);

/* h[b, t, :] += type_emb[qtype[b], :] for every t < L (pads included);
 * h fp32 [B*L, D], type_emb fp32 [n_types, D], qtype int32 [B] in [0, n_types). */
int kn_add_type_emb(cudaStream_t s, float *h, const float *type_emb, const int32_t *qtype,
                    int B, int L, int D);

/* out[b*K + k, :] = h[b, pos[b*K + k], :], pos indexes within row b
 * (0 <= pos < L). h and out in dt (any of the three). */
int kn_gather_rows(cudaStream_t s, kn_dtype dt, const void *h, const int32_t *pos, void *out,
                   int B, int L, int K, int D);

/* logits[i] = mask[i] ? dot(x[i, :], w) + bias[0] : -1e4 (fp32), x [n, D] in xdt
 * (any of the three), w fp32 [D], bias fp32 [1] on the device. */
int kn_scorer_tail(cudaStream_t s, const void *x, kn_dtype xdt, const float *w,
                   const float *bias, const uint8_t *mask, float *logits, int n, int D);

/* feats[b] = [top1, top1 - top2, entropy / ln(k), k / 255] from the softmax of
 * logits[b, 0:K] (all K slots, fp32), k = max(2, #mask[b, :]); top2 = 0 if K == 1. */
int kn_conf_features(cudaStream_t s, const float *logits, const uint8_t *mask, float *feats,
                     int B, int K);

/* out[b] = concat(h[b*L + 0, :], feats[b, 0:4]) -> [B, D + 4] in odt; h fp32. */
int kn_act_input(cudaStream_t s, const float *h, const float *feats, void *out, kn_dtype odt,
                 int B, int L, int D);

#ifdef __cplusplus
}
#endif

#endif
