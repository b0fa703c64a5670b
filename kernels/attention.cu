/*
 * attention.cu - multi-head attention over the packed (varlen) QKV buffer,
 * head_dim 64, flash-attention style on the tensor cores (warpgroup MMAs on
 * sm_90a, mma.sync m16n8k16 elsewhere; fp32 accumulation), with an optional
 * inclusive sliding window and an optional query selection.
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
 *     sum P, O = O alpha + P V. P is rounded to the 16-bit dtype for the P V
 *     product (the accumulator stays fp32), the usual flash-attention trade,
 *     and l sums those rounded weights (one more mma with a B of ones, which
 *     also sums across the lanes), not the fp32 p: O / l is then an exact
 *     weighted mean of V under weights off by their roundings, whose error
 *     scales with V's spread about its mean rather than with V itself.
 *     A key tile with no visible key for a query leaves its state bit for bit,
 *     so a query's result does not depend on which other queries share its tile.
 *   - The key tiles are walked in two interleaved halves (the row's even
 *     tiles and its odd ones, by index in the row, so that a query's visible
 *     tiles fall in the same halves whatever span its block walks: a
 *     selection's tile and the full tile of its slot), each its own online
 *     softmax from the empty state; the two states are then combined (each
 *     rescaled to the larger maximum, explicit roundings). A small pack has
 *     too few blocks to fill the SMs and each block walks its key tiles one
 *     after another, so there a block of two groups of four warps walks the
 *     halves side by side, sharing the Q tile (the chain of a 512-token global
 *     row: 4 tiles, not 8); a large pack's blocks of one group walk them in
 *     turn, three blocks an SM. Both forms run the same arithmetic per half
 *     and the same combination, so they give the same bits (kn_attention_grouped
 *     forces either). Where one half is empty (a walk of one tile) the
 *     combination would return the other exactly, so a group of one skips it
 *     (and its trip through shared memory). (The CPU sibling walks the tiles
 *     in one sequence: its results differ from these by roundings of P,
 *     within the kernel tests' tolerance.)
 *   - At the end O / l, or zeros where l == 0 (a query that saw no key): all
 *     outputs finite.
 * Alignment: qkv and out 16-byte aligned; a slot's row is 3D (or D) elements
 * with D % 64 == 0, so every token row, and every head's 64 columns in it, stay
 * 16-byte aligned wherever a row starts (cp.async 16-byte loads, 4-byte stores).
 * The products: on the sm_90a pass, warpgroup MMAs (wgmma, kernels/wgmma.cuh)
 * with Q, K and V read by the tensor cores from tiles in the 128-byte swizzle,
 * P from registers; elsewhere (and with -DKN_ATT_WG=0) mma.sync with K
 * fragments through ldmatrix, V through ldmatrix.trans, on rows padded to 72
 * elements (conflict-free). Both give the same bits: on random tiles of many
 * scales the two products agreed in every bit (bench/wgmma_att_probe.cu), and
 * English parity reports were identical field for field. The wgmma form is
 * 1.15-1.32x faster alone at 512-1024 tokens in global layers, 1.09-1.18x in
 * sliding ones (8x512 global 48.1 -> 36.9 us on an H100, 36.1 with each
 * thread's staging places and the descriptors formed once a tile;
 * bench/results/experiments/att-wgmma/), with 99-108 registers against the
 * mma.sync form's 155-168. Shared memory is dynamic (64 KB a
 * one-group block, 100 KB a two-group one, + 1 KB to align the swizzled
 * tiles); it, not registers, holds an SM to 3 one-group blocks (12 warps).
 * For the mma.sync form, capped at 128 registers for 4 blocks the kernel
 * spilled 12-28 bytes, and without the spills the forward is 1-3% faster from
 * 1x83 to 1x512 on the H200 (bench/results/experiments/attention-mask/).
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
#include "kernels/wgmma.cuh"

#define ATT_TQ 64                 /* queries per block (4 warps x 16) */
#define ATT_TK 64                 /* keys per tile */
#define ATT_LD (KN_HEAD_DIM + 8)  /* padded shared row (elements) */
#define ATT_THREADS 128
#define ATT_SSEG 8                /* selection: blocks sharing one tile of 64 selected queries */
#define ATT_ST 38                 /* floats of one att_state */
#define ATT_SL2 (0.125f * 1.4426950408889634f) /* the scale 1/8, in base 2 */

/* The two products on warpgroup MMAs (kernels/wgmma.cuh) where the sm_90a pass
 * compiles them: the tiles in shared memory swizzled, S = Q K^T and O += P V by
 * 8 wgmma a warp instead of 64 mma.sync and 32 ldmatrix, Q not held in
 * registers. Every form (one group, two, the selection) takes the same path, so
 * they keep giving the same bits. -DKN_ATT_WG=0 builds the mma.sync path. */
#ifndef KN_ATT_WG
#define KN_ATT_WG 1
#endif
#define ATT_WG (KN_ATT_WG && KN_WGMMA)

/* compute-sanitizer racecheck reports the two groups' handoff (group 1 stores
 * its half's state, the block meets at __syncthreads, group 0 reads it) as
 * hazards whenever group 1 passed more named barriers than group 0, as the
 * halves give it for a span that starts at an odd key tile. The pattern is
 * sound: bench/racecheck_probe.cu's cases "more" and "first" are reported,
 * "equal" is not, and every value reads right in all three. -DKN_ATT_PAD_BARRIERS=1
 * (make racecheck-build) pads the shorter group to the other's count with its
 * own barrier, which leaves the tool quiet and the bits unchanged; it is off
 * by default because it cost the kernel 2-6% at one row of 83-512 tokens on an
 * H100 (bench/results/experiments/att-wgmma/call9-h100/). The groups swapping
 * halves where half 1 is longer, so group 0 never passes fewer barriers, is
 * quiet too but cost more (3-7.5%, call11-h100/). */
#ifndef KN_ATT_PAD_BARRIERS
#define KN_ATT_PAD_BARRIERS 0
#endif
#define ATT_PAD (KN_ATT_WG ? 1024 : 0) /* the host's slack for aligning the swizzled tiles */

static_assert(ATT_TQ == KN_ATT_TQ, "the host's query tiles (kernels/cpu.h) must match the kernel's");

/* 2^x by the special-function unit alone (ex2.approx.ftz: relative error ~2^-22, results
 * below 2^-126 flushed to 0, 2^-inf = 0); exp2f adds a denormal-range fix-up around it. */
__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t lds32(const void *p) { return *reinterpret_cast<const uint32_t *>(p); }

/* Element (r, c) of a staged tile: padded rows for ldmatrix, or the 128-byte
 * swizzle wgmma reads (within the tile's first 8 KB; tiles are 1024-byte
 * aligned, see att_smem_at). */
