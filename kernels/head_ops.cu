/*
 * head_ops.cu - the decision head's small ops (laya-model.md §5) on the GPU:
 * type-embedding add, row gather (CLS and markers), scorer tail (d -> 1 with
 * the -1e4 fill), the four confidence features and the act-head input.
 *
 * Packed layout (kernels/cuda.h): per-token ops take one value per slot (the
 * type id of the slot's row), the gather takes absolute slot indices, and the
 * per-question ops take goff[R+1], row r's gathered slots goff[r] ..
 * goff[r+1]-1 (its CLS, then its markers); an empty range is a padding row
 * and gets zeros, so a graph captured for R rows serves fewer.
 *
 * All are memory-bound and tiny next to the GEMMs, shaped like their CPU
 * siblings in kernels/head_ops_cpu.c:
 *   - the decision tail (scorer d -> 1, confidence features, act-head input)
 *     is one launch of one block per question row: the chain of three small
 *     passes it replaced cost a launch boundary each at the end of every
 *     forward. In it the scorer output is one warp per slot; lane l sums
 *     x[i] w[i] over i = l mod 32 in i order, then a fixed xor-tree
 *     reduction, + bias (fp32; the order differs from the CPU's 8 lanes only
 *     by rounding). The features are one thread's run of the CPU's loop over
 *     the row's own slots (at most a few hundred). A masked slot holds -1e4,
 *     so its p is exactly 0 and adds exactly nothing: the result over the
 *     row's slots equals the former one over a fixed K with masked padding
 *     slots, bit for bit;
 *   - the rest element-wise.
 */
#include "kernels/conf_features.h"
#include "kernels/cuda_util.cuh"

__global__ void type_emb_kernel(float *h, const float *__restrict__ te, const int32_t *__restrict__ ttype,
                                int D, size_t n)
{
    kn_pdl_wait();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t m = i / D;
        const int d = (int)(i % D);
        h[i] = h[i] + te[(size_t)ttype[m] * D + d];
    }
}

extern "C" int kn_add_type_emb(kn_stream ks, float *h, const float *type_emb, const int32_t *ttype,
                               int M, int D)
{
    KN_REQUIRE(M >= 0 && D > 0, "type embedding needs M >= 0, D > 0");
    const size_t n = (size_t)M * D;
    if (n == 0)
        return 0;
    KN_REQUIRE(h && type_emb && ttype, "NULL type-embedding buffer");
    KN_CUDA(kn_launch(type_emb_kernel, dim3(kn_blocks(n, 256, 132 * 16)), dim3(256), 0, ks, h, type_emb, ttype,
                      D, n));
    KN_LAUNCHED();
    return 0;
}

template <typename T>
__global__ void gather_kernel(const T *__restrict__ h, const int32_t *__restrict__ idx, T *__restrict__ out,
                              int D, size_t n)
{
    kn_pdl_wait();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t g = i / D;
        const int d = (int)(i % D);
        out[i] = h[(size_t)idx[g] * D + d];
    }
}

extern "C" int kn_gather_rows(kn_stream ks, kn_dtype dt, const void *h, const int32_t *idx, void *out,
                              int G, int D)
{
    KN_REQUIRE(kn_isdt(dt), "unknown dtype");
    KN_REQUIRE(G >= 0 && D > 0, "gather needs G >= 0, D > 0");
    const size_t n = (size_t)G * D;
    if (n == 0)
        return 0;
    KN_REQUIRE(h && idx && out, "NULL gather buffer");
    KN_DISPATCH(dt, T, KN_CUDA(kn_launch(gather_kernel<T>, dim3(kn_blocks(n, 256, 132 * 16)), dim3(256), 0, ks,
                                         (const T *)h, idx, (T *)out, D, n)));
    KN_LAUNCHED();
    return 0;
}

/* logits[g] = mask[g] ? dot(x[g, :], w) + bias : -1e4, by one warp: lane l
 * sums i = l mod 32 in i order, then a fixed xor tree. */
__device__ __forceinline__ void tail_logit(const float *__restrict__ x, const float *__restrict__ w, float bias,
                                           const uint8_t *__restrict__ mask, float *__restrict__ logits, int g,
                                           int D, int lane)
{
    if (!mask[g]) {
        if (lane == 0)
            logits[g] = -1e4f;
        return;
    }
    const float *xg = x + (size_t)g * D;
    float acc = 0.0f;
    for (int k = lane; k < D; k += 32)
        acc = fmaf(xg[k], w[k], acc);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0)
        logits[g] = acc + bias;
}

/* Block r: the logits of row r's slots (the last block also those past every
 * row, the first those before), then row r's features and act-head input.
 * The block's own writes are visible to it after the barrier, so one launch
 * does what the three separate passes did, with the same arithmetic. */
__global__ void __launch_bounds__(256)
decision_tail_kernel(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ bias,
                     const uint8_t *__restrict__ mask, const float *__restrict__ h,
                     const int32_t *__restrict__ goff, float *__restrict__ logits, float *__restrict__ act_in,
                     int G, int R, int D)
{
    __shared__ float f[4];
    kn_pdl_wait();
    const int r = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    const int k0 = goff[r], k1 = goff[r + 1];
    const int g0 = r == 0 ? 0 : k0, g1 = r == R - 1 ? G : k1;
    const float b = bias[0];
    for (int g = g0 + warp; g < g1; g += warps)
        tail_logit(x, w, b, mask, logits, g, D, lane);
    __syncthreads();
    if (threadIdx.x == 0 && k1 > k0)
        kn_conf_row(logits + k0, mask + k0, k1 - k0, f);
    __syncthreads();
    float *out = act_in + (size_t)r * (D + 4);
    for (int c = threadIdx.x; c < D + 4; c += blockDim.x)
        out[c] = k1 > k0 ? (c < D ? h[(size_t)k0 * D + c] : f[c - D]) : 0.0f;
}

extern "C" int kn_decision_tail(kn_stream ks, const float *x, const float *w, const float *bias,
                                const uint8_t *mask, const float *h, const int32_t *goff, float *logits,
                                float *act_in, int G, int R, int D)
{
    KN_REQUIRE(G >= 0 && R >= 1 && D > 0, "decision tail needs G >= 0, R >= 1, D > 0");
    KN_REQUIRE(x && w && bias && mask && h && goff && logits && act_in, "NULL decision-tail buffer");
    KN_CUDA(kn_launch(decision_tail_kernel, dim3(R), dim3(256), 0, ks, x, w, bias, mask, h, goff, logits, act_in,
                      G, R, D));
    KN_LAUNCHED();
    return 0;
}
