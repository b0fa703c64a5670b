/*
 * gemm_small.cuh - the pieces of the small-pack kernels (the split product,
 * kernels/gemm_small.cu, and the projections, kernels/proj_small.cu) that their
 * probes (bench/mcast_probe.cu, bench/fused_probe.cu) share: the block's shape
 * (NT weight rows, 32 unless said) and shared memory, the prologue before the
 * wait (the weight tile's bulk copy), the X slice's bulk copies (the probes add
 * cp.async forms: bench/probe_small.cuh), the weight fragments of a k-step, the
 * warps' k-steps, and the warps' tiles summed and stored as fp32 parts. Internal
 * to kernels/ and its benchmarks.
 */
#ifndef LAYAD_KERNELS_GEMM_SMALL_CUH
#define LAYAD_KERNELS_GEMM_SMALL_CUH

#include <type_traits>

#include "kernels/cuda_util.cuh"
#include "kernels/mma.cuh"
#include "kernels/sm90.cuh"

#define SO_NT 32           /* output features a block; warp 0's lanes copy one W row each */
#define SO_WARPS 4         /* warps a block, splitting the slice's k-steps */
/* Floats a row of the warps' tiles for NT output features a block (a multiple of 8, at most
 * 64; SO_NT unless said), padded against bank conflicts. */
__host__ __device__ constexpr int so_red(int NT) { return NT + 4; }

/* Rows of W and X in shared memory are padded by 16 bytes, so that ldmatrix's
 * eight rows fall in eight different bank groups. */
__host__ __device__ static inline int so_row_bytes(int Ks) { return Ks * 2 + 16; }

/* The launch of grid x block (smem bytes of shared memory) on stream st in clusters of cl
 * blocks along x, with programmatic stream serialization when pdl; at holds the attributes
 * and must live until the launch. */
static inline cudaLaunchConfig_t so_config(cudaLaunchAttribute (&at)[2], dim3 grid, dim3 block, size_t smem,
                                           cudaStream_t st, int cl, bool pdl)
{
    cudaLaunchConfig_t cfg = {};
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)cl, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
    at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = at;
    cfg.numAttrs = pdl ? 2 : 1;
    return cfg;
}

/* f(std::integral_constant<int, MT>) for the row tiles of M rows (MT = ceil(M / 16), 1..8):
 * the kernels are compiled per MT, so that the accumulators stay in registers. */
template <typename F> static inline int so_on_mt(int M, F f)
{
    switch ((M + 15) / 16) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    default: return f(std::integral_constant<int, 8>{});
    }
}

/* The first of the X rows this thread issues bulk copies for, then every 32 SO_WARPS-th:
 * rows go round the warps (row r by lane r / SO_WARPS of warp r % SO_WARPS). A warp's
 * bulk copies leave one after another, ~30-60 ns apart, and the warps' side by side
 * (bench/results/experiments/ingest/: 16 rows of 2 KB from one warp take ~0.5-1 us). */
__device__ __forceinline__ int so_first_row() { return (int)(threadIdx.x % 32) * SO_WARPS + (int)threadIdx.x / 32; }

/* The block's weight tile (NT rows of slice s) into ws by the TMA engine, by warp 0
 * (lane l taking rows l and l + 32; row r is row row_of(r) of W: n0 + r for a plain
 * block), completing on bar (initialized and armed: so_prologue). Every warp calls it.
 * Before the wait their issue hides behind the kernel before; round the warps as X's
 * rows are, the forward was 1-1.7% slower at 24-30 tokens
 * (bench/results/experiments/bulk-spread/). */
template <typename T, typename RowOf, int NT = SO_NT>
__device__ __forceinline__ void so_load_w(const T *W, unsigned char *ws, uint64_t *bar, int K, int Ks, RowOf row_of,
                                          int s)
{
    if (threadIdx.x < 32)
        for (int r = threadIdx.x; r < NT; r += 32)
            bulk_load(ws + r * so_row_bytes(Ks), W + (size_t)row_of(r) * K + (size_t)s * Ks, Ks * 2, bar);
}

/* The rows of a plain block: n0 + lane. */
struct so_rows {
    int n0;
    __device__ __forceinline__ int operator()(int lane) const { return n0 + lane; }
};

