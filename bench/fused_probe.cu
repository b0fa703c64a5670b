/*
 * fused_probe.cu - experiment: Wqkv with RoPE and Wi with GeGLU in the epilogue of the
 * small-pack kernel (kernels/gemm_small.cuh's pieces, one K part, fp16 out), so that a layer
 * at small packs runs 7 launches instead of 9. The question before building it into the
 * library: does a layer's chain with them beat the forward's (cuBLASLt for the projections,
 * RoPE and GeGLU as kernels of their own), and how much of any gain is the fusion rather than
 * the kernel? Three chains, 28 layers of English weights in one graph, us a layer:
 *   library: kn_gemm_ex(Wqkv) -> kn_rope -> attention stand-in -> Wo -> kn_layernorm_parts ->
 *            kn_gemm_ex(Wi) -> kn_geglu -> Wo2 -> kn_layernorm_parts
 *   own:     the same with both projections on the own kernel, fp16 out
 *   fused:   own Wqkv + RoPE -> attention stand-in -> Wo -> LN -> own Wi + GeGLU -> Wo2 -> LN
 * with Wo / Wo2 as the forward runs them (the own split kernel up to 48 rows, cuBLASLt's split
 * above), and each projection alone (with its RoPE / GeGLU kernel for the library and own
 * rows). The own kernel copies X without divisions (xm_load_x<1>); its shared memory holds a
 * one-part projection up to 64 rows.
 *
 * The epilogue pairs features: a block's 32 weight rows are 16 pairs (weights permuted at
 * load): for Wqkv, dims j and j + 32 of one head (j in [16 q, 16 q + 16), q = block % 2), so
 * RoPE rotates within the block; for Wi, gate f and up f (f in [16 b, 16 b + 16)), so GeGLU
 * forms 16 outputs. Both round the product to fp16 first, as the separate kernels read it.
 * Checked on layer 0 against cuBLASLt with the unpermuted weights followed by kn_rope /
 * kn_geglu (max |diff| / max |ref|: fp32 sums in another order, then one fp16 rounding).
 *
 * Build: make build/bench/fused_probe; run on the GPU machine: build/bench/fused_probe [M ...]
 * (rows 1..64, default 16 32 48 64); one JSON object per line on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "kernels/cpu.h" /* a C header without C++ guards, included by cuda.h outside extern "C" */
}
#include "kernels/cuda.h"

#include "bench/probe_common.cuh" /* CK, shapes, init_kernel, glue, graph_us, probe_rows */
#include "bench/probe_small.cuh"  /* xm_load_x, fits, and the kernel's pieces */

enum { S = 4, THREADS = 32 * SO_WARPS, MAX_ROWS = 64, EPI_F16 = 0, EPI_ROPE = 1, EPI_GEGLU = 2 };

/* This thread's angles for its epilogue rows (i = thread, thread + 128: row i / 4, pairs
 * j = 16 q + 4 (i % 4) .. + 3), read before the wait: positions are the rows' indices. */
struct fx_angles {
    float4 c[2], s[2];
};

__device__ __forceinline__ void fx_load_angles(fx_angles &a, const float *ct, const float *st, int M, int n0)
{
    const int q = (n0 / SO_NT) % 2;
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int i = threadIdx.x + THREADS * k;
        if (i < 4 * M) {
            const size_t o = (size_t)(i / 4) * KN_ROPE_HALF + 16 * q + 4 * (i % 4);
            a.c[k] = *reinterpret_cast<const float4 *>(ct + o);
            a.s[k] = *reinterpret_cast<const float4 *>(st + o);
        }
    }
}

__device__ __forceinline__ float r16(float x) { return __half2float(__float2half_rn(x)); }

__device__ __forceinline__ void store4(__half *p, const float v[4])
{
    __half2 h[2] = {__floats2half2_rn(v[0], v[1]), __floats2half2_rn(v[2], v[3])};
    *reinterpret_cast<uint2 *>(p) = *reinterpret_cast<uint2 *>(h);
}

/* Row m's pairs (x1 = features c..c+3, x2 = c+16..c+19 of the block) out: F16 / ROPE to
 * columns h 64 + j and h 64 + j + 32 of Y [M, ldo] (RoPE on the Q and K blocks, n0 < 2 D);
 * GEGLU gelu(x1) x2 to column 16 b + c. */
