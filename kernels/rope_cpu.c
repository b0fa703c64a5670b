/*
 * rope_cpu.c - rotary position embedding (NeoX rotate-half), CPU fp32.
 *
 * Tables: inv_freq[j] = 1 / theta^(2j/64) computed in float32 exactly as
 * transformers' default RoPE does (int64 arange cast to float, divided by 64,
 * base ** that in float32, reciprocal in float32); angle = (float)pos *
 * inv_freq[j] in float32; cos/sin of that float angle, stored [pos, 32] (the
 * second half of a head uses the same 32 values: cos = cat(cos, cos)). The
 * reference computes its float32 power as pow in double rounded to float, which
 * is the correctly rounded value torch's powf also returns for these inputs.
 *
 * Apply (shared with the CUDA sibling: one thread per (row, head, j < 32) pair,
 * no tiles): for each of the D/64 heads of the Q block [0, D) and the K block
 * [D, 2D) of the packed qkv row,
 *   x1 = v[j], x2 = v[j + 32]
 *   v[j]      = x1 * cos - x2 * sin
 *   v[j + 32] = x2 * cos + x1 * sin
 * as separate fp32 multiplies and one add (no FMA contraction: the host is built
 * as ISO C11, fp-contract off), which is what `q * cos + rotate_half(q) * sin`
 * computes element-wise in PyTorch. The V block [2D, 3D) is never touched.
 * Rows are independent (OpenMP static split).
 */
#include <math.h>
#include <stddef.h>

#include "kernels/cpu.h"

void kn_rope_tables(float *cos_tab, float *sin_tab, int max_pos, double theta)
{
    float inv_freq[KN_ROPE_HALF];
    const float base = (float)theta;
    for (int j = 0; j < KN_ROPE_HALF; j++) {
        float e = (float)(2 * j) / (float)KN_HEAD_DIM;
        float p = (float)pow((double)base, (double)e);
        inv_freq[j] = 1.0f / p;
    }
    for (int pos = 0; pos < max_pos; pos++)
        for (int j = 0; j < KN_ROPE_HALF; j++) {
            float a = (float)pos * inv_freq[j];
            cos_tab[(size_t)pos * KN_ROPE_HALF + j] = cosf(a);
            sin_tab[(size_t)pos * KN_ROPE_HALF + j] = sinf(a);
        }
}

void kn_cpu_rope(float *qkv, int M, int D, const int32_t *pos,
                 const float *cos_tab, const float *sin_tab)
{
    const int H = D / KN_HEAD_DIM;
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        const float *c = cos_tab + (size_t)pos[m] * KN_ROPE_HALF;
        const float *s = sin_tab + (size_t)pos[m] * KN_ROPE_HALF;
        float *row = qkv + (size_t)m * 3 * D;
        for (int blk = 0; blk < 2; blk++) /* Q, then K */
            for (int h = 0; h < H; h++) {
                float *v = row + (size_t)blk * D + (size_t)h * KN_HEAD_DIM;
                for (int j = 0; j < KN_ROPE_HALF; j++) {
                    float x1 = v[j], x2 = v[j + KN_ROPE_HALF];
                    float a = x1 * c[j], bb = x2 * s[j];
                    float cc = x2 * c[j], d = x1 * s[j];
                    v[j] = a - bb;
                    v[j + KN_ROPE_HALF] = cc + d;
                }
            }
    }
}
