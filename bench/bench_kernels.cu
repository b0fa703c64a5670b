/*
 * bench_kernels.cu - times layad's CUDA kernels (kernels/cuda.h) at Laya shapes
 * against the ceilings measured in the same run; `make bench-kernels` runs it,
 * then bench/bench_torch_kernels.py times the PyTorch equivalents of the same records
 * and writes the merged JSON.
 *
 *   build/bench/bench_kernels OUT.json [--quick] [--only=gemm,gemm_head,gemm_l2,gemm_split,proj_small,layernorm_parts,launch_floor,geglu,layernorm,rope,attention,attention_form]
 *
 * --quick: bf16 only; --only: just the named kernel families (the ceilings always run).
 *
 * Ceilings: a 1 GiB device-to-device copy (bytes read + written; the faster of
 * the eager copy and a graph memcpy node) and a 8192^3 bf16 GEMM through
 * cuBLASLt, both on random data.
 * Method: every launch reads a different input set (sets are rotated so the
 * data touched between two uses of one set exceeds the 60 MB L2 several times,
 * as in a forward where every layer's weights are new); a batch of n launches
 * (n sized to ~1 ms) is captured in a CUDA graph, as the forward runs, and its
 * replay timed with CUDA events; 9 replays after a warm-up; the median batch
 * mean is the result, min and max are the spread. The same batch launched
 * eagerly is reported too (ours_eager_us: host launch cost included; cuBLASLt
 * calls cost ~7 us of host time each, measured). Inputs are uniform random,
 * never zeros. Shapes: tokens M = 83, 512, 4096, 32768 and the
 * English (D 1024, F 2624) and mmBERT (D 768, F 1152) projections; attention at
 * 1x83, 1x512, 8x512, 64x512 (English) and 1x1024 (mmBERT), global and sliding
 * (w = 64), full lengths and mixed lengths, the rows packed back to back (the
 * varlen layout the forward uses). Our kernels launch with programmatic
 * dependent launch on the timed stream, as the GPU backend runs them.
 */
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

/* kernels/cpu.h (kn_attention_tiles) is a C header without C++ guards, and cuda.h
 * includes it outside its own extern "C": include it first, with C linkage. */
extern "C" {
#include "kernels/cpu.h"
}
#include "kernels/cuda.h"
#include "kernels/cuda_util.cuh" /* kn_launch, kn_pdl_wait */

#include "bench/bench_check.cuh" /* CK, KOK */

static const size_t ROTATE_BYTES = (size_t)256 << 20; /* data cycled through between reuses */
static const kn_stream KS0 = {NULL, 0};                /* set-up on the legacy stream, plain launches */

__global__ void fill_kernel(float *p, size_t n, uint32_t seed, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint32_t x = (uint32_t)i * 2654435761u ^ seed;
        x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
        p[i] = lo + (hi - lo) * (float)(x >> 8) * (1.0f / 16777216.0f);
    }
}

/* A device buffer of n elements of dt, random in [lo, hi). */
static void *rand_buf(size_t n, kn_dtype dt, float lo = -1, float hi = 1)
{
    static uint32_t seed = 1234;
    void *d = NULL;
    float *tmp = NULL;
    CK(cudaMalloc(&d, n * kn_dtype_size(dt) + 256));
    CK(cudaMalloc((void **)&tmp, n * sizeof(float) + 256));
    fill_kernel<<<1024, 256>>>(tmp, n, seed++ * 0x9e3779b9u, lo, hi);
    CK(cudaGetLastError());
    KOK(kn_convert(KS0, tmp, KN_F32, d, dt, n));
    CK(cudaDeviceSynchronize());
    CK(cudaFree(tmp));
    return d;
}

/* Frees every buffer of the given sets. */
static void free_sets(std::initializer_list<std::vector<void *> *> sets)
{
    for (std::vector<void *> *v : sets)
        for (void *p : *v)
            CK(cudaFree(p));
}

static cudaStream_t g_s;  /* every launch goes here (graph capture needs a real stream) */
static kn_stream g_ks;    /* g_s with programmatic dependent launch, as the backend runs */

struct timing { double med_us, min_us, max_us, eager_us; int reps; };

/* Times f(i) (i = launch counter, for rotating input sets) on g_s: graph replay
 * of a batch of launches, and the same batch launched eagerly. */
static timing time_it(const std::function<void(int)> &f)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaDeviceSynchronize()); /* inputs were made on the legacy stream */
    int it = 0;
    for (int w = 0; w < 3; w++)
        f(it++);
    CK(cudaStreamSynchronize(g_s));
    CK(cudaEventRecord(a, g_s));
    f(it++);
    CK(cudaEventRecord(b, g_s));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    int reps = (int)(1.0 / std::max(ms, 1e-3f));
    reps = std::max(1, std::min(reps, 200));

    std::vector<double> te;
    for (int batch = 0; batch < 5; batch++) {
        CK(cudaEventRecord(a, g_s));
        for (int r = 0; r < reps; r++)
            f(it++);
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        te.push_back(1e3 * ms / reps);
    }
    std::sort(te.begin(), te.end());

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeThreadLocal));
    for (int r = 0; r < reps; r++)
        f(it++);
    CK(cudaStreamEndCapture(g_s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, g_s));
    CK(cudaStreamSynchronize(g_s));
    std::vector<double> t;
    for (int batch = 0; batch < 9; batch++) {
        CK(cudaEventRecord(a, g_s));
        CK(cudaGraphLaunch(exec, g_s));
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(1e3 * ms / reps);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return {t[t.size() / 2], t.front(), t.back(), te[te.size() / 2], reps};
}

