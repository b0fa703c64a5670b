/*
 * mcast_probe.cu - experiment: the residual branches' split products of small packs
 * (kn_gemm_split's contract: S = 4 fp32 partial products, summed by kn_layernorm_parts)
 * on a kernel of our own built the way the earlier own GEMMs' post-mortems asked for
 * (bench/results/experiments/README.md, "gemm-parts" and "persistent"):
 *
 *   - the weights are the part every launch can fetch early: each CTA bulk-copies its
 *     whole W tile (32 features x K / 4) into shared memory before the programmatic-
 *     launch wait, so the copy overlaps the kernel before;
 *   - the activations were what sank the earlier kernels (every CTA of a part read the
 *     part's whole X slice from L2: 6-16 MB a product at 96 rows). Here the 32 x 4 CTAs
 *     form clusters of CL along N; after the wait each CTA of a cluster bulk-copies every
 *     CL-th row of the X slice and multicasts it to all CL, so L2 serves each slice
 *     32 / CL times instead of 32;
 *   - no reduction across CTAs: the four K slices are the four parts the LayerNorm sums;
 *     inside a CTA four warps split the slice's k-steps and their tiles are summed in
 *     shared memory in warp order (deterministic; a row's bits do not depend on M).
 *
 * The row-copy form with clusters of 2 became the library's kn_gemm_split_small
 * (kernels/gemm_small.cu); a later form with X by cp.async from every thread and no
 * cluster beat it (bench/results/experiments/wide/) and replaced it there. The probe runs
 * the library's kernel as such (variant "rows") and beside it a form with X by 2-D
 * tensor-map boxes and clusters of 1, 2, 4 or 8. Measured against the forward's own
 * path (kn_gemm_split, tuned cuBLASLt, the library linked in), per M (default 16 32 48 64
 * 96 128):
 *   - agreement with the library's parts (max |diff| / max |ref|) and bitwise reruns (the
 *     second run without programmatic launch);
 *   - each product alone, 28 layers' weights back to back in one graph (us a product);
 *   - a layer's chain as the forward runs it, 28 layers in one graph (us a layer):
 *       kn_gemm_ex(Wqkv) -> glue (RoPE + attention's stand-in) -> parts(Wo) ->
 *       kn_layernorm_parts -> kn_gemm_ex(Wi) -> kn_geglu -> parts(Wo2) -> kn_layernorm_parts
 *     with only the two parts products changed between the variants; with PROBE_PROJ=1
 *     Wqkv and Wi also run on the library's kernel in fp32 parts, summed by stand-ins of
 *     the glue and GeGLU; with PROBE_XCOPY=1 a replica of the library's kernel copies X
 *     in three forms (its loop, a loop without a division a chunk, none at all), beside
 *     the tensor-box form with one barrier and no cluster.
 * Results: bench/results/experiments/mcast/ (the probe as it ran there: fc888ff) and
 * bench/results/experiments/wide/.
 *
 * Build: make build/bench/mcast_probe (nvcc, sm_90a, links build/liblayad.a);
 * run: build/bench/mcast_probe [M ...]; one JSON object per line on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* CUtensorMap, cuTensorMapEncodeTiled */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "kernels/cpu.h" /* a C header without C++ guards, included by cuda.h outside extern "C" */
}
#include "kernels/cuda.h"
#include "kernels/gemm_small.cuh" /* SO_*, so_load_w, so_load_b, so_store, and sm90.cuh, mma.cuh */

#include "bench/probe_common.cuh" /* CK, shapes, init_kernel, glue, graph_us */
#include "bench/probe_small.cuh"  /* xm_load_x, fits */
#include "bench/sm90_cluster.cuh"  /* bulk_load_multicast, cluster_rank, cluster_arrive / _wait */

enum { S = 4, NT = SO_NT, WARPS = SO_WARPS, THREADS = 32 * WARPS, MAX_MT = 8 };

