/*
 * layernorm_cpu.c - CPU LayerNorm, optionally fused with the residual add.
 *
 * Per row m: if x != NULL, r[m] += x[m] (a plain fp32 add, in place: the
 * residual stream is fp32 and its update is exact fp32 addition, bit for bit
 * what `h = h + o` gives in PyTorch); then
 *   y[m] = (r[m] - mean) / sqrt(var + eps) * w + b     (biased variance; b optional).
 * Algorithm (shared with the CUDA sibling, one block per row): pass 1 adds the
 * residual and sums the row; pass 2 sums squared deviations from the mean (two
 * passes, never E[x^2] - mean^2, which cancels catastrophically when the
 * residual stream reaches 1e4 and beyond); pass 3 normalizes. The CPU
 * accumulates the two sums in double, so this reference path stays accurate for
 * any residual magnitude; the element-wise output is computed in double from the
 * fp32 inputs and rounded once to fp32. Rows are independent (OpenMP static
 * split); results do not depend on the thread count. y may alias r or x: every
 * read of a row's x and r precedes the first write of its y.
 */
#include <math.h>
#include <stddef.h>

#include "kernels/cpu.h"

void kn_cpu_layernorm(float *r, const float *x, const float *w, const float *b,
                      float *y, int M, int D, float eps)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        float *rr = r + (size_t)m * D;
        float *yy = y + (size_t)m * D;
        double sum = 0.0;
        if (x) {
            const float *xx = x + (size_t)m * D;
            for (int i = 0; i < D; i++) {
                rr[i] = rr[i] + xx[i];
                sum += rr[i];
            }
        } else {
            for (int i = 0; i < D; i++)
                sum += rr[i];
        }
        const double mean = D > 0 ? sum / D : 0.0;
        double ss = 0.0;
        for (int i = 0; i < D; i++) {
            double d = (double)rr[i] - mean;
            ss += d * d;
        }
        const double rstd = 1.0 / sqrt((D > 0 ? ss / D : 0.0) + (double)eps);
        for (int i = 0; i < D; i++) {
            double v = ((double)rr[i] - mean) * rstd * (double)w[i];
            if (b)
                v += (double)b[i];
            yy[i] = (float)v;
        }
    }
}
