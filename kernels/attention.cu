/*
 * attention.cu - multi-head attention over the packed (varlen) QKV buffer,
 * head_dim 64, flash-attention style on the tensor cores (mma.sync m16n8k16,
 * fp32 accumulation), with an optional inclusive sliding window and an
 * optional query selection.
 *
 * Layout: qkv [T, 3D] (Q | K | V), row r of the batch at slots [cu[r], cu[r+1]);
 * out [T, D]. The host lists the query tiles (kn_attention_tiles in
 * kernels/cpu.h: tiles[2i] = row, tiles[2i+1] = first query slot, ceil(len /
 * 64) tiles per row, row -1 for unused entries up to a bucket's capacity), so
 * the grid is (tiles, heads) whatever the row lengths, and a CUDA graph
 * captured for a capacity serves any batch that fits it (spare tiles return at
 * once). Only the rows' own query slots are written; padding slots past cu[R]
 * keep whatever they held.
 *
 * Algorithm (kernels/attention_cpu.c is the CPU sibling, same tiles and masks):
 *   - A block is (query tile of 64, head); four warps own 16 queries each. The
 *     tile's queries are [q0, min(q0 + 64, cu[r+1])). All positions below are
 *     relative to the row start s = cu[r] (the window |i - j| <= window is the
 *     same in absolute slots): keys are walked in tiles of 64 aligned at the row
 *     start, so a row's results are bit for bit those of the same row alone at
 *     slot 0. Key tiles outside [0, len) or outside the query tile's window band
 *     are never loaded.
 *   - K and V tiles are staged in shared memory with cp.async, two deep (the
 *     next tile loads while this one computes); keys at or past the row end are
 *     zero-filled and never read, so the next row's (or padding) values cannot
 *     reach an output through a zero weight (0 * NaN).
 *   - S = Q K^T from register fragments (Q loaded once), masked per element by
 *     j < len && (window < 0 || |i - j| <= window), then the online softmax in
 *     fp32 with the scale 1/8 folded with log2 e into the exponent: m' =
 *     max(m, max_j s), alpha = 2^((m - m') c) (exactly 1 when m did not move, 0
 *     while m = -inf), p = 2^(s c - m' c) (one FMA and ex2.approx), l = l alpha +
 *     sum p, O = O alpha + P V. P is rounded to the 16-bit dtype for the P V
 *     product (the accumulator stays fp32), the usual flash-attention trade.
 *     A key tile with no visible key for a query leaves its state bit for bit,
 *     so a query's result does not depend on which other queries share its tile.
 *   - At the end O / l, or zeros where l == 0 (a query that saw no key): all
 *     outputs finite.
 * Alignment: qkv and out 16-byte aligned; a slot's row is 3D (or D) elements
 * with D % 64 == 0, so every token row, and every head's 64 columns in it, stay
 * 16-byte aligned wherever a row starts (cp.async 16-byte loads, 4-byte stores).
 * K fragments come from shared memory through ldmatrix, V fragments through
 * ldmatrix.trans, on rows padded to 72 elements (conflict-free). 168 registers
 * at most, so 3 blocks (12 warps) share an SM: capped at 128 for 4 blocks the
 * kernel spilled 12-28 bytes, and without the spills the forward is 1-3%
 * faster from 1x83 to 1x512 on the H200 (the kernel alone: 8x512 global +3%,
 * 64x512 global +2%; bench/results/experiments/attention-mask/). Measured against the previous
 * version (32-bit shared loads for K, exp2f, a staging loop with divisions) on
 * the H200: 1.08-1.26x faster (bench/results/h200/kernels.md).
 *
 * The selection variant (kn_attention_select: the last head layer needs only
 * CLS and the markers while keys and values span the row) runs the same tile
 * code on runs of selected queries: block (tile of 64 selected queries, part k,
 * head) splits the tile into runs of consecutive queries of one row and takes
 * runs k, k + ATT_SSEG, ... in turn, each over its own row's keys. A list that
 * keeps each row's queries together (its CLS, then its markers) has a few runs
 * per tile, so the ATT_SSEG parts mostly walk one row each and run side by
 * side; interleaved rows stay correct, only slower (more, shorter runs walked
 * one after another). Each output equals kn_attention's for its slot bit for
 * bit (same key tiles, same masks, queries independent in a tile).
 */
