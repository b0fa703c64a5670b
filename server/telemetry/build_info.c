/*
 * build_info.c - see build_info.h.
 */
#include "server/telemetry/build_info.h"

#include <stdio.h>

#if LAYAD_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#endif

#ifndef LAYAD_COMMIT
#define LAYAD_COMMIT "unknown"
#endif

void build_info_get(build_info *out)
{
    out->version = LAYAD_VERSION;
    out->commit = LAYAD_COMMIT[0] ? LAYAD_COMMIT : "unknown";
    snprintf(out->cuda, sizeof out->cuda, "none");
    snprintf(out->cublas, sizeof out->cublas, "none");
#if LAYAD_CUDA
    int rt = 0, ma = 0, mi = 0, pa = 0;
    if (cudaRuntimeGetVersion(&rt) == cudaSuccess && rt > 0)
        snprintf(out->cuda, sizeof out->cuda, "%d.%d", rt / 1000, rt % 1000 / 10);
    else
        snprintf(out->cuda, sizeof out->cuda, "unknown");
    if (cublasGetProperty(MAJOR_VERSION, &ma) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &mi) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &pa) == CUBLAS_STATUS_SUCCESS)
        snprintf(out->cublas, sizeof out->cublas, "%d.%d.%d", ma, mi, pa);
    else
        snprintf(out->cublas, sizeof out->cublas, "unknown");
#endif
}
