/*
 * persist_probe.cu - experiment: what one persistent kernel (one CTA per SM, grid-wide
 * barriers in global memory) pays per GEMM stage at small M, when each stage's weights are
 * already in shared memory, fetched by the TMA engine while the stage before ran.
 *
 * The question it answers before anyone builds the megakernel: per layer, the encoder's
 * four GEMMs cost ~20 us on cuBLASLt at 83 tokens against a 6 us weight floor, and our own
 * GEMM kernels lost to cuBLASLt because each paid ~4-5 us of launch, first-byte latency
 * and reduction. In a persistent kernel those costs become: one grid barrier per stage, the
 * activations read from L2 by every CTA that needs them, and the MMAs; weights stream in
 * the background. This measures exactly those, on the English layer's shapes:
 *
 *   per layer: Q = X Wqkv^T (3072 x 1024)          fp16 out
 *              P = Q[:, :1024] Wo^T (1024 x 1024)  split-K S_o, fp32 partials
 *              H = sum P                            (stands in for residual + LayerNorm)
 *              U = H Wi^T (5248 x 1024)            fp16 out
 *              P = U[:, :2624] Wo2^T (1024 x 2624) split-K S_o2
 *              X = sum P                            (next layer's input)
 *   28 layers with their own weights (687 MB: nothing stays in L2 between forwards).
 *
 * Work: a unit is 16 output features x one K split; CTA c owns a contiguous run of units
 * (stream-K style over tiles); its weights for GEMM j+1, packed at load so they are one
 * contiguous block, are bulk-copied into shared memory (padded rows: ldmatrix without bank
 * conflicts) when GEMM j starts; the K split's X slice comes into shared memory in one batch
 * of cp.async and serves all the CTA's tiles of that split; 8 warps = 4 k-step lanes x 2
 * token halves, mma.sync m16n8k16 with W as the 16-row operand (swap-AB); the 4 k lanes'
 * partials are summed in shared memory in a fixed order, the K splits' partials (fp32) by
 * a sum stage after the GEMM (deterministic, no atomics). Earlier versions (git history of
 * this file, bench/results/experiments/persistent/): v1 copied weights row by row and
 * streamed X through a 2-chunk ring, v2 one bulk copy and a deeper ring, with only Wo and Wo2
 * split, v3 (the loop above) requested the next GEMM's weights only when a GEMM started.
 * v3's X slices waited longest where the next weights were largest (8 KB of X in 2 us while
 * Wi's weights arrived), though an SM takes 120-180 GB/s from the L2 when nothing else is in
 * flight (bench/ingest_probe.cu); v4 times where the next weights come from (W_EARLY as v3,
 * W_LATE, W_L2, W_NONE: see persist_kernel) and splits a stage into its phases.
 *
 * Reported (JSON on stdout): grid barrier cost alone; per M, weight mode and split, the
 * persistent chain's time per layer, its stages (CTA 0's clock between barriers), the last
 * layer's phases per GEMM (mean and max over CTAs), the same GEMM chain on cuBLAS
 * (cublasGemmEx, one graph) in the same process, and the max difference between the two
 * chains' outputs after one layer (relative to max |ref|; W_NONE computes garbage).
 *
 * v5 adds two modes without barriers (W_LATE_FLOW, W_NONE_FLOW): each K split of a stage waits only
 * for the output tiles its X slice covers, and the split products are summed tile by tile by the split
 * that stores last; the measure of what grid barriers cost beyond the data's own dependencies.
 *
 * Build: make build/bench/persist_probe (nvcc, sm_90a); run: make persist-probe, or
 *        build/bench/persist_probe [M ...] (default 16 96 128); JSON on stdout; PERSIST_MODE=i
 *        and PERSIST_SPLIT=i run one weight mode (W_*) and one row of splits[] only.
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "kernels/mma.cuh" /* cp_async16, ldmatrix_x4, mma16816 */

#include "bench/bench_check.cuh" /* CK, CB */
#include "kernels/sm90.cuh"       /* mbar_*, bulk_load */

#define THREADS 256
#define MAXT 4                  /* units per CTA and GEMM */
#define MAXG 128                /* GEMMs per launch */
#define NSTAMP (MAXG * 2 + 2)
#define FLOW_STRIDE 1024       /* flow modes: a GEMM's counters, 512 tiles' done flags then their arrivals */
#define CTR_BYTES (MAXG * FLOW_STRIDE * 4) /* the barrier counter, a 128-byte line a CTA (grid_sync_flags),
                                              or the flow modes' counters; zeroed before every launch */
#define NPHASE 5                /* weights wait, X arrival, MMAs, sums + stores, barrier */

struct Gemm {
    const __half *X;
    int ldx;
    const __half *W; /* [N, K] row-major */
    int N, K, S;     /* S > 1: fp32 partials P[S][Mp][N], then a sum stage into sum_out */
    __half *Y;       /* S == 1 */
    int ldy;
    float *P;
    __half *sum_out;
};

/* Where GEMM j + 1's weights come from while GEMM j runs (see persist_kernel). */
enum { W_EARLY, W_LATE, W_L2, W_NONE, W_L2_FLAGS, W_LATE_FLOW, W_NONE_FLOW, W_MODES };
static const char *const W_MODE_NAMES[W_MODES] = {"early", "late", "l2", "none", "l2-flags", "late-flow",
                                                  "none-flow"};

struct Plan {
    int n, wmode;
    Gemm g[MAXG];
    int w_off[2]; /* byte offsets of the two weight buffers in shared memory */
    int x_off, red_off;
};

