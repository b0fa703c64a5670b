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
 * All are memory-bound and tiny next to the GEMMs; each is one pass over its
 * output, shaped like its CPU sibling in kernels/head_ops_cpu.c:
 *   - scorer tail: one warp per row; lane l sums x[i] w[i] over i = l mod 32 in
 *     i order, then a fixed xor-tree reduction, + bias (fp32; the order differs
 *     from the CPU's 8 lanes only by rounding);
 *   - confidence features: one thread per question row, the CPU's loop as is
 *     over the row's own slots (at most a few hundred). A masked slot holds
 *     -1e4, so its p is exactly 0 and adds exactly nothing: the result over
 *     the row's slots equals the former one over a fixed K with masked
 *     padding slots, bit for bit;
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

template <typename T>
__global__ void scorer_tail_kernel(const T *__restrict__ x, const float *__restrict__ w,
                                   const float *__restrict__ bias, const uint8_t *__restrict__ mask,
                                   float *__restrict__ logits, int n, int D)
{
    kn_pdl_wait();
    const int i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (i >= n)
        return;
    if (!mask[i]) {
        if (lane == 0)
            logits[i] = -1e4f;
        return;
    }
    const T *xi = x + (size_t)i * D;
    float acc = 0.0f;
    for (int k = lane; k < D; k += 32)
        acc = fmaf(kn_f(xi[k]), w[k], acc);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0)
        logits[i] = acc + bias[0];
}

extern "C" int kn_scorer_tail(kn_stream ks, const void *x, kn_dtype xdt, const float *w,
                              const float *bias, const uint8_t *mask, float *logits, int n, int D)
{
    KN_REQUIRE(kn_isdt(xdt), "unknown dtype");
    KN_REQUIRE(n >= 0 && D > 0, "scorer tail needs n >= 0, D > 0");
    if (n == 0)
        return 0;
    KN_REQUIRE(x && w && bias && mask && logits, "NULL scorer buffer");
    const unsigned blocks = (unsigned)((n + 7) / 8);
    KN_DISPATCH(xdt, T, KN_CUDA(kn_launch(scorer_tail_kernel<T>, dim3(blocks), dim3(256), 0, ks, (const T *)x, w,
                                          bias, mask, logits, n, D)));
    KN_LAUNCHED();
    return 0;
}

/* One thread per row r over its slots [goff[r], goff[r+1]); an empty row gets zeros. */
__global__ void conf_features_kernel(const float *__restrict__ logits, const uint8_t *__restrict__ mask,
                                     const int32_t *__restrict__ goff, float *__restrict__ feats, int R)
{
    kn_pdl_wait();
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R)
        return;
    const int k0 = goff[r], k1 = goff[r + 1];
    float *f = feats + (size_t)r * 4;
    if (k1 <= k0) {
        f[0] = f[1] = f[2] = f[3] = 0.0f;
        return;
    }
    kn_conf_row(logits + k0, mask + k0, k1 - k0, f);
}

extern "C" int kn_conf_features(kn_stream ks, const float *logits, const uint8_t *mask,
                                const int32_t *goff, float *feats, int R)
{
    KN_REQUIRE(R >= 0, "confidence features need R >= 0");
    if (R == 0)
        return 0;
    KN_REQUIRE(logits && mask && goff && feats, "NULL feature buffer");
    KN_CUDA(kn_launch(conf_features_kernel, dim3((R + 63) / 64), dim3(64), 0, ks, logits, mask, goff, feats, R));
    KN_LAUNCHED();
    return 0;
}

/* out[r] = [h[goff[r]], feats[r]], or zeros where goff[r] == goff[r+1]. */
template <typename T>
__global__ void act_input_kernel(const float *__restrict__ h, const float *__restrict__ feats,
                                 const int32_t *__restrict__ goff, T *__restrict__ out, int D, size_t n)
{
    kn_pdl_wait();
    const int W = D + 4;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / W;
        const int c = (int)(i % W);
        const int g = goff[r];
        float v = 0.0f;
        if (goff[r + 1] > g)
            v = c < D ? h[(size_t)g * D + c] : feats[r * 4 + (c - D)];
        out[i] = kn_from<T>(v);
    }
}

extern "C" int kn_act_input(kn_stream ks, const float *h, const float *feats, const int32_t *goff,
                            void *out, kn_dtype odt, int R, int D)
{
    KN_REQUIRE(kn_isdt(odt), "unknown dtype");
    KN_REQUIRE(R >= 0 && D > 0, "act input needs R >= 0, D > 0");
    const size_t n = (size_t)R * (D + 4);
    if (n == 0)
        return 0;
    KN_REQUIRE(h && feats && goff && out, "NULL act-input buffer");
    KN_DISPATCH(odt, T, KN_CUDA(kn_launch(act_input_kernel<T>, dim3(kn_blocks(n, 256, 1024)), dim3(256), 0, ks, h,
                                          feats, goff, (T *)out, D, n)));
    KN_LAUNCHED();
    return 0;
}