template <int MT, int EPI>
__device__ __forceinline__ void fx_epilogue(const float *red, __half *Y, int M, int n0, int ldo, int D,
                                            const fx_angles &an)
{
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int i = threadIdx.x + THREADS * k;
        if (i >= 4 * M)
            break;
        const int m = i / 4, c = 4 * (i % 4);
        const float4 a = so_sum4<MT>(red, m, c), b = so_sum4<MT>(red, m, c + 16);
        float x1[4] = {r16(a.x), r16(a.y), r16(a.z), r16(a.w)}, x2[4] = {r16(b.x), r16(b.y), r16(b.z), r16(b.w)};
        if (EPI == EPI_GEGLU) {
            float g[4];
#pragma unroll
            for (int e = 0; e < 4; e++)
                g[e] = kn_gelu_erf(x1[e]) * x2[e];
            store4(Y + (size_t)m * ldo + 16 * (n0 / SO_NT) + c, g);
            continue;
        }
        if (EPI == EPI_ROPE && n0 < 2 * D) {
            const float cc[4] = {an.c[k].x, an.c[k].y, an.c[k].z, an.c[k].w};
            const float ss[4] = {an.s[k].x, an.s[k].y, an.s[k].z, an.s[k].w};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float o1 = __fsub_rn(__fmul_rn(x1[e], cc[e]), __fmul_rn(x2[e], ss[e]));
                const float o2 = __fadd_rn(__fmul_rn(x2[e], cc[e]), __fmul_rn(x1[e], ss[e]));
                x1[e] = o1, x2[e] = o2;
            }
        }
        const size_t col = (size_t)(n0 / 64) * 64 + 16 * ((n0 / SO_NT) % 2) + c;
        store4(Y + (size_t)m * ldo + col, x1);
        store4(Y + (size_t)m * ldo + col + KN_ROPE_HALF, x2);
    }
}

/* One K part over the whole of K (the split kernel's block, S = 1), the paired epilogue. */
template <int MT, int EPI>
__global__ void __launch_bounds__(THREADS, 1)
fx_kernel(const __half *X, const __half *W, __half *Y, int M, int K, int ldo, int D, const float *ct, const float *st)
{
    extern __shared__ __align__(128) unsigned char sm[];
    const int n0 = blockIdx.x * SO_NT;
    fx_angles an; /* before the wait, like the W tile */
    if (EPI == EPI_ROPE && n0 < 2 * D)
        fx_load_angles(an, ct, st, M, n0);
    float acc[MT][4][4];
    unsigned char *xs = so_block<__half, MT>(
        sm, W, M, K, K, so_rows{n0}, 0, [&](unsigned char *x) { xm_load_x<1>(X, x, M, K, K, 0); }, acc);
    float *red = reinterpret_cast<float *>(xs);
    so_tiles<MT>(red, acc);
    fx_epilogue<MT, EPI>(red, Y, M, n0, ldo, D, an);
}

