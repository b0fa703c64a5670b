/*
 * geglu.cu - out[M,F] = gelu_erf(U[:, :F]) * U[:, F:2F], one pass over U.
 *
 * The Wi GEMM writes U through cuBLASLt (which has no erf-GELU epilogue, and a
 * GeGLU epilogue would need the column pair f, f+F in one tile), so the
 * activation is this separate memory-bound pass: each element of U is read
 * once, each output written once; math in fp32 (the CPU's formula), rounding
 * once to the 16-bit dtype.
 *
 * Fast path (F % 8 == 0, 16-byte aligned buffers; the model's F = 2624 and 1152
 * are): vector i of 8 outputs is out[8i, 8i + 8), row m = i / (F / 8), read from
 * U[m, f] and U[m, F + f]. Each thread owns UNR vectors (i, i + 256, ...) and
 * issues all 2 * UNR 16-byte loads before the first use, so several trips to
 * memory overlap per thread; UNR is 4 when the grid still gives every SM at
 * least two blocks, else 2 or 1 (small M: spread over the SMs instead). Indices
 * are 32-bit (vectors < 2^31). Anything else runs one column per thread.
 * Measured on the H200 against the previous one-vector grid-stride kernel: 90%
 * of copy bandwidth at 32768 tokens (was 78%), 2.46 vs 2.99 us at 83 tokens,
 * equal at 4096 x 2624, but ~8% slower at 512 x 2624 and 4096 x 1152, where
 * the 2- and 4-vector grids end in a partial wave (1.1 waves at 4096 x 1152):
 * the thresholds want tuning on the device (bench/results/h200/kernels.md).
 */
#include "kernels/cuda_util.cuh"

#define GG_THREADS 256

template <typename T, int UNR>
__global__ void __launch_bounds__(GG_THREADS)
geglu_vec_kernel(const T *__restrict__ U, T *__restrict__ out, unsigned per_row, unsigned n, unsigned F)
{
    kn_pdl_wait();
    kn_pdl_trigger_small(n / per_row);
    const unsigned i0 = blockIdx.x * (GG_THREADS * UNR) + threadIdx.x;
    uint4 a[UNR], g[UNR];
#pragma unroll
    for (int k = 0; k < UNR; k++) {
        const unsigned i = i0 + k * GG_THREADS;
        if (i < n) {
            const unsigned m = i / per_row;
            const T *u = U + 8 * (size_t)i + (size_t)m * F; /* U[m, 8 (i - m per_row)] */
            a[k] = *reinterpret_cast<const uint4 *>(u);
            g[k] = *reinterpret_cast<const uint4 *>(u + F);
        }
    }
#pragma unroll
    for (int k = 0; k < UNR; k++) {
        const unsigned i = i0 + k * GG_THREADS;
        if (i < n) {
            float x[8], y[8], r[8];
            kn_load8(reinterpret_cast<const T *>(&a[k]), x);
            kn_load8(reinterpret_cast<const T *>(&g[k]), y);
#pragma unroll
            for (int e = 0; e < 8; e++)
                r[e] = kn_gelu_erf(x[e]) * y[e];
            kn_store8(out + 8 * (size_t)i, r);
        }
    }
}

template <typename T>
__global__ void geglu_kernel(const T *__restrict__ U, T *__restrict__ out, int M, int F)
{
    kn_pdl_wait();
    kn_pdl_trigger_small(M);
    const size_t n = (size_t)M * F;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t m = i / F, f = i % F;
        const T *u = U + m * 2 * (size_t)F + f;
        out[i] = kn_from<T>(kn_gelu_erf(kn_f(u[0])) * kn_f(u[F]));
    }
}

template <typename T, int UNR>
static int gg_vec(kn_stream ks, const void *U, void *out, int F, size_t n)
{
    const unsigned blocks = (unsigned)((n + GG_THREADS * UNR - 1) / (GG_THREADS * UNR));
    KN_CUDA(kn_launch(geglu_vec_kernel<T, UNR>, dim3(blocks), dim3(GG_THREADS), 0, ks, (const T *)U, (T *)out,
                      (unsigned)(F / 8), (unsigned)n, (unsigned)F));
    return 0;
}

extern "C" int kn_geglu(kn_stream ks, kn_dtype dt, const void *U, void *out, int M, int F)
{
    KN_REQUIRE(kn_is16(dt), "GeGLU dtype must be fp16 or bf16");
    KN_REQUIRE(M >= 0 && F >= 0, "negative GeGLU size");
    if (M == 0 || F == 0)
        return 0;
    KN_REQUIRE(U && out, "NULL GeGLU buffer");
    const size_t nv = (size_t)M * F / 8;
    int sms = 0;
    if (kn_sms(&sms))
        return -1;
    if (F % 8 == 0 && kn_aligned16(U) && kn_aligned16(out) && nv < ((size_t)1 << 31)) {
        const size_t two_per_sm = 2 * (size_t)sms;
        const int unr = nv >= two_per_sm * GG_THREADS * 4 ? 4 : nv >= two_per_sm * GG_THREADS * 2 ? 2 : 1;
        int rc = 0;
        KN_DISPATCH16(dt, T,
            rc = unr == 4 ? gg_vec<T, 4>(ks, U, out, F, nv)
               : unr == 2 ? gg_vec<T, 2>(ks, U, out, F, nv)
                          : gg_vec<T, 1>(ks, U, out, F, nv));
        if (rc)
            return -1;
    } else {
        const unsigned blocks = kn_blocks((size_t)M * F, GG_THREADS, (unsigned)sms * 32);
        KN_DISPATCH16(dt, T, KN_CUDA(kn_launch(geglu_kernel<T>, dim3(blocks), dim3(GG_THREADS), 0, ks, (const T *)U, (T *)out, M, F)));
    }
    KN_LAUNCHED();
    return 0;
}

