/*
 * CUTLASS epilogue probe: do RoPE and GeGLU in the epilogues of CUTLASS's sm90 GEMMs beat
 * cuBLAS's GEMM followed by our RoPE / GeGLU kernel at the small packs of a Laya forward?
 *
 * The first probe (bench/cutlass_probe.cu) found CUTLASS's GEMMs 10-20% slower than cuBLAS's
 * at 96-128 rows, and programmatic launches worth little once other kernels sit between them.
 * What could still pay is a launch removed: each of our non-GEMM kernels costs ~3 us of a
 * ~36 us layer at 1x83. Two of them are elementwise on a GEMM's output:
 *   - RoPE pairs feature j with j + 32 of each Q and K head. With W's rows interleaved at load
 *     (row 2j of a head = row j, row 2j + 1 = row j + 32), the pair lands in one thread's two
 *     adjacent accumulators (the wgmma layout holds (m, n), (m, n + 1) together), so the
 *     epilogue rotates in registers. Attention is unchanged: q.k is the same sum under one
 *     permutation of both.
 *   - GeGLU multiplies gelu(u[j]) by u[F + j]; interleaved the same way, the epilogue writes
 *     the half-width g directly and U is never stored.
 * Tokens are the GEMM's M (the pair must run along N), features its N.
 *
 * Measured, per layer and 28 layers' weights in one graph:
 *   1. Wqkv + RoPE and Wi + GeGLU: cuBLAS + our kernel (programmatic, as in the forward)
 *      against the fused CUTLASS GEMM, plain and programmatic;
 *   2. a layer: Wqkv(+RoPE), stand-in, Wo, stand-in, Wi(+GeGLU), Wo2, stand-in, with Wo and
 *      Wo2 on cuBLAS in both (the stand-ins are the first probe's glue kernel, for attention
 *      and the two LayerNorms).
 * The fused outputs are checked against cuBLAS + our kernels (after undoing the interleave).
 *
 * Not part of the daemon. Build: make build/bench/cutlass_epilogue_probe CUTLASS_DIR=...
 * At large packs (thousands of rows) GeGLU and RoPE are bytes rather than launches (GeGLU reads
 * U, 2 x 5248 x 2 bytes a token, and writes g): there only step 1 is run, with tiles sized for them.
 * Run: build/bench/cutlass_epilogue_probe [ROWS...]   (default 16 96 128)
 */
#define CUTLASS_ENABLE_GDC_FOR_SM90 1

#include <cmath>

#include "bench/cutlass_common.cuh"
#include "kernels/cuda.h"

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/detail.hpp"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

using namespace cute;

enum { EPI_PLAIN = 0, EPI_ROPE = 1, EPI_GEGLU = 2, MAX_POS = 8192 };

struct EpiArgs {
    cutlass::half_t *d = nullptr;
    int64_t ld = 0;                /* output row stride, elements */
    const int32_t *pos = nullptr;  /* RoPE: position of each row */
    const float *cos_tab = nullptr, *sin_tab = nullptr;
    int rope_cols = 0;             /* RoPE: columns below this (Q and K) are rotated */
};

/* An operator-style epilogue (CUTLASS's DefaultEpilogue shape): accumulators straight from
 * registers to global memory, two adjacent columns at a time. */