static int nsets(size_t set_bytes)
{
    size_t n = (ROTATE_BYTES + set_bytes - 1) / std::max<size_t>(set_bytes, 1);
    return (int)std::max<size_t>(2, std::min<size_t>(n, 64));
}

static FILE *g_json;
static int g_nrec;
static double g_copy_tbps, g_copy_graph_tbps, g_copy_eager_tbps, g_gemm_tflops;

/* One JSON record; flops or bytes (0 when not applicable) give the rate. */
static void record(const std::string &kernel, const std::string &op, kn_dtype dt, const std::string &shape_json,
                   const timing &t, double flops, double bytes, const std::string &extra = "")
{
    const double s = t.med_us * 1e-6;
    fprintf(g_json, "%s\n    {\"kernel\": \"%s\", \"op\": \"%s\", \"dtype\": \"%s\", \"shape\": %s, "
                    "\"ours_us\": %.3f, \"ours_min_us\": %.3f, \"ours_max_us\": %.3f, \"ours_eager_us\": %.3f, "
                    "\"reps\": %d",
            g_nrec++ ? "," : "", kernel.c_str(), op.c_str(), kn_dtype_name(dt), shape_json.c_str(), t.med_us,
            t.min_us, t.max_us, t.eager_us, t.reps);
    if (flops > 0)
        fprintf(g_json, ", \"flop\": %.0f, \"ours_tflops\": %.2f, \"ours_pct_gemm_ceiling\": %.1f", flops,
                flops / s * 1e-12, 100.0 * flops / s * 1e-12 / g_gemm_tflops);
    if (bytes > 0)
        fprintf(g_json, ", \"bytes\": %.0f, \"ours_tbps\": %.3f, \"ours_pct_copy_ceiling\": %.1f", bytes,
                bytes / s * 1e-12, 100.0 * bytes / s * 1e-12 / g_copy_tbps);
    fprintf(g_json, "%s}", extra.c_str());
    printf("%-10s %-22s %-5s %-34s %9.2f us", kernel.c_str(), op.c_str(), kn_dtype_name(dt), shape_json.c_str(),
           t.med_us);
    if (flops > 0)
        printf("  %7.1f TFLOP/s (%4.1f%%)", flops / s * 1e-12, 100.0 * flops / s * 1e-12 / g_gemm_tflops);
    if (bytes > 0)
        printf("  %6.2f TB/s (%4.1f%%)", bytes / s * 1e-12, 100.0 * bytes / s * 1e-12 / g_copy_tbps);
    printf("%s\n", extra.c_str());
    fflush(stdout);
}

/* ---- ceilings ------------------------------------------------------------------ */

static void ceilings(kn_gemm_ctx *ctx)
{
    const size_t n = (size_t)1 << 30;
    void *a, *b;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    CK(cudaMemset(a, 1, n));
    timing t = time_it([&](int) { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, g_s)); });
    /* A memcpy node inside a CUDA graph ran at 2.7 TB/s where the eager copy ran at 4.26 (H200,
     * measured): the ceiling is the faster of the two. */
    g_copy_graph_tbps = 2.0 * n / (t.med_us * 1e-6) * 1e-12;
    g_copy_eager_tbps = 2.0 * n / (t.eager_us * 1e-6) * 1e-12;
    g_copy_tbps = std::max(g_copy_graph_tbps, g_copy_eager_tbps);
    printf("device copy: graph memcpy node %.3f TB/s, eager %.3f TB/s\n", g_copy_graph_tbps, g_copy_eager_tbps);
    CK(cudaFree(a));
    CK(cudaFree(b));
    const int S = 8192;
    void *X = rand_buf((size_t)S * S, KN_BF16), *W = rand_buf((size_t)S * S, KN_BF16), *Y;
    CK(cudaMalloc(&Y, (size_t)S * S * 2));
    timing g = time_it([&](int) { KOK(kn_gemm(ctx, g_ks, X, KN_BF16, W, KN_BF16, NULL, Y, KN_BF16, S, S, S, KN_EPI_NONE)); });
    g_gemm_tflops = 2.0 * S * S * (double)S / (g.med_us * 1e-6) * 1e-12;
    CK(cudaFree(X));
    CK(cudaFree(W));
    CK(cudaFree(Y));
    printf("ceilings: device copy %.3f TB/s (read + write, 1 GiB), cuBLASLt bf16 GEMM 8192^3 %.1f TFLOP/s\n",
           g_copy_tbps, g_gemm_tflops);
}

/* ---- GEMM ------------------------------------------------------------------------ */

/* xdt / ydt default to dt; own: kn_gemm_own instead of kn_gemm; bias16: bias in dt (kn_gemm_ex). */
/* hot_w: every launch reads the same weights (X and Y still rotate), so W is served from L2:
 * what a GEMM would take if its weights had been prefetched there. */
