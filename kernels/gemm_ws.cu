/*
 * gemm_ws.cu - the weight-streaming GEMM for few rows: Y = X[M,K] . W[N,K]^T
 * for M <= KN_WS_MAX_M, with RoPE or GeGLU fused into the epilogue (Hopper).
 *
 * At a few dozen tokens a Laya GEMM is a read of its weights: 83 x 1024 x 3072
 * is 0.5 GFLOP against 6 MB of W. What bounds it is how many bytes of W are in
 * flight and how many SMs stream them (docs: small-batch-and-packing.md). Two
 * earlier designs lost to cuBLASLt (bench/results/experiments/README.md): a
 * cp.async ring read through ldmatrix by every warp, and W streamed straight
 * into mma.sync registers; both kept too few bytes in flight per SM. So:
 *
 *   - swap A and B: W's rows are the wgmma's M side (64 output features per
 *     consumer warpgroup), the tokens its N side (64 per instruction), so M
 *     tokens cost one pass over W whatever M is;
 *   - W is packed once at load (kn_ws_pack) so that each 64-row x 64-k block
 *     is 8 KB, contiguous, already in the core-matrix order wgmma reads: one
 *     bulk copy (the TMA engine, no thread involved) moves it into the ring;
 *   - a producer thread keeps a ring of up to 8 stages in flight (each stage
 *     one 8 KB block per warpgroup plus X's 64-wide k slice by a TMA tensor
 *     load, both completing one mbarrier); its first stages' W is requested
 *     before the programmatic-launch wait, so W streams while the previous
 *     kernel ends. (X by cp.async from one warp was the first version: its
 *     scattered 16-byte loads took ~1.5 us per stage, 6 GB/s per SM.)
 *   - K is split over a thread-block cluster of S CTAs (S and the tile chosen
 *     from N and K only, so every SM streams: ~120-128 CTAs at Laya shapes).
 *     Each CTA leaves its fp32 partial tile in shared memory; after a cluster
 *     barrier each CTA reduces a slice of tokens over the S partials in rank
 *     order (distributed shared memory) and runs the epilogue on it. The sum
 *     order depends on N and K only: run to run, graph or eager, and for any
 *     M, a row's result is bit-identical.
 *
 * Epilogues (fp32 sums in, one rounding to Y's dtype):
 *   KN_WS_PLAIN  Y[m, n] = sum, or with KN_EPI_ACC Y[m, n] += sum (Y fp32);
 *   KN_WS_ROPE   N = 3D (Q | K | V); RoPE (rotate-half, kernels/rope.cu's
 *                formula on the fp32 sums in place of the rounded products)
 *                on Q and K, V as is;
 *   KN_WS_GEGLU  N = 2F; Y[m, f] = gelu_erf(sum[f]) * sum[F + f], Y [M, F].
 *                Packing interleaves the halves in 64-row groups, so a tile of
 *                two groups holds an input feature's sum and its gate's.
 * The CPU twin is the composition the GPU replaces: kn_cpu_gemm, then
 * kn_cpu_rope or kn_cpu_geglu, in fp32 (tests/gpu_kernels.c compares them).
 */
#include <cooperative_groups.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "kernels/hopper.cuh"

namespace cg = cooperative_groups;

#define WS_KB 64                        /* k per ring stage */
#define WS_ROWS 64                      /* output features per consumer warpgroup */
#define WS_WBYTES (WS_ROWS * WS_KB * 2) /* one warpgroup's W per stage */
#define WS_MAX_STAGES 8
#define WS_MAX_SPLIT 8  /* CTAs per cluster (the portable limit) */
#define WS_BARS 256   /* bytes ahead of the ring: full[8], empty[8] */
#define WS_ALIGN 1024 /* the ring's alignment (TMA's 128-byte swizzle) */
#define WS_SMEM_MAX (227 * 1024)
#define WS_RING_BUDGET (200 * 1024)

struct ws_params {
    const void *X, *Wp;
    void *Y;
    const int32_t *pos;
    const float *cos_tab, *sin_tab;
    int M, N, K, layout, epi, y32, stages;
};