#include "kernels/mma.cuh"

#define ATT_TQ 64                 /* queries per block (4 warps x 16) */
#define ATT_TK 64                 /* keys per tile */
#define ATT_LD (KN_HEAD_DIM + 8)  /* padded shared row (elements) */
#define ATT_THREADS 128
#define ATT_SSEG 8                /* selection: blocks sharing one tile of 64 selected queries */

static_assert(ATT_TQ == KN_ATT_TQ, "the host's query tiles (kernels/cpu.h) must match the kernel's");

/* 2^x by the special-function unit alone (ex2.approx.ftz: relative error ~2^-22, results
 * below 2^-126 flushed to 0, 2^-inf = 0); exp2f adds a denormal-range fix-up around it. */
__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
    typename kn_pair<T>::type v = kn_pack<T>(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

__device__ __forceinline__ uint32_t lds32(const void *p) { return *reinterpret_cast<const uint32_t *>(p); }

/* Stages keys [j0, j0 + 64) of one head's K and V columns (ksrc = the row's
 * first slot at the head's K column; V is D columns further) into ks and vs;
 * keys >= len (past the row) are zero-filled and not read. Thread x copies 16
 * bytes at column 8 (x % 8) of keys x / 8 + 16 k, k < 4 (unrolled), from one
 * running pointer (few registers: the kernel is capped at 168 for 3 blocks per
 * SM). */
template <typename T>
__device__ __forceinline__ void att_stage(T (*ks)[ATT_LD], T (*vs)[ATT_LD], const T *ksrc, int D, int D3,
                                          int j0, int len)
{
    constexpr int RSTEP = ATT_THREADS / 8;
    const int r = threadIdx.x / 8, c = (threadIdx.x % 8) * 8;
    const T *p = ksrc + (size_t)(j0 + r) * D3 + c;
#pragma unroll
    for (int k = 0; k < ATT_TK / RSTEP; k++) {
        const int rr = r + k * RSTEP;
        const bool ok = j0 + rr < len;
        cp_async16(&ks[rr][c], ok ? p : ksrc, ok);
        cp_async16(&vs[rr][c], ok ? p + D : ksrc, ok);
        p += (size_t)RSTEP * D3;
    }
}

/* A block's shared memory: the Q tile, two K and V stages, and the tile rows'
 * queries (qpos: position in the row, -1 none) and output rows (orow: -1 none). */
template <typename T> struct att_smem {
    __align__(16) T qs[ATT_TQ][ATT_LD];
    __align__(16) T ks[2][ATT_TK][ATT_LD];
    __align__(16) T vs[2][ATT_TK][ATT_LD];
    int qpos[ATT_TQ];
    int orow[ATT_TQ];
};

/* One query tile of one head over one row: row0 is the row's first slot in qkv,
 * len its length; sm.qpos / sm.orow are set (and synchronized) by the caller.
 * Writes out[orow[t], head h] for every tile row t with orow[t] >= 0: its
 * attention, or zeros when qpos[t] < 0 (no query) or it saw no key. Returns
 * with shared memory still being read by other warps: sync before refilling. */
template <typename T>
__device__ __forceinline__ void att_tile(att_smem<T> &sm, const T *row0, T *out, int D, int len, int window,
                                         int h)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c4 = lane % 4;
    const int D3 = 3 * D;
    /* The tile's query span, by every warp at once: two entries a lane and a warp
     * reduction (a loop over all 64 in every thread: the prologue around it drew a
     * quarter of the stall samples at 1x83 under Nsight Compute). */
    int qmin = 0x7fffffff, qmax = -1;
    for (int t = lane; t < ATT_TQ; t += 32) {
        const int i = sm.qpos[t];
        if (i >= 0) {
            qmin = i < qmin ? i : qmin;
            qmax = i > qmax ? i : qmax;
        }
    }
    qmin = __reduce_min_sync(0xffffffffu, qmin);
    qmax = __reduce_max_sync(0xffffffffu, qmax);
    /* Q tile (rows with no query are zero). */
    for (int e = threadIdx.x; e < ATT_TQ * (KN_HEAD_DIM / 8); e += ATT_THREADS) {
        const int r = e / (KN_HEAD_DIM / 8), c = (e % (KN_HEAD_DIM / 8)) * 8;
        const int i = sm.qpos[r];
        const T *src = i >= 0 ? row0 + (size_t)i * D3 + h * KN_HEAD_DIM + c : row0;
        cp_async16(&sm.qs[r][c], src, i >= 0);
    }
    cp_async_commit();

    int jlo = 0, jhi = len;
    if (window >= 0) {
        jlo = qmin - window > 0 ? qmin - window : 0;
        jhi = qmax + window + 1 < len ? qmax + window + 1 : len;
    }
    if (qmax < 0)
        jhi = jlo; /* no query in this tile */
    const int tfirst = jlo / ATT_TK;
    const T *ksrc = row0 + D + h * KN_HEAD_DIM;
    const int tend = jhi > jlo ? (jhi + ATT_TK - 1) / ATT_TK : tfirst;

    if (tfirst < tend) {
        att_stage<T>(sm.ks[0], sm.vs[0], ksrc, D, D3, tfirst * ATT_TK, len);
    }
    cp_async_commit();
    cp_async_wait<1>(); /* Q has landed */
    __syncthreads();

    const int r0 = warp * 16 + g, r1 = r0 + 8; /* this thread's two query rows in the tile */
    const int i0 = sm.qpos[r0], i1 = sm.qpos[r1];
    uint32_t qa[4][4];
#pragma unroll
    for (int s = 0; s < 4; s++) {
        qa[s][0] = lds32(&sm.qs[r0][16 * s + 2 * c4]);
        qa[s][1] = lds32(&sm.qs[r1][16 * s + 2 * c4]);
        qa[s][2] = lds32(&sm.qs[r0][16 * s + 8 + 2 * c4]);
        qa[s][3] = lds32(&sm.qs[r1][16 * s + 8 + 2 * c4]);
    }

    const float sl2 = 0.125f * 1.4426950408889634f; /* scale 1/8, in base 2 */
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    float o[8][4];
#pragma unroll
    for (int n = 0; n < 8; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;

    for (int t = tfirst; t < tend; t++) {
        const int buf = (t - tfirst) & 1;
        if (t + 1 < tend) {
            att_stage<T>(sm.ks[buf ^ 1], sm.vs[buf ^ 1], ksrc, D, D3, (t + 1) * ATT_TK, len);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();

        /* S = Q K^T for this warp's 16 rows x 64 keys. K fragments by ldmatrix: lane l
         * addresses key 8n + l % 8, dims 32 sp + 8 (l / 8), so the four 8 x 8 matrices are
         * the (b0, b1) fragments of k-steps 2 sp and 2 sp + 1. */
        float sc[8][4];
#pragma unroll
        for (int n = 0; n < 8; n++) {
            sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
#pragma unroll
            for (int sp = 0; sp < 2; sp++) {
                uint32_t kb[4];
                ldmatrix_x4(kb, &sm.ks[buf][8 * n + (lane % 8)][32 * sp + 8 * (lane / 8)]);
                mma16816<T>(sc[n], qa[2 * sp], kb);
                mma16816<T>(sc[n], qa[2 * sp + 1], kb + 2);
            }
        }
        /* Mask (only where the tile is not wholly visible to the block); scores stay
         * unscaled, the scale is applied inside the exponent below. */
        const int j0 = t * ATT_TK;
        const bool full = j0 + ATT_TK <= len &&
                          (window < 0 || (j0 >= qmax - window && j0 + ATT_TK - 1 <= qmin + window));
        if (!full) {
            /* The keys each of the two rows sees, [lo, hi) (empty for no query): two compares
             * a score, the same set as j < len && |i - j| <= window (keys j >= 0); formed
             * here, not kept across the loop (kept, they made 512-token global rows 18%
             * slower). */
            const int lo0 = i0 < 0 || window < 0 ? 0 : max(i0 - window, 0);
            const int lo1 = i1 < 0 || window < 0 ? 0 : max(i1 - window, 0);
            const int hi0 = i0 < 0 ? 0 : window < 0 ? len : min(i0 + window + 1, len);
            const int hi1 = i1 < 0 ? 0 : window < 0 ? len : min(i1 + window + 1, len);
#pragma unroll
            for (int n = 0; n < 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int j = j0 + 8 * n + 2 * c4 + (e & 1);
                    const bool vis = e < 2 ? j >= lo0 && j < hi0 : j >= lo1 && j < hi1;
                    sc[n][e] = vis ? sc[n][e] : -INFINITY;
                }
        }
        float tm0 = -INFINITY, tm1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < 8; n++) {
            tm0 = fmaxf(tm0, fmaxf(sc[n][0], sc[n][1]));
            tm1 = fmaxf(tm1, fmaxf(sc[n][2], sc[n][3]));
        }
#pragma unroll
        for (int x = 1; x < 4; x <<= 1) {
            tm0 = fmaxf(tm0, __shfl_xor_sync(0xffffffffu, tm0, x));
            tm1 = fmaxf(tm1, __shfl_xor_sync(0xffffffffu, tm1, x));
        }
        /* m, m' unscaled; alpha = 2^((m - m') sl2) is exactly 1 when the maximum did not
         * move (a tile with nothing visible for the row leaves its state bit for bit) and
         * 0 while m = -inf; p = 2^(s sl2 - m' sl2) in one FMA, 0 for masked s = -inf. */
        const float mn0 = fmaxf(m0, tm0), mn1 = fmaxf(m1, tm1);
        const float mu0 = mn0 == -INFINITY ? 0.0f : mn0, mu1 = mn1 == -INFINITY ? 0.0f : mn1;
        const float a0 = m0 == mn0 ? 1.0f : ex2((m0 - mu0) * sl2);
        const float a1 = m1 == mn1 ? 1.0f : ex2((m1 - mu1) * sl2);
        const float nb0 = -mu0 * sl2, nb1 = -mu1 * sl2;
        m0 = mn0, m1 = mn1;
        float ps0 = 0.0f, ps1 = 0.0f;
        uint32_t pa[4][4];
#pragma unroll
        for (int n = 0; n < 8; n++) {
            const float p0 = ex2(fmaf(sc[n][0], sl2, nb0)), p1 = ex2(fmaf(sc[n][1], sl2, nb0));
            const float p2 = ex2(fmaf(sc[n][2], sl2, nb1)), p3 = ex2(fmaf(sc[n][3], sl2, nb1));
            ps0 += p0 + p1;
            ps1 += p2 + p3;
            pa[n / 2][(n & 1) * 2 + 0] = pack2<T>(p0, p1);
            pa[n / 2][(n & 1) * 2 + 1] = pack2<T>(p2, p3);
        }
        l0 = l0 * a0 + ps0;
        l1 = l1 * a1 + ps1;
#pragma unroll
        for (int n = 0; n < 8; n++) {
            o[n][0] *= a0, o[n][1] *= a0;
            o[n][2] *= a1, o[n][3] *= a1;
        }
        /* O += P V: k-steps of 16 keys, V fragments by ldmatrix.trans (two d tiles each). */
#pragma unroll
        for (int s = 0; s < 4; s++)
#pragma unroll
            for (int n = 0; n < 8; n += 2) {
                uint32_t vb[4];
                const int key = 16 * s + ((lane / 8) & 1) * 8 + (lane % 8);
                const int d = 8 * (n + (lane / 16));
                ldmatrix_x4_trans(vb, &sm.vs[buf][key][d]);
                mma16816<T>(o[n], pa[s], vb);
                mma16816<T>(o[n + 1], pa[s], vb + 2);
            }
        __syncthreads(); /* the buffer is refilled next iteration */
    }
    cp_async_wait<0>();

#pragma unroll
    for (int x = 1; x < 4; x <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, x);
        l1 += __shfl_xor_sync(0xffffffffu, l1, x);
    }
    /* A tile row without a query (qpos -1, possible in a selection) may have summed
     * unmasked keys on the all-visible path: it stores zeros. */
    const float inv0 = l0 > 0.0f && i0 >= 0 ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f && i1 >= 0 ? 1.0f / l1 : 0.0f;
    const int oa = sm.orow[r0], ob = sm.orow[r1];
#pragma unroll
    for (int n = 0; n < 8; n++) {
        const int d = h * KN_HEAD_DIM + 8 * n + 2 * c4;
        if (oa >= 0)
            *reinterpret_cast<uint32_t *>(out + (size_t)oa * D + d) = pack2<T>(o[n][0] * inv0, o[n][1] * inv0);
        if (ob >= 0)
            *reinterpret_cast<uint32_t *>(out + (size_t)ob * D + d) = pack2<T>(o[n][2] * inv1, o[n][3] * inv1);
    }
}