static void bench_gemm(kn_gemm_ctx *ctx, const char *op, kn_dtype dt, int M, int N, int K, int epi, bool bias,
                       bool own, bool bias16 = false, int xdt_ = -1, int ydt_ = -1, bool hot_w = false)
{
    const kn_dtype xdt = xdt_ < 0 ? dt : (kn_dtype)xdt_, ydt = ydt_ < 0 ? dt : (kn_dtype)ydt_;
    const size_t xs = (size_t)M * K, ws = (size_t)N * K, ys = (size_t)M * N;
    const int S = nsets(xs * kn_dtype_size(xdt) + ws * 2 + ys * kn_dtype_size(ydt));
    std::vector<void *> X(S), W(S), Y(S);
    for (int i = 0; i < S; i++) {
        X[i] = rand_buf(xs, xdt);
        W[i] = rand_buf(ws, dt, -0.05f, 0.05f);
        CK(cudaMalloc(&Y[i], ys * kn_dtype_size(ydt)));
    }
    void *b = bias ? rand_buf(N, bias16 ? dt : KN_F32) : NULL;
    auto run = [&](int i) {
        const int k = i % S, kw = hot_w ? 0 : k;
        if (own)
            KOK(kn_gemm_own(g_ks, X[k], xdt, W[kw], dt, (const float *)b, Y[k], ydt, M, N, K, epi));
        else
            KOK(kn_gemm_ex(ctx, g_ks, X[k], xdt, W[kw], dt, b, bias16 ? dt : KN_F32, Y[k], ydt, M, N, K, epi));
    };
    const int lt = kn_gemm_uses_cublaslt(xdt, dt, ydt, X[0], W[0], Y[0], N, K, epi);
    timing t = time_it(run);
    char shape[96];
    snprintf(shape, sizeof shape, "{\"M\": %d, \"N\": %d, \"K\": %d}", M, N, K);
    char extra[256];
    snprintf(extra, sizeof extra,
             ", \"epi\": %d, \"bias\": %d, \"bias_dtype\": \"%s\", \"xdt\": \"%s\", \"ydt\": \"%s\", "
             "\"path\": \"%s\", \"weights\": \"%s\"",
             epi, bias ? 1 : 0, bias16 ? kn_dtype_name(dt) : "fp32", kn_dtype_name(xdt), kn_dtype_name(ydt),
             !own && lt ? (epi == KN_EPI_GELU ? "cublaslt+gelu_pass" : "cublaslt")
                        : M <= 64 || xdt == KN_F32 ? "own_rows" : "own_tiled",
             hot_w ? "one set, from L2" : "rotated, from DRAM");
    record(own ? "gemm_own" : "gemm", op, dt, shape, t, 2.0 * M * N * (double)K, 0, extra);
    free_sets({&X, &W, &Y});
    if (b)
        CK(cudaFree(b));
}

/* The model's projections, W [N, K]; acc: a residual branch (the forward adds it into the fp32
 * residual stream in the GEMM's epilogue). */
struct proj {
    const char *op;
    int N, K;
    bool acc;
};
static const proj g_english[] = {{"en.Wqkv", 3072, 1024, false}, {"en.attn.Wo", 1024, 1024, true},
                                 {"en.mlp.Wi", 5248, 1024, false}, {"en.mlp.Wo", 1024, 2624, true}};
static const proj g_mmbert[] = {{"mm.Wqkv", 2304, 768, false}, {"mm.attn.Wo", 768, 768, true},
                                {"mm.mlp.Wi", 2304, 768, false}, {"mm.mlp.Wo", 768, 1152, true}};

/* ---- split-K into partials ---------------------------------------------------------------- */

/* A residual branch's GEMM at M rows as the forward's tuned plan would run it (kn_gemm_prepare
 * on real operands, then kn_gemm_ex), or with S > 1 as S fp32 partial products (kn_gemm_split,
 * prepared and tuned the same way; with small, on the small-pack kernel, kn_gemm_split_small):
 * ydt / epi say the unsplit form (the accumulating fp32 epilogue of the attention-out and MLP-out
 * GEMMs, or a plain product). */
static void bench_gemm_parts(kn_gemm_ctx *tctx, const char *op, kn_dtype dt, int M, int N, int K, kn_dtype ydt,
                             int epi, int S, bool small = false)
{
    const size_t xs = (size_t)M * K, wsz = (size_t)N * K, ys = (size_t)(S > 1 ? S : 1) * M * N;
    const kn_dtype yd = S > 1 ? KN_F32 : ydt;
    const int sets = nsets(xs * 2 + wsz * 2 + ys * kn_dtype_size(yd));
    std::vector<void *> X(sets), W(sets), Y(sets);
    for (int i = 0; i < sets; i++) {
        X[i] = rand_buf(xs, dt);
        W[i] = rand_buf(wsz, dt, -0.05f, 0.05f);
        Y[i] = rand_buf(ys, yd);
    }
    if (S > 1 && !small)
        KOK(kn_gemm_prepare_split(tctx, dt, M, N, K, S, g_ks, X[0], W[0], (float *)Y[0]) == 1 ? 0 : -1);
    else if (S == 1)
        KOK(kn_gemm_prepare(tctx, dt, dt, ydt, M, N, K, epi, 0, g_ks, X[0], W[0], Y[0]));
    timing t = time_it([&](int j) {
        const int k = j % sets;
        if (small)
            KOK(kn_gemm_split_small(g_ks, X[k], W[k], dt, (float *)Y[k], M, N, K, S));
        else if (S > 1)
            KOK(kn_gemm_split(tctx, g_ks, X[k], W[k], dt, (float *)Y[k], M, N, K, S));
        else
            KOK(kn_gemm_ex(tctx, g_ks, X[k], dt, W[k], dt, NULL, KN_F32, Y[k], ydt, M, N, K, epi));
    });
    char shape[96], extra[96];
    snprintf(shape, sizeof shape, "{\"M\": %d, \"N\": %d, \"K\": %d}", M, N, K);
    snprintf(extra, sizeof extra, ", \"split\": %d, \"ydt\": \"%s\", \"epi\": %d", S > 1 ? S : 0,
             S > 1 ? "fp32 partials" : kn_dtype_name(ydt), S > 1 ? KN_EPI_NONE : epi);
    record(small ? "gemm_split_small" : "gemm_split", op, dt, shape, t, 2.0 * M * N * (double)K, (double)wsz * 2,
           extra);
    free_sets({&X, &W, &Y});
}