/* A CTA of WGS consumer warpgroups and one producer warp over NT token slots:
 * a ring stage is WGS W blocks then X's slice as [token NT][64 k, 128-byte
 * swizzle] (what the tensor map's TMA load writes);
 * after the main loop the ring holds the fp32 partial tile [NT][BN + 4]. */
template <int NT, int WGS> struct ws_geom {
    static constexpr int BN = WS_ROWS * WGS;
    static constexpr int STAGE = WGS * WS_WBYTES + NT * WS_KB * 2;
    static constexpr int PSTRIDE = BN + 4; /* + 4: the partial's stores hit 32 banks */
    static constexpr int PBYTES = NT * PSTRIDE * 4;
    static constexpr int THREADS = 128 * WGS + 32;
};

template <typename T> static constexpr bool ws_is_bf16 = false;
template <> constexpr bool ws_is_bf16<__nv_bfloat16> = true;

/* Original row of W behind row r of packed 64-row group g. */
__host__ __device__ static inline int ws_orig_row(int layout, int g, int r, int N)
{
    if (layout == KN_WS_GEGLU) /* group 2j: input rows 64j.., group 2j + 1: their gates */
        return (g & 1) * (N / 2) + (g >> 1) * WS_ROWS + r;
    return g * WS_ROWS + r;
}

/* Wp [group N/64][k-block K/64][k-chunk 8][row 64][8 elements]. */
template <typename T>
__global__ void ws_pack_kernel(const T *__restrict__ W, T *__restrict__ Wp, int N, int K, int layout)
{
    const size_t total = (size_t)N * K;
    const int KB = K / WS_KB;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
        const int i = (int)(e % 8), r = (int)(e / 8 % WS_ROWS), c = (int)(e / (8 * WS_ROWS) % 8);
        const size_t blk = e / (8 * WS_ROWS * 8);
        const int kb = (int)(blk % KB), g = (int)(blk / KB);
        Wp[e] = W[(size_t)ws_orig_row(layout, g, r, N) * K + kb * WS_KB + c * 8 + i];
    }
}

#if KN_HOPPER

/* The producer (one thread): k-block i of this CTA's nkb into ring slot
 * i % ST: W by bulk copies, X by the tensor map; one barrier completes both. */
template <typename T, int NT, int WGS>
__device__ void ws_produce(const ws_params &p, const CUtensorMap *xmap, unsigned char *ring, uint64_t *full,
                           uint64_t *empty, int tile, int kb0, int nkb)
{
    using G = ws_geom<NT, WGS>;
    const int ST = p.stages, KB = p.K / WS_KB;
    const T *Wp = static_cast<const T *>(p.Wp);
    auto load_w = [&](int i, int s) {
        kn_mbar_arrive_tx(&full[s], WGS * WS_WBYTES + NT * WS_KB * 2);
        for (int g = 0; g < WGS; g++)
            kn_bulk_load(ring + s * G::STAGE + g * WS_WBYTES,
                         Wp + ((size_t)(tile * WGS + g) * KB + kb0 + i) * (WS_ROWS * WS_KB), WS_WBYTES, &full[s]);
    };
    auto load_x = [&](int i, int s) {
        kn_tma_load_2d(ring + s * G::STAGE + WGS * WS_WBYTES, xmap, (kb0 + i) * WS_KB, 0, &full[s]);
    };
    const int pre = nkb < ST ? nkb : ST;
    for (int i = 0; i < pre; i++) /* W does not depend on the previous kernel: request it first */
        load_w(i, i);
    kn_pdl_wait();
    for (int i = 0; i < pre; i++)
        load_x(i, i);
    uint32_t phase = 0;
    for (int i = pre, s = 0; i < nkb; i++) {
        kn_mbar_wait(&empty[s], phase);
        load_w(i, s);
        load_x(i, s);
        if (++s == ST)
            s = 0, phase ^= 1;
    }
}