/* Block (tile x, head y): the queries [q0, min(q0 + 64, cu[r+1])) of row r =
 * tiles[2x], q0 = tiles[2x + 1]; r < 0: a spare tile, nothing to do. Row bounds
 * are clamped to [0, nslot] (the launcher's T), so a malformed cu cannot reach
 * past the buffers. */
template <typename T>
__global__ void __launch_bounds__(ATT_THREADS, 3)
attention_kernel(const T *__restrict__ qkv, T *__restrict__ out, int nslot, int D, const int32_t *__restrict__ cu,
                 const int32_t *__restrict__ tiles, int window)
{
    /* The tile list and the row bounds were staged before the forward's first
     * kernel: read before the wait (while RoPE runs, when it lets this kernel
     * start early); qkv only after. */
    __shared__ att_smem<T> sm;
    const int r = tiles[2 * (size_t)blockIdx.x];
    if (r < 0) {
        kn_pdl_wait();
        return;
    }
    int s = cu[r], e = cu[r + 1];
    s = s < 0 ? 0 : s > nslot ? nslot : s;
    e = e < s ? s : e > nslot ? nslot : e;
    const int q0 = tiles[2 * (size_t)blockIdx.x + 1] - s;
    if (threadIdx.x < ATT_TQ) {
        const int i = q0 + (int)threadIdx.x;
        const bool ok = i >= 0 && i < e - s;
        sm.qpos[threadIdx.x] = ok ? i : -1;
        sm.orow[threadIdx.x] = ok ? s + i : -1;
    }
    __syncthreads();
    kn_pdl_wait();
    att_tile<T>(sm, qkv + (size_t)s * 3 * D, out, D, e - s, window, blockIdx.y);
}

