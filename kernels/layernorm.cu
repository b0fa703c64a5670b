/*
 * layernorm.cu - LayerNorm fused with the residual add (and with the embedding
 * gather, or the head's type embedding), fp32 statistics, 16-bit and/or fp32
 * outputs.
 *
 * Per row (kernels/layernorm_cpu.c is the CPU sibling): pass 1 forms the
 * residual r (r += x, r = table[id] for the embedding, r += table[id] for the
 * type embedding) and its sum; pass 2
 * sums squared deviations from the mean (two passes, never E[x^2] - mean^2,
 * which cancels when the residual reaches 1e4 and beyond); pass 3 normalizes.
 * The residual update is a plain fp32 add, exactly the CPU's (and PyTorch's)
 * `h = h + o`. The row sum runs in double, as on the CPU: a residual row near
 * 1e4 loses ~1e-3 of its mean in fp32 sums, which a unit-variance output would
 * see. The scalar path also forms the deviations and the output in double. The
 * fast path forms each deviation in fp32 against the mean split into two floats
 * (mean = mh + ml, r - mh - ml: within ~2 fp32 ulps of the deviation itself, for
 * rows near 1e4 too), sums their squares per 4-column chunk in fp32 and across
 * chunks in double, and scales in fp32: ~1e-7 relative from the CPU's double
 * output, against the 1e-5 tolerance; the row then stays in 32 registers
 * (no spills) and most of the arithmetic leaves the slower double unit.
 *
 * One warp per row, up to 8 rows per block (fewer in small packs,
 * ln_rows_per_block): at D = 768..1024 a row is 24-32
 * values per lane, held in registers, so r and x are read once and r written
 * once. Fast path (D % 128 == 0, D <= 1536, 16-byte aligned buffers): lane l
 * owns columns 4l + 128c with 16-byte fp32 and 8-byte 16-bit accesses, and all
 * of a row's loads are issued before its first store (one memory round trip per
 * row; D = 768 and 1024 are unrolled at compile time). Any other D runs the
 * same three passes over global memory with one column per lane per step
 * (every element is read and written by the same lane, so y may alias r or x).
 */
#include "kernels/cuda_util.cuh"

#define LN_ROWS 8     /* rows (warps) per block at most */
#define LN_MAXC 12    /* fast path: D <= 128 * LN_MAXC */

/* r as is; r += x[m]; r = table[ids[m]]; r += table[ids[m]] (the head's type embedding). */
enum { LN_PLAIN = 0, LN_RESID = 1, LN_EMBED = 2, LN_ADDROW = 3 };