template <int OP> class LayaEpilogue {
  public:
    using EpilogueSchedule = cutlass::gemm::EpilogueDefault;
    using DispatchPolicy = EpilogueSchedule;
    using ElementAccumulator = float;
    using ElementCompute = float;
    using ElementScalar = float;
    using ElementOutput = cutlass::half_t;
    using ElementC = void;
    using ElementD = cutlass::half_t;
    using GmemElementC = ElementD;
    using StrideC = Stride<int64_t, _1, int64_t>;
    using StrideD = StrideC;
    using GmemTiledCopyC = void;
    using GmemTiledCopyD = void;
    using ThreadEpilogueOp = cutlass::epilogue::thread::LinearCombination<ElementD, 1, float, float>; /* a name only */
    struct SharedStorage {};
    using TensorStorage = SharedStorage;
    using Arguments = EpiArgs;
    using Params = EpiArgs;

    template <class P> static constexpr Params to_underlying_arguments(P const &, Arguments const &a, void *)
    {
        return a;
    }
    template <class P> static size_t get_workspace_size(P const &, Arguments const &) { return 0; }
    template <class P>
    static cutlass::Status initialize_workspace(P const &, Arguments const &, void *, cudaStream_t,
                                                cutlass::CudaHostAdapter * = nullptr)
    {
        return cutlass::Status::kSuccess;
    }
    template <class P> static bool can_implement(P const &, Arguments const &a) { return a.d != nullptr; }

    CUTLASS_HOST_DEVICE LayaEpilogue(Params const &p, SharedStorage const & = SharedStorage()) : params(p) {}
    CUTLASS_DEVICE bool is_source_needed() { return false; }

    template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine,
              class FrgLayout, class TiledMma, class ResidueMNK>
    CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem, BlockShapeMNK blk, BlockCoordMNKL coord,
                                   cute::Tensor<FrgEngine, FrgLayout> const &acc, TiledMma tiled_mma,
                                   ResidueMNK, int thread_idx, char *)
    {
        const int M = get<0>(problem), N = get<1>(problem);
        auto [m_coord, n_coord, k_coord, l_coord] = coord;
        Tensor cD = local_tile(make_identity_tensor(make_shape(M, N)), take<0, 2>(blk),
                               make_coord(m_coord, n_coord));
        Tensor tCcD = tiled_mma.get_thread_slice(thread_idx).partition_C(cD);
        static_assert(is_static<FrgLayout>::value, "accumulator layout must be static");
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(acc); i += 2) {
            const int m = get<0>(tCcD(i)), n = get<1>(tCcD(i)); /* (m, n) and (m, n + 1) */
            if (m >= M || n >= N)
                continue;
            float x1 = acc(i), x2 = acc(i + 1);
            if (OP == EPI_GEGLU) {
                const float g = 0.5f * x1 * (1.0f + erff(x1 * 0.70710678118654752440f)) * x2;
                params.d[(int64_t)m * params.ld + n / 2] = cutlass::half_t(g);
                continue;
            }
            if (OP == EPI_ROPE && n < params.rope_cols) {
                const int j = (n % 64) / 2;
                const int64_t t = (int64_t)params.pos[m] * 32 + j;
                const float c = params.cos_tab[t], s = params.sin_tab[t];
                const float o1 = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
                const float o2 = __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
                x1 = o1, x2 = o2;
            }
            __half2 h = __floats2half2_rn(x1, x2);
            *reinterpret_cast<__half2 *>(params.d + (int64_t)m * params.ld + n) = h;
        }
    }

  private:
    Params params;
};

template <int OP, class Tile, class Cluster, class KSched> struct Fused {
    using Epi = cutlass::epilogue::collective::detail::Sm90TmaWarpSpecializedAdapter<LayaEpilogue<OP>>;
    using Main = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::half_t, cutlass::layout::RowMajor, 8,
        cutlass::half_t, cutlass::layout::ColumnMajor, 8, float, Tile, Cluster,
        cutlass::gemm::collective::StageCountAuto, KSched>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Main, Epi>;
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <class C> struct FusedLaunch : Launch {
    typename C::Gemm::Params params;
    /* X [Mp, K] row-major, W [N, K] row-major (interleaved where the epilogue pairs columns). */
    FusedLaunch(const __half *X, const __half *W, int Mp, int N, int K, EpiArgs e, int sms)
    {
        using K_ = typename C::Kernel;
        typename K_::StrideA sa{};
        typename K_::StrideB sb{};
        get<0>(sa) = K;
        get<0>(sb) = K;
        cutlass::KernelHardwareInfo hw;
        hw.device_id = 0;
        hw.sm_count = sms;
        typename C::Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                         {Mp, N, K, 1},
                                         {(const cutlass::half_t *)X, sa, (const cutlass::half_t *)W, sb},
                                         e,
                                         hw};
        params = cutlass_params<typename C::Gemm>(args, "a fused GEMM");
    }
    void run(cudaStream_t st, bool pdl) override { cutlass_run<typename C::Gemm>(params, st, pdl); }
};

using PP = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using T64x64 = Shape<_64, _64, _64>;
using T64x128 = Shape<_64, _128, _64>;
using C11 = Shape<_1, _1, _1>;
using C21 = Shape<_2, _1, _1>;

using CO = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using T128x128 = Shape<_128, _128, _64>;
using T128x256 = Shape<_128, _256, _64>;