template <typename T> __device__ __forceinline__ T *att_el(T (*t)[ATT_LD], int r, int c)
{
    return ATT_WG ? reinterpret_cast<T *>(reinterpret_cast<unsigned char *>(t) + kn_sw128(r, c)) : &t[r][c];
}

/* Makes this thread's completed cp.async writes visible to the tensor cores'
 * (async proxy) reads, ahead of the barrier that publishes them. */
__device__ __forceinline__ void att_proxy_fence()
{
    if (ATT_WG)
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* Stages keys [j0, j0 + 64) of one head's K and V columns (ksrc = the row's
 * first slot at the head's K column; V is D columns further) into ks and vs;
 * keys >= len (past the row) are zero-filled and not read. Thread tid of the
 * group copies 16 bytes at column 8 (tid % 8) of keys tid / 8 + 16 k, k < 4
 * (unrolled), from one running pointer (few registers: the kernel is capped at
 * 168 for 3 blocks per SM). */
template <typename T>
__device__ __forceinline__ void att_stage(T (*ks)[ATT_LD], T (*vs)[ATT_LD], const T *ksrc, int D, int D3,
                                          int j0, int len, int tid)
{
    constexpr int RSTEP = ATT_THREADS / 8;
    /* rows RSTEP apart share their place in the swizzle, so a thread's copies
     * go to one place plus a fixed step */
    static_assert(RSTEP % 8 == 0, "a thread's rows keep one swizzle place");
    constexpr int DSTEP = RSTEP * (ATT_WG ? 128 : ATT_LD * (int)sizeof(T));
    const int r = tid / 8, c = (tid % 8) * 8;
    const T *p = ksrc + (size_t)(j0 + r) * D3 + c;
    unsigned char *kd = reinterpret_cast<unsigned char *>(att_el(ks, r, c));
    unsigned char *vd = reinterpret_cast<unsigned char *>(att_el(vs, r, c));
#pragma unroll
    for (int k = 0; k < ATT_TK / RSTEP; k++) {
        const bool ok = j0 + r + k * RSTEP < len;
        cp_async16(kd + k * DSTEP, ok ? p : ksrc, ok);
        cp_async16(vd + k * DSTEP, ok ? p + D : ksrc, ok);
        p += (size_t)RSTEP * D3;
    }
}

/* A block's shared memory, G groups of four warps: the Q tile, two K and V
 * stages a group, one half's softmax state a group thread (ATT_ST floats; see
 * att_tile), and the tile rows' queries (qpos: position in the row, -1 none)
 * and output rows (orow: -1 none). Dynamic: 64 KB for one group, 100 KB for two
 * (+ ATT_PAD). A tile is 9 KB, so from a 1024-byte aligned start every tile is
 * aligned as the swizzle needs. */
template <typename T, int G> struct att_smem {
    __align__(16) T qs[ATT_TQ][ATT_LD];
    __align__(16) T ks[G][2][ATT_TK][ATT_LD];
    __align__(16) T vs[G][2][ATT_TK][ATT_LD];
    float st[ATT_ST][ATT_THREADS]; /* by field, then thread: conflict-free */
    int qpos[ATT_TQ];
    int orow[ATT_TQ];
};

/* This thread's share of the online softmax of its two query rows over some key
 * tiles: the running maxima m (unscaled), the partial sums l of its columns, and
 * its fragments of the unnormalized output O. */
struct att_state {
    float m0, m1;
    float l[4]; /* the rows' sums of P: l[0] (= l[1]) row 0, l[2] (= l[3]) row 1 */
    float o[8][4];
};
static_assert(sizeof(att_state) == ATT_ST * sizeof(float), "att_smem.st holds one att_state a thread");
static_assert(ATT_TQ * ATT_LD * 2 % 1024 == 0, "tiles keep the swizzle's alignment");

/* The block's att_smem in its dynamic shared memory (ATT_PAD bytes more). */
template <typename T, int G> __device__ __forceinline__ att_smem<T, G> &att_smem_at(unsigned char *raw)
{
#if ATT_WG
    return *reinterpret_cast<att_smem<T, G> *>(raw + ((1024 - (smem_addr(raw) & 1023)) & 1023));
#else
    return *reinterpret_cast<att_smem<T, G> *>(raw);
#endif
}

/* A thread's state to and from its column of att_smem.st. */
__device__ __forceinline__ void att_save(const att_state &s, float (*st)[ATT_THREADS], int tid)
{
    const float *v = reinterpret_cast<const float *>(&s);
#pragma unroll
    for (int i = 0; i < ATT_ST; i++)
        st[i][tid] = v[i];
}
__device__ __forceinline__ void att_load(att_state &s, const float (*st)[ATT_THREADS], int tid)
{
    float *v = reinterpret_cast<float *>(&s);
#pragma unroll
    for (int i = 0; i < ATT_ST; i++)
        v[i] = st[i][tid];
}

__device__ __forceinline__ void att_reset(att_state &s)
{
    s.m0 = s.m1 = -INFINITY;
    s.l[0] = s.l[1] = s.l[2] = s.l[3] = 0.0f;
#pragma unroll
    for (int n = 0; n < 8; n++)
        s.o[n][0] = s.o[n][1] = s.o[n][2] = s.o[n][3] = 0.0f;
}

/* Barrier of group g: the whole block when it is one group, else the group's
 * 128 threads on named barrier 1 + g (0 is __syncthreads'). */
template <int G> __device__ __forceinline__ void att_bar(int g)
{
    if (G == 1)
        __syncthreads();
    else if (g) /* immediate ids: ptxas reserves every named barrier for a register id */
        asm volatile("bar.sync 2, %0;" ::"n"(ATT_THREADS) : "memory");
    else
        asm volatile("bar.sync 1, %0;" ::"n"(ATT_THREADS) : "memory");
}

/* S = Q K^T for this warp's 16 rows x 64 keys, four k-steps of 16 dims from
 * zero. mma.sync: Q from the warp's fragments qa, K fragments by ldmatrix (lane l
 * addresses key 8n + l % 8, dims 32 sp + 8 (l / 8), so the four 8 x 8 matrices
 * are the (b0, b1) fragments of k-steps 2 sp and 2 sp + 1). wgmma: the
 * warpgroup's 64 rows at once, Q and K from their swizzled tiles. */
template <typename T>
__device__ __forceinline__ void att_scores(float (&sc)[8][4], const uint32_t (&qa)[4][4], const T (*qs)[ATT_LD],
                                           const T (*ks)[ATT_LD])
{
#pragma unroll
    for (int n = 0; n < 8; n++)
        sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.0f;
#if ATT_WG
    float(&d)[32] = reinterpret_cast<float(&)[32]>(sc);
    const uint64_t dq = kn_wg_desc_sw128(qs), dk = kn_wg_desc_sw128(ks);
    kn_wg_pin(d);
    kn_wg_fence();
#pragma unroll
    for (int j = 0; j < 4; j++)
        kn_wg_ss<T>(d, kn_wg_desc_at(dq, 32 * j), kn_wg_desc_at(dk, 32 * j));
    kn_wg_commit();
    kn_wg_wait<0>();
    kn_wg_pin(d);
#else
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
        for (int sp = 0; sp < 2; sp++) {
            uint32_t kb[4];
            ldmatrix_x4(kb, &ks[8 * n + (lane % 8)][32 * sp + 8 * (lane / 8)]);
            mma16816<T>(sc[n], qa[2 * sp], kb);
            mma16816<T>(sc[n], qa[2 * sp + 1], kb + 2);
        }
#endif
}

/* O += P V over the tile's four k-steps of 16 keys, and l += P 1, the sums of
 * the very P that weighs V (see the header). mma.sync: V fragments by
 * ldmatrix.trans (two d tiles each). wgmma: P from registers, V from its
 * swizzled tile read transposed; the l sums run while it does. */
template <typename T>
__device__ __forceinline__ void att_pv(att_state &s, const uint32_t (&pa)[4][4], const T (*vs)[ATT_LD])
{
    const uint32_t ones[2] = {kn_pack_u32<T>(1.0f, 1.0f), kn_pack_u32<T>(1.0f, 1.0f)};
#if ATT_WG
    float(&o)[32] = reinterpret_cast<float(&)[32]>(s.o);
    const uint64_t dv = kn_wg_desc_sw128(vs);
    kn_wg_pin(o);
    kn_wg_fence();
#pragma unroll
    for (int k = 0; k < 4; k++)
        kn_wg_rs<T>(o, pa[k], kn_wg_desc_at(dv, 2048 * k));
    kn_wg_commit();
#pragma unroll
    for (int k = 0; k < 4; k++)
        mma16816<T>(s.l, pa[k], ones);
    kn_wg_wait<0>();
    kn_wg_pin(o);
#else
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int n = 0; n < 8; n += 2) {
            if (n == 0)
                mma16816<T>(s.l, pa[k], ones);
            uint32_t vb[4];
            const int key = 16 * k + ((lane / 8) & 1) * 8 + (lane % 8);
            const int d = 8 * (n + (lane / 16));
            ldmatrix_x4_trans(vb, &vs[key][d]);
            mma16816<T>(s.o[n], pa[k], vb);
            mma16816<T>(s.o[n + 1], pa[k], vb + 2);
        }
#endif
}

