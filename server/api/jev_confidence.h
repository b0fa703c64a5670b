/*
 * jev_confidence.h - `x_jev_confidence`, the confidence TypeSafe Jev would report.
 *
 * laya-serve adds it to every choice and score answer of /v1/systemone and
 * /v1/systemone/batch unless strict (laya.serve._add_jev_confidence): Laya's
 * `confidence` is normalized entropy, Jev's is another formula, and a client porting
 * a threshold from Jev reads this one. It is computed from the probabilities as the
 * answer prints them (already rounded to 4 decimals), exactly as
 * laya.confidence.jev_confidence does, then round(x, 4):
 *
 *   p      = p / sum(p)   (sum left to right, as Python 3.11's sum(); uniform when 0)
 *   choice (max(p) - 1/n) / (1 - 1/n)
 *   score  max(0, 1 - sum(p_i * |i - mode|) / D), mode the first argmax,
 *          D = sum(|i - (n-1)/2|) / n (the spread of a uniform distribution)
 *   n == 1 gives 1.0; noul answers get none.
 */
#ifndef LAYAD_API_JEV_CONFIDENCE_H
#define LAYAD_API_JEV_CONFIDENCE_H

#include "model/laya/answers.h"

/* jev_confidence(answer) before rounding; NaN for a noul answer (no field). */
double jev_confidence(const answer_numbers *a);

/* Appends `, "x_jev_confidence": round(x, 4)` for a choice or score answer. */
void jev_confidence_format(pj_buf *b, const answer_numbers *a);

#endif