/* The library's kernel (kn_gemm_split_small) copies X by cp.async. This form: X by 2-D
 * tensor-map boxes (64 columns x 16 MT rows, 128-byte swizzle: one TMA instruction a box instead
 * of one bulk copy a row), a barrier per box so that each warp
 * starts on its k-steps as soon as their boxes have landed, box b issued by cluster rank b % CL
 * and multicast. A slice's last box may run into the next slice's columns (K / 4 = 656 is no
 * multiple of 64) or past K (zeros): only the slice's k-steps are used. */
__host__ __device__ static inline int x_boxes(int K) { return (K / S + 63) / 64; }
static inline size_t smem_bytes_tma(int MT, int K)
{
    const size_t x = (size_t)x_boxes(K) * 16 * MT * 128, red = (size_t)WARPS * 16 * MT * so_red(SO_NT) * 4;
    return 128 + (size_t)NT * so_row_bytes(K / S) + 1024 + (x > red ? x : red);
}

template <int CL> __device__ __forceinline__ void tma_box(void *dst, const CUtensorMap *map, int c0, uint64_t *b)
{
    if constexpr (CL == 1)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                     "%3}], [%4];\n" ::"r"(smem_addr(dst)),
                     "l"(map), "r"(c0), "r"(0), "r"(smem_addr(b))
                     : "memory");
    else
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_addr(dst)),
                     "l"(map), "r"(c0), "r"(0), "r"(smem_addr(b)), "h"((uint16_t)((1u << CL) - 1))
                     : "memory");
}

/* ONE (CL 1 only): every box on one barrier and no cluster barrier, the cp.async kernel's
 * structure with the boxes in place of its copies (PROBE_XCOPY's fourth form). */
template <int MT, int CL, bool ONE = false>
__global__ void __launch_bounds__(THREADS, 1)
parts_tma_kernel(const __grid_constant__ CUtensorMap xmap, const __half *W, float *P, int M, int K)
{
    static_assert(!ONE || CL == 1, "one barrier only without a cluster");
    extern __shared__ __align__(128) unsigned char sm[];
    const int KS = K / S, rb = so_row_bytes(KS), NB = x_boxes(K), MP = 16 * MT, lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32, n0 = blockIdx.x * NT, s = blockIdx.y;
    uint64_t *bar = reinterpret_cast<uint64_t *>(sm); /* [0] W, [1 + b] X box b */
    unsigned char *ws = sm + 128;
    unsigned char *xs = reinterpret_cast<unsigned char *>(((uintptr_t)(ws + NT * rb) + 1023) & ~(uintptr_t)1023);
    if (threadIdx.x == 0) {
        for (int i = 0; i <= (ONE ? 1 : NB); i++)
            mbar_init(&bar[i], 1);
        mbar_init_fence();
        mbar_arrive_tx(&bar[0], NT * KS * 2);
        if (ONE)
            mbar_arrive_tx(&bar[1], NB * MP * 128);
        else
            for (int b = 0; b < NB; b++)
                mbar_arrive_tx(&bar[1 + b], MP * 128);
    }
    __syncthreads();
    so_load_w(W, ws, &bar[0], K, KS, so_rows{n0}, s);
    if (!ONE) {
        cluster_arrive();
        cluster_wait();
    }
    kn_pdl_wait();
    if (threadIdx.x == 0)
        for (int b = ONE ? 0 : (int)cluster_rank(); b < NB; b += CL)
            tma_box<CL>(xs + (size_t)b * MP * 128, &xmap, s * KS + 64 * b, &bar[ONE ? 1 : 1 + b]);
    kn_pdl_trigger();
    mbar_wait(&bar[0], 0);
    if (ONE)
        mbar_wait(&bar[1], 0);

    float acc[MT][4][4] = {};
    const int steps = KS / 16, k0 = steps * warp / WARPS, k1 = steps * (warp + 1) / WARPS;
    int landed = -1;
    for (int kk = k0; kk < k1; kk++) {
        const int b = kk / 4;
        if (!ONE && b != landed)
            mbar_wait(&bar[1 + b], 0), landed = b;
        uint32_t bf[4][2];
        so_load_b(ws, rb, kk, bf);
        const int chunk = (kk % 4) * 2 + lane / 16; /* 16-byte chunk of the box's 128-byte row */
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            const int row = 16 * mt + lane % 16;
            uint32_t a[4];
            ldmatrix_x4(a, xs + (size_t)b * MP * 128 + row * 128 + ((chunk ^ (row & 7)) << 4));
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
                mma16816<__half>(acc[mt][nt], a, bf[nt]);
        }
    }
    __syncthreads(); /* every box has landed and been read: its room now holds the warps' tiles */
    if (!ONE)
        cluster_arrive();
    so_store<MT>(reinterpret_cast<float *>(xs), acc, P, M, gridDim.x * NT, n0, s);
    if (!ONE)
        cluster_wait();
}