/* A consumer warpgroup: acc[c] = its 64 rows x tokens [64 c, 64 c + 64). */
template <typename T, int NT, int WGS>
__device__ void ws_consume(const ws_params &p, unsigned char *ring, uint64_t *full, uint64_t *empty, int nkb,
                           float (&acc)[NT / 64][32])
{
    using G = ws_geom<NT, WGS>;
    const int wg = threadIdx.x / 128, ST = p.stages;
    const bool leader = threadIdx.x % 128 == 0;
    uint32_t phase = 0;
    for (int i = 0, s = 0, prev = 0; i < nkb; i++) {
        kn_mbar_wait(&full[s], phase);
        const unsigned char *w = ring + s * G::STAGE + wg * WS_WBYTES;
        const unsigned char *x = ring + s * G::STAGE + WGS * WS_WBYTES;
        kn_wg_fence();
#pragma unroll
        for (int k = 0; k < WS_KB / 16; k++) {
            const uint64_t da = kn_wg_desc(w + k * 2 * WS_ROWS * 16, WS_ROWS * 16, 128);
#pragma unroll
            for (int c = 0; c < NT / 64; c++)
                kn_wg_mma64<T>(acc[c], da, kn_wg_desc_sw128(x + c * 64 * 128 + k * 32));
        }
        kn_wg_commit();
        if (ST == 1) { /* one slot: it is refilled only once its MMAs are done */
            kn_wg_wait<0>();
            if (leader)
                kn_mbar_arrive(&empty[s]);
        } else {
            kn_wg_wait<1>(); /* stage i - 1's MMAs are done: its slot may be refilled */
            if (leader && i > 0)
                kn_mbar_arrive(&empty[prev]);
        }
        prev = s;
        if (++s == ST)
            s = 0, phase ^= 1;
    }
    kn_wg_wait<0>();
}

/* The warpgroup's accumulators into the partial tile P[token][feature]. */
template <int NT, int WGS> __device__ void ws_store_partial(float *P, const float (&acc)[NT / 64][32])
{
    using G = ws_geom<NT, WGS>;
    const int t = threadIdx.x % 128, lane = t % 32;
    const int row = (threadIdx.x / 128) * WS_ROWS + (t / 32) * 16 + lane / 4;
#pragma unroll
    for (int c = 0; c < NT / 64; c++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int col = c * 64 + 8 * j + 2 * (lane % 4);
            P[col * G::PSTRIDE + row] = acc[c][4 * j];
            P[(col + 1) * G::PSTRIDE + row] = acc[c][4 * j + 1];
            P[col * G::PSTRIDE + row + 8] = acc[c][4 * j + 2];
            P[(col + 1) * G::PSTRIDE + row + 8] = acc[c][4 * j + 3];
        }
}

template <typename T> __device__ __forceinline__ void ws_store4(void *Y, size_t at, const float v[4], int y32)
{
    if (y32) {
        *reinterpret_cast<float4 *>(static_cast<float *>(Y) + at) = make_float4(v[0], v[1], v[2], v[3]);
        return;
    }
    typedef typename kn_pair<T>::type P2;
    uint2 u;
    P2 *h = reinterpret_cast<P2 *>(&u);
    h[0] = kn_pack<T>(v[0], v[1]);
    h[1] = kn_pack<T>(v[2], v[3]);
    *reinterpret_cast<uint2 *>(static_cast<T *>(Y) + at) = u;
}

/* One reduction item: token t, 4 features from f and, for RoPE and GeGLU, their
 * partners at f + partner (f + 32 in the head; the gates at f + 64). */
struct ws_item {
    int t, f, partner, ok;
};

template <int WGS> __device__ __forceinline__ ws_item ws_item_at(const ws_params &p, int e, int per_tok, int t0, int n)
{
    ws_item it = {t0 + e / per_tok, 4 * (e % per_tok), 0, e < n};
    const int q = e % per_tok;
    if (p.layout == KN_WS_ROPE)
        it.f = 64 * (q / 8) + 4 * (q % 8), it.partner = KN_ROPE_HALF;
    else if (p.layout == KN_WS_GEGLU)
        it.f = 128 * (q / 16) + 4 * (q % 16), it.partner = WS_ROWS;
    return it;
}

