/*
 * gpu_check.h - the GPU suites' assertions on CUDA runtime calls (CU) and on
 * the kernels' launchers (OK, with the launcher's own message), as check
 * failures rather than exits, so a failing case reports and the suite goes on.
 */
#ifndef LAYAD_TESTS_GPU_CHECK_H
#define LAYAD_TESTS_GPU_CHECK_H

#include <check.h>

#include <cuda_runtime.h>

#include "kernels/cuda.h"

#define CU(call)                                                                         \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));       \
    } while (0)
#define OK(call) ck_assert_msg((call) == 0, "%s failed: %s", #call, kn_cuda_last_error())

#endif