/* X's tensor map for boxes of 64 columns x MP rows; rows past M read as zeros. */
static CUtensorMap x_map(const __half *X, int M, int K, int MP)
{
    CUtensorMap m;
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)M}, strides[1] = {(cuuint64_t)K * 2};
    const cuuint32_t box[2] = {64, (cuuint32_t)MP}, es[2] = {1, 1};
    const CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *)X, dims, strides, box, es,
                                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                              CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", (int)r);
        exit(1);
    }
    return m;
}

template <int MT, int CL, bool ONE> static void launch_t(cudaStream_t st, const __half *X, const __half *W, float *P,
                                                         int M, int N, int K, bool pdl)
{
    cudaLaunchAttribute at[2];
    const cudaLaunchConfig_t cfg = so_config(at, dim3(N / NT, S), dim3(THREADS), smem_bytes_tma(MT, K), st, CL, pdl);
    CK(cudaLaunchKernelEx(&cfg, parts_tma_kernel<MT, CL, ONE>, x_map(X, M, K, 16 * MT), W, P, M, K));
}

template <int MT, int CL, bool ONE> static void set_smem_mt()
{
    const int most = 227 * 1024;
    CK(cudaFuncSetAttribute(parts_tma_kernel<MT, CL, ONE>, cudaFuncAttributeMaxDynamicSharedMemorySize, most));
}

template <int CL, bool ONE = false> static void set_smem_t()
{
    set_smem_mt<1, CL, ONE>();
    set_smem_mt<2, CL, ONE>();
    set_smem_mt<3, CL, ONE>();
    set_smem_mt<4, CL, ONE>();
    set_smem_mt<5, CL, ONE>();
    set_smem_mt<6, CL, ONE>();
    set_smem_mt<7, CL, ONE>();
    set_smem_mt<8, CL, ONE>();
}

template <int CL, bool ONE = false>
static void launch_cl(cudaStream_t st, const __half *X, const __half *W, float *P, int M, int N, int K, bool pdl)
{
    switch ((M + 15) / 16) {
    case 1: launch_t<1, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    case 2: launch_t<2, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    case 3: launch_t<3, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    case 4: launch_t<4, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    case 5: launch_t<5, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    case 6: launch_t<6, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    case 7: launch_t<7, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    default: launch_t<8, CL, ONE>(st, X, W, P, M, N, K, pdl); break;
    }
}

/* PROBE_XCOPY=1: the library kernel's X copy in three forms (xm_load_x, bench/probe_small.cuh),
 * in a replica of its kernel made of the same pieces (kernels/gemm_small.cuh). A fourth form, 3,
 * is the tensor-box kernel above with one barrier and no cluster (parts_tma_kernel<.., 1, true>). */
template <int XM, int MT>
__global__ void __launch_bounds__(THREADS, 1) xm_kernel(const __half *X, const __half *W, float *P, int M, int K)
{
    extern __shared__ __align__(128) unsigned char sm[];
    so_split_block<__half, MT>(sm, W, P, M, K,
                               [&](unsigned char *x, int Ks, int s) { xm_load_x<XM>(X, x, M, K, Ks, s); });
}

