/*
 * cuda_util.cuh - what every layad .cu file shares: error checks that name the
 * failing statement, dtype dispatch, and 16-bit <-> fp32 loads and stores.
 *
 * Internal to kernels/ (C++ only; the C API is kernels/cuda.h). Launchers
 * validate with KN_REQUIRE, wrap runtime calls in KN_CUDA and end with
 * KN_LAUNCHED(); each of these returns -1 from the launcher on failure after
 * kn_fail() has recorded "file:line: statement: error".
 */
#ifndef LAYAD_KERNELS_CUDA_UTIL_CUH
#define LAYAD_KERNELS_CUDA_UTIL_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/cuda.h"

/* Records and prints the failure; always returns -1. */
int kn_fail(const char *file, int line, const char *stmt, const char *what);

#define KN_CUDA(call)                                                          \
    do {                                                                       \
        cudaError_t kn_e_ = (call);                                            \
        if (kn_e_ != cudaSuccess)                                              \
            return kn_fail(__FILE__, __LINE__, #call, cudaGetErrorString(kn_e_)); \
    } while (0)

#define KN_REQUIRE(cond, what)                                                 \
    do {                                                                       \
        if (!(cond))                                                           \
            return kn_fail(__FILE__, __LINE__, #cond, what);                   \
    } while (0)

#define KN_LAUNCHED() KN_CUDA(cudaGetLastError())

/* Calls F<T>(args...) with T the storage type of a 16-bit dtype. */
#define KN_DISPATCH16(dt, T, ...)                                              \
    do {                                                                       \
        if ((dt) == KN_F16) {                                                  \
            typedef __half T;                                                  \
            __VA_ARGS__;                                                       \
        } else {                                                               \
            typedef __nv_bfloat16 T;                                           \
            __VA_ARGS__;                                                       \
        }                                                                      \
    } while (0)

/* The same over all three dtypes. */
#define KN_DISPATCH(dt, T, ...)                                                \
    do {                                                                       \
        if ((dt) == KN_F32) {                                                  \
            typedef float T;                                                   \
            __VA_ARGS__;                                                       \
        } else {                                                               \
            KN_DISPATCH16(dt, T, __VA_ARGS__);                                 \
        }                                                                      \
    } while (0)

static inline int kn_is16(kn_dtype dt) { return dt == KN_F16 || dt == KN_BF16; }
static inline int kn_isdt(kn_dtype dt) { return dt == KN_F16 || dt == KN_BF16 || dt == KN_F32; }
static inline int kn_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* ---- scalar conversions (round to nearest even on the way down) ---- */
__device__ __forceinline__ float kn_f(float x) { return x; }
__device__ __forceinline__ float kn_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float kn_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T kn_from(float x);
template <> __device__ __forceinline__ float kn_from<float>(float x) { return x; }
template <> __device__ __forceinline__ __half kn_from<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 kn_from<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* ---- 8-wide 16-bit vectors (one 16-byte access) ---- */
__device__ __forceinline__ float2 kn_f2(__half2 v) { return __half22float2(v); }
__device__ __forceinline__ float2 kn_f2(__nv_bfloat162 v) { return __bfloat1622float2(v); }

template <typename T> struct kn_pair;
template <> struct kn_pair<__half> { typedef __half2 type; };
template <> struct kn_pair<__nv_bfloat16> { typedef __nv_bfloat162 type; };

template <typename T> __device__ __forceinline__ typename kn_pair<T>::type kn_pack(float a, float b);
template <> __device__ __forceinline__ __half2 kn_pack<__half>(float a, float b)
{
    return __floats2half2_rn(a, b);
}
template <> __device__ __forceinline__ __nv_bfloat162 kn_pack<__nv_bfloat16>(float a, float b)
{
    return __floats2bfloat162_rn(a, b);
}

/* kn_pack's pair as one 32-bit register (an mma fragment's element pair). */
template <typename T> __device__ __forceinline__ uint32_t kn_pack_u32(float lo, float hi)
{
    typename kn_pair<T>::type v = kn_pack<T>(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* v[0..8) = p[0..8) as fp32; p 16-byte aligned. */
template <typename T> __device__ __forceinline__ void kn_load8(const T *p, float v[8])
{
    typedef typename kn_pair<T>::type P;
    uint4 u = *reinterpret_cast<const uint4 *>(p);
    const P *h = reinterpret_cast<const P *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 f = kn_f2(h[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
}

/* p[0..8) = v[0..8) rounded; p 16-byte aligned. */
template <typename T> __device__ __forceinline__ void kn_store8(T *p, const float v[8])
{
    typedef typename kn_pair<T>::type P;
    uint4 u;
    P *h = reinterpret_cast<P *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++)
        h[i] = kn_pack<T>(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4 *>(p) = u;
}

/* Exact erf GELU in fp32, the CPU's formula. */
__device__ __forceinline__ float kn_gelu_erf(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
}

/* What launch shapes depend on, for the current device (kn_sms: the SM count
 * alone). */
typedef struct kn_dev {
    int sms;        /* multiprocessors (132 on the H200): grid caps and block shapes */
    int major;      /* compute capability major (9: Hopper's sm_90a code runs) */
    int smem_optin; /* shared memory a block may opt in to, bytes */
} kn_dev;
int kn_dev_info(kn_dev *d);
int kn_sms(int *sms);

static inline unsigned kn_blocks(size_t n, unsigned per, unsigned cap)
{
    size_t b = (n + per - 1) / per;
    if (b == 0)
        b = 1;
    return b > cap ? cap : (unsigned)b;
}


/* ---- programmatic dependent launch (Hopper) ----
 * The forward is a chain of short kernels; in a graph each dependent launch
 * waits for its predecessor to finish before its blocks are even scheduled.
 * Launched through kn_launch, a kernel may be scheduled while its predecessor
 * still runs, and holds at kn_pdl_wait() until the predecessor has completed
 * and its writes are visible, which hides the launch latency. Before the wait
 * a kernel may only read what no kernel of the forward writes (weights, tables
 * made at start-up, the inputs the forward's first copy staged) and write
 * nothing but its shared memory: those loads overlap the kernel before. The
 * staged inputs are safe from the third kernel on: the copy is itself a
 * kernel (kn_copy), the one after it reads them only after its wait, and each
 * later one starts only once the one before it has started.
 * Kernels that do not call kn_pdl_wait must not be launched this way. Without
 * the attribute (or before sm_90) the wait returns at once. */
__device__ __forceinline__ void kn_pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/* Lets the next kernel launched through kn_launch be scheduled before this one
 * ends, so it does its pre-wait loads while this one runs (otherwise that
 * happens only as this kernel's blocks exit). Its wait still holds it until
 * this kernel has completed. */
__device__ __forceinline__ void kn_pdl_trigger()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* In packs of at most KN_PDL_EARLY_ROWS rows the LayerNorms, the attention and GeGLU let their
 * successor start once they have passed their own wait, so the own small kernels after them (the
 * split branch products, the fused projections) load their weights while these run instead of
 * after they exit: on an H100 the forward -9% at 16 tokens, and the own kernels' paths then pay
 * in buckets of 32 and 64 (bench/results/experiments/early-trigger/). Triggering after the wait
 * keeps what a successor reads before its own wait (weights, staged tables, rows written two
 * kernels back) complete. Larger packs are left alone: there an early start of the attention
 * behind RoPE was slower (rope-early/). A successor that is cuBLASLt's ignores the trigger. */
#ifndef KN_PDL_EARLY_ROWS
#define KN_PDL_EARLY_ROWS 128
#endif
__device__ __forceinline__ void kn_pdl_trigger_small(long rows)
{
    if (rows <= KN_PDL_EARLY_ROWS)
        kn_pdl_trigger();
}

/* kern<<<grid, block, smem, ks.s>>>(args...) with programmatic stream
 * serialization allowed when ks.pdl is set; on the legacy stream 0, or with
 * ks.pdl = 0, a plain launch. */
template <typename... KArgs, typename... Args>
static inline cudaError_t kn_launch(void (*kern)(KArgs...), dim3 grid, dim3 block, size_t smem, kn_stream ks,
                                    Args... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = ks.s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = ks.s && ks.pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kern, static_cast<KArgs>(args)...);
}

#endif
