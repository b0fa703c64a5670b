/*
 * gemm_ws.cu - the weight-streaming GEMM for few rows: Y = epi(X[M,K] . W[N,K]^T)
 * for M <= KN_WS_MAX_M, with RoPE or GeGLU fused into the epilogue.
 *
 * At a few dozen tokens a Laya GEMM is a read of its weights: 83 x 1024 x 3072
 * is 0.5 GFLOP against 6 MB of W. What limits it is how many bytes of W are in
 * flight, and how many SMs stream them (docs: small-batch-and-packing.md). So:
 *
 *   - swap A and B: W's rows are the MMA's M side (mma.sync m16n8k16, 16 output
 *     features per A fragment), the tokens its N side (8 per B fragment);
 *   - W is packed once at load (kn_ws_pack) into fragment order: one 16 x 16
 *     tile of W is 512 contiguous bytes, lane l's 16 bytes being exactly its A
 *     registers, so a warp reads W with one coalesced 16-byte load per lane per
 *     tile, straight into registers, never through shared memory (the skinny
 *     kernel rejected before went through shared memory and ldmatrix, and was
 *     latency-bound: bench/results/experiments/README.md);
 *   - each warp owns 16 features (one A tile) and keeps DEPTH k-steps of its W
 *     in flight; the first DEPTH are requested before the programmatic-launch
 *     wait, so they stream while the previous kernel finishes (W is constant);
 *   - X (small, reused by every warp) is staged in shared memory with cp.async
 *     and read as B fragments through ldmatrix;
 *   - K is split over a thread-block cluster of S CTAs; each CTA's partial tile
 *     goes to its shared memory, and after a cluster barrier each CTA reduces a
 *     slice of the tile over the S partials in rank order (distributed shared
 *     memory), so the sum order is fixed: run to run, and graph to eager, the
 *     result is bit-identical.
 *
 * Epilogues (fp32 in, one rounding to Y's dtype):
 *   KN_WS_PLAIN  Y[m, n] = epi(acc + bias[n])      (bias 16-bit, may be NULL)
 *   KN_WS_ROPE   N = 3D (Q | K | V); RoPE (rotate-half, as kernels/rope.cu, with
 *                the fp32 accumulators in place of the rounded products) on Q
 *                and K, V as is. Packing puts the two halves of a rotation
 *                pair (j, j + 32) in rows g and g + 8 of one tile;
 *   KN_WS_GEGLU  N = 2F; Y[m, f] = gelu_erf(acc[f]) * acc[F + f], Y is [M, F].
 *                Packing puts input feature f and its gate in rows g, g + 8.
 * The CPU twin is the composition the GPU replaces: kn_cpu_gemm, then
 * kn_cpu_rope or kn_cpu_geglu, in fp32 (tests/gpu_kernels.c compares them).
 */
#include <cooperative_groups.h>

#include "kernels/mma.cuh"

namespace cg = cooperative_groups;

#define WS_WARP_ROWS 16 /* W rows (output features) per warp: one m16 tile */

struct ws_params {
    const void *X, *Wp, *bias;
    void *Y;
    const int32_t *pos;
    const float *cos_tab, *sin_tab;
    int M, N, K, layout, epi, y32, xs_stride;
};

/* Original row of W at packed row n (the packing and the epilogue agree on it). */
__host__ __device__ static inline int ws_orig_row(int layout, int n, int N)
{
    const int tile = n / 16, i = n % 16;
    if (layout == KN_WS_ROPE && n < 2 * (N / 3)) {
        const int per_head = KN_HEAD_DIM / 16, head = tile / per_head;
        const int j = (tile % per_head) * 8 + (i & 7);
        return head * KN_HEAD_DIM + j + (i >= 8 ? KN_ROPE_HALF : 0);
    }
    if (layout == KN_WS_GEGLU)
        return tile * 8 + (i & 7) + (i >= 8 ? N / 2 : 0);
    return n;
}

/* Wp[((tile * KT + kt) * 32 + lane) * 8 + j] = W[row(tile, lane, j), kt * 16 + col(lane, j)]:
 * the m16n8k16 A fragment order (a0 a1: row g, k 2t..; a2 a3: row g + 8; a4 a5:
 * row g, k 2t + 8..; a6 a7: row g + 8, k 2t + 8..). */
