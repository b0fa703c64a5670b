/*
 * probe_common.cuh - what the GEMM probes (bench/cutlass_probe.cu,
 * bench/cutlass_epilogue_probe.cu, bench/mcast_probe.cu) share: the English GEMM
 * shapes, deterministic fills, the stand-in for the forward's non-GEMM kernels,
 * the median time of a captured graph, and the row counts of the command line.
 */
#ifndef LAYAD_BENCH_PROBE_COMMON_CUH
#define LAYAD_BENCH_PROBE_COMMON_CUH

#include <algorithm>
#include <vector>

#include <cuda_fp16.h>

#include "bench/bench_check.cuh" /* CK, CB */
#include "kernels/cuda_util.cuh" /* kn_launch */

/* English geometry: hidden, Wqkv rows, Wi rows, the MLP's inner width; 28 layers' weights
 * (686 MB) so that nothing of a layer stays in L2 for the next replay. */
enum { LAYERS = 28, HID = 1024, QKV = 3072, WI = 5248, INNER = 2624 };

__global__ void init_kernel(__half *p, size_t n, float scale, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t x = (uint32_t)i * 2654435761u ^ seed;
        x ^= x >> 13;
        x *= 0x5bd1e995u;
        x ^= x >> 15;
        p[i] = __float2half(((float)(x & 0xffff) / 65535.0f - 0.5f) * scale);
    }
}

/* Stands for the forward's non-GEMM kernels: waits for its predecessor, moves a pack's worth of
 * activations, lets its dependents launch. */
__global__ void glue_kernel(const __half *in, __half *out, int n)
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = in[i];
    asm volatile("griddepcontrol.launch_dependents;");
}

static void glue(cudaStream_t st, const __half *in, __half *out, int n)
{
    CK(kn_launch(glue_kernel, dim3(96), dim3(256), 0, kn_stream{st, 1}, in, out, n));
}

/* Median of reps replays of what body enqueues, captured as one graph, in us. */
template <typename F> static float graph_us(cudaStream_t st, int reps, F body)
{
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    body();
    CK(cudaStreamEndCapture(st, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    for (int i = 0; i < 3; i++)
        CK(cudaGraphLaunch(ge, st));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t(reps);
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(a, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&t[r], a, b));
    }
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(gr));
    return t[reps / 2] * 1000.0f;
}

/* The row counts on the command line (argv[1..]), or dflt when none; exits 2 on one outside
 * 1..most. */
static std::vector<int> probe_rows(int argc, char **argv, std::vector<int> dflt, int most)
{
    std::vector<int> rows;
    for (int i = 1; i < argc; i++)
        rows.push_back(atoi(argv[i]));
    if (rows.empty())
        rows = dflt;
    for (int r : rows)
        if (r < 1 || r > most) {
            fprintf(stderr, "rows must be 1..%d\n", most);
            exit(2);
        }
    return rows;
}

#endif