/* X's slice s (M rows of Ks columns of X [M, K]) into xs by the TMA engine, one bulk
 * copy a row (rows round the warps: see so_first_row), completing on the weight tile's
 * barrier, whose transaction count already holds these bytes (so_prologue's x_rows).
 * From 64 rows cp.async from every thread (bench/probe_small.cuh) costs each thread
 * ~40 copies of 16 bytes, which the TMA engine takes off the threads; with the rows
 * issued from one warp cp.async was faster at 17-32 rows, round the warps these copies
 * are faster at every row count (bench/results/experiments/bulk-spread/). */
template <typename T>
__device__ __forceinline__ void so_load_x_bulk(const T *X, unsigned char *xs, uint64_t *bar, int M, int K, int Ks,
                                               int s)
{
    const int rb = so_row_bytes(Ks);
    for (int m = so_first_row(); m < M; m += 32 * SO_WARPS)
        bulk_load(xs + m * rb, X + (size_t)m * K + (size_t)s * Ks, Ks * 2, bar);
}

/* The weight fragments of k-step kk for the block's NT / 8 n8 tiles (an odd last
 * one by ldmatrix_x2). */
template <int NT = SO_NT>
__device__ __forceinline__ void so_load_b(const unsigned char *ws, int rb, int kk, uint32_t (&b)[NT / 8][2])
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int h = 0; h < NT / 16; h++) {
        uint32_t r[4];
        ldmatrix_x4(r, ws + (16 * h + lane % 8 + 8 * (lane / 16)) * rb + (kk * 16 + 8 * ((lane / 8) % 2)) * 2);
        b[2 * h][0] = r[0], b[2 * h][1] = r[1], b[2 * h + 1][0] = r[2], b[2 * h + 1][1] = r[3];
    }
    if constexpr (NT % 16 != 0) {
        uint32_t r[2];
        ldmatrix_x2(r, ws + (NT - 8 + lane % 8) * rb + (kk * 16 + 8 * ((lane / 8) % 2)) * 2);
        b[NT / 8 - 1][0] = r[0], b[NT / 8 - 1][1] = r[1];
    }
}

/* One barrier, the W tile, then room for 16 MT rows of the X slice, which the
 * warps' tiles reuse once every warp is past its last MMA. */
static inline size_t so_smem(int MT, int Ks, int NT = SO_NT)
{
    const size_t x = (size_t)16 * MT * so_row_bytes(Ks), red = (size_t)SO_WARPS * 16 * MT * so_red(NT) * 4;
    return 128 + (size_t)NT * so_row_bytes(Ks) + (x > red ? x : red);
}

/* The barrier armed for the W tile and x_rows rows of X (copied after the wait), rows
 * [M, 16 MT) of the X slice zeroed (no copy lands there), the W tile requested (row_of:
 * see so_load_w); all before the wait. */
template <typename T, int MT, int NT = SO_NT, typename RowOf>
__device__ __forceinline__ void so_prologue(const T *W, unsigned char *ws, unsigned char *xs, uint64_t *bar,
                                            int M, int K, int Ks, RowOf row_of, int s, int x_rows = 0)
{
    const int rb = so_row_bytes(Ks);
    if (threadIdx.x == 0) {
        mbar_init(bar, 1);
        mbar_init_fence();
        mbar_arrive_tx(bar, (NT + x_rows) * Ks * 2);
    }
    for (int i = threadIdx.x; i < (16 * MT - M) * rb / 16; i += blockDim.x)
        reinterpret_cast<uint4 *>(xs + M * rb)[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    so_load_w<T, RowOf, NT>(W, ws, bar, K, Ks, row_of, s);
}

/* This warp's share of the slice's k-steps over every row tile. */
template <typename T, int MT, int NT = SO_NT>
__device__ __forceinline__ void so_mma(const unsigned char *ws, const unsigned char *xs, int rb, int Ks,
                                       float (&acc)[MT][NT / 8][4])
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, steps = Ks / 16;
    for (int kk = steps * warp / SO_WARPS; kk < steps * (warp + 1) / SO_WARPS; kk++) {
        uint32_t b[NT / 8][2];
        so_load_b<NT>(ws, rb, kk, b);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            uint32_t a[4];
            ldmatrix_x4(a, xs + (16 * mt + lane % 16) * rb + (kk * 16 + 8 * (lane / 16)) * 2);
#pragma unroll
            for (int nt = 0; nt < NT / 8; nt++)
                mma16816<T>(acc[mt][nt], a, b[nt]);
        }
    }
}

/* A block's part of the product into acc: its W tile (rows row_of(lane), see
 * so_load_w) requested before the programmatic wait, X copied after it by
 * load_x(xs) (cp.async) or, XB, load_x(xs, bar) (bulk copies on the W tile's
 * barrier), the warps' k-steps. Returns the X slice's room, free for the warps'
 * tiles. */