/* Every CTA arrives (release), then waits until all have (acquire); epoch counts arrivals. */
__device__ __forceinline__ void grid_sync(unsigned *ctr, unsigned &epoch)
{
    __syncthreads();
    epoch += gridDim.x;
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(ctr) : "memory");
        unsigned v, polls = 0;
        do {
            if (++polls > (1u << 28))
                __trap();
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(ctr) : "memory");
        } while (v < epoch);
    }
    __syncthreads();
}

/* The same barrier without one counter that every CTA's arrival serializes on: CTA c stores
 * the epoch into its own line (flags[32 c], release), and thread t of every CTA waits for
 * CTA t's line (acquire), all lines polled side by side. */
__device__ __forceinline__ void grid_sync_flags(unsigned *flags, unsigned &epoch)
{
    __syncthreads();
    epoch++;
    if (threadIdx.x == 0)
        asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flags + 32 * blockIdx.x), "r"(epoch) : "memory");
    if (threadIdx.x < gridDim.x) {
        unsigned v, polls = 0;
        do {
            if (++polls > (1u << 28))
                __trap();
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(flags + 32 * threadIdx.x) : "memory");
        } while (v < epoch);
    }
    __syncthreads();
}

/* 32-bit: 64-bit divisions here and per unit in gemm_stage were a sixth of a 16-row run's
 * warp samples (Nsight Compute, call 6). */
__device__ __forceinline__ void units_of(const Gemm &g, int *u0, int *u1)
{
    const unsigned U = (unsigned)(g.N / 16 * g.S);
    *u0 = (int)(U * blockIdx.x / gridDim.x);
    *u1 = (int)(U * (blockIdx.x + 1) / gridDim.x);
}

/* The S partials of 4 columns at P, one split every step float4s apart, summed in the fixed order 0..S-1 and
 * stored as fp16 at o (the sum stage and the flow modes' tile sums: the same bits). */
__device__ __forceinline__ void sum_partials4(const float4 *P, size_t step, int S, __half *o)
{
    float4 v = __ldcg(P);
    for (int k = 1; k < S; k++) {
        const float4 q = __ldcg(P + k * step);
        v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
    }
    __half2 *h = reinterpret_cast<__half2 *>(o);
    h[0] = __floats2half2_rn(v.x, v.y);
    h[1] = __floats2half2_rn(v.z, v.w);
}

/* ---- the flow modes: a stage waits for the tiles it reads, not for every CTA ----
 * GEMM j's counters sit at ctr + j * FLOW_STRIDE: done[t] (0 / 1) when output tile t (16 features, every row)
 * is final, arrivals[t] at + 512 counting the K splits that stored their partial of tile t. The split
 * that arrives last sums tile t's partials in the fixed order 0..S-1 (so the bits do not depend on who sums)
 * and sets done[t]. A unit of GEMM j + 1 with K split s waits for done[t] of the tiles its slice of K
 * covers. No write overtakes a read of the same buffer: every CTA has units in every GEMM and runs the
 * stages in order, and within two GEMMs the waits reach every unit of a stage (the splits of a GEMM
 * together read all of the output they wait for), so the next write into a buffer comes after every CTA
 * has left the stage that read it; the partials get one buffer a GEMM of the layer (make_plan). */
__device__ __forceinline__ unsigned *flow_done(unsigned *ctr, int j) { return ctr + (size_t)j * FLOW_STRIDE; }

/* Before GEMM j's split s reads its X slice: the producer GEMM j - 1's tiles of that slice are done. */
__device__ void flow_wait(unsigned *ctr, int j, int s, int Ks)
{
    if (j > 0) {
        const unsigned *done = flow_done(ctr, j - 1) + s * (Ks / 16);
        for (int i = threadIdx.x; i < Ks / 16; i += THREADS) {
            unsigned v, polls = 0;
            do {
                if (++polls > (1u << 28))
                    __trap();
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(done + i) : "memory");
            } while (!v);
        }
    }
    __syncthreads();
}

/* Tile t of g: the sum of its S partials (fixed order) into sum_out, by the whole CTA. */
template <int MP> __device__ void flow_sum_tile(const Gemm &g, int t)
{
    for (int i = threadIdx.x; i < MP * 4; i += THREADS) { /* 4 columns an item, 4 items a row */
        const size_t e = (size_t)(i >> 2) * g.N + t * 16 + (i & 3) * 4;
        sum_partials4(reinterpret_cast<const float4 *>(g.P + e), (size_t)MP * g.N / 4, g.S, g.sum_out + e);
    }
}

/* After this CTA's tiles t0..t0+nt of GEMM j (of one K split) are stored (reduce_store ends on a barrier):
 * with one split they are done at once; with several, the split that arrives last at a tile sums it and sets
 * done. mine: nt flags in shared memory. */
template <int MP> __device__ void flow_signal(const Gemm &g, unsigned *ctr, int j, int t0, int nt, int *mine)
{
    unsigned *done = flow_done(ctr, j), *arrived = done + 512;
    if (g.S == 1) {
        if (threadIdx.x == 0)
            for (int i = 0; i < nt; i++)
                asm volatile("st.release.gpu.global.u32 [%0], 1;\n" ::"l"(done + t0 + i) : "memory");
        return;
    }
    if (threadIdx.x == 0)
        for (int i = 0; i < nt; i++) {
            unsigned old;
            asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n"
                         : "=r"(old)
                         : "l"(arrived + t0 + i)
                         : "memory");
            mine[i] = old == (unsigned)g.S - 1;
        }
    __syncthreads();
    for (int i = 0; i < nt; i++) {
        if (!mine[i])
            continue;
        flow_sum_tile<MP>(g, t0 + i);
        __syncthreads();
        if (threadIdx.x == 0)
            asm volatile("st.release.gpu.global.u32 [%0], 1;\n" ::"l"(done + t0 + i) : "memory");
    }
    __syncthreads(); /* mine is rewritten by the next batch */
}

