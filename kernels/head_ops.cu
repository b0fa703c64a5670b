/*
 * head_ops.cu - the decision head's small ops (laya-model.md §5) on the GPU:
 * row gather (CLS and markers), scorer tail (d -> 1 with the -1e4 fill), the
 * four confidence features and the act-head input (the type embedding is added
 * in the first head LayerNorm's kernel, kn_type_emb_layernorm).
 *
 * Packed layout (kernels/cuda.h): the gather takes absolute slot indices, and
 * the per-question ops take goff[R+1], row r's gathered slots goff[r] ..
 * goff[r+1]-1 (its CLS, then its markers); an empty range is a padding row
 * and gets zeros, so a graph captured for R rows serves fewer.
 *
 * All are memory-bound and tiny next to the GEMMs, shaped like their CPU
 * siblings in kernels/head_ops_cpu.c:
 *   - the decision tail (scorer d -> 1, confidence features, act-head input)
 *     is one launch of one block per question row: the chain of three small
 *     passes it replaced cost a launch boundary each at the end of every
 *     forward. In it the scorer output is one warp per slot; lane l sums
 *     x[i] w[i] over its groups of four i = 4 (l + 32 j) .. + 3 in i order
 *     with all of a pass's loads in flight, then a fixed xor-tree reduction,
 *     + bias (fp32; the order differs from the CPU's 8 lanes only by
 *     rounding). Under Nsight Compute the strided one-element-per-step loop
 *     it replaced made the tail a 9 us launch at 83 tokens: a memory round
 *     trip per step (5.9 us after, same measurement:
 *     bench/results/experiments/cutlass-pdl/call2-launch-1x83.txt). The features are one thread's run of the CPU's loop over
 *     the row's own slots (at most a few hundred). A masked slot holds -1e4,
 *     so its p is exactly 0 and adds exactly nothing: the result over the
 *     row's slots equals the former one over a fixed K with masked padding
 *     slots, bit for bit;
 *   - the rest element-wise.
 */
#include "kernels/conf_features.h"
#include "kernels/cuda_util.cuh"

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
    int sms = 0;
    if (kn_sms(&sms))
        return -1;
    KN_DISPATCH(dt, T, KN_CUDA(kn_launch(gather_kernel<T>, dim3(kn_blocks(n, 256, (unsigned)sms * 16)), dim3(256), 0, ks,
                                         (const T *)h, idx, (T *)out, D, n)));
    KN_LAUNCHED();
    return 0;
}

#define TAIL_U 8    /* 4-element groups a lane has in flight per pass */
#define TAIL_HC 4   /* act-input elements a thread holds in registers while the logits run */
#define TAIL_ZS 256 /* a row's slots whose logits and mask the features read from shared memory */

/* dot(x[0, D), w) by one warp, lane l summing its groups of four at 4 (l + 32 i)
 * in i order, then a fixed xor tree: TAIL_U groups' loads are issued before the
 * first product, so a 1024-wide dot is one memory round trip, not one per step
 * of a strided loop. VEC: 16-byte loads (D % 4 == 0, x and w 16-byte aligned). */