typedef Launch *(*Factory)(const __half *, const __half *, int, int, int, EpiArgs, int);
template <int OP, class T, class Cl, class KS = PP>
static Launch *make(const __half *X, const __half *W, int Mp, int N, int K, EpiArgs e, int sms)
{
    return new FusedLaunch<Fused<OP, T, Cl, KS>>(X, W, Mp, N, K, e, sms);
}
struct Cfg {
    const char *name;
    Factory rope, geglu;
};
static const Cfg CFG[] = {
    {"pp64x64", make<EPI_ROPE, T64x64, C11>, make<EPI_GEGLU, T64x64, C11>},
    {"pp64x64c2", make<EPI_ROPE, T64x64, C21>, make<EPI_GEGLU, T64x64, C21>},
    {"pp64x128", make<EPI_ROPE, T64x128, C11>, make<EPI_GEGLU, T64x128, C11>},
    /* large packs (8x512, 64x512): where GeGLU and RoPE are bytes, not launches */
    {"co128x128", make<EPI_ROPE, T128x128, C11, CO>, make<EPI_GEGLU, T128x128, C11, CO>},
    {"co128x256", make<EPI_ROPE, T128x256, C11, CO>, make<EPI_GEGLU, T128x256, C11, CO>},
};
enum { NCFG = sizeof(CFG) / sizeof(CFG[0]) };

/* ---- buffers ----------------------------------------------------------------------------- */

struct Probe {
    cudaStream_t st;
    cublasHandle_t h;
    kn_stream ks;
    int sms;
    __half *wqkv, *wqkv_i, *wi, *wi_i, *wo, *wo2; /* 28 layers each; _i: rows interleaved */
    __half *x, *qkv, *qkv_ref, *u, *g, *g_ref, *att, *glue_out;
    float *parts, *cos_tab, *sin_tab;
    int32_t *pos;
};

/* dst row (head, 2j) = src row (head, j), (head, 2j + 1) = src (head, j + 32) over the first
 * `rope_rows` rows; the rest copied. */
__global__ void interleave_rope(const __half *src, __half *dst, int rows, int rope_rows, int K)
{
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        int s = r;
        if (r < rope_rows) {
            const int h = r / 64, q = r % 64;
            s = h * 64 + (q % 2 ? q / 2 + 32 : q / 2);
        }
        for (int k = threadIdx.x; k < K; k += blockDim.x)
            dst[(size_t)r * K + k] = src[(size_t)s * K + k];
    }
}

/* dst row 2j = src row j, 2j + 1 = src row F + j. */
__global__ void interleave_geglu(const __half *src, __half *dst, int F, int K)
{
    for (int r = blockIdx.x; r < 2 * F; r += gridDim.x) {
        const int s = r % 2 ? F + r / 2 : r / 2;
        for (int k = threadIdx.x; k < K; k += blockDim.x)
            dst[(size_t)r * K + k] = src[(size_t)s * K + k];
    }
}

static __half *alloc_fill(size_t n, float scale, uint32_t seed, cudaStream_t st)
{
    __half *p;
    CK(cudaMalloc(&p, n * 2));
    init_kernel<<<1024, 256, 0, st>>>(p, n, scale, seed);
    return p;
}