/* This CTA's weights of GEMM g: their bytes, and where they start (*src). Packed
 * (pack_kernel): unit u = s T + t is 16 rows of Ks + 8 halves (the pad keeps ldmatrix free of
 * bank conflicts), units in order, so a CTA's run of units is one contiguous block. */
__device__ uint32_t cta_weights(const Gemm &g, const char **src)
{
    int u0, u1;
    units_of(g, &u0, &u1);
    const uint32_t ub = 16u * (g.K / g.S * 2 + 16);
    *src = (const char *)g.W + (size_t)u0 * ub;
    return (uint32_t)(u1 - u0) * ub;
}

/* Thread 0: this CTA's weights of GEMM g into buf, one bulk copy. */
__device__ void prefetch(const Gemm &g, char *buf, uint64_t *bar)
{
    const char *src;
    const uint32_t bytes = cta_weights(g, &src);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    mbar_arrive_tx(bar, bytes);
    if (bytes)
        bulk_load(buf, src, bytes, bar);
}

/* Thread 0: this CTA's weights of GEMM g into the L2 only (no bytes come back to the SM). */
__device__ void prefetch_l2(const Gemm &g)
{
    const char *src;
    const uint32_t bytes = cta_weights(g, &src);
    if (bytes)
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}

/* The four k lanes' partials of each tile summed in a fixed order (kq 0 + 1 + 2 + 3)
 * through red, then stored: fp16 into Y (one K split) or fp32 into the split's partials. */
template <int MP>
__device__ void reduce_store(const Gemm &g, float (&acc)[MAXT][MP / 16][4], int nt, int t0, int s, float4 *red)
{
    constexpr int NTH = MP / 16;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, kq = warp & 3, nh = warp >> 2;
#pragma unroll
    for (int i = 0; i < MAXT; i++) {
        if (i >= nt)
            break;
        if (kq > 0)
#pragma unroll
            for (int j = 0; j < NTH; j++)
                red[(((kq - 1) * 2 + nh) * NTH + j) * 32 + lane] =
                    make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
        __syncthreads();
        if (kq == 0) {
            const int t = t0 + i, g8 = lane >> 2, q = lane & 3;
#pragma unroll
            for (int j = 0; j < NTH; j++) {
                float v[4] = {acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]};
                for (int w = 0; w < 3; w++) {
                    const float4 p = red[((w * 2 + nh) * NTH + j) * 32 + lane];
                    v[0] += p.x, v[1] += p.y, v[2] += p.z, v[3] += p.w;
                }
                /* c0, c1: feature t*16 + g8, tokens 2q, 2q+1 of n-tile; c2, c3: feature + 8 */
                const int tok = (nh * NTH + j) * 8 + 2 * q, f = t * 16 + g8;
                if (g.S == 1) {
                    g.Y[(size_t)tok * g.ldy + f] = __float2half_rn(v[0]);
                    g.Y[(size_t)(tok + 1) * g.ldy + f] = __float2half_rn(v[1]);
                    g.Y[(size_t)tok * g.ldy + f + 8] = __float2half_rn(v[2]);
                    g.Y[(size_t)(tok + 1) * g.ldy + f + 8] = __float2half_rn(v[3]);
                } else {
                    float *P = g.P + (size_t)s * MP * g.N;
                    P[(size_t)tok * g.N + f] = v[0];
                    P[(size_t)(tok + 1) * g.N + f] = v[1];
                    P[(size_t)tok * g.N + f + 8] = v[2];
                    P[(size_t)(tok + 1) * g.N + f + 8] = v[3];
                }
            }
        }
        __syncthreads();
    }
}

/* One k-step ks of up to nt (<= MAXT) tiles into ac: this warp's token half (warp / 4). */
template <int MP>
__device__ __forceinline__ void mma_step(const char *wbuf, const char *xs, int wu0, int nt, int pitch, int ks,
                                         float (&ac)[MAXT][MP / 16][4])
{
    constexpr int NTH = MP / 16;
    const int lane = threadIdx.x & 31, nh = threadIdx.x >> 7;
    uint32_t a[MAXT][4];
#pragma unroll
    for (int i = 0; i < MAXT; i++)
        if (i < nt) {
            const int r = (lane & 7) + ((lane >> 3) & 1) * 8, kk = ks * 16 + ((lane >> 4) & 1) * 8;
            ldmatrix_x4(a[i], wbuf + ((wu0 + i) * 16 + r) * pitch + kk * 2);
        }
#pragma unroll
    for (int j = 0; j < NTH; j += 2) {
        uint32_t b[4];
        /* an odd last n-tile: the upper lanes read a valid row; b[2], b[3] go unused */
        const int n = min((nh * NTH + j) * 8 + ((lane >> 4) & 1) * 8 + (lane & 7), MP - 1);
        ldmatrix_x4(b, xs + n * pitch + (ks * 16 + ((lane >> 3) & 1) * 8) * 2);
#pragma unroll
        for (int i = 0; i < MAXT; i++)
            if (i < nt) {
                mma16816<__half>(ac[i][j], a[i], &b[0]);
                if (j + 1 < NTH)
                    mma16816<__half>(ac[i][j + 1], a[i], &b[2]);
            }
    }
}

/* Up to MAXT tiles t0.. of one K split s, the split's X slice already in shared memory
 * (xs: MP rows, pitch Ks * 2 + 16 bytes): 8 warps = 4 k-step lanes x 2 token halves. */