template <bool VEC>
__device__ __forceinline__ float tail_dot(const float *__restrict__ x, const float *__restrict__ w, int D, int lane)
{
    float acc = 0.0f;
    for (int base = 4 * lane; base < D; base += 128 * TAIL_U) {
        float4 xv[TAIL_U], wv[TAIL_U];
#pragma unroll
        for (int u = 0; u < TAIL_U; u++) {
            const int k = base + 128 * u;
            if constexpr (VEC) {
                xv[u] = k < D ? *reinterpret_cast<const float4 *>(x + k) : make_float4(0, 0, 0, 0);
                wv[u] = k < D ? *reinterpret_cast<const float4 *>(w + k) : make_float4(0, 0, 0, 0);
            } else {
                xv[u] = make_float4(k < D ? x[k] : 0, k + 1 < D ? x[k + 1] : 0, k + 2 < D ? x[k + 2] : 0,
                                    k + 3 < D ? x[k + 3] : 0);
                wv[u] = make_float4(k < D ? w[k] : 0, k + 1 < D ? w[k + 1] : 0, k + 2 < D ? w[k + 2] : 0,
                                    k + 3 < D ? w[k + 3] : 0);
            }
        }
#pragma unroll
        for (int u = 0; u < TAIL_U; u++) {
            const int k = base + 128 * u;
            if (k < D) /* past D nothing is added, not even a zero product */
                acc = fmaf(xv[u].w, wv[u].w, fmaf(xv[u].z, wv[u].z, fmaf(xv[u].y, wv[u].y, fmaf(xv[u].x, wv[u].x, acc))));
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    return acc;
}

/* Block r: the logits of row r's slots (the last block also those past every
 * row, the first those before), then row r's features and act-head input. The
 * row's h values are loaded into registers before the logits so both round
 * trips overlap; the row's logits and mask are also kept in shared memory for
 * the features' three passes. The block's own writes are visible to it after
 * the barrier, so one launch does what three separate passes did, with the
 * same arithmetic for the features. */
template <bool VEC>
__global__ void __launch_bounds__(256)
decision_tail_kernel(const float *__restrict__ x, const float *__restrict__ w, const float *__restrict__ bias,
                     const uint8_t *__restrict__ mask, const float *__restrict__ h,
                     const int32_t *__restrict__ goff, float *__restrict__ logits, float *__restrict__ act_in,
                     int G, int R, int D)
{
    __shared__ float zs[TAIL_ZS];
    __shared__ uint8_t ms[TAIL_ZS];
    const int r = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    const int k0 = goff[r], k1 = goff[r + 1]; /* staged input: readable before the wait */
    const int g0 = r == 0 ? 0 : k0, g1 = r == R - 1 ? G : k1;
    kn_pdl_wait();
    float hv[TAIL_HC];
#pragma unroll
    for (int i = 0; i < TAIL_HC; i++) {
        const int c = threadIdx.x + i * blockDim.x;
        hv[i] = k1 > k0 && c < D ? h[(size_t)k0 * D + c] : 0.0f;
    }
    const float b = bias[0];
    for (int g = g0 + warp; g < g1; g += warps) {
        const uint8_t live = mask[g];
        const float z = live ? tail_dot<VEC>(x + (size_t)g * D, w, D, lane) + b : -1e4f;
        if (lane == 0) {
            logits[g] = z;
            if (g >= k0 && g - k0 < TAIL_ZS)
                zs[g - k0] = z, ms[g - k0] = live;
        }
    }
    __syncthreads();
    float *out = act_in + (size_t)r * (D + 4);
    if (threadIdx.x == 0) {
        float f[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (k1 > k0) {
            const bool shared = k1 - k0 <= TAIL_ZS;
            kn_conf_row(shared ? zs : logits + k0, shared ? ms : mask + k0, k1 - k0, f);
        }
        for (int i = 0; i < 4; i++)
            out[D + i] = f[i];
    }
#pragma unroll
    for (int i = 0; i < TAIL_HC; i++) {
        const int c = threadIdx.x + i * blockDim.x;
        if (c < D)
            out[c] = hv[i];
    }
    for (int c = threadIdx.x + TAIL_HC * blockDim.x; c < D; c += blockDim.x) /* D beyond 1024 */
        out[c] = k1 > k0 ? h[(size_t)k0 * D + c] : 0.0f;
}

extern "C" int kn_decision_tail(kn_stream ks, const float *x, const float *w, const float *bias,
                                const uint8_t *mask, const float *h, const int32_t *goff, float *logits,
                                float *act_in, int G, int R, int D)
{
    KN_REQUIRE(G >= 0 && R >= 1 && D > 0, "decision tail needs G >= 0, R >= 1, D > 0");
    KN_REQUIRE(x && w && bias && mask && h && goff && logits && act_in, "NULL decision-tail buffer");
    if (D % 4 == 0 && kn_aligned16(x) && kn_aligned16(w))
        KN_CUDA(kn_launch(decision_tail_kernel<true>, dim3(R), dim3(256), 0, ks, x, w, bias, mask, h, goff, logits,
                          act_in, G, R, D));
    else
        KN_CUDA(kn_launch(decision_tail_kernel<false>, dim3(R), dim3(256), 0, ks, x, w, bias, mask, h, goff, logits,
                          act_in, G, R, D));
    KN_LAUNCHED();
    return 0;
}