/* The encoder's four GEMMs at small M: the forward's unsplit plan, the plain product with fp32
 * output, and 2 / 4 / 8 partial products, each tuned on its own operands; the residual branches'
 * 4 parts also on the small-pack kernel up to 128 rows (the forward takes it up to 48). */
static void bench_gemm_splits(kn_dtype dt)
{
    kn_gemm_ctx *tctx = kn_gemm_ctx_create(0, 0);
    if (!tctx)
        exit(1);
    kn_gemm_ctx_set_tuning(tctx, 1);
    const void *a16 = (const void *)256; /* any 16-byte aligned operand: the check reads no memory */
    for (int m : {16, 32, 48, 96, 128, 256, 512})
        for (auto &p : g_english) {
            bench_gemm_parts(tctx, p.op, dt, m, p.N, p.K, p.acc ? KN_F32 : dt, p.acc ? KN_EPI_ACC : KN_EPI_NONE, 1);
            bench_gemm_parts(tctx, p.op, dt, m, p.N, p.K, KN_F32, KN_EPI_NONE, 1);
            for (int s : {2, 4, 8})
                if (p.K % (8 * s) == 0)
                    bench_gemm_parts(tctx, p.op, dt, m, p.N, p.K, KN_F32, KN_EPI_NONE, s);
            if (p.acc && kn_gemm_split_small_ok(dt, a16, a16, a16, m, p.N, p.K, 4))
                bench_gemm_parts(tctx, p.op, dt, m, p.N, p.K, KN_F32, KN_EPI_NONE, 4, true);
        }
    kn_gemm_ctx_destroy(tctx);
}

/* ---- the fused projections of the smallest packs ---------------------------------------- */

/* Wqkv + RoPE (rope) or Wi + GeGLU at M rows of geometry (D, F): on the own fused kernel
 * (kn_proj_small_rope / _geglu, one launch) or, fused false, as the forward runs them without
 * it (the tuned cuBLASLt plan, then kn_rope / kn_geglu, launched back to back). Bytes are the
 * weights': what either form must stream. */
static void bench_proj(kn_gemm_ctx *tctx, const char *op, kn_dtype dt, int M, int D, int F, bool rope, bool fused)
{
    const int N = rope ? 3 * D : 2 * F, K = D;
    const size_t xs = (size_t)M * K, wsz = (size_t)N * K, ys = (size_t)M * N;
    const int sets = nsets(xs * 2 + wsz * 2 + ys * 4);
    std::vector<void *> X(sets), W(sets), Y(sets), G(sets);
    for (int i = 0; i < sets; i++) {
        X[i] = rand_buf(xs, dt);
        W[i] = rand_buf(wsz, dt, -0.05f, 0.05f);
        CK(cudaMalloc(&Y[i], ys * 2));
        CK(cudaMalloc(&G[i], (size_t)M * F * 2));
    }
    float *ct, *st;
    int32_t *pos;
    CK(cudaMalloc((void **)&ct, sizeof(float) * 512 * KN_ROPE_HALF));
    CK(cudaMalloc((void **)&st, sizeof(float) * 512 * KN_ROPE_HALF));
    KOK(kn_rope_tables_gpu(KS0, ct, st, 512, 160000.0));
    std::vector<int32_t> hp(M);
    for (int m = 0; m < M; m++)
        hp[m] = m;
    CK(cudaMalloc((void **)&pos, sizeof(int32_t) * M));
    CK(cudaMemcpy(pos, hp.data(), sizeof(int32_t) * M, cudaMemcpyHostToDevice));
    if (!fused)
        KOK(kn_gemm_prepare(tctx, dt, dt, dt, M, N, K, KN_EPI_NONE, 0, g_ks, X[0], W[0], Y[0]));
    timing t = time_it([&](int j) {
        const int k = j % sets;
        if (fused && rope)
            KOK(kn_proj_small_rope(g_ks, X[k], W[k], dt, Y[k], M, D, K, pos, ct, st));
        else if (fused)
            KOK(kn_proj_small_geglu(g_ks, X[k], W[k], dt, G[k], M, F, K));
        else {
            KOK(kn_gemm_ex(tctx, g_ks, X[k], dt, W[k], dt, NULL, KN_F32, Y[k], dt, M, N, K, KN_EPI_NONE));
            KOK(rope ? kn_rope(g_ks, dt, Y[k], M, D, pos, ct, st) : kn_geglu(g_ks, dt, Y[k], G[k], M, F));
        }
    });
    char shape[96];
    snprintf(shape, sizeof shape, "{\"M\": %d, \"N\": %d, \"K\": %d}", M, N, K);
    record(fused ? "proj_small" : "proj_chain", op, dt, shape, t, 2.0 * M * N * (double)K, (double)wsz * 2,
           fused ? ", \"path\": \"own fused kernel\"" : ", \"path\": \"cublaslt + own kernel\"");
    free_sets({&X, &W, &Y, &G});
    CK(cudaFree(ct));
    CK(cudaFree(st));
    CK(cudaFree(pos));
}

