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
 *   - confidence features: fp32 softmax over all K slots (max-subtracted, sum in
 *     slot order), entropy -sum p ln(max(p, 1e-9)) / ln(k) with k = max(2, live
 *     markers), top-2 of p (top2 = 0 when K == 1), as DecisionModel.forward does
 *     on the uncalibrated logits.
 * Rows are split statically over OpenMP threads where a loop is worth it.
 */
#include <math.h>
#include <string.h>

#include "kernels/cpu.h"

void kn_cpu_embed(const float *table, const int32_t *ids, float *out, int M, int D)
{
#pragma omp parallel for schedule(static)
    for (int m = 0; m < M; m++)
        memcpy(out + (size_t)m * D, table + (size_t)ids[m] * D, sizeof(float) * (size_t)D);
}

void kn_cpu_add_type_emb(float *h, const float *type_emb, const int32_t *qtype,
                         int B, int L, int D)
{
#pragma omp parallel for schedule(static)
    for (long r = 0; r < (long)B * L; r++) {
        const float *te = type_emb + (size_t)qtype[r / L] * D;
        float *x = h + (size_t)r * D;
        for (int d = 0; d < D; d++)
            x[d] = x[d] + te[d];
    }
}

void kn_cpu_gather_rows(const float *h, const int32_t *pos, float *out,
                        int B, int L, int K, int D)
{
    for (long r = 0; r < (long)B * K; r++) {
        const long b = r / K;
        memcpy(out + (size_t)r * D, h + ((size_t)b * L + (size_t)pos[r]) * D,
               sizeof(float) * (size_t)D);
    }
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

void kn_cpu_conf_features(const float *logits, const uint8_t *mask, float *feats, int B, int K)
{
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * K;
        float *f = feats + (size_t)b * 4;
        int live = 0;
        float mx = -INFINITY;
        for (int k = 0; k < K; k++) {
            live += mask[(size_t)b * K + k] != 0;
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
}

void kn_cpu_act_input(const float *h, const float *feats, float *out, int B, int L, int D)
{
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * (D + 4);
        memcpy(o, h + (size_t)b * L * D, sizeof(float) * (size_t)D);
        memcpy(o + D, feats + (size_t)b * 4, sizeof(float) * 4);
    }
}
