/*
 * wgmma_att_probe.cu - do Hopper's warpgroup MMAs give the attention's two
 * products bit for bit what its mma.sync steps give? (GPU machine.)
 *
 * The attention (kernels/attention.cu) spends ~100 of a 64-key step's ~460
 * instructions a warp on 68 mma.sync and 32 ldmatrix. wgmma does the same
 * products in 8 instructions a warp with both operands of S = Q K^T and V of
 * P V read from shared memory by the tensor cores. A wgmma attention can sit
 * beside the mma.sync forms (small packs, the selection) only if a query's
 * bits do not depend on which ran it, so this probe asks first: on random
 * tiles of many scales, for fp16 and bf16,
 *   - S: 4 chained mma.sync k-steps from zero (the kernel's order) against 4
 *     chained wgmma m64n64k16 (Q and K K-major, 128-byte swizzle);
 *   - O += P V on a nonzero O: mma.sync with V by ldmatrix.trans against wgmma
 *     with P from registers and V MN-major (read transposed);
 * counting the elements that differ in any bit, and each path's largest error
 * against a double-precision product (a layout or descriptor error shows
 * there). It then times both forms of one tile step over many tiles.
 *
 * Usage: wgmma_att_probe [tiles]   (exit 0; the verdict is in what it prints)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bench/bench_check.cuh"
#include "kernels/mma.cuh"
#include "kernels/wgmma.cuh"

enum { TL = 64, LD = 72, TILE = TL * TL };

/* A tile's shared copies: padded rows for ldmatrix, swizzled for wgmma. */
template <typename T> struct probe_smem {
    __align__(1024) uint8_t qw[TILE * 2];
    __align__(1024) uint8_t kw[TILE * 2];
    __align__(1024) uint8_t vw[TILE * 2];
    __align__(16) T qs[TL][LD];
    __align__(16) T ks[TL][LD];
    __align__(16) T vs[TL][LD];
};

template <typename T> __device__ void probe_fill(probe_smem<T> &sm, const T *q, const T *k, const T *v)
{
    for (int e = threadIdx.x; e < TILE; e += blockDim.x) {
        const int r = e / TL, c = e % TL;
        sm.qs[r][c] = q[e], sm.ks[r][c] = k[e], sm.vs[r][c] = v[e];
        *reinterpret_cast<T *>(sm.qw + kn_sw128(r, c)) = q[e];
        *reinterpret_cast<T *>(sm.kw + kn_sw128(r, c)) = k[e];
        *reinterpret_cast<T *>(sm.vw + kn_sw128(r, c)) = v[e];
    }
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* generic-proxy writes seen by wgmma */
    __syncthreads();
}

/* S by the attention's mma.sync steps (its fragment code, attention.cu att_step). */
template <typename T> __device__ void s_mma(const probe_smem<T> &sm, float (&sc)[32])
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gr = lane / 4, c4 = lane % 4;
    const int r0 = warp * 16 + gr, r1 = r0 + 8;
    uint32_t qa[4][4];
#pragma unroll
    for (int s = 0; s < 4; s++) {
        qa[s][0] = *reinterpret_cast<const uint32_t *>(&sm.qs[r0][16 * s + 2 * c4]);
        qa[s][1] = *reinterpret_cast<const uint32_t *>(&sm.qs[r1][16 * s + 2 * c4]);
        qa[s][2] = *reinterpret_cast<const uint32_t *>(&sm.qs[r0][16 * s + 8 + 2 * c4]);
        qa[s][3] = *reinterpret_cast<const uint32_t *>(&sm.qs[r1][16 * s + 8 + 2 * c4]);
    }
#pragma unroll
    for (int n = 0; n < 8; n++) {
        float *c = &sc[4 * n];
        c[0] = c[1] = c[2] = c[3] = 0.0f;
#pragma unroll
        for (int sp = 0; sp < 2; sp++) {
            uint32_t kb[4];
            ldmatrix_x4(kb, &sm.ks[8 * n + (lane % 8)][32 * sp + 8 * (lane / 8)]);
            mma16816<T>(c, qa[2 * sp], kb);
            mma16816<T>(c, qa[2 * sp + 1], kb + 2);
        }
    }
}

