/*
 * gemm_cpu.c - CPU fp32 GEMM with epilogue: Y[M,N] = epi(X[M,K] . W[N,K]^T + bias).
 *
 * Both operands are K-contiguous (activations row-major, weights PyTorch-style
 * [N, K]), so the CPU uses the dot-product form: no packing, no transposes,
 * and every output element has exactly one owner.
 *
 * Algorithm (the CUDA sibling keeps the contract; its tile sizes are its own):
 *   - The output is cut into block tiles of GEMM_TM x GEMM_TN (63 x 64).
 *     Tiles are independent; OpenMP hands them out statically, and since each
 *     output is computed by one thread in one fixed order, results do not
 *     depend on the thread count.
 *   - Inside a tile, a GEMM_MR x GEMM_NR (3 x 4) register micro-tile walks the
 *     whole K: 8-lane fp32 partial sums (lane l sums k = l mod 8), reduced lane
 *     0..7 in order, then the K % 8 tail added in k order. The W panel of the
 *     micro-tile (4 rows) is reused across all row blocks of the tile.
 *   - Padding predicates: a micro-tile that runs past M or N reads a clamped,
 *     valid row and discards that result (the GPU's predicated loads), so no
 *     operand is read out of bounds and nothing outside Y is written. Any M, N,
 *     K >= 0; K == 0 gives epi(bias).
 *   - Epilogue per element, in fp32: + bias[n] (if any), then none / exact erf
 *     GELU 0.5 x (1 + erf(x / sqrt 2)) / ReLU, then the store; or (ACC) the
 *     store of y + v, one fp32 add into what Y held.
 * Measured on a 2-core Zen 3 (512 x 1024 x 1024): 3 x 4 micro-tiles with the
 * whole K per pass ran at ~80 GFLOP/s on 2 threads; 4 x 4 spilled registers
 * (14 GFLOP/s/thread) and chunking K by 256-512 cost 30-50% in lane reductions.
 * The inner loop uses GCC vector extensions so it vectorizes for any ISA; an
 * AVX2+FMA clone is picked at run time (never -march=native). Only FMA
 * contraction differs between the clones (last-bit differences).
 *
 * Packed variant (kn_cpu_gemm_packed, what the CPU backend runs): weights are
 * constant, so they are repacked once into k-major panels of 16 columns and the
 * micro-kernel becomes the outer-product form: a 6 x 16 register tile (12
 * 8-lane accumulators) takes per k one broadcast of each of 6 X values and two
 * contiguous W vectors, with no lane reductions at the end. Each output is the
 * sum over k in order (FMA in the AVX2 clone). Work items are (60-row block,
 * panel), panel-fastest, split statically over threads; partial row blocks
 * clamp rows and discard them, the last panel is zero-padded. Measured on one
 * Zen 3 core (CPU time, M = 128..320, K = 1024..2624): 68-79 GFLOP/s against
 * 54-63 for the 3 x 4 dot-product kernel.
 */
#include <math.h>
#include <string.h>

#include "kernels/cpu.h"

#define GEMM_MR 3            /* micro-tile rows (M) */
#define GEMM_NR 4            /* micro-tile columns (N) */
#define GEMM_TM (21 * GEMM_MR) /* block tile rows: 63 */
#define GEMM_TN 64           /* block tile columns */
#define GEMM_VL 8            /* fp32 lanes of the partial sums */

typedef float v8f __attribute__((vector_size(GEMM_VL * sizeof(float))));

/* Unaligned 8-lane load (a macro: vector-typed function arguments would tie the
 * ABI to the ISA). */
#define LOAD8(dst, p) memcpy(&(dst), (p), sizeof(v8f))

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define GEMM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GEMM_CLONES
#endif
/* ISO C mode turns FMA contraction off; the micro-tile opts back in (GCC only). */
#if defined(__GNUC__) && !defined(__clang__)
#define GEMM_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define GEMM_CONTRACT
#endif

