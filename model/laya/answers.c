/*
 * answers.c - post-processing of one question row (see answers.h).
 *
 * Every step keeps the official package's number types, because the printed
 * 4-decimal values flip on one-ulp differences about once per thousand:
 *   z, p, the entropy terms   float32 (NumPy; exp/log/sum from refmath.c)
 *   entropy total             float32 sum, then Python float: -ent / log(k)
 *   score                     int64 * float32 -> float64 pairwise sum
 *   noul confidence           Python float max(p1, 1 - p1)
 *   act probability           PyTorch float32 softmax, then round
 */
#include "model/laya/answers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/pyexact/pyfloat.h"
#include "model/pyexact/refmath.h"
#include "model/backend/rows.h"

#define MAX_K ANSWERS_MAX_K


void answers_probs(const float *logits, int k, double temperature, const int *order, float *p)
{
    float t = (float)temperature; /* NEP 50: the Python float is cast to the array's float32 */
    float z[MAX_K] = {0}, e[MAX_K] = {0};
    float m = -INFINITY;
    for (int i = 0; i < k; i++) {
        z[i] = logits[i] / t;
        if (z[i] > m || i == 0)
            m = z[i];
    }
    for (int i = 0; i < k; i++)
        e[i] = npy_expf(z[i] - m);
    float s = npy_sum_f32(e, (size_t)k);
    for (int i = 0; i < k; i++)
        e[i] = e[i] / s;
    for (int i = 0; i < k; i++) {
        if (order)
            p[order[i]] = e[i]; /* slot i showed option order[i] */
        else
            p[i] = e[i];
    }
}

double answers_entropy_confidence(const float *p, int k)
{
    if (k < 2)
        return 1.0;
    float t[MAX_K];
    for (int i = 0; i < k; i++) {
        float c = p[i] < 1e-12f ? 1e-12f : p[i] > 1.0f ? 1.0f : p[i];
        t[i] = p[i] * npy_logf(c);
    }
    double ent = -(double)npy_sum_f32(t, (size_t)k);
    double score = 1.0 - ent / log((double)k);
    return score < 0.0 ? 0.0 : score > 1.0 ? 1.0 : score;
}

double answers_expected_score(const float *p, int k)
{
    double v[MAX_K];
    for (int i = 0; i < k; i++)
        v[i] = (double)i * (double)p[i];
    return py_round(npy_sum_f64(v, (size_t)k), 4);
}

float answers_act_probability(const float *act)
{
    float out[LAYA_N_ACT];
    torch_softmax_f32(act, LAYA_N_ACT, out);
    return out[0];
}

static void num(pj_buf *b, double x)
{
    pj_buf_float(b, py_round(x, 4));
}

static void float_list(pj_buf *b, const float *x, int n)
{
    pj_buf_put(b, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i)
            pj_buf_put(b, ", ", 2);
        pj_buf_float(b, (double)x[i]);
    }
    pj_buf_put(b, "]", 1);
}

/* Option i's key in a score question's probabilities and legend: "i" (the JSON keys are strings). */
static void index_key(pj_buf *b, int i)
{
    pj_buf_put(b, "\"", 1);
    pj_buf_int(b, i);
    pj_buf_put(b, "\"", 1);
}

static void probabilities(pj_buf *b, const laya_question *q, const float *p, int k)
{
    pj_buf_puts(b, "\"probabilities\": {");
    for (int i = 0; i < k; i++) {
        if (i)
            pj_buf_put(b, ", ", 2);
        if (q->qtype == QTYPE_CHOICE)
            pj_buf_key(b, q->labels[i]);
        else
            index_key(b, i);
        pj_buf_put(b, ": ", 2);
        num(b, (double)p[i]);
    }
    pj_buf_put(b, "}", 1);
}

static void legend(pj_buf *b, const laya_question *q)
{
    pj_buf_puts(b, "\"legend\": {");
    for (int i = 0; i < q->n_opts; i++) {
        if (i)
            pj_buf_put(b, ", ", 2);
        index_key(b, i);
        pj_buf_put(b, ": ", 2);
        pj_buf text = pj_buf_in(b->a); /* b's storage: its arena, or malloc */
        question_render_criterion(&text, q->levels[i]);
        if (text.failed)
            b->failed = 1;
        pj_buf_string(b, text.p ? text.p : "", text.len);
        pj_buf_free(&text);
    }
    pj_buf_put(b, "}", 1);
}

