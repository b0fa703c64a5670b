/*
 * cuda.h - launchers of layad's five fast kernels and the head ops on the GPU.
 *
 * C-callable (extern "C"); implemented in the kernels/ .cu files for fp16 and bf16. Each
 * launcher takes a kn_stream (the stream and the PDL choice) and a dtype, validates its shapes on the host,
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
 *   - row-major; tokens packed (varlen): a batch's rows lie back to back in
 *     T token slots, row r at [cu[r], cu[r+1]) (cu: int32 [R+1], cu[0] = 0,
 *     nondecreasing, cu[R] <= T); the slots past cu[R] are padding: per-token
 *     kernels compute them (finite garbage), nothing reads them into a row;
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

/* Where a launcher enqueues: the stream, and whether our kernels use
 * programmatic dependent launch there (kernels/cuda_util.cuh: each may be
 * scheduled while its predecessor runs and waits for it before reading
 * anything the forward writes).
 * The backend owns one (its field), so two backends in one process may differ;
 * pdl = 0 launches plainly (the benchmark's same-run comparison). */
typedef struct kn_stream {
    cudaStream_t s;
    int pdl;
} kn_stream;
const char *kn_dtype_name(kn_dtype dt); /* "fp16", "bf16", "fp32" */

/* The last failure of a launcher on this thread ("file:line: statement: error"),
 * "" if none. */
const char *kn_cuda_last_error(void);

/* ---- conversion ----------------------------------------------------------- */

/* dst[i] = (dst dtype) src[i] for i < n, round to nearest even (f32 -> 16-bit,
 * f16 <-> bf16 via f32). Used to upload weights in the serving dtype and by the
 * tests. src and dst must not overlap. */
int kn_convert(kn_stream ks, const void *src, kn_dtype sdt, void *dst, kn_dtype ddt, size_t n);

/* dst[0, bytes) = src[0, bytes) by a kernel (16-byte accesses, then the
 * tail), src and dst 16-byte aligned and not overlapping. Either may be pinned
 * host memory mapped into the device's address space: the forward moves its
 * staged inputs and its outputs this way, as a kernel among its kernels,
 * because a copy node in a graph costs ~6-9 us against ~0.5 us for a kernel
 * boundary (bench/results/experiments/README.md, "copies as kernels"). The
 * kernel launched next must not read dst before its programmatic-launch wait
 * (kernels/cuda_util.cuh). */
int kn_copy(kn_stream ks, void *dst, const void *src, size_t bytes);

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
 *   KN_EPI_RELU / KN_EPI_ACC (Y += X . W^T + bias: one fp32 add into what Y
 *   holds, rounded to ydt; cuBLASLt's beta = 1, which with a 16-bit Y rounds
 *   the product to ydt first: accumulate into fp32). Any M, N, K >= 0 (M == 0 or
 *   N == 0: nothing happens; K == 0: Y = epi(bias)).
 * Paths: cuBLASLt (epilogues DEFAULT/BIAS/RELU/RELU_BIAS) when xdt == wdt and
 * K, N and the pointers are 16-byte aligned; the erf GELU (cuBLASLt's GELU is
 * the tanh form) is then one in-place pass over Y after cuBLASLt with bias.
 * Otherwise our own kernels: up to 64 rows a weight-streaming kernel, beyond
 * that 64 x 64 tiles (tensor cores for 16-bit X, fp32 CUDA cores for fp32 X);
 * see bench/results/h200/kernels.md for what each costs. The cuBLASLt algorithm of each
 * shape is chosen once (the first call, or kn_gemm_prepare at warm-up), cached
 * and reused, so results are bit-identical run to run and capture does not
 * query heuristics. Returns -1 when the plan cache is full.
 * cuBLASLt takes the bias only in the output's dtype: with an fp32 bias and a
 * 16-bit Y, kn_gemm first converts the bias into the context's scratch on s
 * (one small launch; the bias is then rounded to the output dtype, as in a
 * 16-bit PyTorch Linear). kn_gemm_ex takes the bias in wdt and skips that.
 * A context's GEMMs must be issued on one stream at a time (shared scratch).
 */