/* Both forms of both projections at 16-64 rows, English and mmBERT geometry. */
static void bench_projs(kn_dtype dt)
{
    kn_gemm_ctx *tctx = kn_gemm_ctx_create(0, 0);
    if (!tctx)
        exit(1);
    kn_gemm_ctx_set_tuning(tctx, 1);
    const struct { const char *rope, *geglu; int D, F; } geo[] = {{"en.Wqkv+rope", "en.Wi+geglu", 1024, 2624},
                                                                  {"mm.Wqkv+rope", "mm.Wi+geglu", 768, 1152}};
    for (auto &g : geo)
        for (int m : {16, 32, 48, 64})
            for (bool fused : {true, false}) {
                if (fused && !kn_proj_small_ok(dt, m, g.D))
                    continue;
                bench_proj(tctx, g.rope, dt, m, g.D, g.F, true, fused);
                bench_proj(tctx, g.geglu, dt, m, g.D, g.F, false, fused);
            }
    kn_gemm_ctx_destroy(tctx);
}

/* ---- the launch floor ------------------------------------------------------------------ */

/* A kernel that only waits for its predecessor: launched back to back with programmatic
 * dependent launch (as the forward launches its own kernels), its time per launch is what
 * a kernel boundary costs before any work, the bound on what fusing two kernels can save. */
__global__ void floor_kernel() { kn_pdl_wait(); }

/* One launch_floor record: move() then an empty kernel (move_first), or the other way round. */
static void time_move(const char *op, const char *note, size_t bytes, bool move_first,
                      const std::function<void()> &move)
{
    timing t = time_it([&](int) {
        if (move_first)
            move();
        CK(kn_launch(floor_kernel, dim3(1), dim3(128), 0, g_ks));
        if (!move_first)
            move();
    });
    record("launch_floor", op, KN_F16, "{\"bytes\": " + std::to_string(bytes) + "}", t, 0, 0,
           std::string(", \"note\": \"") + note + "\"");
}

static void bench_launch_floor()
{
    for (unsigned blocks : {1u, 32u, 132u, 528u}) {
        timing t = time_it([&](int) { CK(kn_launch(floor_kernel, dim3(blocks), dim3(128), 0, g_ks)); });
        record("launch_floor", "empty", KN_F16, "{\"blocks\": " + std::to_string(blocks) + ", \"threads\": 128}", t,
               0, 0, ", \"note\": \"dtype field unused\"");
    }
    /* The forward's input and output moves (a few KB in, a few hundred bytes out) next to an
     * empty kernel, as a graph's copy nodes and as kn_copy on mapped pinned memory (the forward's
     * way): what each costs. */
    void *host, *host_dev, *dev;
    CK(cudaHostAlloc(&host, 1 << 16, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&host_dev, host, 0));
    CK(cudaMalloc(&dev, 1 << 16));
    for (size_t n : {(size_t)4096, (size_t)16384}) {
        time_move("h2d_copy+empty", "pinned host to device, then an empty kernel", n, true,
                  [&] { CK(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, g_s)); });
        time_move("h2d_kernel+empty", "kn_copy from mapped pinned host memory, then an empty kernel", n, true,
                  [&] { KOK(kn_copy(g_ks, dev, host_dev, n)); });
    }
    for (size_t n : {(size_t)256, (size_t)2048}) {
        time_move("empty+d2h_copy", "an empty kernel, then device to pinned host", n, false,
                  [&] { CK(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, g_s)); });
        time_move("empty+d2h_kernel", "an empty kernel, then kn_copy to mapped pinned host memory", n, false,
                  [&] { KOK(kn_copy(g_ks, host_dev, dev, n)); });
    }
    CK(cudaFreeHost(host));
    CK(cudaFree(dev));
}

/* ---- memory-bound kernels ------------------------------------------------------------ */

static void bench_geglu(kn_dtype dt, int M, int F)
{
    const size_t set = (size_t)M * 3 * F * 2;
    const int S = nsets(set);
    std::vector<void *> U(S), O(S);
    for (int i = 0; i < S; i++) {
        U[i] = rand_buf((size_t)M * 2 * F, dt, -3, 3);
        CK(cudaMalloc(&O[i], (size_t)M * F * 2));
    }
    timing t = time_it([&](int i) { KOK(kn_geglu(g_ks, dt, U[i % S], O[i % S], M, F)); });
    char shape[64];
    snprintf(shape, sizeof shape, "{\"M\": %d, \"F\": %d}", M, F);
    record("geglu", "geglu", dt, shape, t, 0, (double)set);
    free_sets({&U, &O});
}