__device__ __forceinline__ double ln_warp_sum(double v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T> __device__ __forceinline__ void ln_store4(T *p, float4 v)
{
    typedef typename kn_pair<T>::type P;
    uint2 u;
    P *h = reinterpret_cast<P *>(&u);
    h[0] = kn_pack<T>(v.x, v.y);
    h[1] = kn_pack<T>(v.z, v.w);
    *reinterpret_cast<uint2 *>(p) = u;
}

/* 4 consecutive elements of a 16-bit or fp32 row (8- or 16-byte access). */
template <typename T> __device__ __forceinline__ float4 ln_load4(const T *p)
{
    typedef typename kn_pair<T>::type P;
    uint2 u = *reinterpret_cast<const uint2 *>(p);
    const P *h = reinterpret_cast<const P *>(&u);
    float2 a = kn_f2(h[0]), b = kn_f2(h[1]);
    return make_float4(a.x, a.y, b.x, b.y);
}
template <> __device__ __forceinline__ float4 ln_load4<float>(const float *p)
{
    return *reinterpret_cast<const float4 *>(p);
}

/* Blocks per SM the unrolled kernels are register-capped for: 2 x 256 threads (<= 128
 * registers). A cap of 3 (<= 80) spills at D = 1024 (nvcc 13.0 -Xptxas -v); 16 rows in
 * flight per SM already hold ~96 KB of loads, about twice what the copy rate needs. */
#define LN_MIN_BLOCKS(NC) ((NC) > 0 ? 2 : 1)

/* One row on the fast path: lane l holds columns 4l + 128c of r (and x) in registers, all
 * loads issued before the first store; ww is the row's scale, loaded before the wait. */
template <typename TX, typename TY, int MODE, int CAP>
__device__ __forceinline__ void ln_row_vec(float *rr, const TX *xx, const float4 (&ww)[CAP],
                                           const float *__restrict__ b, TY *y16, float *y32, int m, int D, int nc,
                                           int lane, double inv_d, float eps)
{
    constexpr bool ADD = MODE == LN_RESID || MODE == LN_ADDROW;
    float4 v[CAP], a[CAP];
#pragma unroll
    for (int c = 0; c < CAP; c++)
        if (c < nc) {
            const int d = 4 * lane + 128 * c;
            if (MODE == LN_EMBED) {
                v[c] = ln_load4(xx + d);
            } else {
                v[c] = *reinterpret_cast<const float4 *>(rr + d);
                if (ADD)
                    a[c] = ln_load4(xx + d);
            }
        }
    double sum = 0.0;
#pragma unroll
    for (int c = 0; c < CAP; c++)
        if (c < nc) {
            if (ADD)
                v[c].x += a[c].x, v[c].y += a[c].y, v[c].z += a[c].z, v[c].w += a[c].w;
            if (MODE != LN_PLAIN)
                *reinterpret_cast<float4 *>(rr + 4 * lane + 128 * c) = v[c];
            sum += ((double)v[c].x + (double)v[c].y) + ((double)v[c].z + (double)v[c].w);
        }
    /* The deviation in fp32 against mean = mh + ml (mh the nearest float, ml the rest):
     * r - mh rounds once and ml is below half an ulp of mh, so the deviation is within ~2
     * fp32 ulps of its own size even for rows near 1e4; the row stays in 32 registers and
     * the squares and the scaling below run in fp32 (sums of squares in double per chunk). */
    const double mean = ln_warp_sum(sum) * inv_d;
    const float mh = (float)mean, ml = (float)(mean - (double)mh);
    double ss = 0.0;
#pragma unroll
    for (int c = 0; c < CAP; c++)
        if (c < nc) {
            v[c] = make_float4((v[c].x - mh) - ml, (v[c].y - mh) - ml, (v[c].z - mh) - ml, (v[c].w - mh) - ml);
            ss += (double)((v[c].x * v[c].x + v[c].y * v[c].y) + (v[c].z * v[c].z + v[c].w * v[c].w));
        }
    /* rsqrt, not 1 / sqrt: see layernorm_parts_kernel */
    const float rstd = (float)rsqrt(ln_warp_sum(ss) * inv_d + (double)eps);
#pragma unroll
    for (int c = 0; c < CAP; c++)
        if (c < nc) {
            const int d = 4 * lane + 128 * c;
            float4 o = make_float4(v[c].x * rstd * ww[c].x, v[c].y * rstd * ww[c].y, v[c].z * rstd * ww[c].z,
                                   v[c].w * rstd * ww[c].w);
            if (b) {
                const float4 bb = *reinterpret_cast<const float4 *>(b + d);
                o.x += bb.x, o.y += bb.y, o.z += bb.z, o.w += bb.w;
            }
            if (y16)
                ln_store4(y16 + (size_t)m * D + d, o);
            if (y32)
                *reinterpret_cast<float4 *>(y32 + (size_t)m * D + d) = o;
        }
}

/*
 * NC > 0: the row is exactly NC chunks of 128 columns (compile-time: D = 768 and 1024);
 * NC == 0 with VEC: D / 128 <= LN_MAXC chunks, predicated; !VEC: the scalar path.
 * Fast path order: every load of the row (r, x or the table row) is issued before the
 * first store, then add + store + sum, so a row costs one trip to memory instead of one
 * per chunk (r and x are not __restrict__: y32 may alias r, and without this order the
 * compiler cannot hoist a chunk's loads above the previous chunk's store).
 */
template <typename TX, typename TY, int MODE, bool VEC, int NC>
__global__ void __launch_bounds__(32 * LN_ROWS, LN_MIN_BLOCKS(NC))
layernorm_kernel(float *r, const TX *x, const int32_t *__restrict__ ids,
                 const float *__restrict__ w, const float *__restrict__ b, TY *y16, float *y32,
                 int M, int D, float eps)
{
    constexpr int CAP = VEC ? (NC > 0 ? NC : LN_MAXC) : 1;
    const int nc = NC > 0 ? NC : D / 128, lane = threadIdx.x % 32;
    /* The scale is a weight, written before any forward: its loads are issued
     * before the wait, so they overlap the kernel before instead of adding a
     * round trip after the row's statistics. */
    float4 ww[CAP];
    if (VEC) {
#pragma unroll
        for (int c = 0; c < CAP; c++)
            if (c < nc)
                ww[c] = *reinterpret_cast<const float4 *>(w + 4 * lane + 128 * c);
    }
    kn_pdl_wait(); /* the embedding's ids come from the copy kernel just before: read after this */
    kn_pdl_trigger_small(M);
    const int m = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (m >= M)
        return;
    float *rr = r + (size_t)m * D;
    const TX *xx = MODE == LN_RESID ? x + (size_t)m * D
                   : MODE == LN_EMBED || MODE == LN_ADDROW ? x + (size_t)ids[m] * D : NULL;
    const double inv_d = 1.0 / (double)D;
    if (VEC) {
        ln_row_vec<TX, TY, MODE, CAP>(rr, xx, ww, b, y16, y32, m, D, nc, lane, inv_d, eps);
        return;
    }
    /* the scalar path: three passes over global memory, a column per lane per step, in double */
    constexpr bool ADD = MODE == LN_RESID || MODE == LN_ADDROW;
    double sum = 0.0;
    for (int d = lane; d < D; d += 32) {
        float v = MODE == LN_EMBED ? kn_f(xx[d]) : rr[d];
        if (ADD)
            v += kn_f(xx[d]);
        if (MODE != LN_PLAIN)
            rr[d] = v;
        sum += v;
    }
    const double mean = ln_warp_sum(sum) * inv_d;
    double ss = 0.0;
    for (int d = lane; d < D; d += 32) {
        const double a = rr[d] - mean;
        ss += a * a;
    }
    const double rstd = 1.0 / sqrt(ln_warp_sum(ss) * inv_d + (double)eps);
    for (int d = lane; d < D; d += 32) {
        double od = (rr[d] - mean) * rstd * w[d];
        if (b)
            od += b[d];
        const float o = (float)od;
        if (y16)
            y16[(size_t)m * D + d] = kn_from<TY>(o);
        if (y32)
            y32[(size_t)m * D + d] = o;
    }
}

/* Rows (warps) per block: LN_ROWS, halved while that leaves fewer blocks than
 * the GPU has SMs (132 on the H200). A row costs one memory round trip whichever
 * block runs it, so a small pack's rows spread over as many SMs as there are
 * rows instead of crowding M / 8 of them (96 rows: 96 blocks of one warp, not 12
 * of eight); a row's arithmetic does not change. */
static int ln_rows_per_block(int M, int sms)
{
    int rows = LN_ROWS;
    while (rows > 1 && (M + rows - 1) / rows < sms)
        rows /= 2;
    return rows;
}

template <typename TX, typename TY, int MODE, bool VEC, int NC>
static void ln_go(kn_stream ks, int rows, float *r, const void *x, const int32_t *ids, const float *w,
                  const float *b, void *y16, float *y32, int M, int D, float eps)
{
    const unsigned blocks = (unsigned)((M + rows - 1) / rows);
    /* a launch error is the runtime's last error: the caller's KN_LAUNCHED() reports it */
    (void)kn_launch(layernorm_kernel<TX, TY, MODE, VEC, NC>, dim3(blocks), dim3(32 * rows), 0, ks, r,
                    (const TX *)x, ids, w, b, (TY *)y16, y32, M, D, eps);
}

/* The model's widths (768, 1024) get the compile-time-unrolled fast path, other multiples of
 * 128 the predicated one, anything else the scalar one. */
template <typename TX, int MODE>
static int ln_launch(kn_stream ks, float *r, const void *x, const int32_t *ids, const float *w,
                     const float *b, void *y16, kn_dtype ydt, float *y32, int M, int D, float eps,
                     bool vec)
{
    int sms = 0;
    if (kn_sms(&sms))
        return -1;
    const int rows = ln_rows_per_block(M, sms);
    KN_DISPATCH16(ydt, TY,
        if (vec && D == 1024)
            ln_go<TX, TY, MODE, true, 8>(ks, rows, r, x, ids, w, b, y16, y32, M, D, eps);
        else if (vec && D == 768)
            ln_go<TX, TY, MODE, true, 6>(ks, rows, r, x, ids, w, b, y16, y32, M, D, eps);
        else if (vec)
            ln_go<TX, TY, MODE, true, 0>(ks, rows, r, x, ids, w, b, y16, y32, M, D, eps);
        else
            ln_go<TX, TY, MODE, false, 0>(ks, rows, r, x, ids, w, b, y16, y32, M, D, eps));
    return 0;
}

static bool ln_vec(const void *x, const float *r, const float *w, const float *b, const void *y16,
                   const float *y32, int D)
{
    return D % 128 == 0 && D <= 128 * LN_MAXC && kn_aligned16(x) && kn_aligned16(r) &&
           kn_aligned16(w) && kn_aligned16(b) && kn_aligned16(y16) && kn_aligned16(y32);
}

/* What every warp-per-row entry point checks: the shape, the outputs, r and the scale. */
static int ln_args_ok(int M, int D, const float *r, const float *w, const void *y16, kn_dtype ydt, const float *y32)
{
    KN_REQUIRE(M >= 0 && D > 0, "LayerNorm needs M >= 0, D > 0");
    KN_REQUIRE(!y16 || kn_is16(ydt), "y16 dtype must be fp16 or bf16");
    KN_REQUIRE(y16 || y32, "LayerNorm needs an output");
    KN_REQUIRE(r && w, "NULL LayerNorm r or weight");
    return 0;
}

extern "C" int kn_layernorm(kn_stream ks, float *r, const void *x, kn_dtype xdt, const float *w,
                            const float *b, void *y16, kn_dtype ydt, float *y32, int M, int D, float eps)
{
    if (ln_args_ok(M, D, r, w, y16, ydt, y32))
        return -1;
    KN_REQUIRE(!x || kn_isdt(xdt), "unknown x dtype");
    if (M == 0)
        return 0;
    const kn_dtype yd = y16 ? ydt : KN_F16;
    const bool vec = ln_vec(x, r, w, b, y16, y32, D);
    int rc = 0;
    if (!x)
        rc = ln_launch<float, LN_PLAIN>(ks, r, NULL, NULL, w, b, y16, yd, y32, M, D, eps, vec);
    else
        KN_DISPATCH(xdt, TX, rc = ln_launch<TX, LN_RESID>(ks, r, x, NULL, w, b, y16, yd, y32, M, D, eps, vec));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_embed_layernorm(kn_stream ks, const int32_t *ids, const void *table, kn_dtype tdt,
                                  int V, const float *w, const float *b, float *r, void *y16,
                                  kn_dtype ydt, float *y32, int M, int D, float eps)
{
    if (ln_args_ok(M, D, r, w, y16, ydt, y32))
        return -1;
    KN_REQUIRE(V > 0 && kn_isdt(tdt), "embedding needs V > 0 and a known table dtype");
    KN_REQUIRE(ids && table, "NULL embedding ids or table");
    if (M == 0)
        return 0;
    const kn_dtype yd = y16 ? ydt : KN_F16;
    const bool vec = ln_vec(table, r, w, b, y16, y32, D);
    int rc = 0;
    KN_DISPATCH(tdt, TX, rc = ln_launch<TX, LN_EMBED>(ks, r, table, ids, w, b, y16, yd, y32, M, D, eps, vec));
    if (rc)
        return -1;
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_type_emb_layernorm(kn_stream ks, float *r, const float *type_emb, const int32_t *ttype,
                                     const float *w, const float *b, void *y16, kn_dtype ydt, float *y32, int M,
                                     int D, float eps)
{
    if (ln_args_ok(M, D, r, w, y16, ydt, y32))
        return -1;
    KN_REQUIRE(type_emb && ttype, "NULL type embedding or slot types");
    if (M == 0)
        return 0;
    const kn_dtype yd = y16 ? ydt : KN_F16;
    const bool vec = ln_vec(type_emb, r, w, b, y16, y32, D);
    if (ln_launch<float, LN_ADDROW>(ks, r, type_emb, ttype, w, b, y16, yd, y32, M, D, eps, vec))
        return -1;
    KN_LAUNCHED();
    return 0;
}

/* ---- the residual branch as split-K partial products ------------------------ */

/* v summed over the block's threads (every thread gets it); red holds one double per
 * warp and serves one sum only (no barrier before its writes). */
__device__ __forceinline__ double lnp_block_sum(double v, double *red)
{
    const int nw = (blockDim.x + 31) / 32;
    const double s = ln_warp_sum(v);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = s;
    __syncthreads();
    double t = 0.0;
    for (int i = 0; i < nw; i++) /* the same order in every thread: one value for all */
        t += red[i];
    return t;
}

/*
 * Row m (at off = m D) from its residual v (read by the caller), thread t owning
 * columns d = [4t, 4t + 4): r[m] = v + ((p[0] + p[1]) + ...) + p[S-1] (+ bb), then
 * y16 / y32 = LN(r[m]) w (+ b). The parts' loads are issued together, after v's.
 * The statistics and why they take this form: below, above layernorm_parts_kernel;
 * 1 / D is formed by the caller (before the wait).
 */
template <typename TY, int SMAX>
__device__ __forceinline__ void lnp_row(float4 v, float4 ww, float4 pb, const float *bb, const float *parts, int S,
                                        long stride, float *r, const float *b, TY *y16, float *y32, size_t off,
                                        int d, double inv_d, float eps, double (*red)[32])
{
    float4 p[SMAX];
#pragma unroll
    for (int s = 0; s < SMAX; s++)
        if (s < S)
            p[s] = *reinterpret_cast<const float4 *>(parts + s * stride + off + d);
    float4 a = p[0];
#pragma unroll
    for (int s = 1; s < SMAX; s++)
        if (s < S)
            a.x += p[s].x, a.y += p[s].y, a.z += p[s].z, a.w += p[s].w;
    if (bb)
        a.x += pb.x, a.y += pb.y, a.z += pb.z, a.w += pb.w;
    v.x += a.x, v.y += a.y, v.z += a.z, v.w += a.w;
    *reinterpret_cast<float4 *>(r + off + d) = v;
    const double t = ((double)v.x + (double)v.y) + ((double)v.z + (double)v.w);
    const double mean = lnp_block_sum(t, red[0]) * inv_d;
    const float mh = (float)mean, ml = (float)(mean - (double)mh);
    const float4 u = make_float4((v.x - mh) - ml, (v.y - mh) - ml, (v.z - mh) - ml, (v.w - mh) - ml);
    const double q = (double)((u.x * u.x + u.y * u.y) + (u.z * u.z + u.w * u.w));
    const float rstd = (float)rsqrt(lnp_block_sum(q, red[1]) * inv_d + (double)eps);
    float4 o = make_float4(u.x * rstd * ww.x, u.y * rstd * ww.y, u.z * rstd * ww.z, u.w * rstd * ww.w);
    if (b) {
        const float4 c = *reinterpret_cast<const float4 *>(b + d);
        o.x += c.x, o.y += c.y, o.z += c.z, o.w += c.w;
    }
    if (y16)
        ln_store4(y16 + off + d, o);
    if (y32)
        *reinterpret_cast<float4 *>(y32 + off + d) = o;
}

/* Block m: row m, thread t owning columns [4t, 4t + 4). The partial products
 * were just written by the split GEMM (L2-resident): all S loads and r's are
 * in flight at once, so the row costs one round trip whatever S. The
 * statistics are the fast path's above (double row sum, deviations against mh
 * + ml, squares per 4-column chunk in fp32, chunks summed in double). Their
 * double steps are kept off the row's chain of dependent latencies: 1 / D is
 * formed before the wait and the scale is one rsqrt, instead of the sums
 * divided by D and 1 / sqrt (three divisions and a square root, each a
 * software sequence of dependent double FMAs); with the barrier that preceded
 * the first sum gone too, the kernel went from 3.74 to 2.75 us at 96 rows on
 * the H200. The sum times 1 / D is the division's value for D = 1024 (a power
 * of two), and rsqrt and 1 / sqrt differ only in a double's last bits,
 * rarely visible after the rounding to float: the English parity sweep
 * repeated to the last digit. A one-pass variant (moments about a value of the
 * row, one reduction) was no faster than this and re-drew the forward's fp16
 * rounding past the parity gate (bench/results/experiments/ln-statistics/).
 */
/* With rows, row m's residual is first read from rsrc's row rows[m] (the head's gathered slots:
 * the gather and the LayerNorm after the out-projection in one launch), then written to r.
 * Both are read before the wait, so that load overlaps the GEMM before; the caller guarantees
 * they were written two or more launches back (this launch may run beside its predecessor only,
 * which is itself past its own wait). Read after the wait, the gather was slower than its own
 * launch at 16-83 tokens (bench/results/experiments/gather-ln/; the dependent round trip after
 * the wait is the likely cause, not profiled); read before it, faster (experiments/mcast/). The
 * plain kernel's residual, read before the wait the same way, made the forward 1.2-1.5% slower
 * from 16 to 83 tokens (experiments/wide/, not profiled), so it is read after. */
/* SMAX: the most parts the kernel holds in registers (KN_GEMM_SPLIT_MAX for the split
 * GEMMs' parts; KN_LN_PARTS_MAX for the attention's per-head ones), so the common
 * instantiation keeps its registers. The wide one is bounded at 256 threads (D <= 1024):
 * at 1024 its 64 registers a thread spilled 124 bytes of its 16 parts to local memory. */
template <typename TY, int SMAX>
__global__ void __launch_bounds__(SMAX > KN_GEMM_SPLIT_MAX ? KN_LN_PARTS_MAX_D / 4 : 1024)
layernorm_parts_kernel(float *r, const float *rsrc, const int32_t *__restrict__ rows, const float *parts, int S,
                       long stride, const float *__restrict__ bb, const float *__restrict__ w,
                       const float *__restrict__ b, TY *y16, float *y32, int D, float eps)
{
    __shared__ double red[2][32];
    const int d = 4 * threadIdx.x;
    /* weights: before the wait */
    const float4 ww = *reinterpret_cast<const float4 *>(w + d);
    const float4 pb = bb ? *reinterpret_cast<const float4 *>(bb + d) : make_float4(0, 0, 0, 0);
    const double inv_d = 1.0 / (double)D;
    const size_t off = (size_t)blockIdx.x * D;
    float4 v;
    if (rows)
        v = *reinterpret_cast<const float4 *>(rsrc + (size_t)rows[blockIdx.x] * D + d);
    kn_pdl_wait();
    kn_pdl_trigger_small(gridDim.x); /* a block a row */
    if (!rows)
        v = *reinterpret_cast<const float4 *>(r + off + d);
    lnp_row<TY, SMAX>(v, ww, pb, bb, parts, S, stride, r, b, y16, y32, off, d, inv_d, eps, red);
}

extern "C" int kn_layernorm_parts_ok(const float *r, const float *parts, long part_stride, int S, const float *bb,
                                     const float *w, const float *b, const void *y16, const float *y32, int D)
{
    return D > 0 && D % 128 == 0 && D <= (S > KN_GEMM_SPLIT_MAX ? KN_LN_PARTS_MAX_D : 4096) && S >= 1 &&
           S <= KN_LN_PARTS_MAX && part_stride >= 0 &&
           part_stride % 4 == 0 && kn_aligned16(r) && kn_aligned16(parts) && kn_aligned16(bb) && kn_aligned16(w) &&
           kn_aligned16(b) && kn_aligned16(y16) && kn_aligned16(y32);
}

static int ln_parts(kn_stream ks, float *r, const float *rsrc, const int32_t *rows, const float *parts, int S,
                    long part_stride, const float *bb, const float *w, const float *b, void *y16, kn_dtype ydt,
                    float *y32, int M, int D, float eps)
{
    KN_REQUIRE(M >= 0, "LayerNorm needs M >= 0");
    KN_REQUIRE(!y16 || kn_is16(ydt), "y16 dtype must be fp16 or bf16");
    KN_REQUIRE(y16 || y32, "LayerNorm needs an output");
    KN_REQUIRE(r && w && parts, "NULL LayerNorm r, weight or parts");
    KN_REQUIRE(kn_layernorm_parts_ok(r, parts, part_stride, S, bb, w, b, y16, y32, D),
               "LayerNorm over parts needs D % 128 == 0, D <= 4096 (1024 above 8 parts), 1 <= S <= 16 and aligned buffers");
    KN_REQUIRE(M == 0 || (size_t)M * D <= (size_t)part_stride || S == 1, "LayerNorm parts overlap");
    KN_REQUIRE(M <= 0x7fffffff, "LayerNorm grid too large");
    if (M == 0)
        return 0;
    KN_DISPATCH16(y16 ? ydt : KN_F16, TY,
                  (void)kn_launch(S <= KN_GEMM_SPLIT_MAX ? layernorm_parts_kernel<TY, KN_GEMM_SPLIT_MAX>
                                                         : layernorm_parts_kernel<TY, KN_LN_PARTS_MAX>,
                                  dim3((unsigned)M), dim3((unsigned)D / 4), 0, ks, r, rsrc, rows, parts, S,
                                  part_stride, bb, w, b, (TY *)y16, y32, D, eps));
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_layernorm_parts(kn_stream ks, float *r, const float *parts, int S, long part_stride,
                                  const float *bb, const float *w, const float *b, void *y16, kn_dtype ydt, float *y32,
                                  int M, int D, float eps)
{
    return ln_parts(ks, r, NULL, NULL, parts, S, part_stride, bb, w, b, y16, ydt, y32, M, D, eps);
}

extern "C" int kn_layernorm_parts_gather(kn_stream ks, float *r, const float *rsrc, const int32_t *rows,
                                         const float *parts, int S, long part_stride, const float *bb, const float *w,
                                         const float *b, void *y16, kn_dtype ydt, float *y32, int M, int D, float eps)
{
    KN_REQUIRE(rsrc && rows && kn_aligned16(rsrc), "gathered LayerNorm needs rsrc (16-byte aligned) and rows");
    KN_REQUIRE(rsrc != r, "gathered LayerNorm: rsrc may not be r (other blocks' rows are read from it)");
    return ln_parts(ks, r, rsrc, rows, parts, S, part_stride, bb, w, b, y16, ydt, y32, M, D, eps);
}