int kn_gemm(kn_gemm_ctx *ctx, kn_stream ks, const void *X, kn_dtype xdt,
            const void *W, kn_dtype wdt, const float *bias, void *Y, kn_dtype ydt,
            int M, int N, int K, int epi);

/* kn_gemm with the bias in bdt: KN_F32 (as kn_gemm) or wdt (16-bit, no
 * conversion launch when Y has that dtype too). */
int kn_gemm_ex(kn_gemm_ctx *ctx, kn_stream ks, const void *X, kn_dtype xdt,
               const void *W, kn_dtype wdt, const void *bias, kn_dtype bdt, void *Y,
               kn_dtype ydt, int M, int N, int K, int epi);

/* Tuning (off by default; the GPU backend turns it on unless told not to):
 * the plan of a shape keeps up to 8 of cuBLASLt's heuristic candidates and
 * the first launch outside graph capture times them on its own operands and
 * keeps the fastest (kernels/gemm_lt.cu: gemm_tune). Set before the first GEMM.
 * Timing noise can make two processes pick different algorithms (last-bit
 * differences between processes); within a context the choice never changes. */
void kn_gemm_ctx_set_tuning(kn_gemm_ctx *ctx, int on);

/*
 * Persisted tuning: the algorithms tuning chose, carried over a restart so
 * warm-up does not time them again (file format: kernels/gemm_cache.h). Both
 * calls are host-only (no launch, no synchronization) and belong to start-up
 * and the end of warm-up, never to the request path.
 *
 * kn_gemm_ctx_load_tuning reads the file at path. When it was written on this
 * GPU (name and UUID, else PCI id) under the same CUDA driver version
 * (cudaDriverGetVersion), CUDA runtime and cuBLASLt versions and is intact,
 * its records join the context's (a shape this context has timed keeps its own
 * record) and the number taken is returned. A missing file returns 0 with warn
 * = ""; a corrupt, truncated, foreign or unreadable one is ignored: 0, and a
 * one-line reason in warn for the caller to log. -1 only for a NULL ctx or path.
 * A shape whose plan is built after the load takes its recorded algorithm
 * (tuning on or off; no timing, no heuristic query), provided
 * cublasLtMatmulAlgoCheck accepts it for the shape's descriptors, it fits the
 * workspace and it splits K only with fp32 sums; otherwise the record is
 * dropped and the shape is chosen as without a file (timed and recorded anew
 * with tuning on). Plans built before the load keep their algorithm (within a
 * context a shape never changes algorithm), so load before the first kn_gemm
 * / kn_gemm_prepare. A caller that wants tuning off to mean the heuristic's
 * first does not load.
 *
 * kn_gemm_ctx_save_tuning writes every record the context holds (loaded, and
 * timed since) to path atomically: a temporary in the same directory, fsync,
 * mode 0644, rename. Returns the number written, or -1 with a one-line reason
 * in err (path is then as it was). At most 4096 records are kept; shapes timed
 * beyond that are not saved.
 *
 * kn_gemm_ctx_tuning_counts: plans that took a loaded algorithm, and loaded
 * algorithms refused (their shapes were timed again); either pointer may be NULL.
 */
int kn_gemm_ctx_load_tuning(kn_gemm_ctx *ctx, const char *path, char *warn, size_t warn_len);
int kn_gemm_ctx_save_tuning(const kn_gemm_ctx *ctx, const char *path, char *err, size_t err_len);
void kn_gemm_ctx_tuning_counts(const kn_gemm_ctx *ctx, int *seeded, int *rejected);