/* S == 0: the LayerNorm that adds a 16-bit branch (kn_layernorm); S > 0: the one that adds S fp32
 * partial products of a split GEMM (kn_layernorm_parts). */
static void bench_layernorm(kn_dtype dt, int M, int D, int S = 0)
{
    const size_t MD = (size_t)M * D;
    const size_t set = MD * (4 + 4 + (S ? 4 * S : 2) + 2); /* r read + write, branch read, y write */
    const int sets = nsets(set);
    std::vector<void *> R(sets), X(sets), Y(sets);
    for (int i = 0; i < sets; i++) {
        R[i] = rand_buf(MD, KN_F32, -3, 3);
        /* small: r stays bounded over many runs */
        X[i] = S ? rand_buf(S * MD, KN_F32, -1e-3f, 1e-3f) : rand_buf(MD, dt, -1e-3f, 1e-3f);
        CK(cudaMalloc(&Y[i], MD * 2));
    }
    float *w = (float *)rand_buf(D, KN_F32, 0.5f, 1.5f);
    timing t = time_it([&](int i) {
        const int k = i % sets;
        if (S)
            KOK(kn_layernorm_parts(g_ks, (float *)R[k], (const float *)X[k], S, (long)MD, NULL, w, NULL, Y[k], dt, NULL, M,
                                   D, 1e-5f));
        else
            KOK(kn_layernorm(g_ks, (float *)R[k], X[k], dt, w, NULL, Y[k], dt, NULL, M, D, 1e-5f));
    });
    char shape[64];
    if (S)
        snprintf(shape, sizeof shape, "{\"M\": %d, \"D\": %d, \"S\": %d}", M, D, S);
    else
        snprintf(shape, sizeof shape, "{\"M\": %d, \"D\": %d}", M, D);
    record(S ? "layernorm_parts" : "layernorm", S ? "parts_add_layernorm" : "residual_add_layernorm", dt, shape, t, 0,
           (double)set);
    free_sets({&R, &X, &Y});
    CK(cudaFree(w));
}

static void bench_rope(kn_dtype dt, int M, int D, int max_pos)
{
    const size_t set = (size_t)M * 2 * D * 2 * 2; /* Q and K read and written */
    const int S = nsets(set);
    std::vector<void *> Q(S);
    for (int i = 0; i < S; i++)
        Q[i] = rand_buf((size_t)M * 3 * D, dt);
    float *ct, *st;
    int32_t *pos;
    CK(cudaMalloc((void **)&ct, sizeof(float) * max_pos * KN_ROPE_HALF));
    CK(cudaMalloc((void **)&st, sizeof(float) * max_pos * KN_ROPE_HALF));
    KOK(kn_rope_tables_gpu(KS0, ct, st, max_pos, 160000.0));
    std::vector<int32_t> hp(M);
    for (int m = 0; m < M; m++)
        hp[m] = m % 512;
    CK(cudaMalloc((void **)&pos, sizeof(int32_t) * M));
    CK(cudaMemcpy(pos, hp.data(), sizeof(int32_t) * M, cudaMemcpyHostToDevice));
    timing t = time_it([&](int i) { KOK(kn_rope(g_ks, dt, Q[i % S], M, D, pos, ct, st)); });
    char shape[64];
    snprintf(shape, sizeof shape, "{\"M\": %d, \"D\": %d}", M, D);
    record("rope", "rope_qk_inplace", dt, shape, t, 0, (double)set);
    free_sets({&Q});
    CK(cudaFree(ct));
    CK(cudaFree(st));
    CK(cudaFree(pos));
}

/* ---- attention -------------------------------------------------------------------------- */

/* B rows of L tokens (mixed: lengths between L/4 and L) packed back to back, T = the sum of the
 * lengths, over the host-built query-tile list. The record keeps the padded shape's fields (B,
 * L, lens) for the PyTorch comparison, which runs SDPA on [B, L] with the same masks. */
