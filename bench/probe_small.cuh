/*
 * probe_small.cuh - what the probes of the small-pack kernel (bench/mcast_probe.cu,
 * bench/fused_probe.cu) share beyond kernels/gemm_small.cuh: the X slice's copy by
 * cp.async in two forms (and none at all), whether the kernel's shared memory holds a slice, and a layer's buffers
 * with cuBLASLt's plans for them. Include after kernels/cuda.h and probe_common.cuh.
 */
#ifndef LAYAD_BENCH_PROBE_SMALL_CUH
#define LAYAD_BENCH_PROBE_SMALL_CUH

#include <cuda_fp16.h>

#include "kernels/gemm_small.cuh"

/* X's slice s (M rows of Ks columns of X [M, K]) into xs, 16 bytes a thread at a
 * time in one commit group, thread t taking chunks t, t + 128, ... of the slice: the
 * library's small split kernel's copy at 17-32 rows until its bulk copies went round
 * the warps (bench/results/experiments/bulk-spread/). One bulk copy a row, multicast to
 * a neighbour, was slower (bench/results/experiments/wide/). */
template <typename T>
__device__ __forceinline__ void so_load_x(const T *X, unsigned char *xs, int M, int K, int Ks, int s)
{
    const int rb = so_row_bytes(Ks), cpr = Ks / 8; /* 16-byte chunks a row */
    for (int i = threadIdx.x; i < M * cpr; i += blockDim.x) {
        const int m = i / cpr, c = i % cpr;
        cp_async16(xs + m * rb + 16 * c, X + (size_t)m * K + (size_t)s * Ks + 8 * c, true);
    }
    cp_async_commit();
}

/* The same copies with warp w taking rows w, w + 4, ... and its lanes a row's
 * consecutive chunks: no integer division a chunk (so_load_x's costs ~36
 * instructions a copy in the SASS; no faster on the H200:
 * bench/results/experiments/xcopy/). */
template <typename T>
__device__ __forceinline__ void so_load_x_rows(const T *X, unsigned char *xs, int M, int K, int Ks, int s)
{
    const int rb = so_row_bytes(Ks), cpr = Ks / 8; /* 16-byte chunks a row */
    const int lane = threadIdx.x % 32;
    for (int m = threadIdx.x / 32; m < M; m += SO_WARPS) {
        const T *src = X + (size_t)m * K + (size_t)s * Ks + 8 * lane;
        unsigned char *dst = xs + m * rb + 16 * lane;
        for (int c = lane; c < cpr; c += 32, src += 8 * 32, dst += 16 * 32)
            cp_async16(dst, src, true);
    }
    cp_async_commit();
}

/* The X slice's rows into xs (one commit group): XM 0, so_load_x (a flat index
 * over the slice's 16-byte chunks, an integer division a chunk); 1, so_load_x_rows (a warp a row,
 * its lanes along the row, no division; experiments/xcopy/xcopy.patch); 2, no copy at all (the
 * room keeps its zeros: wrong products, a bound on what any faster X delivery could give). */
template <int XM>
__device__ __forceinline__ void xm_load_x(const __half *X, unsigned char *xs, int M, int K, int Ks, int s)
{
    if (XM == 0) {
        so_load_x(X, xs, M, K, Ks, s);
    } else if (XM == 1) {
        so_load_x_rows(X, xs, M, K, Ks, s);
    } else {
        cp_async_commit();
    }
}

/* Whether the kernel's shared memory holds an M-row slice of K / Sp (a projection's one part
 * does not from 80 rows). */
static inline bool fits(int M, int K, int Sp) { return so_smem((M + 15) / 16, K / Sp) <= 227 * 1024; }

/* One pack's buffers and 28 layers of English weights (686 MB: nothing of a layer stays in L2
 * for the next replay). */
struct SmallBufs {
    int M;
    __half *wqkv[LAYERS], *wo[LAYERS], *wi[LAYERS], *wo2[LAYERS];
    __half *xn, *qkv, *att, *u, *g;
    float *res, *parts, *lnw;
};

static __half *fill16(size_t n, float scale, uint32_t seed)
{
    __half *p;
    CK(cudaMalloc(&p, n * 2));
    init_kernel<<<1024, 256>>>(p, n, scale, seed);
    CK(cudaGetLastError());
    return p;
}

static float *fill32(size_t n, float v)
{
    std::vector<float> h(n, v);
    float *p;
    CK(cudaMalloc(&p, n * 4));
    CK(cudaMemcpy(p, h.data(), n * 4, cudaMemcpyHostToDevice));
    return p;
}

/* Buffers for packs of up to Mmax rows, the branches in S parts. */
static void alloc_small(SmallBufs *b, int Mmax, int S)
{
    for (int l = 0; l < LAYERS; l++) {
        b->wqkv[l] = fill16((size_t)QKV * HID, 0.06f, 100 + l);
        b->wo[l] = fill16((size_t)HID * HID, 0.06f, 200 + l);
        b->wi[l] = fill16((size_t)WI * HID, 0.06f, 300 + l);
        b->wo2[l] = fill16((size_t)HID * INNER, 0.04f, 400 + l);
    }
    b->xn = fill16((size_t)Mmax * HID, 2.0f, 1);
    b->qkv = fill16((size_t)Mmax * QKV, 2.0f, 2);
    b->att = fill16((size_t)Mmax * HID, 2.0f, 3);
    b->u = fill16((size_t)Mmax * WI, 2.0f, 4);
    b->g = fill16((size_t)Mmax * INNER, 2.0f, 5);
    b->res = fill32((size_t)Mmax * HID, 0.5f);
    b->parts = fill32((size_t)S * Mmax * HID, 0.0f);
    b->lnw = fill32(HID, 1.0f);
}

/* The stream and the tuned cuBLASLt context the probes run on; exits on failure. */
static kn_gemm_ctx *probe_setup(cudaStream_t *st)
{
    CK(cudaStreamCreateWithFlags(st, cudaStreamNonBlocking));
    kn_gemm_ctx *ctx = kn_gemm_ctx_create(0, 0);
    if (!ctx) {
        fprintf(stderr, "kn_gemm_ctx_create failed\n");
        exit(1);
    }
    kn_gemm_ctx_set_tuning(ctx, 1);
    return ctx;
}

/* cuBLASLt's plans at b->M rows, tuned on layer 0's operands: the projections, and the branches
 * in S parts. */
static void prepare_small(kn_gemm_ctx *ctx, cudaStream_t st, const SmallBufs *b, int S)
{
    const kn_stream ks = {st, 1};
    const int M = b->M;
    KOK(kn_gemm_prepare(ctx, KN_F16, KN_F16, KN_F16, M, QKV, HID, KN_EPI_NONE, 0, ks, b->xn, b->wqkv[0], b->qkv));
    KOK(kn_gemm_prepare(ctx, KN_F16, KN_F16, KN_F16, M, WI, HID, KN_EPI_NONE, 0, ks, b->xn, b->wi[0], b->u));
    KOK(kn_gemm_prepare_split(ctx, KN_F16, M, HID, HID, S, ks, b->att, b->wo[0], b->parts) == 1 ? 0 : -1);
    KOK(kn_gemm_prepare_split(ctx, KN_F16, M, HID, INNER, S, ks, b->g, b->wo2[0], b->parts) == 1 ? 0 : -1);
    CK(cudaStreamSynchronize(st));
}

#endif
