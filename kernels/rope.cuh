/*
 * rope.cuh - the rotate-half rotation of one (x1, x2) pair, shared by the RoPE
 * kernel (kernels/rope.cu) and the Wqkv projection that rotates in its epilogue
 * (kernels/proj_small.cu), so both round the same products the same way.
 */
#ifndef LAYAD_KERNELS_ROPE_CUH
#define LAYAD_KERNELS_ROPE_CUH

#include "kernels/cuda_util.cuh"

/* o1 = x1 c - x2 s, o2 = x2 c + x1 s: separate fp32 products and one add
 * (__fmul_rn / __fadd_rn: no FMA contraction, like the CPU's kn_cpu_rope). */
__device__ __forceinline__ void kn_rope_rot(float x1, float x2, float c, float s, float *o1, float *o2)
{
    *o1 = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
    *o2 = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
}

#endif
