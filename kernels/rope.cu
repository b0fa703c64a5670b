/*
 * rope.cu - rotary position embedding (NeoX rotate-half) in place on the Q and
 * K blocks of the packed QKV buffer, and its fp32 cos/sin tables.
 *
 * Tables are built on the device once at load with the CPU's formula
 * (kernels/rope_cpu.c): inv_freq[j] = 1 / (float)theta^(2j/64) (the power in
 * double rounded to float, as the CPU does), angle = (float)pos * inv_freq[j]
 * in fp32, and cos/sin of that float angle evaluated in double and rounded once
 * (so the tables equal the CPU's correctly rounded cosf/sinf nearly always;
 * building them in 16-bit would lose precision at long positions).
 *
 * Apply: x1 = v[j], x2 = v[j + 32]; v[j] = x1 cos - x2 sin, v[j + 32] =
 * x2 cos + x1 sin (kn_rope_rot, kernels/rope.cuh), rounded once to the 16-bit
 * dtype. One thread per (row, Q or K, head, group of 8 j), 16-byte loads of
 * x1, x2 and the table entries; the V block is never read or written.
 */
#include "kernels/rope.cuh"

#define KN_ROPE_EARLY_MAX 256 /* tokens: see kn_rope */

__global__ void rope_tables_kernel(float *cos_tab, float *sin_tab, int max_pos, double theta)
{
    const size_t n = (size_t)max_pos * KN_ROPE_HALF;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int pos = (int)(i / KN_ROPE_HALF), j = (int)(i % KN_ROPE_HALF);
        const float base = (float)theta;
        const float e = (float)(2 * j) / (float)KN_HEAD_DIM;
        const float p = (float)pow((double)base, (double)e);
        const float inv = 1.0f / p;
        const float a = __fmul_rn((float)pos, inv);
        cos_tab[i] = (float)cos((double)a);
        sin_tab[i] = (float)sin((double)a);
    }
}

extern "C" int kn_rope_tables_gpu(kn_stream ks, float *cos_tab, float *sin_tab, int max_pos,
                                  double theta)
{
    KN_REQUIRE(max_pos >= 0 && theta > 0.0, "RoPE tables need max_pos >= 0, theta > 0");
    if (max_pos == 0)
        return 0;
    KN_REQUIRE(cos_tab && sin_tab, "NULL RoPE table");
    const unsigned blocks = kn_blocks((size_t)max_pos * KN_ROPE_HALF, 256, 4096);
    rope_tables_kernel<<<blocks, 256, 0, ks.s>>>(cos_tab, sin_tab, max_pos, theta);
    KN_LAUNCHED();
    return 0;
}

/* The angles of element group i: cos / sin of its position, V consecutive j. */
template <int V>
__device__ __forceinline__ void rope_angles(size_t i, int per_row, int groups, const int32_t *__restrict__ pos,
                                            const float *__restrict__ cos_tab, const float *__restrict__ sin_tab,
                                            float *cc, float *ss)
{
    const int j = ((int)(i % per_row) % groups) * V;
    const float *c = cos_tab + (size_t)pos[i / per_row] * KN_ROPE_HALF + j;
    const float *sn = sin_tab + (size_t)pos[i / per_row] * KN_ROPE_HALF + j;
    if (V == 8) {
        *reinterpret_cast<float4 *>(cc) = *reinterpret_cast<const float4 *>(c);
        *reinterpret_cast<float4 *>(cc + 4) = *reinterpret_cast<const float4 *>(c + 4);
        *reinterpret_cast<float4 *>(ss) = *reinterpret_cast<const float4 *>(sn);
        *reinterpret_cast<float4 *>(ss + 4) = *reinterpret_cast<const float4 *>(sn + 4);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++)
            cc[k] = c[k], ss[k] = sn[k];
    }
}

/* The positions (staged before the forward's first kernel) and the tables
 * (made at start-up) are not written by the kernel before, so the first
 * group's angles are loaded before the wait and overlap it; q and k after. */
