/*
 * geglu.cu - out[M,F] = gelu_erf(U[:, :F]) * U[:, F:2F], one pass over U.
 *
 * The Wi GEMM writes U through cuBLASLt (which has no erf-GELU epilogue, and a
 * GeGLU epilogue would need the column pair f, f+F in one tile), so the
 * activation is this separate memory-bound pass: each element of U is read
 * once, each output written once; math in fp32 (the CPU's formula), rounding
 * once to the 16-bit dtype. Each thread handles 8 consecutive columns with
 * 16-byte loads/stores when F % 8 == 0 and the buffers are aligned (the model's
 * F = 2624 and 1152 are), else one column (odd sizes in the tests).
 */
#include "kernels/cuda_util.cuh"

template <typename T, int V>
__global__ void geglu_kernel(const T *__restrict__ U, T *__restrict__ out, int M, int F)
{
    const size_t per_row = (size_t)F / V, n = (size_t)M * per_row;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t m = i / per_row, f = (i % per_row) * V;
        const T *u = U + m * 2 * (size_t)F + f;
        T *o = out + m * (size_t)F + f;
        if (V == 8) {
            float a[8], g[8], r[8];
            kn_load8(u, a);
            kn_load8(u + F, g);
#pragma unroll
            for (int k = 0; k < 8; k++)
                r[k] = kn_gelu_erf(a[k]) * g[k];
            kn_store8(o, r);
        } else {
            o[0] = kn_from<T>(kn_gelu_erf(kn_f(u[0])) * kn_f(u[F]));
        }
    }
}

extern "C" int kn_geglu(cudaStream_t s, kn_dtype dt, const void *U, void *out, int M, int F)
{
    KN_REQUIRE(kn_is16(dt), "GeGLU dtype must be fp16 or bf16");
    KN_REQUIRE(M >= 0 && F >= 0, "negative GeGLU size");
    if (M == 0 || F == 0)
        return 0;
    KN_REQUIRE(U && out, "NULL GeGLU buffer");
    const bool vec = F % 8 == 0 && kn_aligned16(U) && kn_aligned16(out);
    const size_t n = (size_t)M * F / (vec ? 8 : 1);
    const unsigned blocks = kn_blocks(n, 256, 132 * 32);
    KN_DISPATCH16(dt, T,
        if (vec)
            geglu_kernel<T, 8><<<blocks, 256, 0, s>>>((const T *)U, (T *)out, M, F);
        else
            geglu_kernel<T, 1><<<blocks, 256, 0, s>>>((const T *)U, (T *)out, M, F));
    KN_LAUNCHED();
    return 0;
}