void answers_numbers(const laya_config *cfg, const laya_question *q, int k, const float *logits,
                     answer_numbers *out)
{
    float p[MAX_K];
    answers_probs(logits, k, checkpoint_temperature(cfg, q->qtype, k), q->order, p);
    int arg = 0;
    for (int i = 1; i < k; i++)
        if (p[i] > p[arg])
            arg = i;
    double top = (double)p[arg];
    out->qtype = q->qtype;
    out->k = k;
    for (int i = 0; i < k; i++)
        out->p[i] = py_round((double)p[i], 4);
    out->answer_confidence = py_round(top < 0.0 ? 0.0 : top > 1.0 ? 1.0 : top, 4);
}

void answers_format(pj_buf *b, const laya_config *cfg, const laya_question *q, int k, const float *logits,
                    const float *act, int strict, int return_logits)
{
    answers_format_open(b, cfg, q, k, logits, act, strict, return_logits);
    pj_buf_put(b, "}", 1);
}

/* A choice or score answer's own members, in the order of the wire format: strict (the
 * seed's) puts the confidence first, laya-serve's last. */
static void format_choice_score(pj_buf *b, const laya_question *q, const float *p, int k, int arg, int strict)
{
    const double conf = answers_entropy_confidence(p, k);
    const int score = q->qtype == QTYPE_SCORE;
    if (score) {
        pj_buf_puts(b, "{\"type\": \"score\", \"score\": ");
        pj_buf_float(b, answers_expected_score(p, k));
    } else {
        pj_buf_puts(b, "{\"type\": \"choice\", \"choice\": ");
        pj_dump(b, q->labels[arg]);
    }
    if (strict) {
        pj_buf_puts(b, ", \"confidence\": ");
        num(b, conf);
        pj_buf_puts(b, ", ");
        probabilities(b, q, p, k);
        if (score) {
            pj_buf_puts(b, ", ");
            legend(b, q);
        }
    } else {
        if (score) {
            pj_buf_puts(b, ", ");
            legend(b, q);
        }
        pj_buf_puts(b, ", ");
        probabilities(b, q, p, k);
        pj_buf_puts(b, ", \"confidence\": ");
        num(b, conf);
    }
}

void answers_format_open(pj_buf *b, const laya_config *cfg, const laya_question *q, int k, const float *logits,
                         const float *act, int strict, int return_logits)
{
    float p[MAX_K];
    double t = checkpoint_temperature(cfg, q->qtype, k);
    answers_probs(logits, k, t, q->order, p);
    int arg = 0;
    for (int i = 1; i < k; i++)
        if (p[i] > p[arg])
            arg = i;
    double top = (double)p[arg];
    double ans_conf = top < 0.0 ? 0.0 : top > 1.0 ? 1.0 : top; /* answer_confidence */

    if (q->qtype != QTYPE_NOUL) {
        format_choice_score(b, q, p, k, arg, strict);
    } else {
        double p1 = (double)p[1];
        pj_buf_puts(b, "{\"type\": \"noul\", \"noul\": ");
        num(b, p1);
        if (!strict) {
            pj_buf_puts(b, ", \"confidence\": ");
            num(b, p1 > 1.0 - p1 ? p1 : 1.0 - p1);
        }
    }
    if (!strict) {
        pj_buf_puts(b, ", \"answer_confidence\": ");
        num(b, ans_conf);
        pj_buf_puts(b, ", \"action\": {\"act_probability\": ");
        num(b, (double)answers_act_probability(act));
        pj_buf_puts(b, "}");
    }
    if (return_logits) {
        pj_buf_puts(b, ", \"logits\": ");
        float_list(b, logits, k);
        pj_buf_puts(b, ", \"act_logits\": ");
        float_list(b, act, LAYA_N_ACT);
    }
}
