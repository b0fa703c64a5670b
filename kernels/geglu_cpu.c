/*
 * geglu_cpu.c - CPU fp32 GeGLU: out[m, f] = gelu_erf(U[m, f]) * U[m, F + f].
 *
 * U is the output of the Wi GEMM, [M, 2F]: columns [0, F) are the activated half
 * ("input"), [F, 2F) the gate (laya-model.md §2.3). One pass reads each element
 * of U once and writes out once; the CUDA sibling does the same pass with one
 * thread per output element (or fuses it into the Wi GEMM epilogue, pairing
 * column f with f + F inside a tile). GELU is the exact erf form, in fp32:
 * 0.5 * x * (1 + erf(x / sqrt 2)). Rows are independent; OpenMP splits rows
 * statically, so results do not depend on the thread count. out must not alias U.
 */
#include <math.h>
#include <stddef.h>

#include "kernels/cpu.h"

void kn_cpu_geglu(const float *U, float *out, int M, int F)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        const float *u = U + (size_t)m * 2 * F;
        float *o = out + (size_t)m * F;
        for (int f = 0; f < F; f++) {
            float x = u[f];
            o[f] = 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2)) * u[F + f];
        }
    }
}
