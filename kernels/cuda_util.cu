/*
 * cuda_util.cu - dtype names and sizes, the launchers' error record, and the
 * dtype conversion kernel (weights are uploaded F16 and converted on the device
 * to the serving dtype; the tests round their fp32 inputs through it).
 */
#include <stdio.h>
#include <string.h>

#include "kernels/cuda_util.cuh"

static thread_local char kn_last_error[512];

int kn_fail(const char *file, int line, const char *stmt, const char *what)
{
    snprintf(kn_last_error, sizeof kn_last_error, "%s:%d: %s: %s", file, line, stmt, what);
    fprintf(stderr, "layad cuda: %s\n", kn_last_error);
    return -1;
}

extern "C" const char *kn_cuda_last_error(void) { return kn_last_error; }

extern "C" size_t kn_dtype_size(kn_dtype dt)
{
    switch (dt) {
    case KN_F16:
    case KN_BF16:
        return 2;
    case KN_F32:
        return 4;
    }
    return 0;
}

extern "C" const char *kn_dtype_name(kn_dtype dt)
{
    switch (dt) {
    case KN_F16:
        return "fp16";
    case KN_BF16:
        return "bf16";
    case KN_F32:
        return "fp32";
    }
    return "?";
}

template <typename S, typename D>
__global__ void convert_kernel(const S *__restrict__ src, D *__restrict__ dst, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = kn_from<D>(kn_f(src[i]));
}

extern "C" int kn_convert(kn_stream ks, const void *src, kn_dtype sdt, void *dst, kn_dtype ddt,
                          size_t n)
{
    KN_REQUIRE(kn_isdt(sdt) && kn_isdt(ddt), "unknown dtype");
    KN_REQUIRE(n == 0 || (src && dst), "NULL buffer");
    if (n == 0)
        return 0;
    const unsigned blocks = kn_blocks(n, 256, 65535u * 8);
    KN_DISPATCH(sdt, S, KN_DISPATCH(ddt, D,
        convert_kernel<S, D><<<blocks, 256, 0, ks.s>>>((const S *)src, (D *)dst, n)));
    KN_LAUNCHED();
    return 0;
}