/* What the epilogue of an item reads from global memory, fetched with the
 * partials: RoPE's cos / sin at the token's position (Q and K only), or the
 * accumulated Y. */
template <int WGS> __device__ __forceinline__ void ws_aux(const ws_params &p, int tile, const ws_item &it, float4 aux[2])
{
    const int n = tile * WS_ROWS * WGS + it.f;
    if (p.layout == KN_WS_ROPE && n < 2 * (p.N / 3)) {
        const size_t at = (size_t)p.pos[it.t] * KN_ROPE_HALF + it.f % KN_HEAD_DIM;
        aux[0] = *reinterpret_cast<const float4 *>(p.cos_tab + at);
        aux[1] = *reinterpret_cast<const float4 *>(p.sin_tab + at);
    } else if (p.layout == KN_WS_PLAIN && p.epi == KN_EPI_ACC) {
        aux[0] = *reinterpret_cast<const float4 *>(static_cast<const float *>(p.Y) + (size_t)it.t * p.N + n);
    }
}

/* The epilogue of an item: a, b the reduced sums of its features and partners. */
template <typename T, int WGS>
__device__ void ws_epilogue(const ws_params &p, int tile, const ws_item &it, float a[4], float b[4], const float4 aux[2])
{
    const int n = tile * WS_ROWS * WGS + it.f, t = it.t;
    if (p.layout == KN_WS_GEGLU) {
        float g[4];
#pragma unroll
        for (int q = 0; q < 4; q++)
            g[q] = kn_gelu_erf(a[q]) * b[q];
        const int col = (tile * WGS / 2 + it.f / 128) * WS_ROWS + it.f % 128;
        ws_store4<T>(p.Y, (size_t)t * (p.N / 2) + col, g, 0);
        return;
    }
    if (p.layout == KN_WS_ROPE) {
        if (n < 2 * (p.N / 3)) {
            const float cc[4] = {aux[0].x, aux[0].y, aux[0].z, aux[0].w};
            const float ss[4] = {aux[1].x, aux[1].y, aux[1].z, aux[1].w};
            float o1[4], o2[4];
#pragma unroll
            for (int q = 0; q < 4; q++) {
                o1[q] = __fsub_rn(__fmul_rn(a[q], cc[q]), __fmul_rn(b[q], ss[q]));
                o2[q] = __fadd_rn(__fmul_rn(b[q], cc[q]), __fmul_rn(a[q], ss[q]));
            }
            ws_store4<T>(p.Y, (size_t)t * p.N + n, o1, 0);
            ws_store4<T>(p.Y, (size_t)t * p.N + n + KN_ROPE_HALF, o2, 0);
        } else {
            ws_store4<T>(p.Y, (size_t)t * p.N + n, a, 0);
            ws_store4<T>(p.Y, (size_t)t * p.N + n + KN_ROPE_HALF, b, 0);
        }
        return;
    }
    if (p.epi == KN_EPI_ACC) {
        a[0] = __fadd_rn(aux[0].x, a[0]), a[1] = __fadd_rn(aux[0].y, a[1]);
        a[2] = __fadd_rn(aux[0].z, a[2]), a[3] = __fadd_rn(aux[0].w, a[3]);
    }
    ws_store4<T>(p.Y, (size_t)t * p.N + n, a, p.y32);
}

/* This rank's slice of tokens, summed over the cluster's S partials in rank
 * order. Every load of a batch of B items (the partials of all ranks, and
 * what the epilogue reads) is issued before any is used: distributed shared
 * memory and global memory are far, and a loop that waited per item was a
 * third of the kernel's time. */