template <int XM, int MT>
static void launch_xm_mt(cudaStream_t st, const __half *X, const __half *W, float *P, int M, int N, int K, int Sp)
{
    const size_t smem = so_smem(MT, K / Sp);
    CK(cudaFuncSetAttribute(xm_kernel<XM, MT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(kn_launch(xm_kernel<XM, MT>, dim3(N / NT, Sp), dim3(THREADS), smem, kn_stream{st, 1}, X, W, P, M, K));
}

template <int XM>
static void launch_xm(cudaStream_t st, const __half *X, const __half *W, float *P, int M, int N, int K, int Sp)
{
    switch ((M + 15) / 16) {
    case 1: launch_xm_mt<XM, 1>(st, X, W, P, M, N, K, Sp); break;
    case 2: launch_xm_mt<XM, 2>(st, X, W, P, M, N, K, Sp); break;
    case 3: launch_xm_mt<XM, 3>(st, X, W, P, M, N, K, Sp); break;
    case 4: launch_xm_mt<XM, 4>(st, X, W, P, M, N, K, Sp); break;
    case 5: launch_xm_mt<XM, 5>(st, X, W, P, M, N, K, Sp); break;
    case 6: launch_xm_mt<XM, 6>(st, X, W, P, M, N, K, Sp); break;
    case 7: launch_xm_mt<XM, 7>(st, X, W, P, M, N, K, Sp); break;
    default: launch_xm_mt<XM, 8>(st, X, W, P, M, N, K, Sp); break;
    }
}

/* The parts product: the library's cuBLASLt split (cl 0), the library's own small-pack kernel
 * (kn_gemm_split_small: X by row copies, clusters of 2; rows), or this probe's tensor-box form
 * with clusters of cl (1, 2, 4, 8). The row-copy form with clusters of 1, 4 and 8 ran at fc888ff
 * (bench/results/experiments/mcast/call2-mcast-probe.jsonl). */
struct Variant {
    int cl;
    bool pdl, rows;
    int proj = 0; /* > 0: Wqkv and Wi on kn_gemm_split_small too, in proj fp32 parts that the glue and
                     GeGLU's stand-ins sum */
    int xm = -1;  /* >= 0: every own product on the replica with X copy form xm (PROBE_XCOPY) */
};

static kn_gemm_ctx *g_ctx;

/* An own product in Sp parts: the library's kernel, or the replica with X copy form v.xm. */
static void own_parts(cudaStream_t st, Variant v, const __half *X, const __half *W, float *P, int M, int N, int K,
                      int Sp)
{
    if (v.xm == 0)
        launch_xm<0>(st, X, W, P, M, N, K, Sp);
    else if (v.xm == 1)
        launch_xm<1>(st, X, W, P, M, N, K, Sp);
    else if (v.xm == 2)
        launch_xm<2>(st, X, W, P, M, N, K, Sp);
    else
        KOK(kn_gemm_split_small(kn_stream{st, v.pdl ? 1 : 0}, X, W, KN_F16, P, M, N, K, Sp));
}

static void parts(cudaStream_t st, Variant v, const __half *X, const __half *W, float *P, int M, int N, int K)
{
    if (v.xm == 3)
        launch_cl<1, true>(st, X, W, P, M, N, K, v.pdl);
    else if (v.xm >= 0)
        own_parts(st, v, X, W, P, M, N, K, S);
    else if (v.rows)
        KOK(kn_gemm_split_small(kn_stream{st, v.pdl ? 1 : 0}, X, W, KN_F16, P, M, N, K, S));
    else if (v.cl == 0)
        KOK(kn_gemm_split(g_ctx, kn_stream{st, 1}, X, W, KN_F16, P, M, N, K, S));
    else if (v.cl == 1)
        launch_cl<1>(st, X, W, P, M, N, K, v.pdl);
    else if (v.cl == 2)
        launch_cl<2>(st, X, W, P, M, N, K, v.pdl);
    else if (v.cl == 4)
        launch_cl<4>(st, X, W, P, M, N, K, v.pdl);
    else
        launch_cl<8>(st, X, W, P, M, N, K, v.pdl);
}

/* The projections' fp32 parts (PROBE_PROJ, PROBE_XCOPY) beside the common buffers. */
struct Bufs : SmallBufs {
    float *pqkv, *pu;
};

static void alloc_bufs(Bufs *b, int Mmax)
{
    alloc_small(b, Mmax, S);
    b->pqkv = fill32((size_t)4 * Mmax * QKV, 0.0f);
    b->pu = fill32((size_t)4 * Mmax * WI, 0.0f);
}

/* The glue's stand-in over fp32 parts: every column of the S parts of [M, W] summed (as a RoPE
 * over parts would, V included), n of them stored. */
__global__ void glue_parts_kernel(const float *P, int S, int MW, __half *out, int n)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < MW; i += gridDim.x * blockDim.x) {
        float v = P[i];
        for (int k = 1; k < S; k++)
            v += P[(size_t)k * MW + i];
        if (i < n)
            out[i] = __float2half(v);
    }
    asm volatile("griddepcontrol.launch_dependents;");
}