template <int MP>
__device__ long long gemm_tiles(const Gemm &g, const char *wbuf, int wu0, int nt, int t0, int s, const char *xs,
                           float4 *red)
{
    constexpr int NTH = MP / 16; /* n-tiles (8 tokens) per token half */
    const int Ks = g.K / g.S, pitch = Ks * 2 + 16, nsteps = Ks / 16;
    const int kq = (threadIdx.x >> 5) & 3;
    /* Each accumulator is a chain of dependent MMAs; at few rows a warp has only nt of them,
     * so up to 32 rows its even and odd k-steps go into two sets, summed at the end. */
    constexpr int NACC = MP <= 32 ? 2 : 1;
    float acc[NACC][MAXT][NTH][4];
#pragma unroll
    for (int h = 0; h < NACC; h++)
#pragma unroll
        for (int i = 0; i < MAXT; i++)
#pragma unroll
            for (int j = 0; j < NTH; j++)
                acc[h][i][j][0] = acc[h][i][j][1] = acc[h][i][j][2] = acc[h][i][j][3] = 0.f;
    int ks = kq;
    if constexpr (NACC == 2) {
        for (; ks + 4 < nsteps; ks += 8)
            mma_step<MP>(wbuf, xs, wu0, nt, pitch, ks, acc[0]), mma_step<MP>(wbuf, xs, wu0, nt, pitch, ks + 4, acc[1]);
    }
    for (; ks < nsteps; ks += 4)
        mma_step<MP>(wbuf, xs, wu0, nt, pitch, ks, acc[0]);
    if constexpr (NACC == 2) {
#pragma unroll
        for (int i = 0; i < MAXT; i++)
#pragma unroll
            for (int j = 0; j < NTH; j++)
#pragma unroll
                for (int q = 0; q < 4; q++)
                    acc[0][i][j][q] += acc[1][i][j][q];
    }
    const long long c0 = clock64();
    reduce_store<MP>(g, acc[0], nt, t0, s, red);
    return clock64() - c0;
}

/* A CTA's units, run by run (a run: consecutive units of one K split): the run's X slice
 * [MP, Ks] comes into shared memory once, in one batch of 16-byte copies (one L2 round
 * trip), and serves all of the run's tiles. */
template <int MP, typename AfterX>
__device__ void gemm_stage(const Gemm &g, const char *wbuf, char *xs, float4 *red, long long *xwait, long long *store,
                           unsigned *flow, int j, AfterX after_x)
{
    __shared__ int mine[MAXT]; /* flow: the tiles of a batch this CTA sums */
    bool told = false; /* after_x() runs once, when the first run's X has landed (or at the end) */
    int u0, u1;
    units_of(g, &u0, &u1);
    const int T = g.N / 16, Ks = g.K / g.S, per = Ks / 8, pitch = Ks * 2 + 16;
    for (int u = u0; u < u1;) {
        const int s = u / T, e = min(u1, (s + 1) * T), t0 = u - s * T;
        const long long x0 = clock64();
        if (flow)
            flow_wait(flow, j, s, Ks);
        /* chunk i = row r, 16-byte column p, stepped without a division a chunk (the
         * divisions made the issue as slow as the copies: Nsight Compute, call 5) */
        int r = threadIdx.x / per, p = threadIdx.x % per;
        const int dr = THREADS / per, dp = THREADS % per;
        const __half *xg = g.X + (size_t)s * Ks;
        while (r < MP) {
            cp_async16(xs + r * pitch + p * 16, xg + (size_t)r * g.ldx + p * 8, true);
            r += dr, p += dp;
            if (p >= per)
                p -= per, r++;
        }
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 0;\n" ::);
        __syncthreads();
        *xwait += clock64() - x0;
        if (!told)
            after_x(), told = true;
        for (int v = u; v < e; v += MAXT) {
            const int nt = min(MAXT, e - v);
            *store += gemm_tiles<MP>(g, wbuf, v - u0, nt, t0 + (v - u), s, xs, red);
            if (flow) {
                const long long c = clock64();
                flow_signal<MP>(g, flow, j, t0 + (v - u), nt, mine);
                *store += clock64() - c;
            }
        }
        u = e;
    }
    if (!told)
        after_x();
}

/* sum_out[MP, N] = sum over s of P[s] (fixed order), fp16; every CTA a share. */
template <int MP> __device__ void sum_stage(const Gemm &g)
{
    const int n4 = MP * g.N / 4;
    const float4 *P = reinterpret_cast<const float4 *>(g.P);
    for (int i = blockIdx.x * THREADS + threadIdx.x; i < n4; i += gridDim.x * THREADS)
        sum_partials4(P + i, n4, g.S, g.sum_out + (size_t)i * 4);
}

__constant__ Plan c_plan;

/* The weight barriers, then GEMM 0's weights requested (and GEMM 1's into the L2, W_L2). */
__device__ void first_weights(const Plan &pl, int wm, char *smem, uint64_t *bars)
{
    if (threadIdx.x == 0) {
        mbar_init(&bars[0], 1);
        mbar_init(&bars[1], 1);
        mbar_init_fence();
    }
    __syncthreads();
    if (threadIdx.x == 0 && wm != W_NONE) {
        prefetch(pl.g[0], smem + pl.w_off[0], &bars[0]);
        if (wm == W_L2 && pl.n > 1)
            prefetch_l2(pl.g[1]);
    }
}

/* A GEMM stage's cycles: waiting for weights (t0..t1), X's arrival (xw), the MMAs (the rest to
 * t2), sums and stores (st), at the barrier (t2..now). */
__device__ void record_phases(float *q, long long t0, long long t1, long long t2, long long xw, long long st)
{
    q[0] = (float)(t1 - t0), q[1] = (float)xw, q[2] = (float)(t2 - t1 - xw - st), q[3] = (float)st;
    q[4] = (float)(clock64() - t2);
}

