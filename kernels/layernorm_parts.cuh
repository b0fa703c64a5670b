/*
 * layernorm_parts.cuh - one row of the LayerNorm over a split residual branch's
 * partial products (kn_layernorm_parts, kernels/layernorm.cu). Internal to kernels/.
 *
 * The body is written for a block of B threads playing the D / 4 threads of a row,
 * VT of them a thread (virtual threads t, t + B, ..., each owning 4 columns; the
 * block sums add the virtual warps' sums in virtual-warp order), so that a kernel
 * normalizing rows with fewer threads gets the same bits. It was written for the
 * small split product with its LayerNorm in one launch, measured slower on the H200
 * and removed (bench/results/experiments/README.md; the kernel stays in 902b2c9);
 * layernorm.cu runs it with VT = 1.
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

/* The first column of this thread's virtual thread j. With VT == 1 the block is
 * D / 4 threads and every thread is in the row (no test is compiled). */
template <int VT> __device__ __forceinline__ int lnp_col(int j) { return 4 * (threadIdx.x + blockDim.x * j); }
template <int VT> __device__ __forceinline__ bool lnp_in(int j, int D) { return VT == 1 || lnp_col<VT>(j) < D; }

/* 16 bytes of a row. */
__device__ __forceinline__ float4 lnp_ld4(const float *p) { return *reinterpret_cast<const float4 *>(p); }

/* The scale w and the branch's bias bb (or zeros) of this thread's columns:
 * weights, so they may be read before the programmatic wait. */
template <int VT>
__device__ __forceinline__ void lnp_consts(const float *w, const float *bb, int D, float4 (&ww)[VT], float4 (&pb)[VT])
{
#pragma unroll
    for (int j = 0; j < VT; j++)
        if (lnp_in<VT>(j, D)) {
            ww[j] = *reinterpret_cast<const float4 *>(w + lnp_col<VT>(j));
            pb[j] = bb ? *reinterpret_cast<const float4 *>(bb + lnp_col<VT>(j)) : make_float4(0, 0, 0, 0);
        }
}

/* v summed over the row's virtual threads (every thread gets it); red holds one
 * double per virtual warp and serves one sum only (no barrier before its writes). */
template <int VT> __device__ __forceinline__ double lnp_block_sum(const double (&v)[VT], double *red, int D)
{
    const int warp = threadIdx.x / 32, bw = blockDim.x / 32;
    const int nw = VT == 1 ? (blockDim.x + 31) / 32 : D / 128;
#pragma unroll
    for (int j = 0; j < VT; j++)
        if (VT == 1 || warp + bw * j < nw) {
            const double s = ln_warp_sum(v[j]);
            if (threadIdx.x % 32 == 0)
                red[warp + bw * j] = s;
        }
    __syncthreads();
    double t = 0.0;
    for (int i = 0; i < nw; i++) /* the same order in every thread: one value for all */
        t += red[i];
    return t;
}

/*
 * The row at off (= m D) given its residual v (read by the caller): r[m] = v +
 * ((p[0] + p[1]) + ...) + p[S-1] (+ bb), then y16 / y32 = LN(r[m]) w (+ b). The
 * parts' loads are issued together, after v's. The statistics: a double row sum,
 * deviations against the mean split into two floats (mh + ml), squares per
 * 4-column chunk in fp32 and their sum in double; 1 / D is formed by the caller
 * (before the wait) and the scale is one rsqrt. Why this form and not divisions
 * and 1 / sqrt: kernels/layernorm.cu, above layernorm_parts_kernel.
 */
template <typename TY, int VT>
__device__ __forceinline__ void lnp_row(float4 (&v)[VT], const float4 (&ww)[VT], const float4 (&pb)[VT],
                                        const float *bb, const float *parts, int S, long stride, float *r,
                                        const float *b, TY *y16, float *y32, size_t off, int D, double inv_d,
                                        float eps, double (*red)[32])
{
    float4 p[VT][KN_GEMM_SPLIT_MAX];
    double t[VT];
#pragma unroll
    for (int j = 0; j < VT; j++)
#pragma unroll
        for (int s = 0; s < KN_GEMM_SPLIT_MAX; s++)
            if (lnp_in<VT>(j, D) && s < S)
                p[j][s] = lnp_ld4(parts + s * stride + off + lnp_col<VT>(j));
#pragma unroll
    for (int j = 0; j < VT; j++) {
        t[j] = 0.0;
        if (!lnp_in<VT>(j, D))
            continue;
        float4 a = p[j][0];
#pragma unroll
        for (int s = 1; s < KN_GEMM_SPLIT_MAX; s++)
            if (s < S)
                a.x += p[j][s].x, a.y += p[j][s].y, a.z += p[j][s].z, a.w += p[j][s].w;
        if (bb)
            a.x += pb[j].x, a.y += pb[j].y, a.z += pb[j].z, a.w += pb[j].w;
        v[j].x += a.x, v[j].y += a.y, v[j].z += a.z, v[j].w += a.w;
        *reinterpret_cast<float4 *>(r + off + lnp_col<VT>(j)) = v[j];
        t[j] = ((double)v[j].x + (double)v[j].y) + ((double)v[j].z + (double)v[j].w);
    }
    const double mean = lnp_block_sum<VT>(t, red[0], D) * inv_d;
    const float mh = (float)mean, ml = (float)(mean - (double)mh);
#pragma unroll
    for (int j = 0; j < VT; j++) {
        float4 &u = v[j];
        u = make_float4((u.x - mh) - ml, (u.y - mh) - ml, (u.z - mh) - ml, (u.w - mh) - ml);
        t[j] = lnp_in<VT>(j, D) ? (double)((u.x * u.x + u.y * u.y) + (u.z * u.z + u.w * u.w)) : 0.0;
    }
    const float rstd = (float)rsqrt(lnp_block_sum<VT>(t, red[1], D) * inv_d + (double)eps);
#pragma unroll
    for (int j = 0; j < VT; j++) {
        if (!lnp_in<VT>(j, D))
            continue;
        const int d = lnp_col<VT>(j);
        const float4 u = v[j], g = ww[j];
        float4 o = make_float4(u.x * rstd * g.x, u.y * rstd * g.y, u.z * rstd * g.z, u.w * rstd * g.w);
        if (b) {
            const float4 c = *reinterpret_cast<const float4 *>(b + d);
            o.x += c.x, o.y += c.y, o.z += c.z, o.w += c.w;
        }
        if (y16)
            ln_store4(y16 + off + d, o);
        if (y32)
            *reinterpret_cast<float4 *>(y32 + off + d) = o;
    }
}

#endif