/* Scores of keys the thread's rows (positions i0, i1; -1: no query) do not see
 * set to -inf. The keys each row sees, [lo, hi) (empty for no query): two
 * compares a score, the same set as j < len && |i - j| <= window (keys j >= 0);
 * formed here, not kept across the loop (kept, they made 512-token global rows
 * 18% slower). */
__device__ __forceinline__ void att_mask(float (&sc)[8][4], int j0, int len, int window, int i0, int i1, int c4)
{
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

/* The tile's maximum score of each of the thread's two rows (x, y), over the
 * four lanes that share them. */
__device__ __forceinline__ float2 att_rowmax(const float (&sc)[8][4])
{
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
    return make_float2(tm0, tm1);
}

/* One key tile (keys [j0, j0 + 64), staged in ks / vs) into s, for this
 * thread's rows at positions i0 and i1 (-1: no query) of a tile whose queries
 * span [qmin, qmax]; Q is the warp's fragments qa (mma.sync) or the tile qs
 * (wgmma). */
template <typename T>
__device__ __forceinline__ void att_step(att_state &s, const uint32_t (&qa)[4][4], const T (*qs)[ATT_LD],
                                         const T (*ks)[ATT_LD], const T (*vs)[ATT_LD], int j0, int len, int window,
                                         int qmin, int qmax, int i0, int i1)
{
    const int lane = threadIdx.x % 32, c4 = lane % 4;
    const float sl2 = ATT_SL2;
    float sc[8][4];
    att_scores<T>(sc, qa, qs, ks);
    /* Mask (only where the tile is not wholly visible to the block); scores stay
     * unscaled, the scale is applied inside the exponent below. */
    const bool full = j0 + ATT_TK <= len && (window < 0 || (j0 >= qmax - window && j0 + ATT_TK - 1 <= qmin + window));
    if (!full)
        att_mask(sc, j0, len, window, i0, i1, c4);
    const float2 tm = att_rowmax(sc);
    const float tm0 = tm.x, tm1 = tm.y;
    /* m, m' unscaled; alpha = 2^((m - m') sl2) is exactly 1 when the maximum did not
     * move (a tile with nothing visible for the row leaves its state bit for bit) and
     * 0 while m = -inf; p = 2^(s sl2 - m' sl2) in one FMA, 0 for masked s = -inf. */
    const float mn0 = fmaxf(s.m0, tm0), mn1 = fmaxf(s.m1, tm1);
    const float mu0 = mn0 == -INFINITY ? 0.0f : mn0, mu1 = mn1 == -INFINITY ? 0.0f : mn1;
    const float a0 = s.m0 == mn0 ? 1.0f : ex2((s.m0 - mu0) * sl2);
    const float a1 = s.m1 == mn1 ? 1.0f : ex2((s.m1 - mu1) * sl2);
    const float nb0 = -mu0 * sl2, nb1 = -mu1 * sl2;
    s.m0 = mn0, s.m1 = mn1;
    uint32_t pa[4][4];
#pragma unroll
    for (int n = 0; n < 8; n++) {
        const float p0 = ex2(fmaf(sc[n][0], sl2, nb0)), p1 = ex2(fmaf(sc[n][1], sl2, nb0));
        const float p2 = ex2(fmaf(sc[n][2], sl2, nb1)), p3 = ex2(fmaf(sc[n][3], sl2, nb1));
        pa[n / 2][(n & 1) * 2 + 0] = kn_pack_u32<T>(p0, p1);
        pa[n / 2][(n & 1) * 2 + 1] = kn_pack_u32<T>(p2, p3);
    }
    s.l[0] *= a0, s.l[1] *= a0;
    s.l[2] *= a1, s.l[3] *= a1;
#pragma unroll
    for (int n = 0; n < 8; n++) {
        s.o[n][0] *= a0, s.o[n][1] *= a0;
        s.o[n][2] *= a1, s.o[n][3] *= a1;
    }
    att_pv<T>(s, pa, vs);
}

/* x := the softmax state over both halves' keys, from x over the first half's
 * tiles and y over the second's: each rescaled to the larger maximum (exactly 1
 * for the half that holds it, 0 for a half that saw no key) and summed, by
 * explicit roundings, so that every launch form computes the same bits. */
__device__ __forceinline__ void att_combine(att_state &x, const att_state &y)
{
    const float sl2 = ATT_SL2;
    const float m0 = fmaxf(x.m0, y.m0), m1 = fmaxf(x.m1, y.m1);
    const float u0 = m0 == -INFINITY ? 0.0f : m0, u1 = m1 == -INFINITY ? 0.0f : m1;
    const float ax0 = x.m0 == m0 ? 1.0f : ex2((x.m0 - u0) * sl2), ay0 = y.m0 == m0 ? 1.0f : ex2((y.m0 - u0) * sl2);
    const float ax1 = x.m1 == m1 ? 1.0f : ex2((x.m1 - u1) * sl2), ay1 = y.m1 == m1 ? 1.0f : ex2((y.m1 - u1) * sl2);
    x.m0 = m0, x.m1 = m1;
    x.l[0] = __fmaf_rn(x.l[0], ax0, __fmul_rn(y.l[0], ay0));
    x.l[2] = __fmaf_rn(x.l[2], ax1, __fmul_rn(y.l[2], ay1));
#pragma unroll
    for (int n = 0; n < 8; n++) {
        x.o[n][0] = __fmaf_rn(x.o[n][0], ax0, __fmul_rn(y.o[n][0], ay0));
        x.o[n][1] = __fmaf_rn(x.o[n][1], ax0, __fmul_rn(y.o[n][1], ay0));
        x.o[n][2] = __fmaf_rn(x.o[n][2], ax1, __fmul_rn(y.o[n][2], ay1));
        x.o[n][3] = __fmaf_rn(x.o[n][3], ax1, __fmul_rn(y.o[n][3], ay1));
    }
}

/* The halves of key tiles [tfirst, tend): first[h] is half h's first tile, n[h]
 * its count, the tiles of a half two apart. Half 0 is the row's even tiles and
 * half 1 its odd ones, by the tile's index in the row, not by its place in the
 * walk, so a query's visible tiles fall in the same halves whichever span its
 * tile walks (a selection's tile spans other queries than the full tile of its
 * slot). */
struct att_plan {
    int first[2], n[2];
};

__device__ __forceinline__ att_plan att_halves(int tfirst, int tend)
{
    att_plan p;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        p.first[h] = tfirst + ((tfirst + h) & 1);
        p.n[h] = tend > p.first[h] ? (tend - p.first[h] + 1) / 2 : 0;
    }
    return p;
}

