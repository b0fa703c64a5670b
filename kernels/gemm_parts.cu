/*
 * gemm_parts.cu - the split residual-branch product of small packs on our own
 * kernel: Y[s] = X[:, K_s] . W[:, K_s]^T (fp32 partial products, the contract
 * of kn_gemm_split) for M <= 128 rows, launched so that its weights are in
 * shared memory before the kernel it depends on has finished.
 *
 * Why: under Nsight Compute each cuBLASLt GEMM of a small forward costs ~4.4 us
 * plus 0.34 us per MB of weights (bench/results/experiments/launch-table/):
 * the fixed part (launch, prologue, the first round trips, epilogue) is most
 * of it. cuBLASLt's kernels never wait for their predecessor programmatically,
 * so all of it is on the forward's critical path. This kernel is launched with
 * programmatic dependent launch; the kernel before it (attention, GeGLU) lets
 * it start early in small packs, so each CTA copies its whole weight tile
 * (NT x K/S, at most ~42 KB) into shared memory while the predecessor runs.
 * After the wait only X's K slice (from L2, just written) and the mma remain.
 *
 * Grid (N / NT, S), 8 warps: CTA (x, s) computes features [NT x, NT x + NT)
 * of part s over all M rows (padded to 16 with zero rows). Its K slice is cut
 * into 8 ranges of k-steps, one per warp: a warp loads only its own columns of
 * X and runs every row tile against the 4 feature tiles over them (mma.sync
 * m16n8k16, fp32 accumulators, up to 32 independent ones), so no warp holds a
 * long dependent chain and the loads of all warps are in flight together. The
 * warps' partial tiles are then summed through shared memory in warp order (K
 * order): fixed, so a row's bits do not depend on M or on the other rows. Rows
 * are padded by 8 elements in shared memory (ldmatrix without bank conflicts).
 * A first version (4 warps over row tiles, the whole X slice loaded before the
 * first mma) was 1.6-2.5x slower than cuBLASLt alone and made the 1x83
 * forward 25% slower (bench/results/experiments/gemm-parts/).
 */
#include "kernels/gemm_internal.cuh"
#include "kernels/mma.cuh"

#define PS_NT 32     /* output features per CTA */
#define PS_WARPS 8   /* warps per CTA, each over its own range of K */
#define PS_MAXM 128  /* rows at most: 8 row tiles of 16 per warp */
#define PS_PAD 8     /* elements of row padding in shared memory */
#define PS_SMEM_MAX (227 * 1024)

/* Shared memory: the weight tile, then X's slice, whose space the warps' fp32
 * partial tiles reuse once every warp has done its products. */
static size_t parts_x_bytes(int M, int Ks)
{
    const size_t mp = (size_t)(M + 15) / 16 * 16, x = mp * (Ks + PS_PAD) * 2, red = (size_t)PS_WARPS * mp * PS_NT * 4;
    return x > red ? x : red;
}

static size_t parts_smem(int M, int Ks) { return (size_t)PS_NT * (Ks + PS_PAD) * 2 + parts_x_bytes(M, Ks); }

/* Warp w's products over its k-steps [k0, k1) of 16: every row tile (mt of
 * them) against the CTA's 4 feature tiles, its own X columns loaded by its own
 * lanes first (no CTA-wide barrier between loading and using them). */