static void bench_attention(kn_dtype dt, int B, int L, int D, int window, bool mixed, int groups = 0)
{
    std::vector<int32_t> cu(B + 1, 0);
    std::string lj = "[";
    for (int b = 0; b < B; b++) {
        const int len = mixed ? std::max(1, L - (int)((b * 2654435761u) % (unsigned)(L * 3 / 4))) : L;
        cu[b + 1] = cu[b] + len;
        lj += (b ? ", " : "") + std::to_string(len);
    }
    lj += "]";
    const int T = cu[B], cap = kn_attention_tiles_cap(T, B);
    std::vector<int32_t> tiles(2 * (size_t)cap);
    if (kn_attention_tiles(cu.data(), B, tiles.data(), cap) < 0) {
        fprintf(stderr, "bench_attention: the tile list does not fit its capacity\n");
        exit(1);
    }
    const size_t set = (size_t)T * 4 * D * 2;
    const int S = nsets(set);
    std::vector<void *> Q(S), O(S);
    for (int i = 0; i < S; i++) {
        Q[i] = rand_buf((size_t)T * 3 * D, dt, -2, 2);
        CK(cudaMalloc(&O[i], (size_t)T * D * 2));
    }
    int32_t *dcu, *dtiles;
    CK(cudaMalloc((void **)&dcu, sizeof(int32_t) * (B + 1)));
    CK(cudaMalloc((void **)&dtiles, sizeof(int32_t) * tiles.size()));
    CK(cudaMemcpy(dcu, cu.data(), sizeof(int32_t) * (B + 1), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtiles, tiles.data(), sizeof(int32_t) * tiles.size(), cudaMemcpyHostToDevice));
    timing t = time_it([&](int i) {
        KOK(kn_attention_grouped(g_ks, dt, Q[i % S], O[i % S], T, D, dcu, dtiles, cap, window, groups));
    });
    std::string shape = "{\"B\": " + std::to_string(B) + ", \"L\": " + std::to_string(L) + ", \"D\": " +
                        std::to_string(D) + ", \"window\": " + std::to_string(window) + ", \"lens\": " + lj +
                        ", \"T\": " + std::to_string(T) + "}";
    const double flops = 4.0 * B * (D / 64) * (double)L * L * 64; /* dense L x L, what SDPA computes */
    /* a forced launch form is its own kernel name: the PyTorch merge times only "attention" */
    record(groups ? "attention_form" : "attention", window < 0 ? "global" : "sliding", dt, shape, t, flops, 0,
           ", \"flop_note\": \"dense-equivalent 4*B*H*L*L*64\", \"layout\": \"packed\", \"groups\": " +
               std::to_string(groups));
    free_sets({&Q, &O});
    CK(cudaFree(dcu));
    CK(cudaFree(dtiles));
}

static std::string g_only; /* ",fam,fam," from --only=, empty for every family */

static bool want(const char *k)
{
    return g_only.empty() || g_only.find(std::string(",") + k + ",") != std::string::npos;
}

/* --quick and --only=; false (usage printed) on anything else. */
static bool parse_args(int argc, char **argv, bool *quick)
{
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            *quick = true;
        else if (!strncmp(argv[i], "--only=", 7))
            g_only = std::string(",") + (argv[i] + 7) + ",";
        else {
            fprintf(stderr, "unknown argument %s\n", argv[i]);
            return false;
        }
    }
    return true;
}

/* The report's head: the device, the same run's ceilings and the method. */
static void write_header(const cudaDeviceProp &prop)
{
    fprintf(g_json, "{\n  \"device\": \"%s\", \"sm\": \"%d%d\", \"sms\": %d, \"l2_bytes\": %d,\n", prop.name,
            prop.major, prop.minor, prop.multiProcessorCount, prop.l2CacheSize);
    fprintf(g_json,
            "  \"ceilings\": {\"copy_tbps\": %.4f, \"copy_eager_tbps\": %.4f, \"copy_graph_tbps\": %.4f, "
            "\"copy_note\": \"1 GiB cudaMemcpyAsync D2D, bytes read + written, same run; copy_tbps is the faster "
            "of the eager copy and the graph memcpy node\", \"gemm_bf16_tflops\": %.2f},\n",
            g_copy_tbps, g_copy_eager_tbps, g_copy_graph_tbps, g_gemm_tflops);
    fprintf(g_json, "  \"method\": \"CUDA events around batches of ~2 ms, median of 9 batches after warm-up, "
                    "inputs rotated over >= 256 MB so L2 does not serve them, random data\",\n");
    fprintf(g_json, "  \"results\": [");
}

/* The small-pack families, fp16 only: the launch floor, the split and fused products, and
 * the LayerNorm over split parts. */
static void bench_small_packs(kn_dtype dt)
{
    if (dt != KN_F16)
        return;
    if (want("launch_floor"))
        bench_launch_floor();
    if (want("gemm_split"))
        bench_gemm_splits(dt);
    if (want("proj_small"))
        bench_projs(dt);
    if (want("layernorm_parts"))
        for (int m : {48, 96, 128}) {
            bench_layernorm(dt, m, 1024);
            bench_layernorm(dt, m, 1024, 4);
        }
}

/* The encoder's GEMMs at the issue's sizes (and from L2 at small M). */
static void bench_encoder_gemms(kn_gemm_ctx *ctx, kn_dtype dt)
{
    if (want("gemm_l2")) /* the encoder's GEMMs at small M with weights from DRAM and from L2 */
        for (int m : {16, 96, 128})
            for (auto &p : g_english)
                for (bool hot : {false, true})
                    bench_gemm(ctx, p.op, dt, m, p.N, p.K, KN_EPI_NONE, false, false, false, -1, -1, hot);
    if (!want("gemm"))
        return;
    for (int m : {83, 512, 4096, 32768}) {
        for (auto &p : g_english)
            bench_gemm(ctx, p.op, dt, m, p.N, p.K, KN_EPI_NONE, false, false);
        if (dt == KN_BF16)
            for (auto &p : g_mmbert)
                bench_gemm(ctx, p.op, dt, m, p.N, p.K, KN_EPI_NONE, false, false);
    }
}

/* The head's erf-GELU layers as the GPU forward runs them (fp32 X: own kernels), the same
 * shapes with 16-bit X (cuBLASLt + GELU pass) and plain cuBLASLt (the reference for "own >=
 * 90% of cuBLAS"): scorer.1 at 1, 8 and 64 questions x (CLS + 8 markers) rows, act_head.0
 * (K = d + 4 = 1028) and act_head.2. */