static void setup(Probe *p, int max_rows)
{
    CK(cudaStreamCreateWithFlags(&p->st, cudaStreamNonBlocking));
    CB(cublasCreate(&p->h));
    CB(cublasSetStream(p->h, p->st));
    p->ks.s = p->st;
    p->ks.pdl = 1;
    CK(cudaDeviceGetAttribute(&p->sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t nq = (size_t)QKV * HID, ni = (size_t)WI * HID;
    p->wqkv = alloc_fill(LAYERS * nq, 0.125f, 11u, p->st);
    p->wi = alloc_fill(LAYERS * ni, 0.125f, 13u, p->st);
    p->wo = alloc_fill((size_t)LAYERS * HID * HID, 0.125f, 12u, p->st);
    p->wo2 = alloc_fill((size_t)LAYERS * HID * INNER, 0.125f, 14u, p->st);
    CK(cudaMalloc(&p->wqkv_i, LAYERS * nq * 2));
    CK(cudaMalloc(&p->wi_i, LAYERS * ni * 2));
    for (int l = 0; l < LAYERS; l++) {
        interleave_rope<<<1024, 256, 0, p->st>>>(p->wqkv + l * nq, p->wqkv_i + l * nq, QKV, 2 * HID, HID);
        interleave_geglu<<<1024, 256, 0, p->st>>>(p->wi + l * ni, p->wi_i + l * ni, INNER, HID);
    }
    p->x = alloc_fill((size_t)max_rows * INNER, 2.0f, 101u, p->st);
    p->att = alloc_fill((size_t)max_rows * HID, 1.0f, 102u, p->st);
    CK(cudaMalloc(&p->qkv, (size_t)max_rows * QKV * 2));
    CK(cudaMalloc(&p->qkv_ref, (size_t)max_rows * QKV * 2));
    CK(cudaMalloc(&p->u, (size_t)max_rows * WI * 2));
    CK(cudaMalloc(&p->g, (size_t)max_rows * INNER * 2));
    CK(cudaMalloc(&p->g_ref, (size_t)max_rows * INNER * 2));
    CK(cudaMalloc(&p->glue_out, (size_t)max_rows * HID * 2));
    CK(cudaMalloc(&p->parts, (size_t)4 * max_rows * HID * 4));
    CK(cudaMalloc(&p->cos_tab, (size_t)MAX_POS * 32 * 4));
    CK(cudaMalloc(&p->sin_tab, (size_t)MAX_POS * 32 * 4));
    CK(cudaMalloc(&p->pos, (size_t)max_rows * 4));
    std::vector<int32_t> pos(max_rows);
    for (int i = 0; i < max_rows; i++)
        pos[i] = (i * 37) % 600; /* rows of several sequences: positions not in row order */
    CK(cudaMemcpy(p->pos, pos.data(), pos.size() * 4, cudaMemcpyHostToDevice));
    if (kn_rope_tables_gpu(p->ks, p->cos_tab, p->sin_tab, MAX_POS, 160000.0)) {
        fprintf(stderr, "rope tables failed\n");
        exit(1);
    }
    CK(cudaStreamSynchronize(p->st));
}

/* ---- the cuBLAS side --------------------------------------------------------------------- */

/* Y[Mp, N] (row-major, fp16 or fp32 parts over K) = X[Mp, K] W[N, K]^T. */
static void cublas_gemm(Probe *p, const __half *X, const __half *W, void *Y, int Mp, int N, int K, int parts)
{
    const float one = 1.0f, zero = 0.0f;
    const int Kp = K / parts;
    CB(cublasGemmStridedBatchedEx(p->h, CUBLAS_OP_T, CUBLAS_OP_N, N, Mp, Kp, &one, W, CUDA_R_16F, K, Kp, X,
                                  CUDA_R_16F, K, Kp, &zero, Y, parts > 1 ? CUDA_R_32F : CUDA_R_16F, N,
                                  (long long)Mp * N, parts, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void kn_check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "%s failed\n", what);
        exit(1);
    }
}

static void ref_qkv(Probe *p, int l, int Mp, __half *out)
{
    cublas_gemm(p, p->x, p->wqkv + (size_t)l * QKV * HID, out, Mp, QKV, HID, 1);
    kn_check(kn_rope(p->ks, KN_F16, out, Mp, HID, p->pos, p->cos_tab, p->sin_tab), "kn_rope");
}

static void ref_g(Probe *p, int l, int Mp, __half *out)
{
    cublas_gemm(p, p->x, p->wi + (size_t)l * WI * HID, p->u, Mp, WI, HID, 1);
    kn_check(kn_geglu(p->ks, KN_F16, p->u, out, Mp, INNER), "kn_geglu");
}

static Launch *fused_qkv(Probe *p, int c, int l, int Mp)
{
    EpiArgs e;
    e.d = (cutlass::half_t *)p->qkv;
    e.ld = QKV;
    e.pos = p->pos;
    e.cos_tab = p->cos_tab;
    e.sin_tab = p->sin_tab;
    e.rope_cols = 2 * HID;
    return CFG[c].rope(p->x, p->wqkv_i + (size_t)l * QKV * HID, Mp, QKV, HID, e, p->sms);
}

static Launch *fused_g(Probe *p, int c, int l, int Mp)
{
    EpiArgs e;
    e.d = (cutlass::half_t *)p->g;
    e.ld = INNER;
    return CFG[c].geglu(p->x, p->wi_i + (size_t)l * WI * HID, Mp, WI, HID, e, p->sms);
}

/* Max |fused - reference| over the outputs, the interleave undone, and max |reference|. */
static double check(Probe *p, int Mp, bool rope, double *ref_max)
{
    const int N = rope ? QKV : INNER;
    std::vector<__half> a((size_t)Mp * N), b((size_t)Mp * N);
    CK(cudaMemcpy(a.data(), rope ? p->qkv : p->g, a.size() * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(b.data(), rope ? p->qkv_ref : p->g_ref, b.size() * 2, cudaMemcpyDeviceToHost));
    double m = 0, r = 0;
    for (int i = 0; i < Mp; i++)
        for (int n = 0; n < N; n++) {
            int s = n; /* the reference's column of fused column n */
            if (rope && n < 2 * HID)
                s = n / 64 * 64 + (n % 2 ? (n % 64) / 2 + 32 : (n % 64) / 2);
            const double fa = __half2float(a[(size_t)i * N + n]), fb = __half2float(b[(size_t)i * N + s]);
            m = fmax(m, fabs(fa - fb));
            r = fmax(r, fabs(fb));
        }
    *ref_max = r;
    return m;
}

/* ---- measurements ------------------------------------------------------------------------ */

/* Every configuration of the fused Wqkv + RoPE (rope) or Wi + GeGLU, plain and programmatic, and
 * its first layer's output against the reference. */
static void sweep(Probe *p, int Mp, bool rope)
{
    for (int c = 0; c < NCFG; c++) {
        std::vector<Launch *> ls;
        for (int l = 0; l < LAYERS; l++)
            ls.push_back(rope ? fused_qkv(p, c, l, Mp) : fused_g(p, c, l, Mp));
        for (int pdl = 0; pdl < 2; pdl++) {
            const float t = graph_us(p->st, 15, [&] {
                for (Launch *x : ls)
                    x->run(p->st, pdl);
            }) / LAYERS;
            printf(" %s%s %.2f", CFG[c].name, pdl ? "+pdl" : "", t);
        }
        ls[0]->run(p->st, false);
        CK(cudaStreamSynchronize(p->st));
        double r, d = check(p, Mp, rope, &r);
        printf(" (d %.1e of %.1f)", d, r);
        for (Launch *x : ls)
            delete x;
    }
}

static void pairs(Probe *p, int Mp)
{
    const float tq = graph_us(p->st, 15, [&] {
        for (int l = 0; l < LAYERS; l++)
            ref_qkv(p, l, Mp, p->qkv_ref);
    }) / LAYERS;
    const float ti = graph_us(p->st, 15, [&] {
        for (int l = 0; l < LAYERS; l++)
            ref_g(p, l, Mp, p->g_ref);
    }) / LAYERS;
    ref_qkv(p, 0, Mp, p->qkv_ref);
    ref_g(p, 0, Mp, p->g_ref);
    printf("  Wqkv+RoPE: cublas+kn_rope %.2f us |", tq);
    sweep(p, Mp, true);
    printf("\n  Wi+GeGLU:  cublas+kn_geglu %.2f us |", ti);
    sweep(p, Mp, false);
    printf("\n");
}

/* A layer with stand-ins for attention and the LayerNorms; c < 0: cuBLAS + our kernels. */
static float layer_us(Probe *p, int Mp, int c, bool pdl)
{
    std::vector<Launch *> ls;
    if (c >= 0)
        for (int l = 0; l < LAYERS; l++) {
            ls.push_back(fused_qkv(p, c, l, Mp));
            ls.push_back(fused_g(p, c, l, Mp));
        }
    const int n = Mp * HID;
    const float t = graph_us(p->st, 15, [&] {
        for (int l = 0; l < LAYERS; l++) {
            if (c < 0)
                ref_qkv(p, l, Mp, p->qkv);
            else
                ls[2 * l]->run(p->st, pdl);
            glue(p->st, p->att, p->glue_out, n); /* attention */
            cublas_gemm(p, p->att, p->wo + (size_t)l * HID * HID, p->parts, Mp, HID, HID, 4);
            glue(p->st, p->att, p->glue_out, n); /* LayerNorm */
            if (c < 0)
                ref_g(p, l, Mp, p->g);
            else
                ls[2 * l + 1]->run(p->st, pdl);
            cublas_gemm(p, p->g, p->wo2 + (size_t)l * HID * INNER, p->parts, Mp, HID, INNER, 4);
            glue(p->st, p->att, p->glue_out, n); /* LayerNorm */
        }
    }) / LAYERS;
    for (Launch *x : ls)
        delete x;
    return t;
}

int main(int argc, char **argv)
{
    const std::vector<int> rows = probe_rows(argc, argv, {16, 96, 128}, 32768);
    int max_rows = 0;
    for (int r : rows)
        max_rows = r > max_rows ? r : max_rows;
    Probe p = {};
    setup(&p, max_rows);
    printf("cutlass epilogue probe: %d SMs, %d layers (us per layer; d = max |fused - reference|)\n", p.sms,
           LAYERS);
    for (int Mp : rows) {
        printf("rows %d:\n", Mp);
        pairs(&p, Mp);
        if (Mp > 1024) /* the stand-ins and the 4-part branches model small packs only */
            continue;
        printf("  layer: cublas+kernels %.2f |", layer_us(&p, Mp, -1, false));
        for (int c = 0; c < NCFG; c++)
            printf(" %s %.2f, +pdl %.2f |", CFG[c].name, layer_us(&p, Mp, c, false), layer_us(&p, Mp, c, true));
        printf("\n");
    }
    return 0;
}
