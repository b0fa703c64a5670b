/*
 * layernorm_parts.cuh - one row's LayerNorm over a residual branch's split-K parts, for the two
 * kernels that run it: the LayerNorm over parts (kernels/layernorm.cu, D / 4 threads a row, one
 * 4-column chunk each) and the small split product's own LayerNorm phase (kernels/gemm_small.cu,
 * 128 threads a row, up to CH chunks each). Thread t's j-th chunk is chunk c = t + j blockDim.x,
 * whose warp sum is stored as that of "warp" c / 32 of the one-chunk form, and those sums are
 * added in that order: both kernels give a row the same bits. Internal to kernels/.
 */
#ifndef LAYAD_KERNELS_LAYERNORM_PARTS_CUH
#define LAYAD_KERNELS_LAYERNORM_PARTS_CUH

#include "kernels/cuda.h"
#include "kernels/cuda_util.cuh"

__device__ __forceinline__ double ln_warp_sum(double v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T> __device__ __forceinline__ void ln_store4(T *p, float4 v)
{
    typedef typename kn_pair<T>::type P;
    uint2 u;
    P *h = reinterpret_cast<P *>(&u);
    h[0] = kn_pack<T>(v.x, v.y);
    h[1] = kn_pack<T>(v.z, v.w);
    *reinterpret_cast<uint2 *>(p) = u;
}

/* A LayerNorm's last step for columns [d, d + 4): o = u rstd w (+ b[d]) to y16 and / or y32
 * at off + d. ROUND2: the bias added as its own rounding (__fadd_rn), as the LayerNorm over parts
 * has always rounded it; left alone, the compiler fuses that add into the last multiply in some
 * callers and not in others (the warp-row form's fused rounding stays as it was). */
template <bool ROUND2, typename TY>
__device__ __forceinline__ void ln_out4(float4 u, float rstd, float4 w, const float *b, int d, TY *y16, float *y32,
                                       size_t off)
{
    float4 o = make_float4(u.x * rstd * w.x, u.y * rstd * w.y, u.z * rstd * w.z, u.w * rstd * w.w);
    if (b) {
        const float4 c = *reinterpret_cast<const float4 *>(b + d);
        if (ROUND2)
            o = make_float4(__fadd_rn(o.x, c.x), __fadd_rn(o.y, c.y), __fadd_rn(o.z, c.z), __fadd_rn(o.w, c.w));
        else
            o.x += c.x, o.y += c.y, o.z += c.z, o.w += c.w;
    }
    if (y16)
        ln_store4(y16 + off + d, o);
    if (y32)
        *reinterpret_cast<float4 *>(y32 + off + d) = o;
}

/* The row's D / 128 chunk groups' sums of v, added in group order (every thread gets it); a
 * thread's chunks j < n hold values (n is the same across a warp). red holds a double per group
 * and serves one sum only (no barrier before its writes). */
template <int CH>
__device__ __forceinline__ double lnp_block_sum(const double (&v)[CH], int n, int groups, double *red)
{
    const int nw = (int)blockDim.x / 32, w = (int)threadIdx.x / 32;
#pragma unroll
    for (int j = 0; j < CH; j++)
        if (j < n) {
            const double s = ln_warp_sum(v[j]);
            if (threadIdx.x % 32 == 0)
                red[w + j * nw] = s;
        }
    __syncthreads();
    double t = 0.0;
    for (int i = 0; i < groups; i++) /* the same order in every thread: one value for all */
        t += red[i];
    return t;
}

/* The chunks of the row a thread owns: chunk j at column d(j) = 4 (t + j blockDim.x), for j < n.
 * one(): the one-chunk form (D / 4 threads: a group a warp), n a constant the compiler folds. */
struct lnp_chunks {
    int n, groups;
    __device__ __forceinline__ lnp_chunks(int D)
    {
        const int c = D / 4 - (int)threadIdx.x, b = (int)blockDim.x;
        n = c > 0 ? (c + b - 1) / b : 0;
        groups = D / 128;
    }
    __device__ __forceinline__ lnp_chunks(int n1, int g) : n(n1), groups(g) {}
    static __device__ __forceinline__ lnp_chunks one() { return lnp_chunks(1, ((int)blockDim.x + 31) / 32); }
    __device__ __forceinline__ int d(int j) const { return 4 * ((int)threadIdx.x + j * (int)blockDim.x); }
};

/* The fp32 scale w (and the branch bias bb) of a thread's chunks: weights, loadable before a wait. */
template <int CH>
__device__ __forceinline__ void lnp_weights(const lnp_chunks &ch, const float *w, const float *bb, float4 (&ww)[CH],
                                            float4 (&pb)[CH])
{
#pragma unroll
    for (int j = 0; j < CH; j++)
        if (j < ch.n) {
            ww[j] = *reinterpret_cast<const float4 *>(w + ch.d(j));
            pb[j] = bb ? *reinterpret_cast<const float4 *>(bb + ch.d(j)) : make_float4(0, 0, 0, 0);
        }
}

/*
 * Row m (at off = m D) from its residual v (read by the caller): r[m] = v + ((p[0] + p[1]) +
 * ...) + p[S-1] (+ bb), then y16 / y32 = LN(r[m]) w (+ b). The parts' loads are issued
 * together, after v's; FRESH: they skip L1 (the split kernel's phase reads parts that other
 * blocks wrote in the same launch). The statistics and why they take this form: above
 * layernorm_parts_kernel; 1 / D is formed by the caller (before the wait).
 */
template <typename TY, int CH, bool FRESH>
__device__ __forceinline__ void lnp_row(const lnp_chunks &ch, float4 (&v)[CH], const float4 (&ww)[CH],
                                        const float4 (&pb)[CH], bool has_bb, const float *parts, int S, long stride,
                                        float *r, const float *b, TY *y16, float *y32, size_t off, double inv_d,
                                        float eps, double (*red)[32])
{
    float4 p[CH][KN_GEMM_SPLIT_MAX];
#pragma unroll
    for (int j = 0; j < CH; j++)
#pragma unroll
        for (int s = 0; s < KN_GEMM_SPLIT_MAX; s++)
            if (j < ch.n && s < S) {
                const float4 *q = reinterpret_cast<const float4 *>(parts + s * stride + off + ch.d(j));
                p[j][s] = FRESH ? __ldcg(q) : *q;
            }
    double t[CH];
#pragma unroll
    for (int j = 0; j < CH; j++) {
        t[j] = 0.0;
        if (j >= ch.n)
            continue;
        float4 a = p[j][0];
#pragma unroll
        for (int s = 1; s < KN_GEMM_SPLIT_MAX; s++)
            if (s < S)
                a.x += p[j][s].x, a.y += p[j][s].y, a.z += p[j][s].z, a.w += p[j][s].w;
        if (has_bb)
            a.x += pb[j].x, a.y += pb[j].y, a.z += pb[j].z, a.w += pb[j].w;
        v[j].x += a.x, v[j].y += a.y, v[j].z += a.z, v[j].w += a.w;
        *reinterpret_cast<float4 *>(r + off + ch.d(j)) = v[j];
        t[j] = ((double)v[j].x + (double)v[j].y) + ((double)v[j].z + (double)v[j].w);
    }
    const double mean = lnp_block_sum<CH>(t, ch.n, ch.groups, red[0]) * inv_d;
    const float mh = (float)mean, ml = (float)(mean - (double)mh);
    float4 u[CH];
    double q[CH];
#pragma unroll
    for (int j = 0; j < CH; j++) {
        q[j] = 0.0;
        if (j >= ch.n)
            continue;
        u[j] = make_float4((v[j].x - mh) - ml, (v[j].y - mh) - ml, (v[j].z - mh) - ml, (v[j].w - mh) - ml);
        q[j] = (double)((u[j].x * u[j].x + u[j].y * u[j].y) + (u[j].z * u[j].z + u[j].w * u[j].w));
    }
    const float rstd = (float)rsqrt(lnp_block_sum<CH>(q, ch.n, ch.groups, red[1]) * inv_d + (double)eps);
#pragma unroll
    for (int j = 0; j < CH; j++)
        if (j < ch.n)
            ln_out4<true>(u[j], rstd, ww[j], b, ch.d(j), y16, y32, off);
}

#endif
