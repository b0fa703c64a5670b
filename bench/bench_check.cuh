/*
 * bench_check.cuh - the benchmark programs' CUDA runtime, cuBLAS and layad launcher checks: a
 * benchmark has no caller to return an error to, so a failed call prints where
 * and why and exits 1.
 */
#ifndef LAYAD_BENCH_CHECK_CUH
#define LAYAD_BENCH_CHECK_CUH

#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CB(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s: %d\n", __FILE__, __LINE__, #call, (int)s_);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A layad kernel launcher's return code (kernels/cuda.h: include it first). */
#define KOK(call)                                                                                  \
    do {                                                                                           \
        if ((call) != 0) {                                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, kn_cuda_last_error()); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#endif
