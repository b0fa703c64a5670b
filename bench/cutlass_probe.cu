/*
 * CUTLASS probe: would Hopper GEMMs that take part in programmatic dependent launch pay at the
 * small packs of a Laya forward?
 *
 * cuBLASLt's kernels never execute griddepcontrol.wait, so every edge into one of the four
 * GEMMs of a layer is a full drain-and-launch boundary; rewriting those edges (racy on purpose)
 * bounded the saving at 45-90 us a forward at 1x16-1x512. CUTLASS's sm90 warp-specialized
 * kernels wait and trigger when built with CUTLASS_ENABLE_GDC_FOR_SM90. This probe answers, on
 * English shapes (hidden 1024, Wqkv 3072, Wi 5248, MLP inner 2624) with the forward's own
 * layout (tokens as the GEMM's N, the residual branches as fp32 partial products over K):
 *   1. each GEMM alone, back to back over 28 layers' weights: cuBLAS against a few CUTLASS
 *      tile / schedule / cluster configurations;
 *   2. the layer chain Wqkv -> glue -> Wo -> glue -> Wi -> glue -> Wo2 -> glue, 28 layers in one
 *      graph, where the glue kernels stand for RoPE/attention/LayerNorm/GeGLU (they wait on their
 *      predecessor and trigger their dependents as the forward's kernels do): cuBLAS GEMMs, the
 *      best CUTLASS GEMMs launched plainly, and the same launched programmatically.
 * Outputs of every CUTLASS configuration are checked against cuBLAS's.
 *
 * Not part of the daemon: CUTLASS is not a dependency of layad. Build with
 *   make build/bench/cutlass_probe CUTLASS_DIR=/path/to/cutlass/include
 * Run: build/bench/cutlass_probe [ROWS...]   (default 16 96 128 512)
 */
#define CUTLASS_ENABLE_GDC_FOR_SM90 1

#include <cmath>

#include "bench/cutlass_common.cuh"

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

using namespace cute;

/* ---- CUTLASS configurations -------------------------------------------------------------- */

/* The GEMM as CUTLASS sees it after swapping operands: M = output features (W's rows, K-major),
 * N = tokens (X's rows, K-major), D column-major with leading dimension = features, which is
 * the row-major [tokens, features] the forward keeps; L = K-parts of a split branch. */
template <class ElementD, class Tile, class Cluster, class KSched, class ESched>
struct Cfg {
    using LayoutA = cutlass::layout::RowMajor;
    using LayoutB = cutlass::layout::ColumnMajor;
    using LayoutD = cutlass::layout::ColumnMajor;
    static constexpr int AlignD = 16 / sizeof(ElementD);
    using Epi = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, LayoutD, AlignD,
        ElementD, LayoutD, AlignD, ESched>::CollectiveOp;
    using Main = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::half_t, LayoutA, 8,
        cutlass::half_t, LayoutB, 8, float, Tile, Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
            sizeof(typename Epi::SharedStorage))>,
        KSched>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

using PP = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using CO = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EPP = cutlass::epilogue::TmaWarpSpecialized;
using ECO = cutlass::epilogue::TmaWarpSpecializedCooperative;

template <class C> struct LaunchOf : Launch {
    typename C::Gemm::Params params;
    LaunchOf(const __half *W, const __half *X, void *D, int N, int Mp, int Kp, int ldk, int parts,
             int sms)
    {
        using K = typename C::Kernel;
        /* Rows are ldk long; part p starts p * Kp elements into each row; D's parts are
         * [Mp, N] blocks back to back. */
        typename K::StrideA sa{};
        typename K::StrideB sb{};
        typename K::StrideD sd{};
        get<0>(sa) = ldk;
        get<2>(sa) = Kp;
        get<0>(sb) = ldk;
        get<2>(sb) = Kp;
        get<1>(sd) = N;
        get<2>(sd) = (int64_t)N * Mp;
        cutlass::KernelHardwareInfo hw;
        hw.device_id = 0;
        hw.sm_count = sms;
        typename C::Gemm::Arguments args{
            cutlass::gemm::GemmUniversalMode::kBatched,
            {N, Mp, Kp, parts},
            {(const cutlass::half_t *)W, sa, (const cutlass::half_t *)X, sb},
            {{1.0f, 0.0f}, nullptr, sd, (typename C::Epi::ElementD *)D, sd},
            hw};
        params = cutlass_params<typename C::Gemm>(args, "a GEMM of the layer");
    }
    void run(cudaStream_t st, bool pdl) override { cutlass_run<typename C::Gemm>(params, st, pdl); }
};

/* Configurations: name, factory for fp16 output, factory for fp32 output. */
using T64x16 = Shape<_64, _16, _64>;
using T64x32 = Shape<_64, _32, _64>;
using T128x16 = Shape<_128, _16, _64>;
using T128x32 = Shape<_128, _32, _64>;
using C11 = Shape<_1, _1, _1>;
using C21 = Shape<_2, _1, _1>;
#define CFGS(X)                                                                                    \
    X(pp64x16, T64x16, C11, PP, EPP)                                                     \
    X(pp64x32, T64x32, C11, PP, EPP)                                                     \
    X(co128x32, T128x32, C11, CO, ECO)                                                   \
    X(pp64x32c2, T64x32, C21, PP, EPP)                                                   \
    X(co128x16, T128x16, C11, CO, ECO)