/* The key tiles of plan p (att_halves): with two groups, group g walks half g;
 * with one, the group walks both, half 0 then half 1, and where both have tiles
 * leaves half 0's state in sm.st. s ends as the walked (last) half's state. The
 * caller staged the walk's first tile (att_first) in buffer 0 of the group
 * (committed). */
template <typename T, int G>
__device__ __forceinline__ void att_walk(att_smem<T, G> &sm, att_state &s, const uint32_t (&qa)[4][4],
                                         const T *ksrc, int D, int len, int window, int qmin, int qmax, int i0,
                                         int i1, const att_plan &p)
{
    const int tid = threadIdx.x % ATT_THREADS, g = G == 1 ? 0 : threadIdx.x / ATT_THREADS;
    /* g's half by selects, not an index (an indexed array goes to local memory) */
    const int n0 = p.n[0], n = G == 1 ? n0 + p.n[1] : g ? p.n[1] : n0, fg = g ? p.first[1] : p.first[0];
    auto tile = [&](int k) {
        return G == 1 ? (k < n0 ? p.first[0] + 2 * k : p.first[1] + 2 * (k - n0)) : fg + 2 * k;
    };
    att_reset(s);
    for (int k = 0; k < n; k++) {
        const int buf = k & 1;
        if (k + 1 < n)
            att_stage<T>(sm.ks[g][buf ^ 1], sm.vs[g][buf ^ 1], ksrc, D, 3 * D, tile(k + 1) * ATT_TK, len, tid);
        cp_async_commit();
        cp_async_wait<1>();
        att_proxy_fence();
        att_bar<G>(g);
        if (G == 1 && k == n0 && n0 > 0) { /* half 0 done: its state waits in sm.st */
            att_save(s, sm.st, tid);
            att_reset(s);
        }
        att_step<T>(s, qa, sm.qs, sm.ks[g][buf], sm.vs[g][buf], tile(k) * ATT_TK, len, window, qmin, qmax, i0,
                    i1);
        att_bar<G>(g); /* the buffer is refilled next iteration */
    }
#if KN_ATT_PAD_BARRIERS
    for (int k = n; G == 2 && k < (p.n[0] > p.n[1] ? p.n[0] : p.n[1]); k++) {
        att_bar<G>(g);
        att_bar<G>(g);
    }
#endif
    cp_async_wait<0>();
}

/* The first key tile group g of G walks (att_walk), or -1 when it walks none. */
template <int G> __device__ __forceinline__ int att_first(const att_plan &p, int g)
{
    if (G == 2)
        return g ? (p.n[1] ? p.first[1] : -1) : p.n[0] ? p.first[0] : -1;
    return p.n[0] ? p.first[0] : p.n[1] ? p.first[1] : -1;
}

/* The tile's query span (x = qmin, y = qmax; y = -1: no query), by every warp at
 * once: two entries a lane and a warp reduction (a loop over all 64 in every
 * thread: the prologue around it drew a quarter of the stall samples at 1x83
 * under Nsight Compute). */
template <typename T, int G>
__device__ __forceinline__ int2 att_qspan(const att_smem<T, G> &sm, int lane)
{
    int qmin = 0x7fffffff, qmax = -1;
    for (int t = lane; t < ATT_TQ; t += 32) {
        const int i = sm.qpos[t];
        if (i >= 0) {
            qmin = i < qmin ? i : qmin;
            qmax = i > qmax ? i : qmax;
        }
    }
    return make_int2(__reduce_min_sync(0xffffffffu, qmin), __reduce_max_sync(0xffffffffu, qmax));
}

/* The Q tile of head h into shared memory, one commit group (rows with no
 * query are zero). */
template <typename T, int G>
__device__ __forceinline__ void att_load_q(att_smem<T, G> &sm, const T *row0, int D3, int h)
{
    for (int e = threadIdx.x; e < ATT_TQ * (KN_HEAD_DIM / 8); e += G * ATT_THREADS) {
        const int r = e / (KN_HEAD_DIM / 8), c = (e % (KN_HEAD_DIM / 8)) * 8;
        const int i = sm.qpos[r];
        const T *src = i >= 0 ? row0 + (size_t)i * D3 + h * KN_HEAD_DIM + c : row0;
        cp_async16(att_el(sm.qs, r, c), src, i >= 0);
    }
    cp_async_commit();
}