template <int MT, int EPI>
static void fx_launch_mt(cudaStream_t st, const __half *X, const __half *W, __half *Y, int M, int N, int K, int ldo,
                         const float *ct, const float *sn)
{
    const size_t smem = so_smem(MT, K);
    CK(cudaFuncSetAttribute(fx_kernel<MT, EPI>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(kn_launch(fx_kernel<MT, EPI>, dim3(N / SO_NT), dim3(THREADS), smem, kn_stream{st, 1}, X, W, Y, M, K, ldo, HID,
                 ct, sn));
}

/* Y = the paired epilogue of X W^T (W [N, K], 16-bit), M <= 64. */
template <int EPI>
static void fx(cudaStream_t st, const __half *X, const __half *W, __half *Y, int M, int N, int K, int ldo,
               const float *ct = nullptr, const float *sn = nullptr)
{
    switch ((M + 15) / 16) {
    case 1: fx_launch_mt<1, EPI>(st, X, W, Y, M, N, K, ldo, ct, sn); break;
    case 2: fx_launch_mt<2, EPI>(st, X, W, Y, M, N, K, ldo, ct, sn); break;
    case 3: fx_launch_mt<3, EPI>(st, X, W, Y, M, N, K, ldo, ct, sn); break;
    default: fx_launch_mt<4, EPI>(st, X, W, Y, M, N, K, ldo, ct, sn); break;
    }
}

static kn_gemm_ctx *g_ctx;

/* The RoPE tables and positions beside the common buffers; Wqkv and Wi stand as the epilogue
 * wants them (the pairing only reorders rows, which does not change a timing). */
struct Bufs : SmallBufs {
    float *ct, *st;
    int32_t *pos;
};

static void alloc_bufs(Bufs *b)
{
    alloc_small(b, MAX_ROWS, S);
    CK(cudaMalloc(&b->ct, sizeof(float) * MAX_ROWS * KN_ROPE_HALF));
    CK(cudaMalloc(&b->st, sizeof(float) * MAX_ROWS * KN_ROPE_HALF));
    KOK(kn_rope_tables_gpu(kn_stream{0, 0}, b->ct, b->st, MAX_ROWS, 160000.0));
    std::vector<int32_t> pos(MAX_ROWS);
    for (int i = 0; i < MAX_ROWS; i++)
        pos[i] = i;
    CK(cudaMalloc(&b->pos, sizeof(int32_t) * MAX_ROWS));
    CK(cudaMemcpy(b->pos, pos.data(), sizeof(int32_t) * MAX_ROWS, cudaMemcpyHostToDevice));
}

/* Wo / Wo2 as the forward runs them: the own split kernel up to 48 rows, cuBLASLt's above. */
static void branch(cudaStream_t st, const __half *X, const __half *W, float *P, int M, int K)
{
    const kn_stream ks = {st, 1};
    if (M <= 48)
        KOK(kn_gemm_split_small(ks, X, W, KN_F16, P, M, HID, K, S));
    else
        KOK(kn_gemm_split(g_ctx, ks, X, W, KN_F16, P, M, HID, K, S));
}

enum Chain { LIBRARY, OWN, FUSED };
static const char *const chain_name[] = {"library (cuBLASLt projections, RoPE and GeGLU kernels)",
                                         "own projections, RoPE and GeGLU kernels",
                                         "own projections with RoPE and GeGLU in their epilogues"};

/* Layer l's Wqkv (then RoPE) or Wi (then GeGLU) as chain c runs it: the fused epilogue, or the
 * product (cuBLASLt's, or the own kernel's in fp16) followed by the kernel of its own. */
static void projection(cudaStream_t st, const Bufs *b, int l, Chain c, bool mlp)
{
    const kn_stream ks = {st, 1};
    const int M = b->M, N = mlp ? WI : QKV;
    const __half *W = mlp ? b->wi[l] : b->wqkv[l];
    __half *Y = mlp ? b->u : b->qkv;
    if (c == FUSED && mlp)
        fx<EPI_GEGLU>(st, b->xn, W, b->g, M, N, HID, INNER);
    else if (c == FUSED)
        fx<EPI_ROPE>(st, b->xn, W, Y, M, N, HID, N, b->ct, b->st);
    if (c == FUSED)
        return;
    if (c == LIBRARY)
        KOK(kn_gemm_ex(g_ctx, ks, b->xn, KN_F16, W, KN_F16, NULL, KN_F32, Y, KN_F16, M, N, HID, KN_EPI_NONE));
    else
        fx<EPI_F16>(st, b->xn, W, Y, M, N, HID, N);
    if (mlp)
        KOK(kn_geglu(ks, KN_F16, b->u, b->g, M, INNER));
    else
        KOK(kn_rope(ks, KN_F16, b->qkv, M, HID, b->pos, b->ct, b->st));
}

static void layer(cudaStream_t st, const Bufs *b, int l, Chain c)
{
    const kn_stream ks = {st, 1};
    const int M = b->M;
    projection(st, b, l, c, false);
    glue(st, b->qkv, b->att, M * HID); /* the attention's stand-in */
    branch(st, b->att, b->wo[l], b->parts, M, HID);
    KOK(kn_layernorm_parts(ks, b->res, b->parts, S, (long)M * HID, NULL, b->lnw, NULL, b->xn, KN_F16, NULL, M, HID,
                           1e-5f));
    projection(st, b, l, c, true);
    branch(st, b->g, b->wo2[l], b->parts, M, INNER);
    KOK(kn_layernorm_parts(ks, b->res, b->parts, S, (long)M * HID, NULL, b->lnw, NULL, b->xn, KN_F16, NULL, M, HID,
                           1e-5f));
}

/* W [N, K] on the device with its rows reordered for the paired epilogue: Wqkv's block 2h + q
 * takes head h's rows 16 q .. 16 q + 15 then 32 + 16 q .. (pairs j, j + 32); Wi's block b takes
 * gate rows 16 b .. 16 b + 15 then up rows F + 16 b .. */
static __half *paired(const __half *W, int N, int K, bool geglu)
{
    std::vector<__half> h((size_t)N * K), p((size_t)N * K);
    CK(cudaMemcpy(h.data(), W, h.size() * 2, cudaMemcpyDeviceToHost));
    for (int r = 0; r < N; r++) {
        const int blk = r / SO_NT, c = r % SO_NT % 16, hi = r % SO_NT / 16;
        const int src = geglu ? (hi ? N / 2 : 0) + 16 * blk + c : (blk / 2) * 64 + 16 * (blk % 2) + c + 32 * hi;
        memcpy(&p[(size_t)r * K], &h[(size_t)src * K], (size_t)K * 2);
    }
    __half *d;
    CK(cudaMalloc(&d, p.size() * 2));
    CK(cudaMemcpy(d, p.data(), p.size() * 2, cudaMemcpyHostToDevice));
    return d;
}

/* max |a - b| / max |b| over n halves of device memory. */
static double rel_diff(const __half *a, const __half *b, size_t n)
{
    std::vector<__half> ha(n), hb(n);
    CK(cudaMemcpy(ha.data(), a, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), b, n * 2, cudaMemcpyDeviceToHost));
    double md = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        md = std::max(md, (double)fabsf(__half2float(ha[i]) - __half2float(hb[i])));
        mr = std::max(mr, (double)fabsf(__half2float(hb[i])));
    }
    return mr > 0 ? md / mr : md;
}