template <typename T, int NT, int WGS, int S>
__device__ void ws_reduce(const ws_params &p, cg::cluster_group &cl, float *P, int tile, int rank)
{
    using G = ws_geom<NT, WGS>;
    constexpr int B = S >= 4 ? 1 : 4 / S;
    const int paired = p.layout != KN_WS_PLAIN, per_tok = paired ? G::BN / 8 : G::BN / 4;
    const int t0 = rank * NT / S, t1 = min((rank + 1) * NT / S, p.M), n = max(t1 - t0, 0) * per_tok;
    const float *src[S];
#pragma unroll
    for (int r = 0; r < S; r++)
        src[r] = r == rank ? P : cl.map_shared_rank(P, r);
    for (int base = threadIdx.x; base < n; base += B * blockDim.x) {
        ws_item it[B];
        float4 xa[B][S], xb[B][S], aux[B][2];
#pragma unroll
        for (int i = 0; i < B; i++) {
            it[i] = ws_item_at<WGS>(p, base + i * blockDim.x, per_tok, t0, n);
            if (!it[i].ok)
                continue;
            const int at = it[i].t * G::PSTRIDE + it[i].f;
#pragma unroll
            for (int r = 0; r < S; r++) {
                xa[i][r] = *reinterpret_cast<const float4 *>(src[r] + at);
                if (paired)
                    xb[i][r] = *reinterpret_cast<const float4 *>(src[r] + at + it[i].partner);
            }
            ws_aux<WGS>(p, tile, it[i], aux[i]);
        }
#pragma unroll
        for (int i = 0; i < B; i++) {
            if (!it[i].ok)
                continue;
            float a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
#pragma unroll
            for (int r = 0; r < S; r++) {
                a[0] += xa[i][r].x, a[1] += xa[i][r].y, a[2] += xa[i][r].z, a[3] += xa[i][r].w;
                if (paired)
                    b[0] += xb[i][r].x, b[1] += xb[i][r].y, b[2] += xb[i][r].z, b[3] += xb[i][r].w;
            }
            ws_epilogue<T, WGS>(p, tile, it[i], a, b, aux[i]);
        }
    }
}

#endif /* KN_HOPPER */

/* Grid (N / BN) x S CTAs, clusters of S along x: cluster c computes tile c,
 * its rank r the k-blocks [r KB / S, (r + 1) KB / S). */
template <typename T, int NT, int WGS>
__global__ void __launch_bounds__(ws_geom<NT, WGS>::THREADS, 1)
    ws_kernel(ws_params p, const __grid_constant__ CUtensorMap xmap)
{
#if KN_HOPPER
    extern __shared__ __align__(128) unsigned char ws_smem[];
    uint64_t *full = reinterpret_cast<uint64_t *>(ws_smem), *empty = full + WS_MAX_STAGES;
    const uint32_t base = kn_smem_addr(ws_smem);
    unsigned char *ring = ws_smem + ((base + WS_BARS + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN - base);
    cg::cluster_group cl = cg::this_cluster();
    const int S = (int)cl.num_blocks(), rank = (int)cl.block_rank(), tile = blockIdx.x / S, KB = p.K / WS_KB;
    const int kb0 = rank * KB / S, nkb = (rank + 1) * KB / S - kb0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < p.stages; s++) {
            kn_mbar_init(&full[s], 1); /* the producer's expect_tx arrival; the copies complete the bytes */
            kn_mbar_init(&empty[s], WGS);
        }
        kn_mbar_init_fence();
    }
    __syncthreads();
    float acc[NT / 64][32];
#pragma unroll
    for (int c = 0; c < NT / 64; c++)
#pragma unroll
        for (int i = 0; i < 32; i++)
            acc[c][i] = 0.0f;
    if (threadIdx.x == 128 * WGS) {
        ws_produce<T, NT, WGS>(p, &xmap, ring, full, empty, tile, kb0, nkb);
    } else if (threadIdx.x < 128 * WGS) {
        kn_pdl_wait();
        ws_consume<T, NT, WGS>(p, ring, full, empty, nkb, acc);
    }
    __syncthreads(); /* the ring is dead: it takes the partial tile */
    float *P = reinterpret_cast<float *>(ring);
    if (threadIdx.x < 128 * WGS)
        ws_store_partial<NT, WGS>(P, acc);
    cl.sync();
    if (S == 1)
        ws_reduce<T, NT, WGS, 1>(p, cl, P, tile, rank);
    else if (S == 2)
        ws_reduce<T, NT, WGS, 2>(p, cl, P, tile, rank);
    else if (S == 4)
        ws_reduce<T, NT, WGS, 4>(p, cl, P, tile, rank);
    else
        ws_reduce<T, NT, WGS, 8>(p, cl, P, tile, rank);
    cl.sync(); /* no CTA leaves while another still reads its partial */