/* out[i][j] = sum_{k < K} xr[i][k] * wr[j][k] for one micro-tile (rows given as
 * pointers, already clamped for partial tiles). */
GEMM_CONTRACT GEMM_CLONES
static void micro_tile(const float *const xr[GEMM_MR], const float *const wr[GEMM_NR], int K,
                       float out[GEMM_MR][GEMM_NR])
{
    v8f c[GEMM_MR][GEMM_NR];
    memset(c, 0, sizeof c);
    int k = 0;
    for (; k + GEMM_VL <= K; k += GEMM_VL) {
        v8f a[GEMM_MR];
#pragma GCC unroll 8
        for (int i = 0; i < GEMM_MR; i++)
            LOAD8(a[i], xr[i] + k);
#pragma GCC unroll 8
        for (int j = 0; j < GEMM_NR; j++) {
            v8f b;
            LOAD8(b, wr[j] + k);
#pragma GCC unroll 8
            for (int i = 0; i < GEMM_MR; i++)
                c[i][j] += a[i] * b;
        }
    }
    for (int i = 0; i < GEMM_MR; i++)
        for (int j = 0; j < GEMM_NR; j++) {
            float s = c[i][j][0];
            for (int l = 1; l < GEMM_VL; l++)
                s += c[i][j][l];
            for (int t = k; t < K; t++)
                s += xr[i][t] * wr[j][t];
            out[i][j] = s;
        }
}

/* The stored value of one output at y: v (+ bias already) through the
 * epilogue, or *y + v for KN_EPI_ACC (Y read only then). */
static inline float epilogue(const float *y, float v, int epi)
{
    if (epi == KN_EPI_ACC)
        return *y + v;
    if (epi == KN_EPI_GELU)
        return 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
    if (epi == KN_EPI_RELU)
        return v > 0.0f ? v : 0.0f;
    return v;
}

/* One block tile at (m0, n0): micro-tiles N-outer so a W panel stays in L1. */
static void gemm_tile(const float *X, const float *W, const float *bias, float *Y,
                      int M, int N, int K, int epi, int m0, int n0)
{
    const int tm = M - m0 < GEMM_TM ? M - m0 : GEMM_TM;
    const int tn = N - n0 < GEMM_TN ? N - n0 : GEMM_TN;
    for (int j0 = 0; j0 < tn; j0 += GEMM_NR) {
        const float *wr[GEMM_NR];
        for (int j = 0; j < GEMM_NR; j++) {
            int c = j0 + j < tn ? j0 + j : tn - 1; /* predicate: clamp, discard */
            wr[j] = W + (size_t)(n0 + c) * K;
        }
        for (int i0 = 0; i0 < tm; i0 += GEMM_MR) {
            const float *xr[GEMM_MR];
            for (int i = 0; i < GEMM_MR; i++) {
                int r = i0 + i < tm ? i0 + i : tm - 1;
                xr[i] = X + (size_t)(m0 + r) * K;
            }
            float part[GEMM_MR][GEMM_NR];
            micro_tile(xr, wr, K, part);
            for (int i = 0; i < GEMM_MR && i0 + i < tm; i++) {
                float *y = Y + (size_t)(m0 + i0 + i) * N + n0 + j0;
                for (int j = 0; j < GEMM_NR && j0 + j < tn; j++) {
                    float v = part[i][j];
                    if (bias)
                        v += bias[n0 + j0 + j];
                    y[j] = epilogue(&y[j], v, epi);
                }
            }
        }
    }
}

