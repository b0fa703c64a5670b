/*
 * attention.cu - multi-head attention over the packed QKV buffer, head_dim 64,
 * flash-attention style on the tensor cores (mma.sync m16n8k16, fp32
 * accumulation), with per-row lengths, an optional inclusive sliding window and
 * an optional query selection.
 *
 * Algorithm (kernels/attention_cpu.c is the CPU sibling, same tiles and masks):
 *   - A block is (query tile of 64, head, row b); four warps own 16 queries
 *     each. Keys are walked in tiles of 64 aligned at j = 0; tiles outside
 *     [0, lens[b]) or outside the query tile's window band are never loaded.
 *   - K and V tiles are staged in shared memory with cp.async, two deep (the
 *     next tile loads while this one computes); keys at or past lens[b] are
 *     zero-filled, so garbage in padded V rows cannot reach an output through a
 *     zero weight (0 * NaN).
 *   - S = Q K^T from register fragments (Q loaded once), masked per element by
 *     j < len && (window < 0 || |i - j| <= window), then the online softmax in
 *     fp32 with the scale 1/8 folded with log2 e into the exponent: m' =
 *     max(m, max_j s), alpha = 2^((m - m') c) (exactly 1 when m did not move, 0
 *     while m = -inf), p = 2^(s c - m' c) (one FMA and ex2.approx), l = l alpha +
 *     sum p, O = O alpha + P V. P is rounded to the 16-bit dtype for the P V
 *     product (the accumulator stays fp32), the usual flash-attention trade.
 *   - At the end O / l, or zeros where l == 0 (a query that saw no key): all
 *     outputs finite. Rows past L (or past the selection) are not written.
 * K fragments come from shared memory through ldmatrix, V fragments through
 * ldmatrix.trans, on rows padded to 72 elements (conflict-free); 128 registers
 * at most, so 4 blocks (16 warps) share an SM. Measured against the previous
 * version (32-bit shared loads for K, exp2f, a staging loop with divisions) on
 * the H200: 1.08-1.26x faster (bench/results/h200/kernels.md).
 * The selection variant (kn_attention_select) is the same kernel with query
 * positions read from qsel and outputs packed per row: the last head layer
 * needs only CLS and the markers while keys and values span the row.
 */
#include "kernels/mma.cuh"

#define ATT_TQ 64                 /* queries per block (4 warps x 16) */
#define ATT_TK 64                 /* keys per tile */
#define ATT_LD (KN_HEAD_DIM + 8)  /* padded shared row (elements) */
#define ATT_THREADS 128

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

/* Stages keys [j0, j0 + 64) of one head's K and V columns (ksrc = row 0 of the
 * batch row at the head's K column; V is D columns further) into ks and vs; keys
 * >= len are zero-filled. Thread x copies 16 bytes at column 8 (x % 8) of keys
 * x / 8 + 16 k, k < 4 (unrolled), from one running pointer (few registers: the
 * kernel is capped at 128 for 4 blocks per SM). */
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