#else
    __trap();
#endif
}

/* ---- host side ------------------------------------------------------------- */

static int ws_sms(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev))
        return 132;
    return sms;
}

/* The tile (warpgroups) and split from N, K and the layout only (never M, so
 * a row's sums do not depend on its pack): two warpgroups where N allows (X is
 * read once per tile: wider tiles read less of it), and the largest power-of-
 * two split that keeps one CTA per SM (clusters of 3, 5 or 6 left SMs idle on
 * the H200: bench/results/experiments/README.md). */
static void ws_auto(int N, int K, int layout, int *wgs, int *split)
{
    const int sms = ws_sms(), KB = K / WS_KB;
    *wgs = N % (2 * WS_ROWS) == 0 || layout == KN_WS_GEGLU ? 2 : 1;
    const int tiles = N / (WS_ROWS * *wgs);
    int S = 1;
    while (S * 2 <= WS_MAX_SPLIT && S * 2 <= KB && tiles * S * 2 <= sms)
        S *= 2;
    *split = S;
}

template <int NT, int WGS> static size_t ws_smem_bytes(int stages)
{
    using G = ws_geom<NT, WGS>;
    const size_t ring = (size_t)stages * G::STAGE;
    return WS_BARS + WS_ALIGN + (ring > (size_t)G::PBYTES ? ring : (size_t)G::PBYTES);
}

/* cuTensorMapEncodeTiled from the driver (through the runtime: no -lcuda). */
static PFN_cuTensorMapEncodeTiled_v12000 ws_encode_fn(void)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* X [M, K] as boxes of 64 k x NT tokens in the 128-byte swizzle (rows past M
 * read as zeros). */
