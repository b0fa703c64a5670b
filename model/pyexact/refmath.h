/*
 * refmath.h - the float32 math the official package's post-processing runs
 * (NumPy, and PyTorch's softmax for the act head), reproduced bit for bit.
 *
 * The official answers come from NumPy on float32 rows: np.exp / np.log
 * (NumPy's own AVX2+FMA3 / AVX512F kernels: Cody-Waite reduction and a
 * rational minimax polynomial, up to ~2.5 / 3.8 ulp from the true value,
 * so libm's expf/logf differ in the last bits) and ndarray.sum (pairwise
 * summation with eight accumulators). After round(x, 4) a one-ulp
 * difference changes the printed answer about once per thousand numbers,
 * which byte-identical responses cannot afford, so these are scalar
 * transcriptions of those kernels (NumPy 2.x, x86-64 with AVX2+FMA3 or
 * AVX512F; both run the same arithmetic).
 */
#ifndef LAYAD_REFMATH_H
#define LAYAD_REFMATH_H

#include <stddef.h>

float npy_expf(float x);
float npy_logf(float x);

/* np.add.reduce over a contiguous float32 / float64 array (pairwise). */
float npy_sum_f32(const float *a, size_t n);
double npy_sum_f64(const double *a, size_t n);

/* torch.softmax(x, -1)[...] on CPU float32 for a row of n <= 8 values (the act head,
 * n = 2): max, exp by SLEEF's expf_u10 (AVX2+FMA build), sum, then multiply by 1/sum. */
void torch_softmax_f32(const float *x, int n, float *out);

#endif