template <typename T, int MT, bool XB = false, int NT = SO_NT, typename RowOf, typename LoadX>
__device__ __forceinline__ unsigned char *so_block(unsigned char *sm, const T *W, int M, int K, int Ks, RowOf row_of,
                                                   int s, LoadX load_x, float (&acc)[MT][NT / 8][4])
{
    const int rb = so_row_bytes(Ks);
    uint64_t *bar = reinterpret_cast<uint64_t *>(sm); /* the W tile, and X's rows when XB */
    unsigned char *ws = sm + 128, *xs = ws + NT * rb;
    so_prologue<T, MT, NT>(W, ws, xs, bar, M, K, Ks, row_of, s, XB ? M : 0);
    kn_pdl_wait();
    if constexpr (XB)
        load_x(xs, bar);
    else
        load_x(xs);
    kn_pdl_trigger();
    mbar_wait(bar, 0);
    if constexpr (!XB) {
        cp_async_wait<0>();
        __syncthreads(); /* every thread's X chunks have landed */
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++)
            acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
    so_mma<T, MT, NT>(ws, xs, rb, Ks, acc);
    __syncthreads(); /* the X slice's room now holds the warps' tiles */
    return xs;
}

/* The warps' tiles into shared memory (red), then a block barrier. */
template <int MT, int NT = SO_NT>
__device__ __forceinline__ void so_tiles(float *red, const float (&acc)[MT][NT / 8][4])
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++) {
            float *t = red + ((size_t)warp * 16 * MT + 16 * mt + lane / 4) * so_red(NT) + 8 * nt + 2 * (lane % 4);
            *reinterpret_cast<float2 *>(t) = make_float2(acc[mt][nt][0], acc[mt][nt][1]);
            *reinterpret_cast<float2 *>(t + 8 * so_red(NT)) = make_float2(acc[mt][nt][2], acc[mt][nt][3]);
        }
    __syncthreads();
}

/* Features [c, c + 4) of row m summed over the warps' tiles, in warp order. */
template <int MT, int NT = SO_NT> __device__ __forceinline__ float4 so_sum4(const float *red, int m, int c)
{
    float4 v = *reinterpret_cast<const float4 *>(red + (size_t)m * so_red(NT) + c);
    for (int w = 1; w < SO_WARPS; w++) {
        const float4 u = *reinterpret_cast<const float4 *>(red + ((size_t)w * 16 * MT + m) * so_red(NT) + c);
        v.x += u.x, v.y += u.y, v.z += u.z, v.w += u.w;
    }
    return v;
}

/* The warps' tiles through shared memory (red), summed in warp order into part s. */
template <int MT>
__device__ __forceinline__ void so_store(float *red, const float (&acc)[MT][4][4], float *P, int M, int N, int n0,
                                         int s)
{
    so_tiles<MT>(red, acc);
    for (int i = threadIdx.x; i < M * (SO_NT / 4); i += blockDim.x) {
        const int m = i / (SO_NT / 4), c = 4 * (i % (SO_NT / 4));
        *reinterpret_cast<float4 *>(P + ((size_t)s * M + m) * N + n0 + c) = so_sum4<MT>(red, m, c);
    }
}

/* Block (x, s) of the split kernel in dynamic shared memory sm: features [32 x, 32 x + 32)
 * of part s of P, X's slice copied by load_x(xs, Ks, s), or XB load_x(xs, bar, Ks, s)
 * (see so_block). */
template <typename T, int MT, bool XB = false, typename LoadX>
__device__ __forceinline__ void so_split_block(unsigned char *sm, const T *W, float *P, int M, int K, LoadX load_x)
{
    const int Ks = K / gridDim.y, n0 = blockIdx.x * SO_NT, s = blockIdx.y;
    float acc[MT][4][4];
    unsigned char *xs;
    if constexpr (XB)
        xs = so_block<T, MT, true>(
            sm, W, M, K, Ks, so_rows{n0}, s, [&](unsigned char *x, uint64_t *bar) { load_x(x, bar, Ks, s); }, acc);
    else
        xs = so_block<T, MT>(
            sm, W, M, K, Ks, so_rows{n0}, s, [&](unsigned char *x) { load_x(x, Ks, s); }, acc);
    so_store<MT>(reinterpret_cast<float *>(xs), acc, P, M, gridDim.x * SO_NT, n0, s);
}

#endif
