/*
 * gemm_internal.cuh - what the GEMM launcher (kernels/gemm.cu: dispatch and own
 * kernels) needs from the cuBLASLt path (kernels/gemm_lt.cu). Internal to
 * kernels/ (C++ only; the C API is kernels/cuda.h).
 */
#ifndef LAYAD_KERNELS_GEMM_INTERNAL_CUH
#define LAYAD_KERNELS_GEMM_INTERNAL_CUH

#include "kernels/cuda.h"

/* Y = X . W^T (+ bias), ReLU'd when lt_epi is KN_EPI_RELU, through the shape's
 * cuBLASLt plan on ks: the plan is built at the shape's first call (and timed
 * there when tuning is on and it was not prepared). The caller has validated
 * the arguments, M, N > 0, kn_gemm_uses_cublaslt holds, and bias (bdt KN_F32
 * or wdt) is NULL or 16-byte aligned; a bias not in ydt is first converted
 * into the context's scratch on ks. Returns 0 once launched; 1 when cuBLASLt
 * does not take the call (no algorithm for the shape, or a converted bias
 * longer than the scratch), launching nothing: the caller runs its own
 * kernel; -1 on failure (kn_fail has recorded it). */
int kn_gemm_lt_run(kn_gemm_ctx *ctx, kn_stream ks, const void *X, const void *W, kn_dtype wdt,
                   const void *bias, kn_dtype bdt, void *Y, kn_dtype ydt, int M, int N, int K, int lt_epi);

#endif