void kn_cpu_gemm(const float *X, const float *W, const float *bias, float *Y,
                 int M, int N, int K, int epi)
{
    if (M <= 0 || N <= 0)
        return;
    const long mt = (M + GEMM_TM - 1) / GEMM_TM;
    const long nt = (N + GEMM_TN - 1) / GEMM_TN;
    /* N-major tile order: consecutive tiles of one thread share a W panel. */
#pragma omp parallel for schedule(static)
    for (long t = 0; t < mt * nt; t++) {
        int n0 = (int)(t / mt) * GEMM_TN;
        int m0 = (int)(t % mt) * GEMM_TM;
        gemm_tile(X, W, bias, Y, M, N, K, epi, m0, n0);
    }
}

/* ---- packed weights ---- */

#define PK_MR 6          /* micro-tile rows */
#define PK_NR KN_PACK_NR /* panel width: two 8-lane vectors */
#define PK_MB (10 * PK_MR) /* rows per work item */

size_t kn_cpu_packed_size(int N, int K)
{
    return (size_t)((N + PK_NR - 1) / PK_NR) * PK_NR * (size_t)(K > 0 ? K : 0);
}

void kn_cpu_pack_weights(const float *W, float *Wp, int N, int K)
{
    const int P = (N + PK_NR - 1) / PK_NR;
#pragma omp parallel for schedule(static)
    for (int p = 0; p < P; p++)
        for (int k = 0; k < K; k++)
            for (int j = 0; j < PK_NR; j++) {
                const int n = p * PK_NR + j;
                Wp[((size_t)p * K + k) * PK_NR + j] = n < N ? W[(size_t)n * K + k] : 0.0f;
            }
}

/* out[i][0..16) = sum_k xr[i][k] * panel[k][0..16) for a 6 x 16 micro-tile. */
GEMM_CONTRACT GEMM_CLONES
static void micro_packed(const float *const xr[PK_MR], const float *panel, int K, float out[PK_MR][PK_NR])
{
    const v8f zero = {0};
    v8f c[PK_MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < 2 * PK_MR; i++)
        c[i / 2][i % 2] = zero;
    for (int k = 0; k < K; k++) {
        v8f b0, b1;
        LOAD8(b0, panel + (size_t)k * PK_NR);
        LOAD8(b1, panel + (size_t)k * PK_NR + GEMM_VL);
#pragma GCC unroll 6
        for (int i = 0; i < PK_MR; i++) {
            const float a = xr[i][k];
            c[i][0] += a * b0;
            c[i][1] += a * b1;
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < PK_MR; i++) {
        memcpy(out[i], &c[i][0], sizeof(v8f));
        memcpy(out[i] + GEMM_VL, &c[i][1], sizeof(v8f));
    }
}

void kn_cpu_gemm_packed(const float *X, const float *Wp, const float *bias, float *Y,
                        int M, int N, int K, int epi)
{
    if (M <= 0 || N <= 0)
        return;
    const long P = (N + PK_NR - 1) / PK_NR;
    const long MB = (M + PK_MB - 1) / PK_MB;
#pragma omp parallel for schedule(static)
    for (long t = 0; t < P * MB; t++) {
        const int p = (int)(t % P), m0 = (int)(t / P) * PK_MB;
        const int m1 = m0 + PK_MB < M ? m0 + PK_MB : M;
        const int n0 = p * PK_NR;
        for (int i0 = m0; i0 < m1; i0 += PK_MR) {
            const float *xr[PK_MR];
            for (int i = 0; i < PK_MR; i++) /* predicate: clamp, discard */
                xr[i] = X + (size_t)(i0 + i < m1 ? i0 + i : m1 - 1) * K;
            float o[PK_MR][PK_NR];
            micro_packed(xr, Wp + (size_t)p * K * PK_NR, K, o);
            for (int i = 0; i < PK_MR && i0 + i < m1; i++) {
                float *y = Y + (size_t)(i0 + i) * N + n0;
                for (int j = 0; j < PK_NR && n0 + j < N; j++) {
                    float v = o[i][j];
                    if (bias)
                        v += bias[n0 + j];
                    y[j] = epilogue(&y[j], v, epi);
                }
            }
        }
    }
}