/* GEMM j + 1's weights (wmode):
 *   W_EARLY: bulk-copied into shared memory when GEMM j starts, so they stream in while GEMM j
 *            runs (asking only when a stage is reached cost 1.6-2.8 us more a stage:
 *            bench/results/experiments/README.md); GEMM j's X slice then queues behind them;
 *   W_LATE:  the same copy, issued once GEMM j's first X slice has landed (2.9-3.7 us a layer
 *            faster than W_EARLY at 16-64 rows: bench/results/experiments/persistent/call6-h100/);
 *   W_L2:    GEMM j + 2's weights prefetched into the L2 when GEMM j starts (the DRAM time,
 *            no bytes into the SM), GEMM j + 1's copied into shared memory from the L2 once
 *            GEMM j's X has landed;
 *   W_NONE:  never copied (a bound: X, MMAs, stores and barriers alone; outputs garbage);
 *   W_L2_FLAGS: W_L2 with grid_sync_flags for the barriers;
 *   W_LATE_FLOW, W_NONE_FLOW: W_LATE, W_NONE with no barrier at all: a stage's K split waits for the tiles
 *            of its X slice (flow_wait), and the partial products are summed tile by tile by the split that
 *            stores last (flow_signal), not in a sum stage. */
__device__ __forceinline__ int weights_mode(int mode)
{
    return mode == W_L2_FLAGS ? W_L2 : mode == W_LATE_FLOW ? W_LATE : mode == W_NONE_FLOW ? W_NONE : mode;
}

template <int MP>
__global__ void __launch_bounds__(THREADS, 1) persist_kernel(unsigned *ctr, long long *stamps, float *prof)
{
    extern __shared__ __align__(128) char smem[];
    __shared__ __align__(8) uint64_t bars[2];
    const Plan &pl = c_plan;
    const int wm = weights_mode(pl.wmode);
    unsigned *flow = pl.wmode == W_LATE_FLOW || pl.wmode == W_NONE_FLOW ? ctr : nullptr;
    unsigned epoch = 0;
    int ns = 0;
    auto sync = [&] { /* a grid barrier (none in the flow modes), then CTA 0's stamp */
        if (!flow && pl.wmode == W_L2_FLAGS)
            grid_sync_flags(ctr, epoch);
        if (!flow && pl.wmode != W_L2_FLAGS)
            grid_sync(ctr, epoch);
        if (blockIdx.x == 0 && threadIdx.x == 0 && ns < NSTAMP)
            stamps[ns++] = clock64();
    };
    first_weights(pl, wm, smem, bars);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        stamps[ns++] = clock64();
    for (int j = 0; j < pl.n; j++) {
#if PERSIST_GEMM_COPY /* the stage's descriptor read out of constant memory at once (a variant) */
        const Gemm g = pl.g[j];
#else
        const Gemm &g = pl.g[j];
#endif
        const bool next = threadIdx.x == 0 && j + 1 < pl.n;
        auto copy_next = [&] { prefetch(pl.g[j + 1], smem + pl.w_off[(j + 1) & 1], &bars[(j + 1) & 1]); };
        if (next && wm == W_EARLY)
            copy_next();
        if (threadIdx.x == 0 && wm == W_L2 && j + 2 < pl.n)
            prefetch_l2(pl.g[j + 2]);
        const long long t0 = clock64();
        if (wm != W_NONE)
            mbar_wait(&bars[j & 1], (j >> 1) & 1);
        const long long t1 = clock64();
        long long xw = 0, st = 0;
        gemm_stage<MP>(g, smem + pl.w_off[j & 1], smem + pl.x_off, reinterpret_cast<float4 *>(smem + pl.red_off), &xw,
                       &st, flow, j, [&] {
                           if (next && (wm == W_LATE || wm == W_L2))
                               copy_next();
                       });
        __syncthreads();
        const long long t2 = clock64();
        sync();
        if (threadIdx.x == 0 && j >= pl.n - 4) /* the last layer */
            record_phases(prof + ((size_t)(j - (pl.n - 4)) * gridDim.x + blockIdx.x) * NPHASE, t0, t1, t2, xw, st);
        if (g.S > 1) { /* the flow modes stamp here too (their sums ran inside the stage) */
            if (!flow)
                sum_stage<MP>(g);
            sync();
        }
    }
}

/* n barriers in a row: the counter (grid_sync) or the flags (grid_sync_flags). */
__global__ void barrier_kernel(unsigned *ctr, int n, int flags)
{
    unsigned epoch = 0;
    for (int i = 0; i < n; i++)
        if (flags)
            grid_sync_flags(ctr, epoch);
        else
            grid_sync(ctr, epoch);
}

/* W [N, K] -> packed units (see prefetch) */
__global__ void pack_kernel(const __half *W, int N, int K, int S, __half *Wp)
{
    const int T = N / 16, Ks = K / S, rowp = Ks + 8;
    const size_t n = (size_t)T * S * 16 * rowp;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t u = i / (16 * rowp);
        const int r = (int)(i / rowp % 16), k = (int)(i % rowp), s = (int)(u / T), t = (int)(u % T);
        Wp[i] = k < Ks ? W[(size_t)(t * 16 + r) * K + (size_t)s * Ks + k] : __float2half_rn(0.f);
    }
}

__global__ void init_kernel(__half *p, size_t n, float scale, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t x = (uint32_t)i * 2654435761u ^ seed;
        x ^= x >> 16, x *= 0x7feb352d, x ^= x >> 15, x *= 0x846ca68b, x ^= x >> 16;
        p[i] = __float2half_rn(((x >> 8) * (1.f / 16777216.f) * 2.f - 1.f) * scale);
    }
}

/* ---- host ---- */

