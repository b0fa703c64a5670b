/*
 * cuda_util.cu - dtype names and sizes, the launchers' error record, the
 * dtype conversion kernel (weights are uploaded F16 and converted on the device
 * to the serving dtype; the tests round their fp32 inputs through it) and the
 * copy kernel.
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

/* Asked each time, not kept: cudaDeviceGetAttribute is a host-side lookup with
 * no device work, and launchers run at graph capture, not at every replay. */
int kn_dev_info(kn_dev *d)
{
    int dev = 0;
    KN_CUDA(cudaGetDevice(&dev));
    KN_CUDA(cudaDeviceGetAttribute(&d->sms, cudaDevAttrMultiProcessorCount, dev));
    KN_CUDA(cudaDeviceGetAttribute(&d->major, cudaDevAttrComputeCapabilityMajor, dev));
    KN_CUDA(cudaDeviceGetAttribute(&d->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    KN_REQUIRE(d->sms > 0, "the device reports no multiprocessors");
    return 0;
}

int kn_sms(int *sms)
{
    kn_dev d;
    if (kn_dev_info(&d))
        return -1;
    *sms = d.sms;
    return 0;
}

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

/* Each thread moves 16-byte words, then the last bytes one at a time. With a
 * host-mapped side every word is one PCIe (or C2C) transaction; a few KB are
 * one round trip with all of them in flight. */
__global__ void copy_kernel(const unsigned char *__restrict__ src, unsigned char *__restrict__ dst, size_t n)
{
    kn_pdl_wait();
    kn_pdl_trigger();
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = t; i < n / 16; i += step)
        reinterpret_cast<uint4 *>(dst)[i] = reinterpret_cast<const uint4 *>(src)[i];
    for (size_t i = n / 16 * 16 + t; i < n; i += step)
        dst[i] = src[i];
}

extern "C" int kn_copy(kn_stream ks, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return 0;
    KN_REQUIRE(src && dst, "NULL copy buffer");
    KN_REQUIRE(kn_aligned16(src) && kn_aligned16(dst), "copy buffers must be 16-byte aligned");
    KN_REQUIRE((const unsigned char *)src + bytes <= (unsigned char *)dst ||
                   (unsigned char *)dst + bytes <= (const unsigned char *)src,
               "copy buffers overlap");
    int sms = 0;
    if (kn_sms(&sms))
        return -1;
    const unsigned blocks = kn_blocks((bytes + 15) / 16, 256, (unsigned)sms * 4);
    KN_CUDA(kn_launch(copy_kernel, dim3(blocks), dim3(256), 0, ks, (const unsigned char *)src,
                      (unsigned char *)dst, bytes));
    KN_LAUNCHED();
    return 0;
}