static void bench_head_gemms(kn_gemm_ctx *ctx, kn_dtype dt)
{
    if (!want("gemm") && !want("gemm_head"))
        return;
    for (int m : {9, 16, 72, 576}) {
        bench_gemm(ctx, "head.scorer1.gelu", dt, m, 1024, 1024, KN_EPI_GELU, true, false, false, KN_F32, KN_F32);
        bench_gemm(ctx, "head.scorer1.gelu", dt, m, 1024, 1024, KN_EPI_GELU, true, false, false, dt, KN_F32);
        bench_gemm(ctx, "head.scorer1.plain", dt, m, 1024, 1024, KN_EPI_NONE, false, false, false, dt, KN_F32);
    }
    for (int m : {8, 64}) {
        bench_gemm(ctx, "head.act0.gelu", dt, m, 256, 1028, KN_EPI_GELU, true, false, false, KN_F32, KN_F32);
        bench_gemm(ctx, "head.act0.plain", dt, m, 256, 1024, KN_EPI_NONE, false, false, false, dt, KN_F32);
    }
    bench_gemm(ctx, "head.act2", dt, 8, 2, 256, KN_EPI_NONE, true, false, false, KN_F32, KN_F32);
}

/* The own tiled kernel at encoder and head shapes, for the record (cuBLASLt serves those). */
static void bench_own_gemms(kn_gemm_ctx *ctx, kn_dtype dt)
{
    if (!want("gemm"))
        return;
    for (int m : {83, 4096}) {
        bench_gemm(ctx, "en.attn.Wo", dt, m, 1024, 1024, KN_EPI_NONE, false, true);
        bench_gemm(ctx, "en.Wqkv", dt, m, 3072, 1024, KN_EPI_NONE, false, true);
    }
    bench_gemm(ctx, "head.linear1.relu", dt, 4096, 4096, 1024, KN_EPI_RELU, true, false, true);
    bench_gemm(ctx, "head.linear1.relu", dt, 4096, 4096, 1024, KN_EPI_RELU, true, false, false);
    bench_gemm(ctx, "head.in_proj", dt, 83, 3072, 1024, KN_EPI_NONE, true, false, true);
}

/* GeGLU, LayerNorm and RoPE at the issue's sizes, and mmBERT's widths. */
static void bench_elementwise(kn_dtype dt)
{
    for (int m : {83, 512, 4096, 32768}) {
        if (want("geglu"))
            bench_geglu(dt, m, 2624);
        if (want("layernorm"))
            bench_layernorm(dt, m, 1024);
        if (want("rope"))
            bench_rope(dt, m, 1024, 8192);
    }
    if (want("geglu"))
        bench_geglu(dt, 4096, 1152);
    if (want("layernorm"))
        bench_layernorm(dt, 4096, 768);
}

/* The attention at the issue's shapes, global and sliding, then a mixed-length pack and
 * mmBERT's width. */
static void bench_attentions(kn_dtype dt)
{
    if (want("attention_form") && dt == KN_F16) /* both launch forms where the choice is close */
        for (int bl : {83, 512, 2 * 512, 4 * 512, 8 * 512}) /* 1x83, then 1-8 rows of 512 */
            for (int w : {-1, 64})
                for (int g : {1, 2})
                    bench_attention(dt, bl < 512 ? 1 : bl / 512, bl < 512 ? bl : 512, 1024, w, false, g);
    if (!want("attention"))
        return;
    struct { int B, L; } at[] = {{1, 83}, {1, 512}, {8, 512}, {64, 512}};
    for (auto &a : at)
        for (int w : {-1, 64})
            bench_attention(dt, a.B, a.L, 1024, w, false);
    for (int w : {-1, 64}) {
        bench_attention(dt, 8, 512, 1024, w, true);
        bench_attention(dt, 1, 1024, 768, w, false);
    }
}

int main(int argc, char **argv)
{
    bool quick = false;
    if (argc < 2 || !parse_args(argc, argv, &quick)) {
        fprintf(stderr, "usage: %s OUT.json [--quick] [--only=gemm,gemm_head,gemm_l2,gemm_split,proj_small,layernorm_parts,launch_floor,geglu,layernorm,rope,attention,attention_form]\n", argv[0]);
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: bench_kernels: no CUDA device\n");
        return 0;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_json = fopen(argv[1], "w");
    if (!g_json) {
        perror(argv[1]);
        return 1;
    }
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    g_ks = {g_s, 1};
    kn_gemm_ctx *ctx = kn_gemm_ctx_create(0, 0);
    if (!ctx)
        return 1;
    ceilings(ctx);
    write_header(prop);
    const kn_dtype dts[2] = {KN_BF16, KN_F16};
    for (int d = 0; d < (quick ? 1 : 2); d++) {
        bench_small_packs(dts[d]);
        bench_encoder_gemms(ctx, dts[d]);
        bench_head_gemms(ctx, dts[d]);
        bench_own_gemms(ctx, dts[d]);
        bench_elementwise(dts[d]);
        bench_attentions(dts[d]);
    }
    fprintf(g_json, "\n  ]\n}\n");
    fclose(g_json);
    kn_gemm_ctx_destroy(ctx);
    printf("wrote %s (%d records)\n", argv[1], g_nrec);
    return 0;
}
