/*
 * lt_enum.cu - does cuBLASLt have faster kernels for the encoder's skinny GEMMs than its
 * heuristic offers? An experiment, not part of the build:
 *
 *   nvcc -O2 -std=c++17 -o lt_enum lt_enum.cu -lcublasLt
 *   ./lt_enum OUT.json [M,M,...]          (default M = 96,512; large packs: 4096,32768)
 *
 * For each Laya GEMM (English geometry: Wqkv 3072x1024, attn Wo 1024x1024, Wi 5248x1024, MLP Wo
 * 1024x2624; fp16 in, fp32 accumulation; the forward's layouts: Y^T = W^T' X^T, W with op T)
 * and each M, three candidate sets are timed the same way:
 *   heur   the heuristic's first 32 (the forward tunes its first 8);
 *   byid   for every algorithm id cuBLASLt lists, the heuristic limited to that id
 *          (CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID), up to 16 configurations each;
 *   enum   every id x tile x stages x split-K {1,2,3,4,6,8} x CTA swizzle {0,1} that
 *          cublasLtMatmulAlgoCheck accepts (capped per id).
 * Timing: a CUDA graph of 40 launches (8 from 4096 rows) cycling over 8 copies of W (more bytes than the L2),
 * best of 3 replays, per launch. Outputs 16-bit (Y = X W^T), as Wqkv and Wi write them.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <string>

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)s_); exit(1); } } while (0)

static const int COPIES = 8;
/* Launches a timed graph: 40 at the skinny shapes, 8 from 4096 rows (a replay stays ~1-5 ms). */
static int launches_for(int M) { return M >= 4096 ? 8 : 40; }

struct shape { const char *name; int N, K; };
struct cand { cublasLtMatmulAlgo_t algo; const char *set; float us; };

struct ctx {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    void *ws; size_t ws_bytes;
    __half *W[COPIES], *X, *Y;
    int M, N, K;
    cudaStream_t s;
};

static void describe(const cublasLtMatmulAlgo_t *a, char *buf, size_t n)
{
    int id = 0, tile = 0, split = 0, red = 0, swz = 0, stages = 0, inner = 0, cluster = 0;
    size_t got;
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner, &got);
    cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &got);
    snprintf(buf, n, "id %d tile %d stages %d split %d red %d swz %d inner %d cluster %d", id, tile, stages, split,
             red, swz, inner, cluster);
}

static bool fits(ctx &c, const cublasLtMatmulAlgo_t *a)
{
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    return cublasLtMatmulAlgoCheck(c.lt, c.op, c.a, c.b, c.c, c.c, a, &r) == CUBLAS_STATUS_SUCCESS &&
           r.state == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= c.ws_bytes;
}