/* GeGLU over the S fp32 parts of U [M, 2F]. */
__global__ void geglu_parts_kernel(const float *P, int S, int M, int F, __half *out)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const size_t MW = (size_t)M * 2 * F;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < M * F; i += gridDim.x * blockDim.x) {
        const size_t m = i / F, f = i % F, a0 = m * 2 * F + f;
        float a = P[a0], g = P[a0 + F];
        for (int k = 1; k < S; k++)
            a += P[k * MW + a0], g += P[k * MW + a0 + F];
        out[i] = __float2half(0.5f * a * (1.0f + erff(a * 0.70710678f)) * g);
    }
    asm volatile("griddepcontrol.launch_dependents;");
}

/* A layer as the forward runs it at small packs, the two residual products on variant v (and with
 * v.proj, the two projections on the own kernel in parts). */
static void layer(cudaStream_t st, const Bufs *b, int l, Variant v)
{
    const kn_stream ks = {st, 1};
    const int M = b->M;
    if (v.proj) {
        own_parts(st, v, b->xn, b->wqkv[l], b->pqkv, M, QKV, HID, v.proj);
        CK(kn_launch(glue_parts_kernel, dim3(132), dim3(256), 0, ks, (const float *)b->pqkv, v.proj, M * QKV, b->att,
                     M * HID));
    } else {
        KOK(kn_gemm_ex(g_ctx, ks, b->xn, KN_F16, b->wqkv[l], KN_F16, NULL, KN_F32, b->qkv, KN_F16, M, QKV, HID,
                       KN_EPI_NONE));
        glue(st, b->qkv, b->att, M * HID);
    }
    parts(st, v, b->att, b->wo[l], b->parts, M, HID, HID);
    KOK(kn_layernorm_parts(ks, b->res, b->parts, S, (long)M * HID, NULL, b->lnw, NULL, b->xn, KN_F16, NULL, M, HID,
                           1e-5f));
    if (v.proj) {
        own_parts(st, v, b->xn, b->wi[l], b->pu, M, WI, HID, v.proj);
        CK(kn_launch(geglu_parts_kernel, dim3(132), dim3(256), 0, ks, (const float *)b->pu, v.proj, M, INNER, b->g));
    } else {
        KOK(kn_gemm_ex(g_ctx, ks, b->xn, KN_F16, b->wi[l], KN_F16, NULL, KN_F32, b->u, KN_F16, M, WI, HID,
                       KN_EPI_NONE));
        KOK(kn_geglu(ks, KN_F16, b->u, b->g, M, INNER));
    }
    parts(st, v, b->g, b->wo2[l], b->parts, M, HID, INNER);
    KOK(kn_layernorm_parts(ks, b->res, b->parts, S, (long)M * HID, NULL, b->lnw, NULL, b->xn, KN_F16, NULL, M, HID,
                           1e-5f));
}