static const int L = 28, D = 1024, F2 = 5248, F = 2624;
struct Bufs {
    __half *W[L][4], *Wp[L][4], *X, *Q, *H, *U; /* Wp: packed for the current splits */
    float *P[4]; /* a GEMM of the layer's partial products (the flow modes need them apart) */
};

static void init(__half *p, size_t n, float scale, uint32_t seed)
{
    init_kernel<<<1024, 256>>>(p, n, scale, seed);
    CK(cudaGetLastError());
}

static Plan make_plan(const Bufs &b, int layers, int Mp, const int *sp, int G, int wmode, size_t *smem)
{
    Plan p;
    memset(&p, 0, sizeof p);
    p.wmode = wmode;
    for (int l = 0; l < layers; l++) {
        Gemm *g = &p.g[p.n];
        g[0] = {b.X, D, b.Wp[l][0], 3 * D, D, sp[0], b.Q, 3 * D, b.P[0], b.Q};
        g[1] = {b.Q, 3 * D, b.Wp[l][1], D, D, sp[1], b.H, D, b.P[1], b.H};
        g[2] = {b.H, D, b.Wp[l][2], F2, D, sp[2], b.U, F2, b.P[2], b.U};
        g[3] = {b.U, F2, b.Wp[l][3], D, F, sp[3], b.X, D, b.P[3], b.X};
        p.n += 4;
    }
    int need[2] = {0, 0}, xneed = 0;
    for (int j = 0; j < 4; j++) {
        const Gemm &g = p.g[j];
        const long U = (long)(g.N / 16) * g.S;
        const int per = (int)((U + G - 1) / G);
        if ((g.K / g.S) % 16) {
            fprintf(stderr, "plan: GEMM %d: K/S %% 16 != 0\n", j);
            exit(2);
        }
        need[j & 1] = std::max(need[j & 1], per * 16 * (g.K / g.S * 2 + 16));
        xneed = std::max(xneed, Mp * (g.K / g.S * 2 + 16));
    }
    p.w_off[0] = 0;
    p.w_off[1] = (need[0] + 127) / 128 * 128;
    p.x_off = p.w_off[1] + (need[1] + 127) / 128 * 128;
    p.red_off = p.x_off + (xneed + 127) / 128 * 128;
    *smem = (size_t)p.red_off + 6 * (Mp / 16) * 32 * 16;
    return p;
}

typedef void (*kfn)(unsigned *, long long *, float *);
static kfn kernel_for(int Mp)
{
    switch (Mp) {
    case 16: return persist_kernel<16>;
    case 32: return persist_kernel<32>;
    case 64: return persist_kernel<64>;
    case 96: return persist_kernel<96>;
    case 128: return persist_kernel<128>;
    }
    return nullptr;
}

static void launch(kfn k, int G, size_t smem, unsigned *ctr, long long *stamps, float *prof, cudaStream_t st)
{
    CK(cudaMemsetAsync(ctr, 0, CTR_BYTES, st));
    void *args[] = {&ctr, &stamps, &prof};
    CK(cudaLaunchCooperativeKernel((void *)k, G, THREADS, args, smem, st));
}

/* Median over 7 groups of the mean ms of reps calls of body, between events on st. */
template <typename F> static float time_ms(cudaStream_t st, int reps, F body)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> v;
    for (int r = 0; r < 7; r++) {
        CK(cudaEventRecord(a, st));
        for (int i = 0; i < reps; i++)
            body();
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        v.push_back(ms / reps);
    }
    std::sort(v.begin(), v.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return v[v.size() / 2];
}

/* The same chain on cuBLAS: one cublasGemmEx per GEMM, no K splits. */
static void cublas_chain(cublasHandle_t h, const Bufs &b, int layers, int Mp)
{
    const float one = 1.f, zero = 0.f;
    for (int l = 0; l < layers; l++) {
        struct {
            const __half *X;
            int ldx;
            const __half *W;
            int N, K;
            __half *Y;
            int ldy;
        } s[4] = {{b.X, D, b.W[l][0], 3 * D, D, b.Q, 3 * D},
                  {b.Q, 3 * D, b.W[l][1], D, D, b.H, D},
                  {b.H, D, b.W[l][2], F2, D, b.U, F2},
                  {b.U, F2, b.W[l][3], D, F, b.X, D}};
        for (int j = 0; j < 4; j++) /* column-major view: Y^T[N, Mp] = W[N, K] . X^T[K, Mp] */
            CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s[j].N, Mp, s[j].K, &one, s[j].W, CUDA_R_16F, s[j].K,
                            s[j].X, CUDA_R_16F, s[j].ldx, &zero, s[j].Y, CUDA_R_16F, s[j].ldy,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
}

static float maxabs_diff(const __half *a, const __half *b, size_t n, float *ref_max)
{
    std::vector<__half> x(n), y(n);
    CK(cudaMemcpy(x.data(), a, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), b, n * 2, cudaMemcpyDeviceToHost));
    float d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        const float u = __half2float(x[i]), v = __half2float(y[i]);
        if (!(fabsf(u - v) <= d))
            d = fabsf(u - v);
        m = std::max(m, fabsf(v));
    }
    *ref_max = m;
    return d;
}

struct Probe {
    int G, clk; /* SMs, SM clock (kHz: cycles per ms) */
    cudaDeviceProp prop;
    cudaStream_t st;
    cublasHandle_t h;
    Bufs b;
    __half *X0; /* the first layer's input, copied into b.X before each run */
    unsigned *ctr;
    long long *stamps;
    float *prof; /* per CTA and GEMM of the last layer: cycles of each phase */
    size_t wbytes;
};
static const int NK[4][2] = {{3 * D, D}, {D, D}, {F2, D}, {D, F}}; /* N, K of the layer's GEMMs */
static const int MPMAX = 128;