typedef Launch *(*Factory)(const __half *, const void *, void *, int, int, int, int, int, int);
struct CfgEntry {
    const char *name;
    Factory f16, f32;
};
#define FACT(name, Tile, Cl, KS, ES)                                                               \
    static Launch *name##_h(const __half *W, const void *X, void *D, int N, int Mp, int Kp,      \
                            int ldk, int parts, int sms)                                           \
    {                                                                                              \
        return new LaunchOf<Cfg<cutlass::half_t, Tile, Cl, KS, ES>>(W, (const __half *)X, D, N,   \
                                                                    Mp, Kp, ldk, parts, sms);     \
    }                                                                                              \
    static Launch *name##_f(const __half *W, const void *X, void *D, int N, int Mp, int Kp,      \
                            int ldk, int parts, int sms)                                           \
    {                                                                                              \
        return new LaunchOf<Cfg<float, Tile, Cl, KS, ES>>(W, (const __half *)X, D, N, Mp, Kp,     \
                                                          ldk, parts, sms);                        \
    }
CFGS(FACT)
#define ENTRY(name, Tile, Cl, KS, ES) {#name, name##_h, name##_f},
static const CfgEntry CFG[] = {CFGS(ENTRY)};
enum { NCFG = sizeof(CFG) / sizeof(CFG[0]) };

/* ---- buffers and the cuBLAS side --------------------------------------------------------- */

/* A GEMM of the layer: N features from K inputs; split ones write fp32 parts. */
struct Shape4 {
    const char *name;
    int N, K, parts;
};

struct Probe {
    cudaStream_t st;
    cublasHandle_t h;
    int sms;
    __half *W[4];          /* per GEMM: LAYERS weight matrices back to back */
    __half *X[4];          /* per GEMM: its input (max rows) */
    void *D[4];            /* per GEMM: its output (fp16 or fp32 parts) */
    void *Dref[4];         /* cuBLAS's output for the check */
    __half *glue_in, *glue_out;
};

static Shape4 SH[4] = {{"Wqkv", QKV, HID, 1}, {"Wo", HID, HID, 4}, {"Wi", WI, HID, 1},
                       {"Wo2", HID, INNER, 4}};

static void glue(Probe *p, int rows)
{
    glue(p->st, p->glue_in, p->glue_out, rows * HID);
}

static size_t out_bytes(const Shape4 &s, int rows)
{
    return (size_t)rows * s.N * (s.parts > 1 ? 4 * s.parts : 2);
}