/* The key tiles [tfirst, tend) that the queries [qmin, qmax] of a row of len
 * keys see: all, or those within window; none when qmax < 0. */
__device__ __forceinline__ int2 att_keys(int qmin, int qmax, int len, int window)
{
    int jlo = 0, jhi = len;
    if (window >= 0) {
        jlo = qmin - window > 0 ? qmin - window : 0;
        jhi = qmax + window + 1 < len ? qmax + window + 1 : len;
    }
    if (qmax < 0)
        jhi = jlo; /* no query in this tile */
    const int tfirst = jlo / ATT_TK;
    return make_int2(tfirst, jhi > jlo ? (jhi + ATT_TK - 1) / ATT_TK : tfirst);
}

/* Output rows oa and ob (-1: none) of head h from state x, whose rows hold
 * queries i0 and i1. A tile row without a query (qpos -1, possible in a
 * selection) may have summed unmasked keys on the all-visible path: it stores
 * zeros. */
template <typename T>
__device__ __forceinline__ void att_store(const att_state &x, T *out, int D, int h, int c4, const int *orow, int r0,
                                          int r1, int i0, int i1)
{
    const float l0 = x.l[0], l1 = x.l[2];
    const float inv0 = l0 > 0.0f && i0 >= 0 ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f && i1 >= 0 ? 1.0f / l1 : 0.0f;
    const int oa = orow[r0], ob = orow[r1];
#pragma unroll
    for (int n = 0; n < 8; n++) {
        const int d = h * KN_HEAD_DIM + 8 * n + 2 * c4;
        if (oa >= 0)
            *reinterpret_cast<uint32_t *>(out + (size_t)oa * D + d) =
                kn_pack_u32<T>(x.o[n][0] * inv0, x.o[n][1] * inv0);
        if (ob >= 0)
            *reinterpret_cast<uint32_t *>(out + (size_t)ob * D + d) =
                kn_pack_u32<T>(x.o[n][2] * inv1, x.o[n][3] * inv1);
    }
}

/* att_tile (below) up to its store, for a caller that uses the attention's
 * output itself (attention_wo_kernel): returns 1 where this thread holds its
 * rows' share of the combined state x (every thread of one group; group 0 of
 * two), 0 in group 1 of two, which has handed its half over; rq gets the
 * thread's two rows in the tile and their queries (r0, r1, i0, i1). att_tile
 * keeps its own copy of these steps so that its machine code stays as measured
 * (sharing them moved its registers). */
template <typename T, int G>
__device__ __forceinline__ int att_tile_state(att_smem<T, G> &sm, const T *row0, int D, int len, int window, int h,
                                              att_state &x, int4 &rq)
{
    const int tid = threadIdx.x % ATT_THREADS, g = G == 1 ? 0 : threadIdx.x / ATT_THREADS;
    const int warp = tid / 32, lane = threadIdx.x % 32, gr = lane / 4, c4 = lane % 4;
    const int D3 = 3 * D;
    const int2 q = att_qspan(sm, lane);
    const int qmin = q.x, qmax = q.y;
    att_load_q<T, G>(sm, row0, D3, h);

    const int2 keys = att_keys(qmin, qmax, len, window);
    const T *ksrc = row0 + D + h * KN_HEAD_DIM;
    const att_plan p = att_halves(keys.x, keys.y);
    const int t0 = att_first<G>(p, g);
    if (t0 >= 0)
        att_stage<T>(sm.ks[g][0], sm.vs[g][0], ksrc, D, D3, t0 * ATT_TK, len, tid);
    cp_async_commit();
    cp_async_wait<1>(); /* Q has landed */
    att_proxy_fence();
    __syncthreads();

    const int r0 = warp * 16 + gr, r1 = r0 + 8; /* this thread's two query rows in the tile */
    const int i0 = sm.qpos[r0], i1 = sm.qpos[r1];
    rq = make_int4(r0, r1, i0, i1);
    uint32_t qa[4][4]; /* unused on the wgmma path */
#pragma unroll
    for (int s = 0; s < 4 && !ATT_WG; s++) {
        qa[s][0] = lds32(&sm.qs[r0][16 * s + 2 * c4]);
        qa[s][1] = lds32(&sm.qs[r1][16 * s + 2 * c4]);
        qa[s][2] = lds32(&sm.qs[r0][16 * s + 8 + 2 * c4]);
        qa[s][3] = lds32(&sm.qs[r1][16 * s + 8 + 2 * c4]);
    }
    att_state s;
    att_walk<T, G>(sm, s, qa, ksrc, D, len, window, qmin, qmax, i0, i1, p);
    /* The halves meet: half 0's state and half 1's, then x = both. Where a half
     * is empty the combination would return the other exactly (times 1, plus
     * zeros), so one group skips it. */
    if (G == 2 && g == 1)
        att_save(s, sm.st, tid);
    if (G == 2)
        __syncthreads();
    if (G == 2 && g == 1)
        return 0;
    if (G == 2) {
        att_state y;
        x = s;
        att_load(y, sm.st, tid);
        att_combine(x, y);
    } else if (p.n[0] > 0 && p.n[1] > 0) {
        att_load(x, sm.st, tid);
        att_combine(x, s);
    } else {
        x = s;
    }
    return 1;
}

/* One query tile of one head over one row: row0 is the row's first slot in qkv,
 * len its length; sm.qpos / sm.orow are set (and synchronized) by the caller.
 * Writes out[orow[t], head h] for every tile row t with orow[t] >= 0: its
 * attention, or zeros when qpos[t] < 0 (no query) or it saw no key. The key
 * tiles are walked in two interleaved halves whose states are combined at the
 * end (att_walk, att_combine): by two groups side by side (G = 2, for small
 * packs, whose few blocks leave SMs idle) or by one group in turn (G = 1), to
 * the same bits. Returns with shared memory still being read by other warps:
 * sync before refilling. */
