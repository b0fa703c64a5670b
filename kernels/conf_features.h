/*
 * conf_features.h - the confidence features of one row of scorer outputs, the
 * one definition both sides compile: the CPU twin (head_ops_cpu.c) and the GPU
 * decision tail (head_ops.cu, one thread per row) run these same statements, so the
 * two cannot drift apart. fp32 throughout, as the official head computes them.
 */
#ifndef LAYAD_KERNELS_CONF_FEATURES_H
#define LAYAD_KERNELS_CONF_FEATURES_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define KN_HOST_DEVICE __host__ __device__
#else
#define KN_HOST_DEVICE
#endif

/* f = {top-1 probability, top-1 minus top-2, entropy normalized by log(live),
 * live / 255} of the softmax over z[0, K) (K >= 1), where live counts the
 * options mask marks (at least 2 for the normalization). */
static inline KN_HOST_DEVICE void kn_conf_row(const float *z, const uint8_t *mask, int K, float f[4])
{
    int live = 0;
    float mx = -INFINITY;
    for (int k = 0; k < K; k++) {
        live += mask[k] != 0;
        mx = z[k] > mx ? z[k] : mx;
    }
    float sum = 0.0f;
    for (int k = 0; k < K; k++)
        sum += expf(z[k] - mx);
    float ent = 0.0f, top1 = 0.0f, top2 = 0.0f;
    for (int k = 0; k < K; k++) {
        const float p = expf(z[k] - mx) / sum;
        ent += p * logf(p > 1e-9f ? p : 1e-9f);
        if (p > top1) {
            top2 = top1;
            top1 = p;
        } else if (p > top2) {
            top2 = p;
        }
    }
    const float kk = (float)(live > 2 ? live : 2);
    f[0] = top1;
    f[1] = top1 - top2;
    f[2] = -ent / logf(kk);
    f[3] = kk / 255.0f;
}

#endif
