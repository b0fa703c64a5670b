/*
 * probe_small.cuh - what the probes of the small-pack kernel (bench/mcast_probe.cu,
 * bench/fused_probe.cu) share beyond kernels/gemm_small.cuh: the X slice's copy in
 * three forms and whether the kernel's shared memory holds a slice.
 */
#ifndef LAYAD_BENCH_PROBE_SMALL_CUH
#define LAYAD_BENCH_PROBE_SMALL_CUH

#include <cuda_fp16.h>

#include "kernels/gemm_small.cuh"

/* The X slice's rows into xs (one commit group): XM 0, the library's loop (a flat index over
 * the slice's 16-byte chunks, an integer division a chunk); 1, a warp a row and its lanes along
 * the row (no division; experiments/xcopy/xcopy.patch); 2, no copy at all (the room keeps its
 * zeros: wrong products, a bound on what any faster X delivery could give). */
template <int XM>
__device__ __forceinline__ void xm_load_x(const __half *X, unsigned char *xs, int M, int K, int Ks, int s)
{
    const int rb = so_row_bytes(Ks), cpr = Ks / 8;
    if (XM == 0) {
        for (int i = threadIdx.x; i < M * cpr; i += blockDim.x) {
            const int m = i / cpr, c = i % cpr;
            cp_async16(xs + m * rb + 16 * c, X + (size_t)m * K + (size_t)s * Ks + 8 * c, true);
        }
    } else if (XM == 1) {
        const int lane = threadIdx.x % 32;
        for (int m = threadIdx.x / 32; m < M; m += SO_WARPS) {
            const __half *src = X + (size_t)m * K + (size_t)s * Ks + 8 * lane;
            unsigned char *dst = xs + m * rb + 16 * lane;
            for (int c = lane; c < cpr; c += 32, src += 8 * 32, dst += 16 * 32)
                cp_async16(dst, src, true);
        }
    }
    cp_async_commit();
}

/* Whether the kernel's shared memory holds an M-row slice of K / Sp (a projection's one part
 * does not from 80 rows). */
static inline bool fits(int M, int K, int Sp) { return so_smem((M + 15) / 16, K / Sp) <= 227 * 1024; }

#endif