/* Microseconds per launch, or -1 when a launch fails. */
static float time_algo(ctx &c, const cublasLtMatmulAlgo_t *a)
{
    const float one = 1.0f, zero = 0.0f;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    if (cudaStreamBeginCapture(c.s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
        return -1;
    bool ok = true;
    const int launches = launches_for(c.M);
    for (int i = 0; i < launches && ok; i++)
        ok = cublasLtMatmul(c.lt, c.op, &one, c.W[i % COPIES], c.a, c.X, c.b, &zero, c.Y, c.c, c.Y, c.c, a, c.ws,
                            c.ws_bytes, c.s) == CUBLAS_STATUS_SUCCESS;
    if (cudaStreamEndCapture(c.s, &g) != cudaSuccess || !ok || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        return -1;
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int r = 0; r < 4 && ok; r++) {
        CK(cudaEventRecord(e0, c.s));
        ok = cudaGraphLaunch(ge, c.s) == cudaSuccess;
        CK(cudaEventRecord(e1, c.s));
        if (cudaEventSynchronize(e1) != cudaSuccess) { ok = false; break; }
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r > 0 && ms < best) best = ms; /* replay 0 warms up */
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaGetLastError();
    return ok ? best * 1000.0f / launches : -1;
}

static void setup(ctx &c, int M, int N, int K)
{
    c.M = M, c.N = N, c.K = K;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescCreate(&c.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CB(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CB(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CB(cublasLtMatrixLayoutCreate(&c.a, CUDA_R_16F, K, N, K));
    CB(cublasLtMatrixLayoutCreate(&c.b, CUDA_R_16F, K, M, K));
    CB(cublasLtMatrixLayoutCreate(&c.c, CUDA_R_16F, N, M, N));
}

static void teardown(ctx &c)
{
    cublasLtMatmulDescDestroy(c.op);
    cublasLtMatrixLayoutDestroy(c.a);
    cublasLtMatrixLayoutDestroy(c.b);
    cublasLtMatrixLayoutDestroy(c.c);
}

static cublasLtMatmulPreference_t pref_new(ctx &c, uint32_t mode)
{
    cublasLtMatmulPreference_t p;
    CB(cublasLtMatmulPreferenceCreate(&p));
    CB(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &c.ws_bytes, sizeof c.ws_bytes));
    CB(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_SEARCH_MODE, &mode, sizeof mode));
    return p;
}

static void add_heuristic(ctx &c, std::vector<cand> &out)
{
    cublasLtMatmulPreference_t p = pref_new(c, CUBLASLT_SEARCH_BEST_FIT);
    cublasLtMatmulHeuristicResult_t r[32];
    int n = 0;
    if (cublasLtMatmulAlgoGetHeuristic(c.lt, c.op, c.a, c.b, c.c, c.c, p, 32, r, &n) == CUBLAS_STATUS_SUCCESS)
        for (int i = 0; i < n; i++)
            if (r[i].state == CUBLAS_STATUS_SUCCESS)
                out.push_back({r[i].algo, i < 8 ? "heur8" : "heur32", -1});
    cublasLtMatmulPreferenceDestroy(p);
}

static std::vector<int> algo_ids(ctx &c)
{
    int ids[256], n = 0;
    CB(cublasLtMatmulAlgoGetIds(c.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                                256, ids, &n));
    return std::vector<int>(ids, ids + n);
}

static void add_by_id(ctx &c, int id, std::vector<cand> &out)
{
    cublasLtMatmulPreference_t p = pref_new(c, CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID);
    cublasLtMatmulHeuristicResult_t r[16];
    memset(r, 0, sizeof r);
    if (cublasLtMatmulAlgoInit(c.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                               id, &r[0].algo) == CUBLAS_STATUS_SUCCESS) {
        int n = 0;
        if (cublasLtMatmulAlgoGetHeuristic(c.lt, c.op, c.a, c.b, c.c, c.c, p, 16, r, &n) == CUBLAS_STATUS_SUCCESS)
            for (int i = 0; i < n; i++)
                if (r[i].state == CUBLAS_STATUS_SUCCESS)
                    out.push_back({r[i].algo, "byid", -1});
    }
    cublasLtMatmulPreferenceDestroy(p);
}

template <typename T>
static std::vector<T> cap_list(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoCapAttributes_t attr)
{
    size_t bytes = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(a, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || !bytes)
        return {};
    std::vector<T> v(bytes / sizeof(T));
    if (cublasLtMatmulAlgoCapGetAttribute(a, attr, v.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS)
        return {};
    return v;
}

static void add_enum(ctx &c, int id, std::vector<cand> &out, int cap)
{
    cublasLtMatmulAlgo_t base;
    if (cublasLtMatmulAlgoInit(c.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                               id, &base) != CUBLAS_STATUS_SUCCESS)
        return;
    std::vector<uint32_t> tiles = cap_list<uint32_t>(&base, CUBLASLT_ALGO_CAP_TILE_IDS);
    std::vector<uint32_t> stages = cap_list<uint32_t>(&base, CUBLASLT_ALGO_CAP_STAGES_IDS);
    if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
    if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
    int32_t splitk = 0, swz = 0;
    size_t got;
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitk, sizeof splitk, &got);
    cublasLtMatmulAlgoCapGetAttribute(&base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swz, sizeof swz, &got);
    const uint32_t splits[] = {1, 2, 3, 4, 6, 8};
    int added = 0;
    for (uint32_t t : tiles)
        for (uint32_t st : stages)
            for (uint32_t sp : splits)
                for (uint32_t sw = 0; sw <= (swz ? 1u : 0u); sw++) {
                    if ((sp > 1 && !splitk) || added >= cap)
                        continue;
                    cublasLtMatmulAlgo_t a = base;
                    const uint32_t red = sp > 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE : CUBLASLT_REDUCTION_SCHEME_NONE;
                    cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &t, sizeof t);
                    cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &st, sizeof st);
                    cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sp, sizeof sp);
                    cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red);
                    cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &sw, sizeof sw);
                    if (fits(c, &a)) {
                        out.push_back({a, "enum", -1});
                        added++;
                    }
                }
}

