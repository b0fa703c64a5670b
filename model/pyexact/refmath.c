/*
 * refmath.c - scalar transcriptions of NumPy's float32 exp/log SIMD kernels,
 * its pairwise summation, and PyTorch's CPU softmax (see refmath.h). The constants are NumPy's
 * (npy_simd_data.h / npy_math.h), written as exact float bit patterns.
 * Every fused multiply-add of the vector code is an explicit fmaf here and
 * every separate multiply/add stays separate (the build uses ISO C, so the
 * compiler does not contract a*b+c on its own).
 */
#include "model/pyexact/refmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static float f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t bits32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float npy_expf(float x)
{
    const float xmax = 88.72283935546875f, xmin = -103.97208404541015625f;
    const float c1 = -6.93145752e-1f, c2 = -1.42860677e-6f;
    const float p0 = 9.999999999980870924916e-01f, p1 = 7.257664613233124478488e-01f,
                p2 = 2.473615434895520810817e-01f, p3 = 5.114512081637298353406e-02f,
                p4 = 6.757896990527504603057e-03f, p5 = 5.082762527590693718096e-04f;
    const float q0 = 1.0f, q1 = -2.742335390411667452936e-01f, q2 = 2.159509375685829852307e-02f;
    const float magic = 0x1.800000p+23f, log2e = 1.442695040888963407359924681001892137f;

    if (isnan(x))
        return x;
    if (x >= xmax)
        return INFINITY;
    if (x <= xmin)
        return 0.0f;
    float quadrant = x * log2e;
    quadrant = quadrant + magic;
    quadrant = quadrant - magic;
    float r = fmaf(quadrant, c1, x);
    r = fmaf(quadrant, c2, r);
    r = fmaf(quadrant, 0.0f, r);
    float num = fmaf(p5, r, p4);
    num = fmaf(num, r, p3);
    num = fmaf(num, r, p2);
    num = fmaf(num, r, p1);
    num = fmaf(num, r, p0);
    float den = fmaf(q2, r, q1);
    den = fmaf(den, r, q0);
    float poly = num / den;
    /* poly * 2^quadrant by adding to the exponent field; below -125 via a division
     * that produces the subnormal, as the kernel's scalef helper does */
    int q = (int)lrintf(quadrant);
    if (q <= -125) {
        int diff = -(q + 125);
        poly = f32(bits32(poly) + (uint32_t)((-125) * (1 << 23)));
        return poly / (float)(1u << diff);
    }
    return f32(bits32(poly) + (uint32_t)q * (1u << 23));
}

float npy_logf(float x)
{
    const float p0 = 0.0f, p1 = 9.999999999999998702752e-01f, p2 = 2.112677543073053063722e+00f,
                p3 = 1.480000633576506585156e+00f, p4 = 3.808837741388407920751e-01f,
                p5 = 2.589979117907922693523e-02f;
    const float q0 = 1.0f, q1 = 2.612677543073109236779e+00f, q2 = 2.453006071784736363091e+00f,
                q3 = 9.864942958519418960339e-01f, q4 = 1.546476374983906719538e-01f,
                q5 = 5.875095403124574342950e-03f;
    const float loge2 = 0.693147180559945309417232121458176568f;
    const float sqrt1_2 = 0.707106781186547524400844362104849039f;

    if (isnan(x))
        return x;
    if (x < 0.0f)
        return -NAN;
    if (x == 0.0f)
        return -INFINITY;
    if (isinf(x))
        return INFINITY;
    float exponent, m;
    float xs = x;
    int denormal = x < 1.175494351e-38F;
    if (denormal)
        xs = x * f32(0x71800000u); /* 2^100 */
    exponent = (float)((int32_t)(bits32(xs) >> 23) - 0x7E);
    if (denormal)
        exponent = exponent - 100.0f;
    m = f32((bits32(xs) & 0x7fffffu) | (126u << 23));
    if (m <= sqrt1_2) {
        m = m + m;
        exponent = exponent - 1.0f;
    }
    m = m - 1.0f;
    float num = fmaf(p5, m, p4);
    num = fmaf(num, m, p3);
    num = fmaf(num, m, p2);
    num = fmaf(num, m, p1);
    num = fmaf(num, m, p0);
    float den = fmaf(q5, m, q4);
    den = fmaf(den, m, q3);
    den = fmaf(den, m, q2);
    den = fmaf(den, m, q1);
    den = fmaf(den, m, q0);
    float poly = num / den;
    return fmaf(exponent, loge2, poly);
}

/* NumPy's pairwise_sum: blocks of up to 128 with eight accumulators, halves above.
 * One algorithm for float and double: NPY_PAIRWISE_SUM defines it for element
 * type T, accumulating in T as NumPy does. */
#define PW_BLOCKSIZE 128

#define NPY_PAIRWISE_SUM(name, T)                                                          \
    T name(const T *a, size_t n)                                                           \
    {                                                                                      \
        if (n < 8) {                                                                       \
            T res = 0;                                                                     \
            for (size_t i = 0; i < n; i++)                                                 \
                res += a[i];                                                               \
            return res;                                                                    \
        }                                                                                  \
        if (n <= PW_BLOCKSIZE) {                                                           \
            T r[8];                                                                        \
            for (int j = 0; j < 8; j++)                                                    \
                r[j] = a[j];                                                               \
            size_t i;                                                                      \
            for (i = 8; i < n - (n % 8); i += 8)                                           \
                for (int j = 0; j < 8; j++)                                                \
                    r[j] += a[i + j];                                                      \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));     \
            for (; i < n; i++)                                                             \
                res += a[i];                                                               \
            return res;                                                                    \
        }                                                                                  \
        size_t n2 = n / 2;                                                                 \
        n2 -= n2 % 8;                                                                      \
        return name(a, n2) + name(a + n2, n - n2);                                         \
    }

NPY_PAIRWISE_SUM(npy_sum_f32, float)
NPY_PAIRWISE_SUM(npy_sum_f64, double)

/* SLEEF xexpf (the u10 float kernel PyTorch's Vectorized<float>::exp calls on AVX2):
 * Cody-Waite reduction by ln2 split in two, a degree-6 polynomial, ldexp in two halves. */
static float sleef_expf(float d)
{
    int q = (int)lrintf(d * 1.442695040888963407359924681001892137426645954152985934135449406931f);
    float s = fmaf((float)q, -0.693145751953125f, d);
    s = fmaf((float)q, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    u = 1.0f + fmaf(s * s, u, s);
    int h = q >> 1;
    u = u * f32((uint32_t)(h + 0x7f) << 23) * f32((uint32_t)(q - h + 0x7f) << 23);
    if (d < -104.0f)
        u = 0.0f;
    if (100.0f < d)
        u = INFINITY;
    return u;
}

void torch_softmax_f32(const float *x, int n, float *out)
{
    float m = x[0];
    for (int i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        out[i] = sleef_expf(x[i] - m);
        s += out[i];
    }
    float inv = 1.0f / s;
    for (int i = 0; i < n; i++)
        out[i] = out[i] * inv;
}