template <typename T, int G>
__device__ __forceinline__ void att_tile(att_smem<T, G> &sm, const T *row0, T *out, int D, int len, int window,
                                         int h)
{
    const int tid = threadIdx.x % ATT_THREADS, g = G == 1 ? 0 : threadIdx.x / ATT_THREADS;
    const int warp = tid / 32, lane = threadIdx.x % 32, gr = lane / 4, c4 = lane % 4;
    const int D3 = 3 * D;
    const int2 q = att_qspan(sm, lane);
    const int qmin = q.x, qmax = q.y;
    att_load_q<T, G>(sm, row0, D3, h);

    const int2 keys = att_keys(qmin, qmax, len, window);
    const T *ksrc = row0 + D + h * KN_HEAD_DIM;
    const att_plan p = att_halves(keys.x, keys.y);
    const int t0 = att_first<G>(p, g);
    if (t0 >= 0)
        att_stage<T>(sm.ks[g][0], sm.vs[g][0], ksrc, D, D3, t0 * ATT_TK, len, tid);
    cp_async_commit();
    cp_async_wait<1>(); /* Q has landed */
    att_proxy_fence();
    __syncthreads();

    const int r0 = warp * 16 + gr, r1 = r0 + 8; /* this thread's two query rows in the tile */
    const int i0 = sm.qpos[r0], i1 = sm.qpos[r1];
    uint32_t qa[4][4]; /* unused on the wgmma path */
#pragma unroll
    for (int s = 0; s < 4 && !ATT_WG; s++) {
        qa[s][0] = lds32(&sm.qs[r0][16 * s + 2 * c4]);
        qa[s][1] = lds32(&sm.qs[r1][16 * s + 2 * c4]);
        qa[s][2] = lds32(&sm.qs[r0][16 * s + 8 + 2 * c4]);
        qa[s][3] = lds32(&sm.qs[r1][16 * s + 8 + 2 * c4]);
    }
    att_state s;
    att_walk<T, G>(sm, s, qa, ksrc, D, len, window, qmin, qmax, i0, i1, p);
    /* The halves meet: half 0's state and half 1's, then x = both. Where a half
     * is empty the combination would return the other exactly (times 1, plus
     * zeros), so one group skips it. */
    if (G == 2 && g == 1)
        att_save(s, sm.st, tid);
    if (G == 2)
        __syncthreads();
    if (G == 2 && g == 1)
        return;
    att_state x;
    if (G == 2) {
        att_state y;
        x = s;
        att_load(y, sm.st, tid);
        att_combine(x, y);
    } else if (p.n[0] > 0 && p.n[1] > 0) {
        att_load(x, sm.st, tid);
        att_combine(x, s);
    } else {
        x = s;
    }
    att_store<T>(x, out, D, h, c4, sm.orow, r0, r1, i0, i1);
}

/* Block (head x, tile y): the queries [q0, min(q0 + 64, cu[r+1])) of row r =
 * tiles[2y], q0 = tiles[2y + 1]; r < 0: a spare tile, nothing to do. Row bounds
 * are clamped to [0, nslot] (the launcher's T), so a malformed cu cannot reach
 * past the buffers. G groups of four warps (att_tile). Heads vary fastest, so
 * the live tiles, first in the list, are the grid's first blocks: spare blocks
 * (which wait for the predecessor before they return) never hold an SM ahead
 * of a live one when the grid is more than a wave. */
template <typename T, int G>
__global__ void __launch_bounds__(G * ATT_THREADS, G == 1 ? 3 : 1)
attention_kernel(const T *__restrict__ qkv, T *__restrict__ out, int nslot, int D, const int32_t *__restrict__ cu,
                 const int32_t *__restrict__ tiles, int window)
{
    /* The tile list and the row bounds were staged before the forward's first
     * kernel: read before the wait (while RoPE runs, when it lets this kernel
     * start early); qkv only after. */
    extern __shared__ __align__(16) unsigned char att_raw[];
    att_smem<T, G> &sm = att_smem_at<T, G>(att_raw);
    const int r = tiles[2 * (size_t)blockIdx.y];
    if (r < 0) {
        kn_pdl_wait();
        return;
    }
    int s = cu[r], e = cu[r + 1];
    s = s < 0 ? 0 : s > nslot ? nslot : s;
    e = e < s ? s : e > nslot ? nslot : e;
    const int q0 = tiles[2 * (size_t)blockIdx.y + 1] - s;
    if (threadIdx.x < ATT_TQ) {
        const int i = q0 + (int)threadIdx.x;
        const bool ok = i >= 0 && i < e - s;
        sm.qpos[threadIdx.x] = ok ? i : -1;
        sm.orow[threadIdx.x] = ok ? s + i : -1;
    }
    __syncthreads();
    kn_pdl_wait();
    kn_pdl_trigger_small(nslot);
    att_tile<T, G>(sm, qkv + (size_t)s * 3 * D, out, D, e - s, window, blockIdx.x);
}

/* Block (x, head y) of a selection: tile x / ATT_SSEG of 64 selected queries,
 * split into runs of consecutive queries with one qrow; this block takes runs
 * x % ATT_SSEG, + ATT_SSEG, ... A run with qrow < 0, or a query whose slot is
 * outside its row, stores zeros. One group: the same bits as kn_attention's. */
template <typename T>
__global__ void __launch_bounds__(ATT_THREADS, 3)
attention_select_kernel(const T *__restrict__ qkv, T *__restrict__ out, int D, const int32_t *__restrict__ cu,
                        int window, const int32_t *__restrict__ qrow, const int32_t *__restrict__ qpos, int G)
{
    kn_pdl_wait();
    extern __shared__ __align__(16) unsigned char att_raw[];
    att_smem<T, 1> &sm = att_smem_at<T, 1>(att_raw);
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
        att_tile<T, 1>(sm, qkv + (size_t)s * 3 * D, out, D, len, window, blockIdx.y);
        __syncthreads(); /* sm is refilled for the next run */
    }
}

/* ---- the attention with its out-projection (small packs) ----------------------
 *
 * Block (head h, column chunk c; tile y) of kn_attention_wo: the attention of one
 * query tile of one head, as attention_kernel's two-group form computes it (same
 * bits), then that head's share of the out-projection, O_h Wo[cols, h's 64 dims]^T,
 * for the columns of chunk c: an fp32 partial product per head that the
 * LayerNorm after the branch sums (kn_layernorm_parts, one part a head). Wo's
 * slice (128 or 256 rows of 64 dims, 16 or 32 KB) is fetched before the programmatic-launch
 * wait; O, rounded to the dtype as the attention stores it, goes from the
 * registers to the Q tile's place in shared memory, and each group forms its half of
 * the columns as 64 x 64 x 64 products, the same step as S = Q K^T. */
/* NT: 64-column tiles a group, so a block's 2 NT 64 columns: 256 where D % 256 == 0,
 * else 128 (the tiny test geometry). */
template <int NT> __host__ __device__ constexpr int atw_cols() { return 2 * NT * ATT_TK; }

template <typename T, int NT> struct atw_smem {
    __align__(16) T ws[2 * NT][ATT_TK][ATT_LD]; /* first: 9 KB tiles keep att's alignment */
    att_smem<T, 2> att;
};