static void setup(Probe *p)
{
    CK(cudaSetDevice(0));
    CK(cudaDeviceGetAttribute(&p->G, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&p->clk, cudaDevAttrClockRate, 0));
    CK(cudaGetDeviceProperties(&p->prop, 0));
    CK(cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
    CB(cublasCreate(&p->h));
    CB(cublasSetStream(p->h, p->st));
    Bufs &b = p->b;
    p->wbytes = 0;
    for (int l = 0; l < L; l++)
        for (int j = 0; j < 4; j++) {
            const size_t n = (size_t)NK[j][0] * NK[j][1];
            CK(cudaMalloc(&b.W[l][j], n * 2));
            CK(cudaMalloc(&b.Wp[l][j], (size_t)NK[j][0] * (NK[j][1] + 8 * 8) * 2)); /* splits up to 8 */
            init(b.W[l][j], n, sqrtf(3.f / NK[j][1]), 77u + l * 4 + j);
            p->wbytes += n * 2;
        }
    CK(cudaMalloc(&p->X0, (size_t)MPMAX * D * 2));
    CK(cudaMalloc(&b.X, (size_t)MPMAX * D * 2));
    CK(cudaMalloc(&b.Q, (size_t)MPMAX * 3 * D * 2));
    CK(cudaMalloc(&b.H, (size_t)MPMAX * D * 2));
    CK(cudaMalloc(&b.U, (size_t)MPMAX * F2 * 2));
    for (int j = 0; j < 4; j++)
        CK(cudaMalloc(&b.P[j], (size_t)8 * MPMAX * F2 * 4));
    init(p->X0, (size_t)MPMAX * D, 1.f, 5u);
    CK(cudaMalloc(&p->ctr, CTR_BYTES));
    CK(cudaMalloc(&p->stamps, NSTAMP * 8));
    CK(cudaMalloc(&p->prof, (size_t)4 * p->G * NPHASE * sizeof(float)));
    CK(cudaDeviceSynchronize());
}

/* us per grid barrier (flags: grid_sync_flags): 2,000 in one kernel against 10. */
static double barrier_us(Probe *p, int flags)
{
    int n = 0;
    void *args[] = {&p->ctr, &n, &flags};
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float t[2];
    for (int w = 0; w < 2; w++) {
        n = w ? 2000 : 10;
        for (int rep = 0; rep < 2; rep++) { /* the first launch warms up */
            CK(cudaMemsetAsync(p->ctr, 0, CTR_BYTES, p->st));
            if (rep)
                CK(cudaEventRecord(e0, p->st));
            CK(cudaLaunchCooperativeKernel((void *)barrier_kernel, p->G, THREADS, args, 0, p->st));
        }
        CK(cudaEventRecord(e1, p->st));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t[w], e0, e1));
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return (t[1] - t[0]) * 1e3 / 1990;
}

/* The cuBLAS chain of L layers as one graph: ms per replay; ref gets one layer's output. */
static float cublas_reference(Probe *p, int Mp, __half *ref)
{
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaMemcpyAsync(p->b.X, p->X0, (size_t)Mp * D * 2, cudaMemcpyDeviceToDevice, p->st));
    CK(cudaStreamBeginCapture(p->st, cudaStreamCaptureModeThreadLocal));
    cublas_chain(p->h, p->b, L, Mp);
    CK(cudaStreamEndCapture(p->st, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    const float t = time_ms(p->st, 20, [&] { CK(cudaGraphLaunch(ge, p->st)); });
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(gr));
    CK(cudaMemcpyAsync(p->b.X, p->X0, (size_t)Mp * D * 2, cudaMemcpyDeviceToDevice, p->st));
    cublas_chain(p->h, p->b, 1, Mp);
    CK(cudaMemcpyAsync(ref, p->b.X, (size_t)Mp * D * 2, cudaMemcpyDeviceToDevice, p->st));
    CK(cudaStreamSynchronize(p->st));
    return t;
}

/* Per GEMM of the last layer: mean and max over CTAs of each phase, us. */
static void print_phases(const Probe *p)
{
    std::vector<float> pf((size_t)4 * p->G * NPHASE);
    CK(cudaMemcpy(pf.data(), p->prof, pf.size() * sizeof(float), cudaMemcpyDeviceToHost));
    const char *gn[4] = {"wqkv", "wo", "wi", "wo2"};
    const char *ph[NPHASE] = {"weights_wait", "x_arrival", "mma", "sum_store", "barrier"};
    printf("\"last_layer_gemm_phases_us\": {");
    for (int j = 0; j < 4; j++) {
        printf("%s\"%s\": {", j ? ", " : "", gn[j]);
        for (int q = 0; q < NPHASE; q++) {
            double sum = 0, mx = 0;
            for (int c = 0; c < p->G; c++) {
                const double v = pf[((size_t)j * p->G + c) * NPHASE + q] / (p->clk * 1e-3);
                sum += v, mx = std::max(mx, v);
            }
            printf("%s\"%s_mean\": %.2f, \"%s_max\": %.2f", q ? ", " : "", ph[q], sum / p->G, ph[q], mx);
        }
        printf("}");
    }
    printf("}");
}