template <typename T, int NT> static int ws_xmap(const ws_params &p, CUtensorMap *m)
{
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = ws_encode_fn();
    KN_REQUIRE(encode != NULL, "kn_gemm_ws: the driver has no cuTensorMapEncodeTiled");
    const cuuint64_t dims[2] = {(cuuint64_t)p.K, (cuuint64_t)p.M}, strides[1] = {(cuuint64_t)p.K * sizeof(T)};
    const cuuint32_t box[2] = {WS_KB, NT}, estr[2] = {1, 1};
    const CUtensorMapDataType dt = ws_is_bf16<T> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                     : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    const CUresult rc = encode(m, dt, 2, const_cast<void *>(p.X), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    KN_REQUIRE(rc == CUDA_SUCCESS, "kn_gemm_ws: cuTensorMapEncodeTiled refused X");
    return 0;
}

template <typename T, int NT, int WGS> static int ws_launch(kn_stream ks, ws_params p, int S)
{
    using G = ws_geom<NT, WGS>;
    const int max_nkb = (p.K / WS_KB + S - 1) / S;
    if (!p.stages) {
        p.stages = WS_RING_BUDGET / G::STAGE;
        p.stages = p.stages > WS_MAX_STAGES ? WS_MAX_STAGES : p.stages < 1 ? 1 : p.stages;
    }
    p.stages = p.stages > max_nkb ? max_nkb : p.stages;
    const size_t smem = ws_smem_bytes<NT, WGS>(p.stages);
    KN_REQUIRE(smem <= WS_SMEM_MAX, "kn_gemm_ws: stages do not fit in shared memory");
    CUtensorMap xmap;
    if (ws_xmap<T, NT>(p, &xmap))
        return -1;
    auto kern = ws_kernel<T, NT, WGS>;
    KN_CUDA(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(p.N / G::BN * S, 1, 1);
    cfg.blockDim = dim3(G::THREADS, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = ks.s;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = S;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = ks.s && ks.pdl ? 2 : 1;
    KN_CUDA(cudaLaunchKernelEx(&cfg, kern, p, xmap));
    return 0;
}

template <typename T, int WGS> static int ws_dispatch_nt(kn_stream ks, const ws_params &p, int S)
{
    if (p.M <= 64)
        return ws_launch<T, 64, WGS>(ks, p, S);
    if (p.M <= 128)
        return ws_launch<T, 128, WGS>(ks, p, S);
    if (p.M <= 192)
        return ws_launch<T, 192, WGS>(ks, p, S);
    return ws_launch<T, 256, WGS>(ks, p, S);
}

extern "C" size_t kn_ws_packed_bytes(int N, int K) { return (size_t)N * K * 2; }

extern "C" int kn_ws_supported(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return major == 9 && minor == 0; /* the build's sm_90a code runs on sm_90 only */
}

extern "C" int kn_ws_shape_ok(int M, int N, int K, int layout)
{
    if (M < 1 || M > KN_WS_MAX_M || N < WS_ROWS || N % WS_ROWS || K < WS_KB || K % WS_KB)
        return 0;
    if (layout == KN_WS_ROPE)
        return N % 3 == 0 && (N / 3) % KN_HEAD_DIM == 0;
    if (layout == KN_WS_GEGLU)
        return N % (2 * WS_ROWS) == 0;
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

static int ws_epi_ok(const kn_ws_epi *e, kn_dtype dt, kn_dtype ydt)
{
    if (e->layout == KN_WS_PLAIN)
        return (e->epi == KN_EPI_NONE && (ydt == dt || ydt == KN_F32)) || (e->epi == KN_EPI_ACC && ydt == KN_F32);
    if (e->layout == KN_WS_ROPE && !(e->pos && e->cos_tab && e->sin_tab))
        return 0;
    return e->epi == KN_EPI_NONE && ydt == dt;
}

extern "C" int kn_gemm_ws(kn_stream ks, kn_dtype dt, const void *X, const void *Wp, void *Y, kn_dtype ydt,
                          int M, int N, int K, const kn_ws_epi *e, const kn_ws_cfg *cfg)
{
    KN_REQUIRE(kn_is16(dt) && e, "kn_gemm_ws: 16-bit X and W, an epilogue");
    KN_REQUIRE(kn_ws_shape_ok(M, N, K, e->layout), "kn_gemm_ws: shape not supported (M <= 256, N % 64, K % 64)");
    KN_REQUIRE(ws_epi_ok(e, dt, ydt), "kn_gemm_ws: epilogue, Y dtype or RoPE tables");
    KN_REQUIRE(X && Wp && Y && kn_aligned16(X) && kn_aligned16(Wp) && kn_aligned16(Y), "kn_gemm_ws: NULL or unaligned");
    KN_REQUIRE(kn_ws_supported(), "kn_gemm_ws: needs an sm_90 GPU (Hopper wgmma)");
    int wgs = 1, S = 1;
    ws_auto(N, K, e->layout, &wgs, &S);
    wgs = cfg && cfg->wgs ? cfg->wgs : wgs;
    S = cfg && cfg->split ? cfg->split : S;
    KN_REQUIRE((wgs == 1 || wgs == 2) && N % (WS_ROWS * wgs) == 0 && (e->layout != KN_WS_GEGLU || wgs == 2),
               "kn_gemm_ws: 1 or 2 warpgroups dividing N (2 for GeGLU)");
    KN_REQUIRE((S == 1 || S == 2 || S == 4 || S == 8) && S <= K / WS_KB, "kn_gemm_ws: split 1, 2, 4 or 8, at most K / 64");
    const int stages = cfg ? cfg->stages : 0;
    KN_REQUIRE(stages >= 0 && stages <= WS_MAX_STAGES, "kn_gemm_ws: stages 1..8 (0: chosen)");
    const ws_params p = {X, Wp, Y, e->pos, e->cos_tab, e->sin_tab, M, N, K, e->layout, e->epi, ydt == KN_F32, stages};
    int rc;
    if (wgs == 2) {
        KN_DISPATCH16(dt, T, rc = (ws_dispatch_nt<T, 2>(ks, p, S)));
    } else {
        KN_DISPATCH16(dt, T, rc = (ws_dispatch_nt<T, 1>(ks, p, S)));
    }
    if (rc)
        return rc;
    KN_LAUNCHED();
    return 0;
}