template <typename T, int NT> __device__ __forceinline__ atw_smem<T, NT> &atw_smem_at(unsigned char *raw)
{
#if ATT_WG
    return *reinterpret_cast<atw_smem<T, NT> *>(raw + ((1024 - (smem_addr(raw) & 1023)) & 1023));
#else
    return *reinterpret_cast<atw_smem<T, NT> *>(raw);
#endif
}

/* Wo rows [n0, n0 + 128 NT), dims [64 h, 64 h + 64) (w points at row n0, dim 64 h;
 * rows D apart) into ws, one commit group: thread t copies 16 bytes at dim
 * 8 (t % 8) of rows t / 8 + 32 k. */
template <typename T, int NT>
__device__ __forceinline__ void atw_stage_w(T (*ws)[ATT_TK][ATT_LD], const T *w, int D)
{
    constexpr int RSTEP = 2 * ATT_THREADS / 8;
    const int r = threadIdx.x / 8, c = (threadIdx.x % 8) * 8;
#pragma unroll
    for (int k = 0; k < atw_cols<NT>() / RSTEP; k++) {
        const int n = r + k * RSTEP;
        cp_async16(att_el(ws[n / ATT_TK], n % ATT_TK, c), w + (size_t)n * D + c, true);
    }
    cp_async_commit();
}

/* Group 0's combined state x, divided by l and rounded to T exactly as att_store
 * stores it (zeros for rows without a query), into the Q tile's place. */
template <typename T> __device__ __forceinline__ void atw_put_o(const att_state &x, T (*os)[ATT_LD], int4 rq)
{
    const int2 r = make_int2(rq.x, rq.y);
    const int c4 = threadIdx.x % 4;
    const float l0 = x.l[0], l1 = x.l[2];
    const float inv0 = l0 > 0.0f && rq.z >= 0 ? 1.0f / l0 : 0.0f;
    const float inv1 = l1 > 0.0f && rq.w >= 0 ? 1.0f / l1 : 0.0f;
#pragma unroll
    for (int n = 0; n < 8; n++) {
        *reinterpret_cast<uint32_t *>(att_el(os, r.x, 8 * n + 2 * c4)) =
            kn_pack_u32<T>(x.o[n][0] * inv0, x.o[n][1] * inv0);
        *reinterpret_cast<uint32_t *>(att_el(os, r.y, 8 * n + 2 * c4)) =
            kn_pack_u32<T>(x.o[n][2] * inv1, x.o[n][3] * inv1);
    }
}

/* This group's NT 64-column tiles of the block's chunk: P = O Wo_tile^T (fp32),
 * rows orow (>= 0) of part h, columns col0 + 64 t + 8 n + 2 (lane % 4). */
template <typename T, int NT>
__device__ __forceinline__ void atw_product(atw_smem<T, NT> &sm, float *part, int D, int col0)
{
    const int g = threadIdx.x / ATT_THREADS, c4 = threadIdx.x % 4;
    const int r0 = (threadIdx.x % ATT_THREADS) / 32 * 16 + (threadIdx.x % 32) / 4;
    const int2 r = make_int2(r0, r0 + 8); /* the thread's rows, as in att_tile_state */
    const int oa = sm.att.orow[r.x], ob = sm.att.orow[r.y];
    uint32_t qa[4][4]; /* O's fragments, unused on the wgmma path */
#pragma unroll
    for (int s = 0; s < 4 && !ATT_WG; s++) {
        qa[s][0] = lds32(&sm.att.qs[r.x][16 * s + 2 * c4]);
        qa[s][1] = lds32(&sm.att.qs[r.y][16 * s + 2 * c4]);
        qa[s][2] = lds32(&sm.att.qs[r.x][16 * s + 8 + 2 * c4]);
        qa[s][3] = lds32(&sm.att.qs[r.y][16 * s + 8 + 2 * c4]);
    }
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int t = g * NT + j;
        float pc[8][4];
        att_scores<T>(pc, qa, sm.att.qs, sm.ws[t]);
#pragma unroll
        for (int n = 0; n < 8; n++) {
            const int col = col0 + t * ATT_TK + 8 * n + 2 * c4;
            if (oa >= 0)
                *reinterpret_cast<float2 *>(part + (size_t)oa * D + col) = make_float2(pc[n][0], pc[n][1]);
            if (ob >= 0)
                *reinterpret_cast<float2 *>(part + (size_t)ob * D + col) = make_float2(pc[n][2], pc[n][3]);
        }
    }
}

/* Block (x = h C + c, tile y), C = D / N chunks of N = 128 NT columns: tile y as in
 * attention_kernel (r < 0: a spare, nothing to do), two groups; then part h's
 * columns [c N, (c + 1) N) of the tile's rows. */