/* CTA 0's stage times of layer 27 (of 28) and the stage labels. */
static void print_stages(const Probe *p, const int *sp)
{
    std::vector<long long> s(NSTAMP);
    CK(cudaMemcpy(s.data(), p->stamps, NSTAMP * 8, cudaMemcpyDeviceToHost));
    const char *gl[4] = {"wqkv", "wo", "wi", "wo2"};
    char labels[96] = "";
    int per_layer = 0;
    for (int j = 0; j < 4; j++) {
        per_layer += 1 + (sp[j] > 1);
        strcat(labels, gl[j]);
        strcat(labels, sp[j] > 1 ? " sum " : " ");
    }
    const int nst = 1 + L * per_layer, a0 = 1 + (L - 2) * per_layer;
    const double cyc_us = p->clk * 1e-3;
    printf("\"stage_us_layer27\": [");
    for (int i = 0; i < per_layer; i++)
        printf("%s%.2f", i ? ", " : "", (s[a0 + i] - s[a0 + i - 1]) / cyc_us);
    printf("], \"stage_labels\": \"%s\", \"first_stage_us\": %.2f, \"stamped_total_us\": %.1f", labels,
           (s[1] - s[0]) / cyc_us, (s[nst - 1] - s[0]) / cyc_us);
}

/* One split configuration at M tokens: the one-layer check against ref, then 28 layers timed.
 * Returns 0 when the configuration does not fit in shared memory (nothing printed). */
static int run_split(Probe *p, kfn k, int M, int Mp, const int *sp, int wmode, float t_cublas, const __half *ref,
                     int first)
{
    size_t smem;
    Plan p1 = make_plan(p->b, 1, Mp, sp, p->G, wmode, &smem);
    if (smem > (size_t)p->prop.sharedMemPerBlockOptin - 64) {
        fprintf(stderr, "M %d splits %d/%d/%d/%d: %zu bytes of shared memory, skipped\n", M, sp[0], sp[1], sp[2],
                sp[3], smem);
        return 0;
    }
    for (int l = 0; l < L; l++)
        for (int j = 0; j < 4; j++) {
            pack_kernel<<<1024, 256, 0, p->st>>>(p->b.W[l][j], NK[j][0], NK[j][1], sp[j], p->b.Wp[l][j]);
            CK(cudaGetLastError());
        }
    CK(cudaFuncSetAttribute((const void *)k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaMemcpyToSymbol(c_plan, &p1, sizeof p1));
    CK(cudaMemcpyAsync(p->b.X, p->X0, (size_t)Mp * D * 2, cudaMemcpyDeviceToDevice, p->st));
    launch(k, p->G, smem, p->ctr, p->stamps, p->prof, p->st);
    CK(cudaStreamSynchronize(p->st));
    float rmax;
    const float d = maxabs_diff(p->b.X, ref, (size_t)M * D, &rmax);
    Plan pl = make_plan(p->b, L, Mp, sp, p->G, wmode, &smem);
    CK(cudaMemcpyToSymbol(c_plan, &pl, sizeof pl));
    const float t = time_ms(p->st, 20, [&] { launch(k, p->G, smem, p->ctr, p->stamps, p->prof, p->st); });
    printf("%s  {\"M\": %d, \"Mp\": %d, \"weights\": \"%s\", \"splits_wqkv_wo_wi_wo2\": [%d, %d, %d, %d], "
           "\"smem\": %zu, \"persistent_ms\": %.4f, \"persistent_us_per_layer\": %.2f, \"cublas_graph_ms\": %.4f, "
           "\"cublas_us_per_layer\": %.2f, \"weight_tbps\": %.2f, \"check_maxdiff\": %.3g, \"check_refmax\": %.3g, ",
           first ? "" : ",\n", M, Mp, W_MODE_NAMES[wmode], sp[0], sp[1], sp[2], sp[3], smem, t, t * 1e3 / L, t_cublas,
           t_cublas * 1e3 / L, p->wbytes / (t * 1e-3) / 1e12, d, rmax);
    print_stages(p, sp);
    printf(", ");
    print_phases(p);
    printf("}");
    return 1;
}

int main(int argc, char **argv)
{
    std::vector<int> Ms;
    for (int i = 1; i < argc; i++)
        Ms.push_back(atoi(argv[i]));
    if (Ms.empty())
        Ms = {16, 96, 128};
    /* PERSIST_MODE / PERSIST_SPLIT: one weight mode / split row only (for a profiler) */
    const char *em = getenv("PERSIST_MODE"), *es = getenv("PERSIST_SPLIT");
    const int only_mode = em ? atoi(em) : -1, only_split = es ? atoi(es) : -1;
    static Probe p;
    setup(&p);
    printf("{\n \"tool\": \"bench/persist_probe.cu\", \"gpu\": \"%s\", \"sms\": %d, \"sm_clock_khz\": %d,\n",
           p.prop.name, p.G, p.clk);
    printf(" \"weights_mb\": %.1f, \"layers\": %d,\n", p.wbytes / 1e6, L);
    printf(" \"grid_barrier_us\": %.3f, \"grid_barrier_flags_us\": %.3f,\n", barrier_us(&p, 0), barrier_us(&p, 1));
    printf(" \"runs\": [\n");
    const int splits[][4] = {{1, 4, 1, 4}, {2, 4, 2, 4}, {4, 4, 4, 4}, {4, 8, 4, 4}, {8, 8, 8, 4}};
    int first = 1;
    for (int M : Ms) {
        const int Mp = (M + 15) / 16 * 16;
        kfn k = kernel_for(Mp);
        if (!k || M > MPMAX) {
            fprintf(stderr, "M %d: padded %d not compiled\n", M, Mp);
            continue;
        }
        __half *ref;
        CK(cudaMalloc(&ref, (size_t)Mp * D * 2));
        const float t_cublas = cublas_reference(&p, Mp, ref);
        for (int wm = 0; wm < W_MODES; wm++)
            for (int i = 0; i < (int)(sizeof splits / sizeof splits[0]); i++)
                if ((only_mode < 0 || only_mode == wm) && (only_split < 0 || only_split == i) &&
                    run_split(&p, k, M, Mp, splits[i], wm, t_cublas, ref, first))
                    first = 0;
        CK(cudaFree(ref));
    }
    printf("\n ]\n}\n");
    return 0;
}
