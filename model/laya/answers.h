/*
 * answers.h - from one question row's raw logits to its answer JSON,
 * exactly as the official package's Agent._decode_answers computes and
 * json.dumps prints it (laya-model.md §6, installed laya 0.4.15):
 *
 *   T      = temperature bucket "<type>:<2|3-5|6-10|11+>" else per-type (clamped)
 *   z      = logits[:k] / float32(T)          (float32)
 *   p      = exp(z - max z); p /= sum p       (NumPy float32 kernels)
 *   p      unpermuted when option_order was given
 *   choice {type, choice, probabilities, confidence, answer_confidence, action}
 *   score  {type, score, legend, probabilities, confidence, answer_confidence, action}
 *   noul   {type, noul, confidence, answer_confidence, action}
 *   action = {act_probability: round(softmax(act)[0], 4)}
 *
 * with every number passed through round(x, 4) and printed as Python's repr.
 * Strict Jev mode keeps only the contracted keys in the contract's order
 * (choice: type, choice, confidence, probabilities; score: type, score,
 * confidence, probabilities, legend; noul: type, noul). return_logits adds
 * "logits" (slot order) and "act_logits" to each answer.
 */
#ifndef LAYAD_ANSWERS_H
#define LAYAD_ANSWERS_H

#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "model/laya/question.h"

/* Calibrated probabilities p[0..k) in option (label) order. */
void answers_probs(const float *logits, int k, double temperature, const int *order, float *p);

/* confidence_from_probs(p, k): 1 - H(p)/ln k clipped to [0, 1]; 1.0 when k < 2. */
double answers_entropy_confidence(const float *p, int k);

/* round(x, 4) of the expected score level sum(i * p_i). */
double answers_expected_score(const float *p, int k);

/* softmax(act)[0] as float32 (PyTorch CPU). */
float answers_act_probability(const float *act);

/* Appends the answer object of one row. k = markers of the row (== q->n_opts). */
void answers_format(pj_buf *b, const laya_config *cfg, const laya_question *q, int k, const float *logits,
                    const float *act, int strict, int return_logits);

/* The same without its closing brace, for a caller that appends fields of its own
 * (laya-serve's confidence gate and x_jev_confidence come after the Agent's keys). */
void answers_format_open(pj_buf *b, const laya_config *cfg, const laya_question *q, int k,
                         const float *logits, const float *act, int strict, int return_logits);

#define ANSWERS_MAX_K 512 /* largest option count the post-processing handles */

/* The numbers of one answer as printed (each already round(x, 4)): what laya-serve's
 * additions read back from the answer dict. */
typedef struct answer_numbers {
    int qtype, k;
    double p[ANSWERS_MAX_K];  /* probabilities in option order (noul: [false, true]) */
    double answer_confidence;
} answer_numbers;

void answers_numbers(const laya_config *cfg, const laya_question *q, int k, const float *logits,
                     answer_numbers *out);

#endif