template <typename T>
__global__ void ws_pack_kernel(const T *__restrict__ W, T *__restrict__ Wp, int N, int K, int layout)
{
    const int KT = K / 16;
    const size_t n_el = (size_t)N * K;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n_el; e += (size_t)gridDim.x * blockDim.x) {
        const int j = (int)(e % 8), lane = (int)(e / 8 % 32);
        const size_t tk = e / 256;
        const int kt = (int)(tk % KT), tile = (int)(tk / KT);
        const int g = lane / 4, t = lane % 4, reg = j / 2;
        const int r = g + (reg & 1) * 8, c = 2 * t + (j & 1) + (reg >> 1) * 8;
        Wp[e] = W[(size_t)ws_orig_row(layout, tile * 16 + r, N) * K + kt * 16 + c];
    }
}

__device__ __forceinline__ uint4 ws_ld_stream(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ float ws_act(float v, int epi)
{
    if (epi == KN_EPI_GELU)
        return kn_gelu_erf(v);
    if (epi == KN_EPI_RELU)
        return v > 0.0f ? v : 0.0f;
    return v;
}

template <typename T> __device__ __forceinline__ void ws_store4(void *Y, size_t at, const float v[4], int y32)
{
    if (y32) {
        *reinterpret_cast<float4 *>(static_cast<float *>(Y) + at) = make_float4(v[0], v[1], v[2], v[3]);
        return;
    }
    typedef typename kn_pair<T>::type P;
    uint2 u;
    P *h = reinterpret_cast<P *>(&u);
    h[0] = kn_pack<T>(v[0], v[1]);
    h[1] = kn_pack<T>(v[2], v[3]);
    *reinterpret_cast<uint2 *>(static_cast<T *>(Y) + at) = u;
}

/* Output of rows (a, a + 8) of packed tile `tile`, 4 consecutive features from
 * i0, token m: va, vb are the reduced accumulators of the two rows. */
template <typename T>
__device__ void ws_epilogue(const ws_params &p, int tile, int i0, int m, float va[4], float vb[4])
{
    const int n = tile * 16 + i0;
    if (p.layout == KN_WS_GEGLU) {
        float g[4];
#pragma unroll
        for (int q = 0; q < 4; q++)
            g[q] = kn_gelu_erf(va[q]) * vb[q];
        ws_store4<T>(p.Y, (size_t)m * (p.N / 2) + tile * 8 + i0, g, 0);
        return;
    }
    if (p.layout == KN_WS_ROPE && n < 2 * (p.N / 3)) {
        const int ra = ws_orig_row(KN_WS_ROPE, n, p.N), j = ra % KN_HEAD_DIM;
        const float4 c = *reinterpret_cast<const float4 *>(p.cos_tab + (size_t)p.pos[m] * KN_ROPE_HALF + j);
        const float4 s = *reinterpret_cast<const float4 *>(p.sin_tab + (size_t)p.pos[m] * KN_ROPE_HALF + j);
        const float cc[4] = {c.x, c.y, c.z, c.w}, ss[4] = {s.x, s.y, s.z, s.w};
        float o1[4], o2[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            o1[q] = __fsub_rn(__fmul_rn(va[q], cc[q]), __fmul_rn(vb[q], ss[q]));
            o2[q] = __fadd_rn(__fmul_rn(vb[q], cc[q]), __fmul_rn(va[q], ss[q]));
        }
        ws_store4<T>(p.Y, (size_t)m * p.N + ra, o1, 0);
        ws_store4<T>(p.Y, (size_t)m * p.N + ra + KN_ROPE_HALF, o2, 0);
        return;
    }
    if (p.bias) {
        const T *b = static_cast<const T *>(p.bias);
#pragma unroll
        for (int q = 0; q < 4; q++) {
            va[q] += kn_f(b[n + q]);
            vb[q] += kn_f(b[n + 8 + q]);
        }
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
        va[q] = ws_act(va[q], p.epi);
        vb[q] = ws_act(vb[q], p.epi);
    }
    ws_store4<T>(p.Y, (size_t)m * p.N + n, va, p.y32);
    ws_store4<T>(p.Y, (size_t)m * p.N + n + 8, vb, p.y32);
}

/* Stages X[0..Mp) x [k0, k0 + 16 * steps) into xs (rows past M zero-filled). */
template <typename T, int MP, int WARPS>
__device__ __forceinline__ void ws_stage_x(const ws_params &p, T *xs, int k0, int steps)
{
    const int chunks = steps * 2, warp = threadIdx.x / 32, lane = threadIdx.x % 32; /* 16-byte chunks per row */
    const T *X = static_cast<const T *>(p.X);
    for (int m = warp; m < MP; m += WARPS) {
        const bool ok = m < p.M;
        const T *src = X + (size_t)(ok ? m : 0) * p.K + k0;
        for (int c = lane; c < chunks; c += 32)
            cp_async16(xs + m * p.xs_stride + c * 8, src + c * 8, ok);
    }
    cp_async_commit();
}

/* mma16816 without `volatile`: a pure register operation the compiler may
 * schedule (mma.cuh's volatile one pins every mma after the ldmatrix before it). */
template <typename T> __device__ __forceinline__ void ws_mma(float c[4], const uint32_t a[4], const uint32_t *b);
template <> __device__ __forceinline__ void ws_mma<__half>(float c[4], const uint32_t a[4], const uint32_t *b)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __device__ __forceinline__ void ws_mma<__nv_bfloat16>(float c[4], const uint32_t a[4], const uint32_t *b)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* One k-step of a warp: its A tile (a0) against the MP tokens of xs at
 * column k. Every B fragment of the step is loaded first (two n8 tiles per
 * ldmatrix.x4), then the mmas run: one shared-memory latency per step, not one
 * per pair of tiles. */
template <typename T, int NT>
__device__ __forceinline__ void ws_step(float (&acc)[NT][4], const uint4 &a0, const T *xs, int stride, int k,
                                        int lane)
{
    const uint32_t A0[4] = {a0.x, a0.y, a0.z, a0.w};
    const T *row = xs + ((lane & 7) + ((lane >> 4) << 3)) * stride + k + ((lane >> 3) & 1) * 8;
    uint32_t b[NT / 2][4];
#pragma unroll
    for (int j = 0; j < NT / 2; j++)
        ldmatrix_x4(b[j], row + 16 * j * stride);
#pragma unroll
    for (int j = 0; j < NT / 2; j++) {
        ws_mma<T>(acc[2 * j], A0, b[j]);
        ws_mma<T>(acc[2 * j + 1], A0, b[j] + 2);
    }
}

/* Grid (N / (32 WARPS), S), cluster (1, S): CTA (x, rank) computes rows
 * [32 WARPS x, +32 WARPS) over k-steps [rank KT / S, (rank + 1) KT / S). */
template <typename T, int NT, int WARPS, int DEPTH>
__global__ void __launch_bounds__(WARPS * 32) ws_kernel(ws_params p)
{
    extern __shared__ __align__(16) unsigned char ws_smem[];
    constexpr int MP = NT * 8, CROWS = WARPS * WS_WARP_ROWS, PSTRIDE = CROWS + 4;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int S = gridDim.y, rank = blockIdx.y, KT = p.K / 16;
    const int kt0 = (int)((long)rank * KT / S), steps = (int)((long)(rank + 1) * KT / S) - kt0;
    const int tile0 = (blockIdx.x * CROWS + warp * WS_WARP_ROWS) / 16;
    const uint4 *w0 = static_cast<const uint4 *>(p.Wp) + ((size_t)tile0 * KT + kt0) * 32 + lane;

    uint4 wb[DEPTH];
#pragma unroll
    for (int d = 0; d < DEPTH; d++)
        if (d < steps)
            wb[d] = ws_ld_stream(w0 + d * 32);
    kn_pdl_wait();
    T *xs = reinterpret_cast<T *>(ws_smem);
    ws_stage_x<T, MP, WARPS>(p, xs, kt0 * 16, steps);

    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int q = 0; q < 4; q++)
            acc[j][q] = 0.0f;
    cp_async_wait<0>();
    __syncthreads();

    for (int s0 = 0; s0 < steps; s0 += DEPTH) {
#pragma unroll
        for (int d = 0; d < DEPTH; d++) {
            const int s = s0 + d;
            if (s < steps) {
                const uint4 a0 = wb[d];
                if (s + DEPTH < steps)
                    wb[d] = ws_ld_stream(w0 + (s + DEPTH) * 32);
                ws_step<T, NT>(acc, a0, xs, p.xs_stride, s * 16, lane);
            }
        }
    }
    __syncthreads(); /* xs is dead: the partial tile reuses the space */

    /* partial[m][r]: token-major, so the reduction reads 4 features in one float4 */
    float *part = reinterpret_cast<float *>(ws_smem);
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int r = warp * WS_WARP_ROWS + g, m = j * 8 + 2 * t;
        part[m * PSTRIDE + r] = acc[j][0];
        part[(m + 1) * PSTRIDE + r] = acc[j][1];
        part[m * PSTRIDE + r + 8] = acc[j][2];
        part[(m + 1) * PSTRIDE + r + 8] = acc[j][3];
    }
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();

    /* This rank's slice of (token, 4-feature quad) items, summed over ranks 0..S-1. */
    const int quads = CROWS / 8, items = MP * quads;
    const int lo = (int)((long)rank * items / S), hi = (int)((long)(rank + 1) * items / S);
    for (int e = lo + threadIdx.x; e < hi; e += blockDim.x) {
        const int m = e / quads, q = e % quads;
        if (m >= p.M)
            continue;
        const int tl = q / 2, i0 = (q % 2) * 4, ra = m * PSTRIDE + tl * 16 + i0;
        /* all ranks' loads issued before the adds (distributed shared memory is far) */
        float4 x[8], y[8];
#pragma unroll
        for (int src = 0; src < 8; src++)
            if (src < S) {
                const float *rp = cluster.map_shared_rank(part, src);
                x[src] = *reinterpret_cast<const float4 *>(rp + ra);
                y[src] = *reinterpret_cast<const float4 *>(rp + ra + 8);
            }
        float va[4] = {0, 0, 0, 0}, vb[4] = {0, 0, 0, 0};
#pragma unroll
        for (int src = 0; src < 8; src++)
            if (src < S) {
                va[0] += x[src].x, va[1] += x[src].y, va[2] += x[src].z, va[3] += x[src].w;
                vb[0] += y[src].x, vb[1] += y[src].y, vb[2] += y[src].z, vb[3] += y[src].w;
            }
        ws_epilogue<T>(p, blockIdx.x * (CROWS / 16) + tl, i0, m, va, vb);
    }
    cluster.sync(); /* no CTA leaves while another still reads its partial */
}