/* max |a - ref| / max |ref| over n floats of device memory, and whether a equals b bitwise. */
static void compare(const float *a, const float *b, const float *ref, size_t n, double *rel, int *same)
{
    std::vector<float> ha(n), hb(n), hr(n);
    CK(cudaMemcpy(ha.data(), a, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), b, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hr.data(), ref, n * 4, cudaMemcpyDeviceToHost));
    double md = 0, mr = 0;
    for (size_t i = 0; i < n; i++) {
        md = std::max(md, (double)fabsf(ha[i] - hr[i]));
        mr = std::max(mr, (double)fabsf(hr[i]));
    }
    *rel = mr > 0 ? md / mr : md;
    *same = memcmp(ha.data(), hb.data(), n * 4) == 0;
}

/* The own product against the library's on layer 0's operands (K = HID and INNER). */
static void check(cudaStream_t st, const Bufs *b, Variant v)
{
    const int M = b->M;
    const size_t n = (size_t)S * M * HID;
    float *ref, *o1, *o2;
    CK(cudaMalloc(&ref, n * 4));
    CK(cudaMalloc(&o1, n * 4));
    CK(cudaMalloc(&o2, n * 4));
    for (int k = 0; k < 2; k++) {
        const __half *X = k ? b->g : b->att, *W = k ? b->wo2[0] : b->wo[0];
        const int K = k ? INNER : HID;
        CK(cudaMemset(o1, 0xff, n * 4)); /* NaN: a part left unwritten shows */
        CK(cudaMemset(o2, 0xff, n * 4));
        parts(st, Variant{0, true, false}, X, W, ref, M, HID, K);
        parts(st, v, X, W, o1, M, HID, K);
        Variant again = v;
        again.pdl = false;
        parts(st, again, X, W, o2, M, HID, K);
        CK(cudaStreamSynchronize(st));
        double rel;
        int same;
        compare(o1, o2, ref, n, &rel, &same);
        printf("{\"check\": \"%s\", \"M\": %d, \"cl\": %d, \"x\": \"%s\", \"max_rel_diff_vs_library\": %.3e, "
               "\"rerun_bitwise\": %s}\n",
               k ? "mlp_out" : "attn_out", M, v.cl, v.rows ? "library's" : "tensor boxes", rel,
               same ? "true" : "false");
    }
    CK(cudaFree(ref));
    CK(cudaFree(o1));
    CK(cudaFree(o2));
}

/* The replica's parts against the library kernel's, bit for bit (both products, and the
 * projections in one part). */
static void check_xm(cudaStream_t st, const Bufs *b, Variant v)
{
    const int M = b->M;
    const size_t n = (size_t)M * WI;
    float *lib, *rep;
    CK(cudaMalloc(&lib, n * 4));
    CK(cudaMalloc(&rep, n * 4));
    const struct { const char *name; const __half *X, *W; int N, K, Sp; } ps[] = {
        {"attn_out", b->att, b->wo[0], HID, HID, S}, {"mlp_out", b->g, b->wo2[0], HID, INNER, S},
        {"wqkv_1part", b->xn, b->wqkv[0], QKV, HID, 1}, {"wi_1part", b->xn, b->wi[0], WI, HID, 1}};
    for (const auto &p : ps) {
        if (!fits(M, p.K, p.Sp))
            continue;
        const size_t m = (size_t)p.Sp * M * p.N;
        CK(cudaMemset(lib, 0xff, m * 4));
        CK(cudaMemset(rep, 0xff, m * 4));
        KOK(kn_gemm_split_small(kn_stream{st, 1}, p.X, p.W, KN_F16, lib, M, p.N, p.K, p.Sp));
        own_parts(st, v, p.X, p.W, rep, M, p.N, p.K, p.Sp);
        CK(cudaStreamSynchronize(st));
        std::vector<float> hl(m), hr(m);
        CK(cudaMemcpy(hl.data(), lib, m * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hr.data(), rep, m * 4, cudaMemcpyDeviceToHost));
        printf("{\"check\": \"%s\", \"M\": %d, \"xm\": %d, \"bitwise_vs_library\": %s}\n", p.name, M, v.xm,
               memcmp(hl.data(), hr.data(), m * 4) == 0 ? "true" : "false");
    }
    CK(cudaFree(lib));
    CK(cudaFree(rep));
}