int main(int argc, char **argv)
{
    const char *outp = argc > 1 ? argv[1] : "lt_enum.json";
    std::vector<int> Ms = {96, 512};
    if (argc > 2) {
        Ms.clear();
        for (char *p = strtok(argv[2], ","); p; p = strtok(nullptr, ","))
            Ms.push_back(atoi(p));
    }
    const shape shapes[] = {{"Wqkv", 3072, 1024}, {"attn.Wo", 1024, 1024}, {"Wi", 5248, 1024}, {"mlp.Wo", 1024, 2624}};
    ctx c;
    memset(&c, 0, sizeof c);
    CB(cublasLtCreate(&c.lt));
    c.ws_bytes = (size_t)32 << 20;
    CK(cudaMalloc(&c.ws, c.ws_bytes));
    CK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
    const int maxM = std::max(4096, *std::max_element(Ms.begin(), Ms.end()));
    const size_t wmax = (size_t)5248 * 2624, xmax = (size_t)maxM * 2624;
    for (int i = 0; i < COPIES; i++) {
        CK(cudaMalloc(&c.W[i], wmax * sizeof(__half)));
        CK(cudaMemset(c.W[i], 0x11, wmax * sizeof(__half)));
    }
    CK(cudaMalloc(&c.X, xmax * sizeof(__half)));
    CK(cudaMemset(c.X, 0x22, xmax * sizeof(__half)));
    CK(cudaMalloc(&c.Y, (size_t)maxM * 5248 * sizeof(__half)));
    FILE *f = fopen(outp, "w");
    if (!f) { perror(outp); return 1; }
    cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    fprintf(f, "{\"device\": \"%s\", \"cublaslt\": %zu, \"launches_per_timing\": \"40, 8 from 4096 rows\", \"w_copies\": %d, \"results\": [\n",
            pr.name, cublasLtGetVersion(), COPIES);
    bool first = true;
    for (int M : Ms)
        for (const shape &sh : shapes) {
            setup(c, M, sh.N, sh.K);
            std::vector<cand> cs;
            add_heuristic(c, cs);
            std::vector<int> ids = algo_ids(c);
            for (int id : ids) add_by_id(c, id, cs);
            for (int id : ids) add_enum(c, id, cs, 150);
            for (cand &x : cs) x.us = time_algo(c, &x.algo);
            float best_h8 = 1e30f, best_h32 = 1e30f, best_all = 1e30f;
            const cand *bh8 = nullptr, *ball = nullptr;
            int timed = 0;
            for (const cand &x : cs) {
                if (x.us < 0) continue;
                timed++;
                if (!strcmp(x.set, "heur8") && x.us < best_h8) best_h8 = x.us, bh8 = &x;
                if (!strncmp(x.set, "heur", 4) && x.us < best_h32) best_h32 = x.us;
                if (x.us < best_all) best_all = x.us, ball = &x;
            }
            char d8[256] = "", da[256] = "";
            if (bh8) describe(&bh8->algo, d8, sizeof d8);
            if (ball) describe(&ball->algo, da, sizeof da);
            const double wbytes = 2.0 * sh.N * sh.K;
            printf("M %4d %-8s ids %zu cands %zu timed %d | heur8 %.2f us (%.2f TB/s) [%s] | heur32 %.2f | all %.2f us (%.2f TB/s) [%s, %s]\n",
                   M, sh.name, ids.size(), cs.size(), timed, best_h8, wbytes / best_h8 * 1e-6, d8, best_h32, best_all,
                   wbytes / best_all * 1e-6, ball ? ball->set : "-", da);
            fflush(stdout);
            std::vector<const cand *> top;
            for (const cand &x : cs) if (x.us >= 0) top.push_back(&x);
            std::sort(top.begin(), top.end(), [](const cand *a, const cand *b) { return a->us < b->us; });
            fprintf(f, "%s  {\"M\": %d, \"gemm\": \"%s\", \"N\": %d, \"K\": %d, \"candidates\": %zu, \"timed\": %d, "
                       "\"heur8_us\": %.3f, \"heur32_us\": %.3f, \"best_us\": %.3f, \"best_set\": \"%s\", \"best\": \"%s\", \"heur8_best\": \"%s\", \"top\": [",
                    first ? "" : ",\n", M, sh.name, sh.N, sh.K, cs.size(), timed, best_h8, best_h32, best_all,
                    ball ? ball->set : "-", da, d8);
            first = false;
            for (size_t i = 0; i < top.size() && i < 10; i++) {
                char d[256];
                describe(&top[i]->algo, d, sizeof d);
                fprintf(f, "%s{\"us\": %.3f, \"set\": \"%s\", \"algo\": \"%s\"}", i ? ", " : "", top[i]->us, top[i]->set, d);
            }
            fprintf(f, "]}");
            teardown(c);
        }
    fprintf(f, "\n]}\n");
    fclose(f);
    return 0;
}