/* Block (x, head y) of a selection: tile x / ATT_SSEG of 64 selected queries,
 * split into runs of consecutive queries with one qrow; this block takes runs
 * x % ATT_SSEG, + ATT_SSEG, ... A run with qrow < 0, or a query whose slot is
 * outside its row, stores zeros. */
template <typename T>
__global__ void __launch_bounds__(ATT_THREADS, 3)
attention_select_kernel(const T *__restrict__ qkv, T *__restrict__ out, int D, const int32_t *__restrict__ cu,
                        int window, const int32_t *__restrict__ qrow, const int32_t *__restrict__ qpos, int G)
{
    kn_pdl_wait();
    __shared__ att_smem<T> sm;
    __shared__ int srow[ATT_TQ];    /* the tile's rows (-1: none) */
    __shared__ int run[ATT_TQ + 1]; /* run starts in the tile, then its end */
    __shared__ int nrun;
    const int g0 = (int)(blockIdx.x / ATT_SSEG) * ATT_TQ, part = (int)(blockIdx.x % ATT_SSEG);
    const int n = G - g0 < ATT_TQ ? G - g0 : ATT_TQ;
    if (threadIdx.x < n) {
        const int r = qrow[g0 + threadIdx.x];
        srow[threadIdx.x] = r < 0 ? -1 : r;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int k = 0;
        for (int t = 0; t < n; t++)
            if (t == 0 || srow[t] != srow[t - 1])
                run[k++] = t;
        run[k] = n;
        nrun = k;
    }
    __syncthreads();
    for (int k = part; k < nrun; k += ATT_SSEG) {
        const int a = run[k], b = run[k + 1], r = srow[a];
        int s = 0, len = 0;
        if (r >= 0) {
            s = cu[r];
            len = cu[r + 1] - s;
            len = len < 0 ? 0 : len;
        }
        if (threadIdx.x < ATT_TQ) {
            const int t = a + (int)threadIdx.x;
            const int i = t < b && len > 0 ? qpos[g0 + t] - s : -1;
            sm.qpos[threadIdx.x] = i >= 0 && i < len ? i : -1;
            sm.orow[threadIdx.x] = t < b ? g0 + t : -1;
        }
        __syncthreads();
        att_tile<T>(sm, qkv + (size_t)s * 3 * D, out, D, len, window, blockIdx.y);
        __syncthreads(); /* sm is refilled for the next run */
    }
}

