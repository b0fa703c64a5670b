/*
 * head_ops_cpu.c - the small gathers and the decision-head tail ops, CPU fp32.
 *
 * These are memory-bound one-pass ops around the big kernels (laya-model.md §5):
 * the token-embedding gather, the type-embedding add, the marker gather, the
 * scorer's d -> 1 projection with the -1e4 fill, the four confidence features
 * and the act-head input. Each is one loop over independent outputs (the CUDA
 * sibling maps the same loop onto one thread block per row):
 *   - scorer tail: dot(x, w) with 8 fp32 lane partial sums (lane l sums i = l
 *     mod 8), reduced lane 0..7, then the D % 8 tail, then + bias (the GEMM's
 *     summation order, without FMA contraction).
 *   - confidence features: fp32 softmax over a row's gathered slots (its CLS
 *     slot, masked to -1e4, then its markers; max-subtracted, sum in slot
 *     order), entropy -sum p ln(max(p, 1e-9)) / ln(k) with k = max(2, live
 *     markers), top-2 of p, as DecisionModel.forward does on the uncalibrated
 *     logits. A masked slot has p = 0 exactly and adds exact zeros, so the
 *     result equals upstream's over its padded K slots bit for bit.
 * Rows are split statically over OpenMP threads where a loop is worth it.
 */
#include <math.h>
#include <string.h>

#include "kernels/conf_features.h"
#include "kernels/cpu.h"

void kn_cpu_embed(const float *table, const int32_t *ids, float *out, int M, int D)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++)
        memcpy(out + (size_t)m * D, table + (size_t)ids[m] * D, sizeof(float) * (size_t)D);
}

void kn_cpu_add_type_emb(float *h, const float *type_emb, const int32_t *ttype, int M, int D)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++) {
        const float *te = type_emb + (size_t)ttype[m] * D;
        float *x = h + (size_t)m * D;
        for (int d = 0; d < D; d++)
            x[d] = x[d] + te[d];
    }
}

void kn_cpu_gather_rows(const float *h, const int32_t *idx, float *out, int G, int D)
{
    for (int g = 0; g < G; g++)
        memcpy(out + (size_t)g * D, h + (size_t)idx[g] * D, sizeof(float) * (size_t)D);
}

void kn_cpu_scorer_tail(const float *x, const float *w, float bias, const uint8_t *mask,
                        float *logits, int n, int D)
{
    for (int i = 0; i < n; i++) {
        if (!mask[i]) {
            logits[i] = -1e4f;
            continue;
        }
        const float *xi = x + (size_t)i * D;
        float lane[8] = {0};
        int k = 0;
        for (; k + 8 <= D; k += 8)
            for (int l = 0; l < 8; l++)
                lane[l] += xi[k + l] * w[k + l];
        float s = lane[0];
        for (int l = 1; l < 8; l++)
            s += lane[l];
        for (; k < D; k++)
            s += xi[k] * w[k];
        logits[i] = s + bias;
    }
}

void kn_cpu_conf_features(const float *logits, const uint8_t *mask, const int32_t *goff,
                          float *feats, int R)
{
    for (int r = 0; r < R; r++) {
        const int g0 = goff[r], K = goff[r + 1] - goff[r];
        const float *z = logits + g0;
        float *f = feats + (size_t)r * 4;
        if (K <= 0) {
            memset(f, 0, 4 * sizeof *f);
            continue;
        }
        kn_conf_row(z, mask + g0, K, f);
    }
}

void kn_cpu_act_input(const float *h, const float *feats, const int32_t *goff, float *out, int R,
                      int D)
{
    for (int r = 0; r < R; r++) {
        float *o = out + (size_t)r * (D + 4);
        if (goff[r + 1] <= goff[r]) {
            memset(o, 0, sizeof(float) * (size_t)(D + 4));
            continue;
        }
        memcpy(o, h + (size_t)goff[r] * D, sizeof(float) * (size_t)D);
        memcpy(o + D, feats + (size_t)r * 4, sizeof(float) * 4);
    }
}