/* Chooses and caches the plan of a shape (call at warm-up, before graph
 * capture). has_bias: whether calls will pass a bias. X, W, Y: the operands the
 * calls will use, or all NULL (then assumed 16-byte aligned); with operands and
 * tuning on, the shape's candidates are timed on them on stream s (the only
 * launches it makes, once per shape); without, nothing is launched. Timing a
 * KN_EPI_ACC shape leaves Y's contents undefined; it is the only way such a
 * shape is tuned (its first kn_gemm takes the heuristic's first rather than
 * clobber the Y it adds into). */
int kn_gemm_prepare(kn_gemm_ctx *ctx, kn_dtype xdt, kn_dtype wdt, kn_dtype ydt,
                    int M, int N, int K, int epi, int has_bias, kn_stream ks, const void *X,
                    const void *W, void *Y);

/*
 * Split-K into partial products: Y[s] = X[:, sKs:(s+1)Ks] . W[:, sKs:(s+1)Ks]^T
 * for s < S, Ks = K / S, each fp32 [M, N] (Y holds S x M x N, part s at s M N),
 * one strided-batched cuBLASLt call with fp32 accumulation; xdt == wdt (16-bit).
 * The sum is left to the kernel that reads the product next
 * (kn_layernorm_parts), so a short product spreads over S times the blocks
 * without a reduction pass of its own. Needs kn_gemm_split_ok: 2 <= S <=
 * KN_GEMM_SPLIT_MAX, K % (8 S) == 0, N % 4 == 0, 16-byte aligned operands.
 * Plans, tuning and the tuning file work as for kn_gemm (a split plan is its
 * own shape). Returns -1 when the arguments are refused or cuBLASLt has no
 * algorithm. kn_gemm_prepare_split is kn_gemm_prepare for it: 1 once the
 * plan is ready, 0 when cuBLASLt has no algorithm (do not launch it), -1 on
 * failure.
 */
#define KN_GEMM_SPLIT_MAX 8
int kn_gemm_split_ok(kn_dtype wdt, const void *X, const void *W, const void *Y, int N, int K, int S);
int kn_gemm_split(kn_gemm_ctx *ctx, kn_stream ks, const void *X, const void *W, kn_dtype wdt, float *Y,
                  int M, int N, int K, int S);
int kn_gemm_prepare_split(kn_gemm_ctx *ctx, kn_dtype wdt, int M, int N, int K, int S, kn_stream ks,
                          const void *X, const void *W, float *Y);

/* kn_gemm_split's product for the smallest packs on a kernel of our own
 * (kernels/gemm_small.cu): the same parts and layout, the sums differing from
 * cuBLASLt's in order only. Each block fetches its weight tile before the
 * programmatic-launch wait and its X slice after it. A row's parts do not
 * depend on M. Needs kn_gemm_split_small_ok: a compute capability 9 device,
 * 16-bit W, 1 <= M <= KN_GEMM_SMALL_MAXM, N % 32 == 0,
 * 1 <= S <= KN_GEMM_SPLIT_MAX, K % (16 S) == 0, 16-byte aligned operands, and
 * the blocks' shared memory (the W tile and the X slice) within the device's.
 * Returns -1 when refused. */
#define KN_GEMM_SMALL_MAXM 128
int kn_gemm_split_small_ok(kn_dtype wdt, const void *X, const void *W, const void *Y, int M, int N, int K, int S);
int kn_gemm_split_small(kn_stream ks, const void *X, const void *W, kn_dtype wdt, float *Y, int M, int N, int K,
                        int S);

/* Which path kn_gemm takes for these arguments: 1 cuBLASLt, 0 own kernel. */
int kn_gemm_uses_cublaslt(kn_dtype xdt, kn_dtype wdt, kn_dtype ydt, const void *X,
                          const void *W, const void *Y, int N, int K, int epi);

/* The own GEMM kernel alone (no cuBLASLt), same contract as kn_gemm; for the
 * tests and the benchmark. */