static int att_check(kn_dtype dt, const void *qkv, void *out, int D)
{
    KN_REQUIRE(kn_is16(dt), "attention dtype must be fp16 or bf16");
    KN_REQUIRE(D > 0 && D % KN_HEAD_DIM == 0, "attention needs D a positive multiple of 64");
    KN_REQUIRE(D / KN_HEAD_DIM <= 65535, "attention grid too large");
    KN_REQUIRE(qkv && out, "NULL attention buffer");
    KN_REQUIRE(kn_aligned16(qkv) && kn_aligned16(out), "attention buffers must be 16-byte aligned");
    return 0;
}

extern "C" int kn_attention(kn_stream ks, kn_dtype dt, const void *qkv, void *out, int T, int D,
                            const int32_t *cu, const int32_t *tiles, int n_tiles, int window)
{
    KN_REQUIRE(T >= 0 && n_tiles >= 0, "negative attention size");
    if (T == 0 || n_tiles == 0)
        return 0;
    if (att_check(dt, qkv, out, D))
        return -1;
    KN_REQUIRE(cu && tiles, "NULL attention rows or tiles");
    const dim3 grid((unsigned)n_tiles, D / KN_HEAD_DIM);
    KN_DISPATCH16(dt, E, KN_CUDA(kn_launch(attention_kernel<E>, grid, dim3(ATT_THREADS), 0, ks, (const E *)qkv,
                                           (E *)out, T, D, cu, tiles, window)));
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_attention_select(kn_stream ks, kn_dtype dt, const void *qkv, void *out, int D,
                                   const int32_t *cu, int window, const int32_t *qrow, const int32_t *qpos, int G)
{
    KN_REQUIRE(G >= 0, "negative attention selection");
    if (G == 0)
        return 0;
    if (att_check(dt, qkv, out, D))
        return -1;
    KN_REQUIRE(cu && qrow && qpos, "NULL attention rows or query selection");
    const size_t blocks = ((size_t)G + ATT_TQ - 1) / ATT_TQ * ATT_SSEG;
    KN_REQUIRE(blocks <= 0x7fffffff, "attention selection too large");
    const dim3 grid((unsigned)blocks, D / KN_HEAD_DIM);
    KN_DISPATCH16(dt, E, KN_CUDA(kn_launch(attention_select_kernel<E>, grid, dim3(ATT_THREADS), 0, ks,
                                           (const E *)qkv, (E *)out, D, cu, window, qrow, qpos, G)));
    KN_LAUNCHED();
    return 0;
}