/* P's fragments (rows r0, r1 of the warp; as att_step packs them from its scores). */
template <typename T> __device__ void p_frags(const T *p, uint32_t (&pa)[4][4])
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gr = lane / 4, c4 = lane % 4;
    const int r0 = warp * 16 + gr, r1 = r0 + 8;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int c = 16 * k + 2 * c4;
        pa[k][0] = kn_pack_u32<T>((float)p[r0 * TL + c], (float)p[r0 * TL + c + 1]);
        pa[k][1] = kn_pack_u32<T>((float)p[r1 * TL + c], (float)p[r1 * TL + c + 1]);
        pa[k][2] = kn_pack_u32<T>((float)p[r0 * TL + c + 8], (float)p[r0 * TL + c + 9]);
        pa[k][3] = kn_pack_u32<T>((float)p[r1 * TL + c + 8], (float)p[r1 * TL + c + 9]);
    }
}

/* O's accumulators from o (row-major 64 x 64) in the shared fragment order. */
__device__ void o_frags(const float *o, float (&d)[32])
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gr = lane / 4, c4 = lane % 4;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        const int r = warp * 16 + gr + ((i & 2) ? 8 : 0), c = 8 * (i / 4) + 2 * c4 + (i & 1);
        d[i] = o[r * TL + c];
    }
}

/* O += P V by att_step's mma.sync loop (V by ldmatrix.trans). */
template <typename T> __device__ void pv_mma(const probe_smem<T> &sm, const uint32_t (&pa)[4][4], float (&o)[32])
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int n = 0; n < 8; n += 2) {
            uint32_t vb[4];
            const int key = 16 * k + ((lane / 8) & 1) * 8 + (lane % 8);
            const int d = 8 * (n + (lane / 16));
            ldmatrix_x4_trans(vb, &sm.vs[key][d]);
            mma16816<T>(&o[4 * n], pa[k], vb);
            mma16816<T>(&o[4 * n + 4], pa[k], vb + 2);
        }
}

#if KN_WGMMA
template <typename T> __device__ void s_wg(const probe_smem<T> &sm, float (&d)[32])
{
#pragma unroll
    for (int i = 0; i < 32; i++)
        d[i] = 0.0f;
    kn_wg_pin(d);
    kn_wg_fence();
#pragma unroll
    for (int j = 0; j < 4; j++)
        kn_wg_ss<T>(d, kn_wg_desc_sw128(sm.qw + 32 * j), kn_wg_desc_sw128(sm.kw + 32 * j));
    kn_wg_commit();
    kn_wg_wait<0>();
    kn_wg_pin(d);
}

template <typename T> __device__ void pv_wg(const probe_smem<T> &sm, const uint32_t (&pa)[4][4], float (&d)[32])
{
    kn_wg_pin(d);
    kn_wg_fence();
#pragma unroll
    for (int k = 0; k < 4; k++)
        kn_wg_rs<T>(d, pa[k], kn_wg_desc_sw128(sm.vw + 2048 * k));
    kn_wg_commit();
    kn_wg_wait<0>();
    kn_wg_pin(d);
}
#endif