template <typename T>
__global__ void __launch_bounds__(ATT_THREADS, 4)
attention_kernel(const T *__restrict__ qkv, T *__restrict__ out, int L, int D,
                 const int32_t *__restrict__ lens, int window, const int32_t *__restrict__ qsel, int NQ)
{
    kn_pdl_wait();
    __shared__ __align__(16) T qs[ATT_TQ][ATT_LD];
    __shared__ __align__(16) T ks[2][ATT_TK][ATT_LD];
    __shared__ __align__(16) T vs[2][ATT_TK][ATT_LD];
    __shared__ int qpos[ATT_TQ];

    const int t0 = blockIdx.x * ATT_TQ, h = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c4 = lane % 4;
    const int D3 = 3 * D;
    const T *row0 = qkv + (size_t)b * L * D3;
    int len = lens[b];
    len = len < 0 ? 0 : len > L ? L : len;

    /* Query positions of this tile (-1: no query, nothing stored). */
    if (threadIdx.x < ATT_TQ) {
        const int t = t0 + threadIdx.x;
        qpos[threadIdx.x] = t < NQ ? (qsel ? qsel[(size_t)b * NQ + t] : t) : -1;
    }
    __syncthreads();
    int qmin = 0x7fffffff, qmax = -1;
    for (int t = 0; t < ATT_TQ; t++) {
        const int i = qpos[t];
        if (i >= 0) {
            qmin = i < qmin ? i : qmin;
            qmax = i > qmax ? i : qmax;
        }
    }
    /* Q tile (rows with no query are zero). */
    for (int e = threadIdx.x; e < ATT_TQ * (KN_HEAD_DIM / 8); e += ATT_THREADS) {
        const int r = e / (KN_HEAD_DIM / 8), c = (e % (KN_HEAD_DIM / 8)) * 8;
        const int i = qpos[r];
        const T *src = i >= 0 ? row0 + (size_t)i * D3 + h * KN_HEAD_DIM + c : row0;
        cp_async16(&qs[r][c], src, i >= 0);
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
        att_stage<T>(ks[0], vs[0], ksrc, D, D3, tfirst * ATT_TK, len);
    }
    cp_async_commit();
    cp_async_wait<1>(); /* Q has landed */
    __syncthreads();

    const int r0 = warp * 16 + g, r1 = r0 + 8; /* this thread's two query rows in the tile */
    const int i0 = qpos[r0], i1 = qpos[r1];
    uint32_t qa[4][4];
#pragma unroll
    for (int s = 0; s < 4; s++) {
        qa[s][0] = lds32(&qs[r0][16 * s + 2 * c4]);
        qa[s][1] = lds32(&qs[r1][16 * s + 2 * c4]);
        qa[s][2] = lds32(&qs[r0][16 * s + 8 + 2 * c4]);
        qa[s][3] = lds32(&qs[r1][16 * s + 8 + 2 * c4]);
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
            att_stage<T>(ks[buf ^ 1], vs[buf ^ 1], ksrc, D, D3, (t + 1) * ATT_TK, len);
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
                ldmatrix_x4(kb, &ks[buf][8 * n + (lane % 8)][32 * sp + 8 * (lane / 8)]);
                mma16816<T>(sc[n], qa[2 * sp], kb);
                mma16816<T>(sc[n], qa[2 * sp + 1], kb + 2);
            }
        }
        /* Mask (only where the tile is not wholly visible to the block); scores stay
         * unscaled, the scale is applied inside the exponent below. */
        const int j0 = t * ATT_TK;
        const bool full = j0 + ATT_TK <= len &&
                          (window < 0 || (j0 >= qmax - window && j0 + ATT_TK - 1 <= qmin + window));
        float tm0 = -INFINITY, tm1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int j = j0 + 8 * n + 2 * c4 + (e & 1);
                const int i = e < 2 ? i0 : i1;
                float v = sc[n][e];
                if (!full) {
                    const int dd = i - j;
                    const bool vis = i >= 0 && j < len && (window < 0 || (dd <= window && -dd <= window));
                    v = vis ? v : -INFINITY;
                }
                sc[n][e] = v;
                if (e < 2)
                    tm0 = fmaxf(tm0, v);
                else
                    tm1 = fmaxf(tm1, v);
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
                ldmatrix_x4_trans(vb, &vs[buf][key][d]);
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
    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    const int ta = t0 + r0, tb = t0 + r1;
#pragma unroll
    for (int n = 0; n < 8; n++) {
        const int d = h * KN_HEAD_DIM + 8 * n + 2 * c4;
        if (ta < NQ)
            *reinterpret_cast<uint32_t *>(out + ((size_t)b * NQ + ta) * D + d) =
                pack2<T>(o[n][0] * inv0, o[n][1] * inv0);
        if (tb < NQ)
            *reinterpret_cast<uint32_t *>(out + ((size_t)b * NQ + tb) * D + d) =
                pack2<T>(o[n][2] * inv1, o[n][3] * inv1);
    }
}

static int att_launch(cudaStream_t s, kn_dtype dt, const void *qkv, void *out, int B, int L, int D,
                      const int32_t *lens, int window, const int32_t *qsel, int NQ)
{
    KN_REQUIRE(kn_is16(dt), "attention dtype must be fp16 or bf16");
    KN_REQUIRE(B >= 0 && L >= 0 && NQ >= 0, "negative attention size");
    KN_REQUIRE(D > 0 && D % KN_HEAD_DIM == 0, "attention needs D a positive multiple of 64");
    if (B == 0 || NQ == 0)
        return 0;
    KN_REQUIRE(L > 0, "attention with queries needs L > 0");
    KN_REQUIRE(qkv && out && lens, "NULL attention buffer");
    KN_REQUIRE(kn_aligned16(qkv) && kn_aligned16(out), "attention buffers must be 16-byte aligned");
    KN_REQUIRE(B <= 65535 && D / KN_HEAD_DIM <= 65535, "attention grid too large");
    const dim3 grid((NQ + ATT_TQ - 1) / ATT_TQ, D / KN_HEAD_DIM, B);
    KN_DISPATCH16(dt, T, KN_CUDA(kn_launch(attention_kernel<T>, dim3(grid), dim3(ATT_THREADS), 0, s, 
                             (const T *)qkv, (T *)out, L, D, lens, window, qsel, NQ)));
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_attention(cudaStream_t s, kn_dtype dt, const void *qkv, void *out, int B, int L, int D,
                            const int32_t *lens, int window)
{
    return att_launch(s, dt, qkv, out, B, L, D, lens, window, NULL, L);
}

extern "C" int kn_attention_select(cudaStream_t s, kn_dtype dt, const void *qkv, void *out, int B, int L,
                                   int D, const int32_t *lens, int window, const int32_t *qsel, int nq)
{
    KN_REQUIRE(nq == 0 || qsel, "NULL query selection");
    return att_launch(s, dt, qkv, out, B, L, D, lens, window, qsel, nq);
}