int kn_gemm_own(kn_stream ks, const void *X, kn_dtype xdt, const void *W, kn_dtype wdt,
                const float *bias, void *Y, kn_dtype ydt, int M, int N, int K, int epi);

/* ---- GeGLU ----------------------------------------------------------------- */

/* out[M,F] = gelu_erf(U[:, 0:F]) * U[:, F:2F]; U [M, 2F] and out in dt (16-bit),
 * math in fp32, one pass over U. */
int kn_geglu(kn_stream ks, kn_dtype dt, const void *U, void *out, int M, int F);

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
int kn_layernorm(kn_stream ks, float *r, const void *x, kn_dtype xdt,
                 const float *w, const float *b, void *y16, kn_dtype ydt, float *y32,
                 int M, int D, float eps);

/* kn_layernorm with the residual branch given as S fp32 partial products
 * (kn_gemm_split): r[m] += ((p[0][m] + p[1][m]) + ...) + p[S-1][m], summed in
 * that order in fp32 (the CPU's kn_layernorm of r with x = that sum, bit for
 * bit in the residual), part s at parts + s * part_stride floats. bb (fp32
 * [D], or NULL) is the branch's bias, which the parts do not carry: added to
 * their sum last, before the residual. One block
 * per row, every load of the row issued before the first add. Needs D % 128
 * == 0, D <= 4096 (KN_LN_PARTS_MAX_D above KN_GEMM_SPLIT_MAX parts), 1 <= S <=
 * KN_LN_PARTS_MAX, part_stride % 4 == 0 and
 * 16-byte aligned buffers (kn_layernorm_parts_ok). */
#define KN_LN_PARTS_MAX 16
#define KN_LN_PARTS_MAX_D 1024 /* the widest row over more than KN_GEMM_SPLIT_MAX parts */
int kn_layernorm_parts_ok(const float *r, const float *parts, long part_stride, int S, const float *bb,
                          const float *w, const float *b, const void *y16, const float *y32, int D);
int kn_layernorm_parts(kn_stream ks, float *r, const float *parts, int S, long part_stride, const float *bb,
                       const float *w, const float *b, void *y16, kn_dtype ydt, float *y32, int M, int D, float eps);
/* kn_layernorm_parts with the residual gathered first: row m's r is read from rsrc's row
 * rows[m] (int32, absolute rows of rsrc; rsrc != r), then r[m] = that + the parts, normalized as
 * above. kn_gather_rows (fp32) followed by kn_layernorm_parts, bit for bit, in one launch.
 * rsrc and rows are read before the programmatic-launch wait (kn_launch): in a forward, they
 * must have been written two or more launches before this one. */
int kn_layernorm_parts_gather(kn_stream ks, float *r, const float *rsrc, const int32_t *rows, const float *parts,
                              int S, long part_stride, const float *bb, const float *w, const float *b, void *y16,
                              kn_dtype ydt, float *y32, int M, int D, float eps);

/*
 * The encoder's projections of the smallest packs with the step after them in
 * their epilogue (kernels/proj_small.cu), X [M, K] and W (wdt, 16-bit) row-major:
 * kn_proj_small_rope: Y [M, 3D] = X Wqkv^T rounded to wdt, then kn_rope of it
 * with positions pos[m] (device) and the tables; kn_proj_small_geglu: G [M, F] =
 * kn_geglu of X Wi^T rounded to wdt (Wi [2F, K]: gate rows then up rows). The
 * products sum in fp32 in another order than cuBLASLt's. Need kn_proj_small_ok:
 * a compute capability 9 device, 1 <= M <= KN_PROJ_SMALL_MAXM, K % 16 == 0 and
 * the shared memory for M rows of K; 16-byte aligned operands.
 */
#define KN_PROJ_SMALL_MAXM 64
int kn_proj_small_ok(kn_dtype wdt, int M, int K);
int kn_proj_small_rope(kn_stream ks, const void *X, const void *W, kn_dtype wdt, void *Y, int M, int D, int K,
                       const int32_t *pos, const float *cos_tab, const float *sin_tab);
