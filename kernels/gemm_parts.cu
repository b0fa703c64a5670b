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
 * Grid (N / NT, S), 4 warps: CTA (x, s) computes features [NT x, NT x + NT)
 * of part s over all M rows (padded to 16 with zero rows); warp w takes the
 * row tiles w and w + 4, all NT features, mma.sync m16n8k16 with fp32
 * accumulators in K order (a row's bits do not depend on M or on the other
 * rows). Rows are padded by 8 elements in shared memory (ldmatrix without bank
 * conflicts).
 */
#include "kernels/gemm_internal.cuh"
#include "kernels/mma.cuh"

#define PS_NT 32     /* output features per CTA */
#define PS_WARPS 4   /* warps per CTA; warp w: row tiles w and w + PS_WARPS */
#define PS_MAXM 128  /* rows at most: PS_WARPS x 2 tiles of 16 */
#define PS_PAD 8     /* elements of row padding in shared memory */
#define PS_SMEM_MAX (227 * 1024)

static size_t parts_smem(int M, int Ks)
{
    const size_t ld = (size_t)Ks + PS_PAD, mp = (size_t)(M + 15) / 16 * 16;
    return (PS_NT + mp) * ld * 2;
}

template <typename T>
__global__ void __launch_bounds__(32 * PS_WARPS)
gemm_parts_kernel(const T *__restrict__ X, const T *__restrict__ W, float *__restrict__ Y, int M, int N, int K, int Ks)
{
    extern __shared__ __align__(16) unsigned char ps_smem[];
    const int ld = Ks + PS_PAD, mp = (M + 15) / 16 * 16, chunks = Ks / 8;
    T *ws = reinterpret_cast<T *>(ps_smem), *xs = ws + PS_NT * ld;
    const int n0 = blockIdx.x * PS_NT, s = blockIdx.y, k0 = s * Ks;
    /* weights: written before any forward, so requested before the wait */
    for (int i = threadIdx.x; i < PS_NT * chunks; i += blockDim.x) {
        const int r = i / chunks, c = i % chunks;
        cp_async16(ws + r * ld + 8 * c, W + (size_t)(n0 + r) * K + k0 + 8 * c, true);
    }
    cp_async_commit();
    kn_pdl_wait();
    kn_pdl_trigger(); /* the LayerNorm that sums the parts may start loading its weights */
    for (int i = threadIdx.x; i < mp * chunks; i += blockDim.x) {
        const int r = i / chunks, c = i % chunks;
        cp_async16(xs + r * ld + 8 * c, X + (size_t)(r < M ? r : 0) * K + k0 + 8 * c, r < M);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float acc[2][PS_NT / 8][4] = {};
    for (int kk = 0; kk < Ks; kk += 16) {
        uint32_t b[PS_NT / 8][2];
#pragma unroll
        for (int j = 0; j < PS_NT / 8; j += 2) { /* two 8-feature tiles: k and k + 8 of each */
            uint32_t r[4];
            ldmatrix_x4(r, ws + (8 * j + 8 * (lane / 16) + lane % 8) * ld + kk + 8 * ((lane / 8) % 2));
            b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
        }
#pragma unroll
        for (int t = 0; t < 2; t++) {
            const int m0 = 16 * (warp + PS_WARPS * t);
            if (m0 < mp) {
                uint32_t a[4];
                ldmatrix_x4(a, xs + (m0 + lane % 16) * ld + kk + 8 * (lane / 16));
#pragma unroll
                for (int j = 0; j < PS_NT / 8; j++)
                    mma16816<T>(acc[t][j], a, b[j]);
            }
        }
    }
    float *y = Y + (size_t)s * M * N;
#pragma unroll
    for (int t = 0; t < 2; t++) {
        const int r0 = 16 * (warp + PS_WARPS * t) + lane / 4;
#pragma unroll
        for (int j = 0; j < PS_NT / 8; j++) {
            const int n = n0 + 8 * j + 2 * (lane % 4);
            if (r0 < M)
                *reinterpret_cast<float2 *>(y + (size_t)r0 * N + n) = make_float2(acc[t][j][0], acc[t][j][1]);
            if (r0 + 8 < M)
                *reinterpret_cast<float2 *>(y + (size_t)(r0 + 8) * N + n) = make_float2(acc[t][j][2], acc[t][j][3]);
        }
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