/* ---- host side ------------------------------------------------------------- */

static int ws_warps(int N) { return N % (8 * WS_WARP_ROWS) == 0 ? 8 : N % (4 * WS_WARP_ROWS) == 0 ? 4 : 2; }

static size_t ws_smem_bytes(int NT, int warps, int K, int S, int *xs_stride)
{
    const int KT = K / 16, max_steps = (KT + S - 1) / S;
    *xs_stride = max_steps * 16 + 8; /* +16 bytes: ldmatrix rows fall in distinct banks */
    const size_t xs = (size_t)NT * 8 * *xs_stride * 2;
    const size_t part = (size_t)NT * 8 * (warps * WS_WARP_ROWS + 4) * sizeof(float);
    return xs > part ? xs : part;
}

/* The split when the caller leaves it to us: the cluster size (<= 8) that
 * brings the grid nearest above two CTAs per SM, at least two k-steps each. */
static int ws_auto_split(int N, int K, int warps)
{
    static int sms;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = 132;
    }
    const int blocks = N / (warps * WS_WARP_ROWS), KT = K / 16;
    int best = 1;
    double best_eff = 0;
    for (int S = 1; S <= 8 && 2 * S <= KT; S++) {
        const int ctas = blocks * S, slots = 2 * sms, waves = (ctas + slots - 1) / slots;
        const double eff = (double)ctas / ((double)waves * slots);
        if (eff > best_eff + 1e-9) {
            best_eff = eff;
            best = S;
        }
    }
    return best;
}