int kn_proj_small_geglu(kn_stream ks, const void *X, const void *W, kn_dtype wdt, void *G, int M, int F, int K);

/* ---- RoPE ------------------------------------------------------------------- */

/* Fills cos_tab/sin_tab [max_pos, 32] (fp32) on the device, the CPU's formula
 * (kn_rope_tables): inv_freq[j] = (float)(1 / theta^(2j/64)), angle =
 * (float)pos * inv_freq[j]. Call once at load. */
int kn_rope_tables_gpu(kn_stream ks, float *cos_tab, float *sin_tab, int max_pos, double theta);

/* Rotate-half RoPE in place on the Q block [0, D) and K block [D, 2D) of
 * qkv [M, 3D] (dt), V untouched, heads of 64; row m has position pos[m]
 * (0 <= pos[m] < max_pos of the tables); math in fp32. D % 64 == 0. */
int kn_rope(kn_stream ks, kn_dtype dt, void *qkv, int M, int D, const int32_t *pos,
            const float *cos_tab, const float *sin_tab);

/* ---- attention ---------------------------------------------------------------- */

/* The query tiles (kn_attention_tiles, KN_ATT_TQ) are in kernels/cpu.h. */

/*
 * Multi-head attention over packed qkv [T, 3D] (dt; Q | K | V, heads of 64,
 * D % 64 == 0) -> out [T, D] (dt). Launches n_tiles tiles (the list of
 * kn_attention_tiles, on the device); a tile with row < 0 returns at once.
 * Query i of row r sees key j iff cu[r] <= j < cu[r+1] and (window < 0 ||
 * |i - j| <= window) (absolute slots); scale 1/8; online softmax in fp32 over
 * key tiles of 64, aligned to the row start, in two interleaved halves (even and
 * odd tiles) whose states are combined at the end; key tiles wholly outside the
 * window are skipped. Only the rows' own query slots are written.
 */
int kn_attention(kn_stream ks, kn_dtype dt, const void *qkv, void *out, int T, int D,
                 const int32_t *cu, const int32_t *tiles, int n_tiles, int window);

/* The most query tiles for which kn_attention takes two groups a block (about
 * 1.5 blocks an SM); -1 with the error set. A grid of a bucket's capacity
 * takes one group even when the pack in it has few tiles, so a caller that
 * knows its pack is that small can ask for two groups over this many tiles. */
int kn_attention_pack_tiles(int D);

/* kn_attention with its launch form chosen: groups 1 (one group of four warps
 * walks both key halves in turn, three blocks an SM) or 2 (two groups walk them
 * side by side, one block an SM); 0: by the grid, as kn_attention. Every form
 * gives the same bits. */
int kn_attention_grouped(kn_stream ks, kn_dtype dt, const void *qkv, void *out, int T, int D,
                         const int32_t *cu, const int32_t *tiles, int n_tiles, int window, int groups);

/* The attention (kn_attention's two-group form, the same bits) with the
 * out-projection of its output in the same launch, for small packs: part h of
 * parts (fp32 [T, D] at parts + h * part_stride floats, one a head) gets
 * att[:, 64 h : 64 h + 64] Wo[:, 64 h : 64 h + 64]^T for the tiles' query slots
 * (Wo [D, D] in dt, a PyTorch Linear's weight; att the attention output
 * kn_attention would write). The sum over heads is left to kn_layernorm_parts
 * (S = D / 64). Slots outside every tile keep what they held in every part.
 * Grid (D / 64 x D / 256 blocks a tile, or D / 128 where D % 256 != 0; n_tiles
 * tiles): one wave while n_tiles <= kn_attention_wo_tiles(D). Needs
 * kn_attention_wo_ok: 16-bit dt, D % 128 == 0,
 * D / 64 <= KN_LN_PARTS_MAX, 16-byte aligned buffers, part_stride % 4 == 0 and
 * T * D <= part_stride. */