static void run_m(cudaStream_t st, Bufs *b, int M)
{
    b->M = M;
    prepare_small(g_ctx, st, b, S);
    const Variant all[] = {{0, true, false}, {2, true, true}, {2, false, true}, {1, true, false},
                           {2, true, false}, {4, true, false}, {8, true, false}, {0, true, false}};
    /* PROBE_PROJ=1: the projections' variants only (own residual products; projections on
     * cuBLASLt, or on the own kernel in 1, 2 or 4 parts) */
    const Variant proj[] = {{2, true, true}, {2, true, true, 1}, {2, true, true, 2}, {2, true, true, 4},
                            {2, true, true}, {2, true, true, 2}};
    /* PROBE_XCOPY=1: the X copy forms (cuBLASLt and the library around them; then Wqkv and Wi
     * on the own kernel too, in one part) */
    const Variant xc[] = {{0, true, false},       {2, true, true},        {1, true, false, 0, 0},
                          {1, true, false, 0, 1}, {1, true, false, 0, 2}, {1, true, false, 0, 3},
                          {2, true, true, 1},     {1, true, false, 1, 0}, {1, true, false, 1, 1},
                          {1, true, false, 1, 2}, {0, true, false}};
    const bool pj = getenv("PROBE_PROJ") != NULL, px = getenv("PROBE_XCOPY") != NULL;
    const Variant *vs = px ? xc : pj ? proj : all;
    const int nv = px ? 11 : pj ? 6 : 8;
    for (int i = 0; i < nv && !pj; i++)
        if (px && (vs[i].xm == 0 || vs[i].xm == 1) && !vs[i].proj)
            check_xm(st, b, vs[i]);
        else if (px ? vs[i].xm == 3 : vs[i].cl != 0)
            check(st, b, vs[i]);
    for (int i = 0; i < nv; i++) {
        const Variant &v = vs[i];
        if (v.proj && !fits(M, HID, v.proj))
            continue;
        const float alone_o = graph_us(st, 15, [&] {
            for (int l = 0; l < LAYERS; l++)
                parts(st, v, b->att, b->wo[l], b->parts, M, HID, HID);
        }) / LAYERS;
        const float alone_o2 = graph_us(st, 15, [&] {
            for (int l = 0; l < LAYERS; l++)
                parts(st, v, b->g, b->wo2[l], b->parts, M, HID, INNER);
        }) / LAYERS;
        const float chain = graph_us(st, 15, [&] {
            for (int l = 0; l < LAYERS; l++)
                layer(st, b, l, v);
        }) / LAYERS;
        static const char *const xname[] = {"replica, X by a flat chunk loop (the library's)",
                                            "replica, X a warp a row", "replica, no X copy (a bound)",
                                            "X by tensor boxes, one barrier, no cluster"};
        printf("{\"M\": %d, \"variant\": \"%s\", \"cl\": %d, \"pdl\": %s, \"proj_parts\": %d, "
               "\"attn_out_alone_us\": %.2f, \"mlp_out_alone_us\": %.2f, \"layer_chain_us\": %.2f}\n",
               M,
               v.xm >= 0 ? xname[v.xm]
               : !v.cl   ? "library (cuBLASLt split)"
               : v.rows  ? "library's own (kn_gemm_split_small)"
                         : "own, X by tensor boxes",
               v.cl,
               v.pdl ? "true" : "false", v.proj, alone_o, alone_o2, chain);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const std::vector<int> ms = probe_rows(argc, argv, {16, 32, 48, 64, 96, 128}, 16 * MAX_MT);
    cudaStream_t st;
    g_ctx = probe_setup(&st);
    set_smem_t<1>();
    set_smem_t<2>();
    set_smem_t<4>();
    set_smem_t<8>();
    set_smem_t<1, true>();
    Bufs b;
    alloc_bufs(&b, 16 * MAX_MT);
    CK(cudaDeviceSynchronize());
    for (int m : ms)
        run_m(st, &b, m);
    kn_gemm_ctx_destroy(g_ctx);
    return 0;
}