/* Block b: tile b's S and O both ways, each thread's 32 values at out[(b * 128 + t) * 32]. */
template <typename T>
__global__ void __launch_bounds__(128) probe_kernel(const T *q, const T *k, const T *p, const T *v, const float *o0,
                                                    float *s1, float *s2, float *o1, float *o2)
{
#if KN_WGMMA
    extern __shared__ uint8_t raw[];
    probe_smem<T> &sm = *reinterpret_cast<probe_smem<T> *>(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    const size_t b = blockIdx.x, at = (b * 128 + threadIdx.x) * 32;
    probe_fill<T>(sm, q + b * TILE, k + b * TILE, v + b * TILE);
    float d[32];
    s_mma<T>(sm, d);
    for (int i = 0; i < 32; i++)
        s1[at + i] = d[i];
    s_wg<T>(sm, d);
    for (int i = 0; i < 32; i++)
        s2[at + i] = d[i];
    uint32_t pa[4][4];
    p_frags<T>(p + b * TILE, pa);
    o_frags(o0 + b * TILE, d);
    pv_mma<T>(sm, pa, d);
    for (int i = 0; i < 32; i++)
        o1[at + i] = d[i];
    o_frags(o0 + b * TILE, d);
    pv_wg<T>(sm, pa, d);
    for (int i = 0; i < 32; i++)
        o2[at + i] = d[i];
#endif
}

/* reps tile steps (S, then O += P V with P from S) on one block's staged tile, one way. */
template <typename T, bool WG> __global__ void __launch_bounds__(128) time_kernel(const T *q, float *sink, int reps)
{
#if KN_WGMMA
    extern __shared__ uint8_t raw[];
    probe_smem<T> &sm = *reinterpret_cast<probe_smem<T> *>(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    const T *t = q + (size_t)(blockIdx.x % 64) * TILE;
    probe_fill<T>(sm, t, t, t);
    float s[32], o[32];
    for (int i = 0; i < 32; i++)
        o[i] = 0.0f;
    for (int r = 0; r < reps; r++) {
        if (WG)
            s_wg<T>(sm, s);
        else
            s_mma<T>(sm, s);
        uint32_t pa[4][4];
        for (int k = 0; k < 4; k++)
            for (int e = 0; e < 4; e++)
                pa[k][e] = kn_pack_u32<T>(s[8 * k + 2 * e] * 1e-3f, s[8 * k + 2 * e + 1] * 1e-3f);
        if (WG)
            pv_wg<T>(sm, pa, o);
        else
            pv_mma<T>(sm, pa, o);
    }
    float acc = 0.0f;
    for (int i = 0; i < 32; i++)
        acc += o[i];
    sink[blockIdx.x * 128 + threadIdx.x] = acc;
#endif
}

/* ---- host ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double uni()
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static double gauss() { return sqrt(-2.0 * log(uni() + 1e-300)) * cos(6.283185307179586 * uni()); }

template <typename T> static float tof(T x) { return (float)x; }

/* Element i of thread t's fragment: its row and column in the 64 x 64 tile. */
static void frag_rc(int t, int i, int *r, int *c)
{
    *r = 16 * (t / 32) + (t % 32) / 4 + ((i & 2) ? 8 : 0);
    *c = 8 * (i / 4) + 2 * (t % 4) + (i & 1);
}

struct cmp_result {
    long differ, total;
    double err_a, err_b; /* largest |path - exact| / (|exact| scale) */
};

static void compare(const std::vector<float> &a, const std::vector<float> &b, const std::vector<double> &exact,
                    cmp_result &res)
{
    for (size_t i = 0; i < a.size(); i++) {
        res.total++;
        if (memcmp(&a[i], &b[i], 4) != 0)
            res.differ++;
        const double sc = fabs(exact[i]) + 1e-30;
        res.err_a = fmax(res.err_a, fabs(a[i] - exact[i]) / sc);
        res.err_b = fmax(res.err_b, fabs(b[i] - exact[i]) / sc);
    }
}

template <typename T> static void run_bitwise(const char *name, int tiles)
{
    const size_t n = (size_t)tiles * TILE;
    std::vector<T> q(n), k(n), p(n), v(n);
    std::vector<float> o0(n);
    for (int b = 0; b < tiles; b++) { /* each tile its own scales, 10^-2 .. 10^2 */
        const double sq = pow(10.0, 4 * uni() - 2), sk = pow(10.0, 4 * uni() - 2), sv = pow(10.0, 4 * uni() - 2);
        for (int e = 0; e < TILE; e++) {
            const size_t i = (size_t)b * TILE + e;
            q[i] = (T)(float)(gauss() * sq), k[i] = (T)(float)(gauss() * sk);
            p[i] = (T)(float)(uni() < 0.3 ? uni() : pow(2.0, -30 * uni())); /* softmax-like weights */
            v[i] = (T)(float)(gauss() * sv), o0[i] = (float)(gauss() * sv * 8);
        }
    }
    T *dq, *dk, *dp, *dv;
    float *do0, *out;
    CK(cudaMalloc(&dq, n * sizeof(T)));
    CK(cudaMalloc(&dk, n * sizeof(T)));
    CK(cudaMalloc(&dp, n * sizeof(T)));
    CK(cudaMalloc(&dv, n * sizeof(T)));
    CK(cudaMalloc(&do0, n * 4));
    CK(cudaMalloc(&out, 4 * n * 4));
    CK(cudaMemcpy(dq, q.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dk, k.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dp, p.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, v.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(do0, o0.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(out, 0xff, 4 * n * 4)); /* poisoned: NaN where nothing is written */
    const int smem = (int)sizeof(probe_smem<T>) + 1024;
    CK(cudaFuncSetAttribute(probe_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    probe_kernel<T><<<tiles, 128, smem>>>(dq, dk, dp, dv, do0, out, out + n, out + 2 * n, out + 3 * n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> h(4 * n);
    CK(cudaMemcpy(h.data(), out, 4 * n * 4, cudaMemcpyDeviceToHost));
    /* the exact products, in fragment order */
    std::vector<double> es(n), eo(n);
    for (int b = 0; b < tiles; b++)
        for (int t = 0; t < 128; t++)
            for (int i = 0; i < 32; i++) {
                int r, c;
                frag_rc(t, i, &r, &c);
                const size_t at = ((size_t)b * 128 + t) * 32 + i, base = (size_t)b * TILE;
                double s = 0, o = o0[base + r * TL + c];
                for (int j = 0; j < TL; j++) {
                    s += (double)tof(q[base + r * TL + j]) * tof(k[base + c * TL + j]);
                    o += (double)tof(p[base + r * TL + j]) * tof(v[base + j * TL + c]);
                }
                es[at] = s, eo[at] = o;
            }
    std::vector<float> s1(h.begin(), h.begin() + n), s2(h.begin() + n, h.begin() + 2 * n);
    std::vector<float> o1(h.begin() + 2 * n, h.begin() + 3 * n), o2(h.begin() + 3 * n, h.end());
    cmp_result rs = {0, 0, 0, 0}, ro = {0, 0, 0, 0};
    compare(s1, s2, es, rs);
    compare(o1, o2, eo, ro);
    printf("%s S = Q K^T : %ld of %ld elements differ in some bit; max rel err mma.sync %.3e, wgmma %.3e\n", name,
           rs.differ, rs.total, rs.err_a, rs.err_b);
    printf("%s O += P V  : %ld of %ld elements differ in some bit; max rel err mma.sync %.3e, wgmma %.3e\n", name,
           ro.differ, ro.total, ro.err_a, ro.err_b);
    CK(cudaFree(dq));
    CK(cudaFree(dk));
    CK(cudaFree(dp));
    CK(cudaFree(dv));
    CK(cudaFree(do0));
    CK(cudaFree(out));
}

template <typename T, bool WG> static float time_steps(const T *dq, float *sink, int blocks, int reps)
{
    const int smem = (int)sizeof(probe_smem<T>) + 1024;
    CK(cudaFuncSetAttribute(time_kernel<T, WG>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    time_kernel<T, WG><<<blocks, 128, smem>>>(dq, sink, reps); /* warm */
    CK(cudaEventRecord(e0));
    time_kernel<T, WG><<<blocks, 128, smem>>>(dq, sink, reps);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms;
}

template <typename T> static void run_timing(const char *name)
{
    const int blocks = 132 * 3, reps = 2000;
    std::vector<T> q((size_t)64 * TILE);
    for (auto &x : q)
        x = (T)(float)gauss();
    T *dq;
    float *sink;
    CK(cudaMalloc(&dq, q.size() * sizeof(T)));
    CK(cudaMalloc(&sink, blocks * 128 * 4));
    CK(cudaMemcpy(dq, q.data(), q.size() * sizeof(T), cudaMemcpyHostToDevice));
    const float a = time_steps<T, false>(dq, sink, blocks, reps), b = time_steps<T, true>(dq, sink, blocks, reps);
    const double steps = (double)blocks * reps;
    printf("%s tile steps (S and P V, 64 x 64 x 64), %d blocks (3 an SM) x %d steps: mma.sync %.3f ms (%.1f ns a "
           "round), wgmma %.3f ms (%.1f ns); %.0f / %.0f TFLOP/s\n",
           name, blocks, reps, a, a * 1e6 / reps, b, b * 1e6 / reps, steps * 4 * 64 * 64 * 64 / a / 1e9,
           steps * 4 * 64 * 64 * 64 / b / 1e9);
    CK(cudaFree(dq));
    CK(cudaFree(sink));
}

int main(int argc, char **argv)
{
    const int tiles = argc > 1 ? atoi(argv[1]) : 256;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, sm_%d%d, %d tiles of 64 x 64 x 64 a dtype\n", prop.name, prop.major, prop.minor, tiles);
    run_bitwise<__half>("fp16", tiles);
    run_bitwise<__nv_bfloat16>("bf16", tiles);
    run_timing<__half>("fp16");
    return 0;
}