/* The fused products on layer 0 against cuBLASLt + kn_rope / kn_geglu on the same weights. */
static void check(cudaStream_t st, Bufs *b)
{
    const int M = b->M;
    __half *pq = paired(b->wqkv[0], QKV, HID, false), *pi = paired(b->wi[0], WI, HID, true), *y;
    CK(cudaMalloc(&y, (size_t)M * WI * 2));
    projection(st, b, 0, LIBRARY, false);
    fx<EPI_ROPE>(st, b->xn, pq, y, M, QKV, HID, QKV, b->ct, b->st);
    CK(cudaStreamSynchronize(st));
    printf("{\"check\": \"wqkv_rope\", \"M\": %d, \"max_rel_diff\": %.3e}\n", M, rel_diff(y, b->qkv, (size_t)M * QKV));
    projection(st, b, 0, LIBRARY, true);
    fx<EPI_GEGLU>(st, b->xn, pi, y, M, WI, HID, INNER);
    CK(cudaStreamSynchronize(st));
    printf("{\"check\": \"wi_geglu\", \"M\": %d, \"max_rel_diff\": %.3e}\n", M, rel_diff(y, b->g, (size_t)M * INNER));
    CK(cudaFree(pq));
    CK(cudaFree(pi));
    CK(cudaFree(y));
}

static void run_m(cudaStream_t st, Bufs *b, int M)
{
    b->M = M;
    prepare_small(g_ctx, st, b, S);
    check(st, b);
    const Chain order[] = {LIBRARY, OWN, FUSED, LIBRARY, FUSED};
    for (Chain c : order) {
        const float q = graph_us(st, 15, [&] {
            for (int l = 0; l < LAYERS; l++)
                projection(st, b, l, c, false);
        }) / LAYERS;
        const float i = graph_us(st, 15, [&] {
            for (int l = 0; l < LAYERS; l++)
                projection(st, b, l, c, true);
        }) / LAYERS;
        const float chain = graph_us(st, 15, [&] {
            for (int l = 0; l < LAYERS; l++)
                layer(st, b, l, c);
        }) / LAYERS;
        printf("{\"M\": %d, \"chain\": \"%s\", \"wqkv_rope_alone_us\": %.2f, \"wi_geglu_alone_us\": %.2f, "
               "\"layer_chain_us\": %.2f}\n",
               M, chain_name[c], q, i, chain);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const std::vector<int> ms = probe_rows(argc, argv, {16, 32, 48, 64}, MAX_ROWS);
    cudaStream_t st;
    g_ctx = probe_setup(&st);
    Bufs b;
    alloc_bufs(&b);
    CK(cudaDeviceSynchronize());
    for (int m : ms)
        if (fits(m, HID, 1))
            run_m(st, &b, m);
    kn_gemm_ctx_destroy(g_ctx);
    return 0;
}
