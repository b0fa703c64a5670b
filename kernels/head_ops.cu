/*
 * head_ops.cu - the decision head's small ops (laya-model.md §5) on the GPU:
 * type-embedding add, row gather (markers), scorer tail (d -> 1 with the -1e4
 * fill), the four confidence features and the act-head input.
 *
 * All are memory-bound and tiny next to the GEMMs; each is one pass over its
 * output, shaped like its CPU sibling in kernels/head_ops_cpu.c:
 *   - scorer tail: one warp per row; lane l sums x[i] w[i] over i = l mod 32 in
 *     i order, then a fixed xor-tree reduction, + bias (fp32; the order differs
 *     from the CPU's 8 lanes only by rounding);
 *   - confidence features: one thread per question row, the CPU's loop as is
 *     (K is at most a few hundred slots);
 *   - the rest element-wise.
 */
#include "kernels/cuda_util.cuh"

__global__ void type_emb_kernel(float *h, const float *__restrict__ te, const int32_t *__restrict__ qtype,
                                int L, int D, size_t n)
{
    kn_pdl_wait();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / D;
        const int d = (int)(i % D);
        h[i] = h[i] + te[(size_t)qtype[row / L] * D + d];
    }
}

extern "C" int kn_add_type_emb(cudaStream_t s, float *h, const float *type_emb, const int32_t *qtype,
                               int B, int L, int D)
{
    KN_REQUIRE(B >= 0 && L >= 0 && D > 0, "type embedding needs B, L >= 0, D > 0");
    const size_t n = (size_t)B * L * D;
    if (n == 0)
        return 0;
    KN_REQUIRE(h && type_emb && qtype, "NULL type-embedding buffer");
    KN_CUDA(kn_launch(type_emb_kernel, dim3(kn_blocks(n, 256, 132 * 16)), dim3(256), 0, s, h, type_emb, qtype, L, D, n));
    KN_LAUNCHED();
    return 0;
}

template <typename T>
__global__ void gather_kernel(const T *__restrict__ h, const int32_t *__restrict__ pos, T *__restrict__ out,
                              int L, int K, int D, size_t n)
{
    kn_pdl_wait();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / D;
        const int d = (int)(i % D);
        const size_t b = r / K;
        out[i] = h[(b * L + (size_t)pos[r]) * D + d];
    }
}

extern "C" int kn_gather_rows(cudaStream_t s, kn_dtype dt, const void *h, const int32_t *pos, void *out,
                              int B, int L, int K, int D)
{
    KN_REQUIRE(kn_isdt(dt), "unknown dtype");
    KN_REQUIRE(B >= 0 && L > 0 && K >= 0 && D > 0, "gather needs B, K >= 0, L, D > 0");
    const size_t n = (size_t)B * K * D;
    if (n == 0)
        return 0;
    KN_REQUIRE(h && pos && out, "NULL gather buffer");
    KN_DISPATCH(dt, T, KN_CUDA(kn_launch(gather_kernel<T>, dim3(kn_blocks(n, 256, 132 * 16)), dim3(256), 0, s, 
                           (const T *)h, pos, (T *)out, L, K, D, n)));
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

extern "C" int kn_scorer_tail(cudaStream_t s, const void *x, kn_dtype xdt, const float *w,
                              const float *bias, const uint8_t *mask, float *logits, int n, int D)
{
    KN_REQUIRE(kn_isdt(xdt), "unknown dtype");
    KN_REQUIRE(n >= 0 && D > 0, "scorer tail needs n >= 0, D > 0");
    if (n == 0)
        return 0;
    KN_REQUIRE(x && w && bias && mask && logits, "NULL scorer buffer");
    const unsigned blocks = (unsigned)((n + 7) / 8);
    KN_DISPATCH(xdt, T, KN_CUDA(kn_launch(scorer_tail_kernel<T>, dim3(blocks), dim3(256), 0, s, (const T *)x, w, bias, mask,
                                                                      logits, n, D)));
    KN_LAUNCHED();
    return 0;
}

__global__ void conf_features_kernel(const float *__restrict__ logits, const uint8_t *__restrict__ mask,
                                     float *__restrict__ feats, int B, int K)
{
    kn_pdl_wait();
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= B)
        return;
    const float *z = logits + (size_t)b * K;
    int live = 0;
    float mx = -INFINITY;
    for (int k = 0; k < K; k++) {
        live += mask[(size_t)b * K + k] != 0;
        mx = z[k] > mx ? z[k] : mx;
    }
    float sum = 0.0f;
    for (int k = 0; k < K; k++)
        sum += expf(z[k] - mx);
    float ent = 0.0f, top1 = 0.0f, top2 = 0.0f;
    for (int k = 0; k < K; k++) {
        const float p = expf(z[k] - mx) / sum;
        ent += p * logf(p > 1e-9f ? p : 1e-9f);
        if (p > top1) {
            top2 = top1;
            top1 = p;
        } else if (p > top2) {
            top2 = p;
        }
    }
    const float kk = (float)(live > 2 ? live : 2);
    float *f = feats + (size_t)b * 4;
    f[0] = top1;
    f[1] = top1 - top2;
    f[2] = -ent / logf(kk);
    f[3] = kk / 255.0f;
}

extern "C" int kn_conf_features(cudaStream_t s, const float *logits, const uint8_t *mask, float *feats,
                                int B, int K)
{
    KN_REQUIRE(B >= 0 && K > 0, "confidence features need B >= 0, K > 0");
    if (B == 0)
        return 0;
    KN_REQUIRE(logits && mask && feats, "NULL feature buffer");
    KN_CUDA(kn_launch(conf_features_kernel, dim3((B + 63) / 64), dim3(64), 0, s, logits, mask, feats, B, K));
    KN_LAUNCHED();
    return 0;
}

template <typename T>
__global__ void act_input_kernel(const float *__restrict__ h, const float *__restrict__ feats,
                                 T *__restrict__ out, int L, int D, size_t n)
{
    kn_pdl_wait();
    const int W = D + 4;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t b = i / W;
        const int c = (int)(i % W);
        const float v = c < D ? h[b * L * (size_t)D + c] : feats[b * 4 + (c - D)];
        out[i] = kn_from<T>(v);
    }
}

extern "C" int kn_act_input(cudaStream_t s, const float *h, const float *feats, void *out, kn_dtype odt,
                            int B, int L, int D)
{
    KN_REQUIRE(kn_isdt(odt), "unknown dtype");
    KN_REQUIRE(B >= 0 && L > 0 && D > 0, "act input needs B >= 0, L, D > 0");
    const size_t n = (size_t)B * (D + 4);
    if (n == 0)
        return 0;
    KN_REQUIRE(h && feats && out, "NULL act-input buffer");
    KN_DISPATCH(odt, T, KN_CUDA(kn_launch(act_input_kernel<T>, dim3(kn_blocks(n, 256, 1024)), dim3(256), 0, s, h, feats, (T *)out,
                                                                                   L, D, n)));
    KN_LAUNCHED();
    return 0;
}