static void cublas_gemm(Probe *p, int g, int layer, int Mp, void *D)
{
    const Shape4 &s = SH[g];
    const float one = 1.0f, zero = 0.0f;
    const __half *W = p->W[g] + (size_t)layer * s.N * s.K;
    const int Kp = s.K / s.parts;
    /* Column-major view: D^T[N, Mp] = W[N, K] . X^T, part p over K slice p. */
    CB(cublasGemmStridedBatchedEx(p->h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, Mp, Kp, &one, W, CUDA_R_16F,
                                  s.K, Kp, p->X[g], CUDA_R_16F, s.K, Kp, &zero, D,
                                  s.parts > 1 ? CUDA_R_32F : CUDA_R_16F, s.N, (long long)Mp * s.N,
                                  s.parts, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static Launch *cutlass_gemm(Probe *p, int c, int g, int layer, int Mp, void *D)
{
    const Shape4 &s = SH[g];
    const __half *W = p->W[g] + (size_t)layer * s.N * s.K;
    Factory f = s.parts > 1 ? CFG[c].f32 : CFG[c].f16;
    return f(W, p->X[g], D, s.N, Mp, s.K / s.parts, s.K, s.parts, p->sms);
}

/* ---- timing ------------------------------------------------------------------------------ */

static double max_diff(Probe *p, int g, int Mp)
{
    const size_t n = out_bytes(SH[g], Mp) / (SH[g].parts > 1 ? 4 : 2);
    std::vector<float> a(n), b(n);
    if (SH[g].parts > 1) {
        CK(cudaMemcpy(a.data(), p->D[g], n * 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(b.data(), p->Dref[g], n * 4, cudaMemcpyDeviceToHost));
    } else {
        std::vector<__half> ha(n), hb(n);
        CK(cudaMemcpy(ha.data(), p->D[g], n * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hb.data(), p->Dref[g], n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            a[i] = __half2float(ha[i]);
            b[i] = __half2float(hb[i]);
        }
    }
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* Each GEMM alone over the 28 layers' weights; returns the best configuration per GEMM. */
static void per_gemm(Probe *p, int Mp, int best[4], float tb[4])
{
    for (int g = 0; g < 4; g++) {
        const float tc = graph_us(p->st, 15, [&] {
            for (int l = 0; l < LAYERS; l++)
                cublas_gemm(p, g, l, Mp, p->D[g]);
        }) / LAYERS;
        cublas_gemm(p, g, 0, Mp, p->Dref[g]);
        printf("  %-5s M=%-4d cublas %6.2f us |", SH[g].name, Mp, tc);
        best[g] = -1;
        tb[g] = 1e30f;
        for (int c = 0; c < NCFG; c++) {
            std::vector<Launch *> ls;
            for (int l = 0; l < LAYERS; l++)
                ls.push_back(cutlass_gemm(p, c, g, l, Mp, p->D[g]));
            const float t = graph_us(p->st, 15, [&] {
                for (int l = 0; l < LAYERS; l++)
                    ls[l]->run(p->st, false);
            }) / LAYERS;
            ls[0]->run(p->st, false);
            CK(cudaStreamSynchronize(p->st));
            const double d = max_diff(p, g, Mp);
            printf(" %s %.2f (d %.1e)", CFG[c].name, t, d);
            if (d > 2e-2)
                printf(" MISMATCH");
            else if (t < tb[g]) {
                tb[g] = t;
                best[g] = c;
            }
            for (Launch *x : ls)
                delete x;
        }
        printf("\n");
    }
}

/* The layer chain, 28 layers in one graph: 0 = cuBLAS, 1 = CUTLASS plain, 2 = CUTLASS with
 * programmatic launches. */
static float chain_us(Probe *p, int Mp, int mode, const int best[4], bool with_glue)
{
    std::vector<Launch *> ls;
    if (mode > 0)
        for (int l = 0; l < LAYERS; l++)
            for (int g = 0; g < 4; g++)
                ls.push_back(cutlass_gemm(p, best[g], g, l, Mp, p->D[g]));
    const float t = graph_us(p->st, 15, [&] {
        for (int l = 0; l < LAYERS; l++)
            for (int g = 0; g < 4; g++) {
                if (mode == 0)
                    cublas_gemm(p, g, l, Mp, p->D[g]);
                else
                    ls[l * 4 + g]->run(p->st, mode == 2);
                if (with_glue)
                    glue(p, Mp);
            }
    }) / LAYERS;
    for (Launch *x : ls)
        delete x;
    return t;
}

static void setup(Probe *p, int max_rows)
{
    CK(cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
    CB(cublasCreate(&p->h));
    CB(cublasSetStream(p->h, p->st));
    CK(cudaDeviceGetAttribute(&p->sms, cudaDevAttrMultiProcessorCount, 0));
    for (int g = 0; g < 4; g++) {
        const size_t nw = (size_t)LAYERS * SH[g].N * SH[g].K, nx = (size_t)max_rows * SH[g].K;
        CK(cudaMalloc(&p->W[g], nw * 2));
        CK(cudaMalloc(&p->X[g], nx * 2));
        CK(cudaMalloc(&p->D[g], out_bytes(SH[g], max_rows)));
        CK(cudaMalloc(&p->Dref[g], out_bytes(SH[g], max_rows)));
        init_kernel<<<1024, 256, 0, p->st>>>(p->W[g], nw, 0.125f, 11u + g);
        init_kernel<<<256, 256, 0, p->st>>>(p->X[g], nx, 2.0f, 101u + g);
    }
    CK(cudaMalloc(&p->glue_in, (size_t)max_rows * HID * 2));
    CK(cudaMalloc(&p->glue_out, (size_t)max_rows * HID * 2));
    CK(cudaMemset(p->glue_in, 0, (size_t)max_rows * HID * 2));
    CK(cudaStreamSynchronize(p->st));
}

int main(int argc, char **argv)
{
    const std::vector<int> rows = probe_rows(argc, argv, {16, 96, 128, 512}, 32768);
    int max_rows = 0;
    for (int r : rows)
        max_rows = r > max_rows ? r : max_rows;
    Probe p = {};
    setup(&p, max_rows);
    printf("cutlass probe: %d SMs, %d layers, weights %.0f MB\n", p.sms, LAYERS,
           (double)LAYERS * (QKV + HID + WI) * HID * 2 / 1e6 + (double)LAYERS * HID * INNER * 2 / 1e6);
    for (int Mp : rows) {
        int best[4];
        float tb[4];
        printf("rows %d, each GEMM alone (us per GEMM; d = max |diff| to cuBLAS):\n", Mp);
        per_gemm(&p, Mp, best, tb);
        bool ok = true;
        for (int g = 0; g < 4; g++)
            ok = ok && best[g] >= 0;
        if (!ok) {
            printf("  no passing configuration for some GEMM: chain skipped\n");
            continue;
        }
        printf("  best: %s %s %s %s\n", CFG[best[0]].name, CFG[best[1]].name, CFG[best[2]].name,
               CFG[best[3]].name);
        for (int gl = 0; gl < 2; gl++) {
            const float c0 = chain_us(&p, Mp, 0, best, gl), c1 = chain_us(&p, Mp, 1, best, gl),
                        c2 = chain_us(&p, Mp, 2, best, gl);
            printf("  layer chain%s, us per layer: cublas %.2f | cutlass %.2f | cutlass+pdl %.2f\n",
                   gl ? " with glue" : "", c0, c1, c2);
        }
    }
    return 0;
}