int kn_attention_wo_tiles(int D);
int kn_attention_wo_ok(kn_dtype dt, const void *qkv, const void *wo, const float *parts, long part_stride, int D);
int kn_attention_wo(kn_stream ks, kn_dtype dt, const void *qkv, const void *wo, float *parts, long part_stride,
                    int T, int D, const int32_t *cu, const int32_t *tiles, int n_tiles, int window);

/* The same attention for a selection of queries (the last head layer needs only
 * the CLS and marker rows): selected query g < G is slot qpos[g] of row qrow[g]
 * (int32 on the device), written to out[g, :] (out [G, D], dt); qrow[g] < 0
 * writes zeros. Keys and values span the whole row. Each output equals
 * kn_attention's output of that slot bit for bit. */
int kn_attention_select(kn_stream ks, kn_dtype dt, const void *qkv, void *out, int D,
                        const int32_t *cu, int window, const int32_t *qrow,
                        const int32_t *qpos, int G);

/* ---- decision-head and embedding ops ------------------------------------------ */

/* Embedding + its LayerNorm (no bias in the encoder; b may be NULL):
 * r[m] = table[ids[m]] (fp32), then y16 / y32 = LN(r[m]) as kn_layernorm.
 * table [V, D] in tdt (16-bit); ids int32 [M], 0 <= ids[m] < V. */
int kn_embed_layernorm(kn_stream ks, const int32_t *ids, const void *table, kn_dtype tdt,
                       int V, const float *w, const float *b, float *r,
                       void *y16, kn_dtype ydt, float *y32, int M, int D, float eps);

/* The decision head's first LayerNorm with the type embedding folded in:
 * r[m, :] += type_emb[ttype[m], :] (fp32, in place: the head's residual), then
 * y16 / y32 = LN(r[m]) as kn_layernorm. ttype int32 [M] is each slot's row's
 * question type (0 for padding slots); type_emb fp32 [n_types, D]. */
int kn_type_emb_layernorm(kn_stream ks, float *r, const float *type_emb, const int32_t *ttype,
                          const float *w, const float *b, void *y16, kn_dtype ydt, float *y32, int M,
                          int D, float eps);

/* out[g, :] = h[idx[g], :] for g < G (idx int32, absolute rows of h). h and
 * out in dt (any of the three). */
int kn_gather_rows(kn_stream ks, kn_dtype dt, const void *h, const int32_t *idx, void *out,
                   int G, int D);

/* The decision head's tail after the scorer's hidden layer, in one launch
 * (fp32 throughout; one block per question row):
 *   logits[g] = mask[g] ? dot(x[g, :], w) + bias[0] : -1e4 for every g < G
 *     (x [G, D], w [D], bias [1]);
 *   row r's gathered slots are goff[r] .. goff[r+1]-1 (goff int32 [R+1]): its
 *     CLS slot (mask 0), then its markers (mask 1). Its features are [top1,
 *     top1 - top2, entropy / ln(k), k / 255] from the softmax of the logits
 *     over the row's slots, k = max(2, #mask); top2 = 0 with a single slot.
 *     Masked slots hold -1e4, so for a row with at least one marker (every
 *     real row) the result equals that over any number of extra masked slots,
 *     bit for bit;
 *   act_in[r] = concat(h[goff[r], :], the features) -> [R, D + 4] (h the gathered
 *     fp32 rows [G, D]).
 * An empty row (goff[r] == goff[r+1], padding) gets zero features and a zero
 * act input. */
int kn_decision_tail(kn_stream ks, const float *x, const float *w, const float *bias, const uint8_t *mask,
                     const float *h, const int32_t *goff, float *logits, float *act_in, int G, int R, int D);

#ifdef __cplusplus
}
#endif

#endif