template <typename T, int NT, int WARPS, int DEPTH>
static int ws_launch(kn_stream ks, const ws_params &p, int S, size_t smem)
{
    auto kern = ws_kernel<T, NT, WARPS, DEPTH>;
    KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(p.N / (WARPS * WS_WARP_ROWS), S, 1);
    cfg.blockDim = dim3(WARPS * 32, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = ks.s;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 1;
    at[0].val.clusterDim.y = S;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = ks.s && ks.pdl ? 2 : 1;
    KN_CUDA(cudaLaunchKernelEx(&cfg, kern, p));
    return 0;
}

template <typename T, int WARPS, int DEPTH>
static int ws_dispatch_nt(kn_stream ks, const ws_params &p, int S, size_t smem, int NT)
{
    if (NT == 8)
        return ws_launch<T, 8, WARPS, DEPTH>(ks, p, S, smem);
    return ws_launch<T, 16, WARPS, DEPTH>(ks, p, S, smem);
}

template <typename T>
static int ws_dispatch(kn_stream ks, const ws_params &p, int S, size_t smem, int NT, int warps, int depth)
{
    if (warps == 8)
        return depth == 8 ? ws_dispatch_nt<T, 8, 8>(ks, p, S, smem, NT) : ws_dispatch_nt<T, 8, 4>(ks, p, S, smem, NT);
    if (warps == 4)
        return depth == 8 ? ws_dispatch_nt<T, 4, 8>(ks, p, S, smem, NT) : ws_dispatch_nt<T, 4, 4>(ks, p, S, smem, NT);
    return depth == 8 ? ws_dispatch_nt<T, 2, 8>(ks, p, S, smem, NT) : ws_dispatch_nt<T, 2, 4>(ks, p, S, smem, NT);
}

extern "C" size_t kn_ws_packed_bytes(int N, int K) { return (size_t)N * K * 2; }

extern "C" int kn_ws_shape_ok(int M, int N, int K, int layout)
{
    if (M < 1 || M > KN_WS_MAX_M || N < WS_WARP_ROWS || N % WS_WARP_ROWS || K < 16 || K % 16)
        return 0;
    if (layout == KN_WS_ROPE)
        return N % 3 == 0 && (N / 3) % KN_HEAD_DIM == 0;
    if (layout == KN_WS_GEGLU)
        return (N / 2) % 8 == 0 && (N / 2) % 4 == 0;
    return layout == KN_WS_PLAIN;
}

extern "C" int kn_ws_pack(kn_stream ks, kn_dtype dt, const void *W, void *Wp, int N, int K, int layout)
{
    KN_REQUIRE(kn_is16(dt), "kn_ws_pack: 16-bit weights only");
    KN_REQUIRE(kn_ws_shape_ok(1, N, K, layout), "kn_ws_pack: N, K or layout not supported");
    KN_REQUIRE(W && Wp && W != Wp, "kn_ws_pack: NULL or aliased weights");
    const unsigned blocks = kn_blocks((size_t)N * K, 256, 8192);
    KN_DISPATCH16(dt, T, ws_pack_kernel<T><<<blocks, 256, 0, ks.s>>>(static_cast<const T *>(W), static_cast<T *>(Wp), N, K, layout));
    KN_LAUNCHED();
    return 0;
}

extern "C" int kn_gemm_ws(kn_stream ks, kn_dtype dt, const void *X, const void *Wp, void *Y, kn_dtype ydt,
                          int M, int N, int K, const kn_ws_epi *e, const kn_ws_cfg *cfg)
{
    KN_REQUIRE(kn_is16(dt) && e, "kn_gemm_ws: 16-bit X and W, an epilogue");
    KN_REQUIRE(kn_ws_shape_ok(M, N, K, e->layout), "kn_gemm_ws: shape not supported (M <= 128, N % 32, K % 16)");
    KN_REQUIRE(ydt == dt || (ydt == KN_F32 && e->layout == KN_WS_PLAIN), "kn_gemm_ws: Y in X's dtype (fp32 plain only)");
    KN_REQUIRE(X && Wp && Y && kn_aligned16(X) && kn_aligned16(Wp) && kn_aligned16(Y), "kn_gemm_ws: NULL or unaligned");
    KN_REQUIRE(e->layout != KN_WS_ROPE || (e->pos && e->cos_tab && e->sin_tab), "kn_gemm_ws: RoPE without tables");
    KN_REQUIRE(!e->bias || e->layout == KN_WS_PLAIN, "kn_gemm_ws: bias on the plain layout only");
    int warps = cfg && cfg->warps ? cfg->warps : ws_warps(N);
    KN_REQUIRE((warps == 2 || warps == 4 || warps == 8) && N % (warps * WS_WARP_ROWS) == 0, "kn_gemm_ws: warps");
    const int S = cfg && cfg->split ? cfg->split : ws_auto_split(N, K, warps);
    const int depth = cfg && cfg->depth ? cfg->depth : 8;
    KN_REQUIRE(S >= 1 && S <= 8 && S <= K / 16 && (depth == 4 || depth == 8), "kn_gemm_ws: split 1..8, depth 4 or 8");
    ws_params p = {X, Wp, e->bias, Y, e->pos, e->cos_tab, e->sin_tab, M, N, K, e->layout, e->epi, ydt == KN_F32, 0};
    const int NT = M <= 64 ? 8 : 16;
    const size_t smem = ws_smem_bytes(NT, warps, K, S, &p.xs_stride);
    KN_REQUIRE(smem <= 227 * 1024, "kn_gemm_ws: K slice too large for shared memory (raise the split)");
    int rc;
    KN_DISPATCH16(dt, T, rc = ws_dispatch<T>(ks, p, S, smem, NT, warps, depth));
    if (rc)
        return rc;
    KN_LAUNCHED();
    return 0;
}