template <typename T>
__device__ __forceinline__ void parts_warp(float (&acc)[PS_MAXM / 16][PS_NT / 8][4], const T *ws, T *xs,
                                           const T *__restrict__ X, int M, int K, int kbase, int ld, int mt, int k0,
                                           int k1, int lane)
{
    const int chunks = 2 * (k1 - k0); /* 16-byte chunks per row in the warp's range */
    for (int i = lane; i < 16 * mt * chunks; i += 32) {
        const int r = i / chunks, c = 16 * k0 + 8 * (i % chunks);
        cp_async16(xs + r * ld + c, X + (size_t)(r < M ? r : 0) * K + kbase + c, r < M);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncwarp();
    for (int kk = 16 * k0; kk < 16 * k1; kk += 16) {
        uint32_t b[PS_NT / 8][2];
#pragma unroll
        for (int j = 0; j < PS_NT / 8; j += 2) { /* two 8-feature tiles: k and k + 8 of each */
            uint32_t r[4];
            ldmatrix_x4(r, ws + (8 * j + 8 * (lane / 16) + lane % 8) * ld + kk + 8 * ((lane / 8) % 2));
            b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
        }
#pragma unroll
        for (int t = 0; t < PS_MAXM / 16; t++)
            if (t < mt) {
                uint32_t a[4];
                ldmatrix_x4(a, xs + (16 * t + lane % 16) * ld + kk + 8 * (lane / 16));
#pragma unroll
                for (int j = 0; j < PS_NT / 8; j++)
                    mma16816<T>(acc[t][j], a, b[j]);
            }
    }
}

template <typename T>
__global__ void __launch_bounds__(32 * PS_WARPS, 1)
gemm_parts_kernel(const T *__restrict__ X, const T *__restrict__ W, float *__restrict__ Y, int M, int N, int K, int Ks)
{
    extern __shared__ __align__(16) unsigned char ps_smem[];
    const int ld = Ks + PS_PAD, mt = (M + 15) / 16, chunks = Ks / 8;
    T *ws = reinterpret_cast<T *>(ps_smem), *xs = ws + PS_NT * ld;
    float *red = reinterpret_cast<float *>(xs); /* [PS_WARPS][16 mt][PS_NT], after the products */
    const int n0 = blockIdx.x * PS_NT, s = blockIdx.y, kbase = s * Ks;
    /* weights: written before any forward, so requested before the wait */
    for (int i = threadIdx.x; i < PS_NT * chunks; i += blockDim.x) {
        const int r = i / chunks, c = i % chunks;
        cp_async16(ws + r * ld + 8 * c, W + (size_t)(n0 + r) * K + kbase + 8 * c, true);
    }
    cp_async_commit();
    kn_pdl_wait();
    kn_pdl_trigger(); /* the LayerNorm that sums the parts may start loading its weights */
    cp_async_wait<0>();
    __syncthreads(); /* every warp reads every weight row */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, steps = Ks / 16;
    const int per = (steps + PS_WARPS - 1) / PS_WARPS, k0 = min(warp * per, steps), k1 = min(k0 + per, steps);
    float acc[PS_MAXM / 16][PS_NT / 8][4] = {};
    if (k1 > k0)
        parts_warp<T>(acc, ws, xs, X, M, K, kbase, ld, mt, k0, k1, lane);
    __syncthreads(); /* X's space becomes the partial tiles */
    float *mine = red + (size_t)warp * 16 * mt * PS_NT;
#pragma unroll
    for (int t = 0; t < PS_MAXM / 16; t++)
        if (t < mt)
#pragma unroll
            for (int j = 0; j < PS_NT / 8; j++) {
                const int r = 16 * t + lane / 4, c = 8 * j + 2 * (lane % 4);
                *reinterpret_cast<float2 *>(mine + r * PS_NT + c) = make_float2(acc[t][j][0], acc[t][j][1]);
                *reinterpret_cast<float2 *>(mine + (r + 8) * PS_NT + c) = make_float2(acc[t][j][2], acc[t][j][3]);
            }
    __syncthreads();
    /* the warps' sums in warp order (K order), row by row: fixed, so a row's bits do not depend on M */
    float *y = Y + (size_t)s * M * N;
    for (int i = threadIdx.x; i < M * PS_NT; i += blockDim.x) {
        float v = red[i];
        for (int w = 1; w < PS_WARPS; w++)
            v += red[(size_t)w * 16 * mt * PS_NT + i];
        y[(size_t)(i / PS_NT) * N + n0 + i % PS_NT] = v;
    }
}

int gemm_parts_fits(int M, int N, int K, int S)
{
    if (M < 1 || M > PS_MAXM || N % PS_NT || S < 1 || K % S)
        return 0;
    const int Ks = K / S;
    return Ks % 16 == 0 && parts_smem(M, Ks) <= PS_SMEM_MAX;
}

int gemm_parts_launch(kn_stream ks, kn_dtype wdt, const void *X, const void *W, float *Y, int M, int N, int K, int S)
{
    const int Ks = K / S;
    const size_t smem = parts_smem(M, Ks);
    const dim3 grid((unsigned)(N / PS_NT), (unsigned)S);
    KN_DISPATCH16(wdt, T,
        KN_CUDA(cudaFuncSetAttribute(gemm_parts_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        KN_CUDA(kn_launch(gemm_parts_kernel<T>, grid, dim3(32 * PS_WARPS), smem, ks, (const T *)X, (const T *)W, Y,
                          M, N, K, Ks)));
    KN_LAUNCHED();
    return 0;
}