template <typename T, int V>
__global__ void rope_kernel(T *qkv, int M, int D, const int32_t *__restrict__ pos,
                            const float *__restrict__ cos_tab, const float *__restrict__ sin_tab, int early)
{
    const int groups = KN_ROPE_HALF / V; /* j groups per head */
    const int per_row = 2 * D / KN_HEAD_DIM * groups;
    const size_t n = (size_t)M * per_row;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    float cc[V], ss[V];
    if (i < n)
        rope_angles<V>(i, per_row, groups, pos, cos_tab, sin_tab, cc, ss);
    kn_pdl_wait();
    if (early)
        kn_pdl_trigger();
    for (bool first = true; i < n; i += (size_t)gridDim.x * blockDim.x, first = false) {
        if (!first)
            rope_angles<V>(i, per_row, groups, pos, cos_tab, sin_tab, cc, ss);
        const size_t m = i / per_row;
        const int t = (int)(i % per_row);
        const int head = t / groups, j = (t % groups) * V; /* head over Q then K: 2D/64 heads */
        T *v = qkv + m * 3 * (size_t)D + (size_t)head * KN_HEAD_DIM + j;
        float x1[V], x2[V];
        if (V == 8) {
            kn_load8(v, x1);
            kn_load8(v + KN_ROPE_HALF, x2);
        } else {
#pragma unroll
            for (int k = 0; k < V; k++) {
                x1[k] = kn_f(v[k]);
                x2[k] = kn_f(v[k + KN_ROPE_HALF]);
            }
        }
        float o1[V], o2[V];
#pragma unroll
        for (int k = 0; k < V; k++)
            kn_rope_rot(x1[k], x2[k], cc[k], ss[k], &o1[k], &o2[k]);
        if (V == 8) {
            kn_store8(v, o1);
            kn_store8(v + KN_ROPE_HALF, o2);
        } else {
#pragma unroll
            for (int k = 0; k < V; k++) {
                v[k] = kn_from<T>(o1[k]);
                v[k + KN_ROPE_HALF] = kn_from<T>(o2[k]);
            }
        }
    }
}

extern "C" int kn_rope(kn_stream ks, kn_dtype dt, void *qkv, int M, int D, const int32_t *pos,
                       const float *cos_tab, const float *sin_tab)
{
    KN_REQUIRE(kn_is16(dt), "RoPE dtype must be fp16 or bf16");
    KN_REQUIRE(M >= 0 && D > 0 && D % KN_HEAD_DIM == 0, "RoPE needs D a positive multiple of 64");
    if (M == 0)
        return 0;
    KN_REQUIRE(qkv && pos && cos_tab && sin_tab, "NULL RoPE buffer");
    const bool vec = kn_aligned16(qkv) && kn_aligned16(cos_tab) && kn_aligned16(sin_tab);
    const size_t n = (size_t)M * 2 * (D / KN_HEAD_DIM) * (KN_ROPE_HALF / (vec ? 8 : 1));
    int sms = 0;
    if (kn_sms(&sms))
        return -1;
    const unsigned blocks = kn_blocks(n, 256, (unsigned)sms * 32);
    /* Small packs let the attention after RoPE start early (it reads its tile
     * list meanwhile): -0.8 to -1.4% on forwards of 40-150 tokens, same call
     * (bench/results/experiments/rope-early); at 512 an ungated early start
     * measured +1.3-2%, so larger packs do not. */
    const int early = M <= KN_ROPE_EARLY_MAX;
    KN_DISPATCH16(dt, T,
        if (vec)
            KN_CUDA(kn_launch(rope_kernel<T, 8>, dim3(blocks), dim3(256), 0, ks, (T *)qkv, M, D, pos, cos_tab, sin_tab, early));
        else
            KN_CUDA(kn_launch(rope_kernel<T, 1>, dim3(blocks), dim3(256), 0, ks, (T *)qkv, M, D, pos, cos_tab, sin_tab, early)));
    KN_LAUNCHED();
    return 0;
}