template <typename T, int NT>
__global__ void __launch_bounds__(2 * ATT_THREADS, 1)
attention_wo_kernel(const T *__restrict__ qkv, const T *__restrict__ wo, float *__restrict__ parts, long pstride,
                    int nslot, int D, const int32_t *__restrict__ cu, const int32_t *__restrict__ tiles, int window)
{
    extern __shared__ __align__(16) unsigned char att_raw[];
    constexpr int N = atw_cols<NT>();
    atw_smem<T, NT> &sm = atw_smem_at<T, NT>(att_raw);
    const int C = D / N, h = blockIdx.x / C, c = blockIdx.x % C;
    const int r = tiles[2 * (size_t)blockIdx.y];
    if (r < 0) {
        kn_pdl_wait();
        return;
    }
    atw_stage_w<T, NT>(sm.ws, wo + (size_t)c * N * D + h * KN_HEAD_DIM, D); /* weights: before the wait */
    int s = cu[r], e = cu[r + 1];
    s = s < 0 ? 0 : s > nslot ? nslot : s;
    e = e < s ? s : e > nslot ? nslot : e;
    const int q0 = tiles[2 * (size_t)blockIdx.y + 1] - s;
    if (threadIdx.x < ATT_TQ) {
        const int i = q0 + (int)threadIdx.x;
        const bool ok = i >= 0 && i < e - s;
        sm.att.qpos[threadIdx.x] = ok ? i : -1;
        sm.att.orow[threadIdx.x] = ok ? s + i : -1;
    }
    __syncthreads();
    kn_pdl_wait();
    kn_pdl_trigger_small(nslot);
    att_state x;
    int4 rq;
    /* att_tile_state's first wait leaves only its last group in flight: Wo has landed */
    if (att_tile_state<T, 2>(sm.att, qkv + (size_t)s * 3 * D, D, e - s, window, h, x, rq))
        atw_put_o<T>(x, sm.att.qs, rq);
    att_proxy_fence();
    __syncthreads();
    atw_product<T, NT>(sm, parts + (size_t)h * pstride, D, c * N);
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

template <typename E, int G>
static int att_launch(kn_stream ks, const void *qkv, void *out, int nslot, int D, const int32_t *cu,
                      const int32_t *tiles, int n_tiles, int window)
{
    const size_t smem = sizeof(att_smem<E, G>) + ATT_PAD;
    auto kern = attention_kernel<E, G>;
    KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    KN_CUDA(kn_launch(kern, dim3(D / KN_HEAD_DIM, (unsigned)n_tiles), dim3(G * ATT_THREADS), smem, ks,
                      (const E *)qkv, (E *)out, nslot, D, cu, tiles, window));
    return 0;
}

/* Two groups a block (the halves side by side, one block an SM) while the grid's
 * blocks do not fill the SMs one and a half times over, else one (three blocks an
 * SM): between the chain of a small pack's few blocks and the occupancy of a
 * large one's. For 16 heads on 132 SMs: up to 12 tiles. */
extern "C" int kn_attention_pack_tiles(int D)
{
    int sms = 0;
    KN_REQUIRE(D >= KN_HEAD_DIM && D % KN_HEAD_DIM == 0, "attention needs D a positive multiple of 64");
    if (kn_sms(&sms))
        return -1;
    return 3 * sms / (2 * (D / KN_HEAD_DIM));
}

static int att_groups(int n_tiles, int D)
{
    const int p = kn_attention_pack_tiles(D);
    return p < 0 ? -1 : n_tiles <= p ? 2 : 1;
}

extern "C" int kn_attention_grouped(kn_stream ks, kn_dtype dt, const void *qkv, void *out, int T, int D,
                                    const int32_t *cu, const int32_t *tiles, int n_tiles, int window, int groups)
{
    KN_REQUIRE(T >= 0 && n_tiles >= 0, "negative attention size");
    KN_REQUIRE(groups >= 0 && groups <= 2, "attention groups must be 0 (by the grid), 1 or 2");
    if (T == 0 || n_tiles == 0)
        return 0;
    if (att_check(dt, qkv, out, D))
        return -1;
    KN_REQUIRE(cu && tiles, "NULL attention rows or tiles");
    KN_REQUIRE(n_tiles <= 65535, "attention grid too large");
    const int G = groups ? groups : att_groups(n_tiles, D);
    if (G < 0)
        return -1;
    int rc = 0;
    KN_DISPATCH16(dt, E,
                  rc = G == 2 ? att_launch<E, 2>(ks, qkv, out, T, D, cu, tiles, n_tiles, window)
                              : att_launch<E, 1>(ks, qkv, out, T, D, cu, tiles, n_tiles, window));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_attention(kn_stream ks, kn_dtype dt, const void *qkv, void *out, int T, int D,
                            const int32_t *cu, const int32_t *tiles, int n_tiles, int window)
{
    return kn_attention_grouped(ks, dt, qkv, out, T, D, cu, tiles, n_tiles, window, 0);
}

/* The 64-column tiles a group of kn_attention_wo's blocks forms for width D: 2 (256
 * columns a block) where D allows, else 1. */
static int atw_nt(int D) { return D % atw_cols<2>() == 0 ? 2 : 1; }

extern "C" int kn_attention_wo_tiles(int D)
{
    int sms = 0;
    KN_REQUIRE(D >= atw_cols<1>() && D % atw_cols<1>() == 0,
               "the attention with its out-projection needs D a multiple of 128");
    if (kn_sms(&sms))
        return -1;
    return sms / ((D / KN_HEAD_DIM) * (D / atw_cols<1>() / atw_nt(D)));
}

extern "C" int kn_attention_wo_ok(kn_dtype dt, const void *qkv, const void *wo, const float *parts, long part_stride,
                                  int D)
{
    return kn_is16(dt) && D >= atw_cols<1>() && D % atw_cols<1>() == 0 && D / KN_HEAD_DIM <= KN_LN_PARTS_MAX && qkv && wo &&
           parts && kn_aligned16(qkv) && kn_aligned16(wo) && kn_aligned16(parts) && part_stride >= 0 &&
           part_stride % 4 == 0;
}

template <typename E, int NT>
static int atw_launch(kn_stream ks, const void *qkv, const void *wo, float *parts, long part_stride, int T, int D,
                      const int32_t *cu, const int32_t *tiles, int n_tiles, int window)
{
    const dim3 grid((unsigned)((D / KN_HEAD_DIM) * (D / atw_cols<NT>())), (unsigned)n_tiles);
    const size_t smem = sizeof(atw_smem<E, NT>) + ATT_PAD;
    auto kern = attention_wo_kernel<E, NT>;
    KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    KN_CUDA(kn_launch(kern, grid, dim3(2 * ATT_THREADS), smem, ks, (const E *)qkv, (const E *)wo, parts, part_stride,
                      T, D, cu, tiles, window));
    return 0;
}

extern "C" int kn_attention_wo(kn_stream ks, kn_dtype dt, const void *qkv, const void *wo, float *parts,
                               long part_stride, int T, int D, const int32_t *cu, const int32_t *tiles, int n_tiles,
                               int window)
{
    KN_REQUIRE(T >= 0 && n_tiles >= 0, "negative attention size");
    if (T == 0 || n_tiles == 0)
        return 0;
    KN_REQUIRE(kn_attention_wo_ok(dt, qkv, wo, parts, part_stride, D),
               "the attention with its out-projection needs 16-bit operands, D % 128 == 0, at most 16 heads and "
               "16-byte aligned buffers");
    KN_REQUIRE((long)T * D <= part_stride, "attention out-projection parts overlap");
    KN_REQUIRE(cu && tiles, "NULL attention rows or tiles");
    KN_REQUIRE(n_tiles <= 65535, "attention grid too large");
    int rc = 0;
    KN_DISPATCH16(dt, E,
                  rc = atw_nt(D) == 2 ? atw_launch<E, 2>(ks, qkv, wo, parts, part_stride, T, D, cu, tiles, n_tiles, window)
                                      : atw_launch<E, 1>(ks, qkv, wo, parts, part_stride, T, D, cu, tiles, n_tiles, window));
    if (rc)
        return -1;
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
    const size_t smem = sizeof(att_smem<__half, 1>) + ATT_PAD; /* the same for both 16-bit types */
    KN_DISPATCH16(dt, E, KN_CUDA(cudaFuncSetAttribute(attention_select_kernel<E>,
                                                      cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
                  KN_CUDA(kn_launch(attention_select_kernel<E>, grid, dim3(ATT_THREADS), smem, ks,
                                    (const E *)qkv, (E *)out, D, cu, window, qrow, qpos, G)));
    KN_LAUNCHED();
    return 0;
}
