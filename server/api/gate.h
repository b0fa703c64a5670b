/*
 * gate.h - `min_confidence`, laya-serve's abstention gate, on layad's answers.
 *
 * laya-serve hands a body's `min_confidence` to Router.predict, which checks it with
 * laya.confidence.check_min_confidence and, after the forward, runs
 * apply_confidence_gate over the answers. Both are reproduced here, messages included:
 *
 *   value   a number in [0.0, 1.0] (not a bool), or a map from option-count buckets
 *           ("choice:2", "choice:3-5", "choice:6-10", "choice:11+", the same for score and
 *           noul, and "default") to such numbers; anything else is a 422
 *   gate    per answer, the gated number is `answer_confidence` (max p, as printed);
 *           the threshold is the scalar, or the map entry of the answer's bucket, else
 *           "default", else 0.0; below it the answer gets "low_confidence": true, and
 *           every answer gets "abstention" ("passed" / "abstained") and
 *           "abstention_threshold" (the threshold as a Python float)
 *
 * Strict Jev mode leaves the gate's fields out, as laya-serve's strict projection does
 * (the value is still checked).
 */
#ifndef LAYAD_API_GATE_H
#define LAYAD_API_GATE_H

#include "model/base/error.h"
#include "model/laya/answers.h"
#include "model/pyexact/pyjson.h"

#define GATE_MAX_ENTRIES 13 /* 12 buckets and "default" */

typedef struct gate {
    int set;                           /* 0: no min_confidence (nothing is written) */
    int is_map;
    double scalar;
    int n;                             /* map entries, in body order */
    char key[GATE_MAX_ENTRIES][12];
    double thr[GATE_MAX_ENTRIES];
} gate;

/* Reads body's `min_confidence` (absent or null: g->set = 0). 422 on field
 * "min_confidence" with check_min_confidence's message otherwise. */
int gate_parse(const pj_value *body, gate *g, layad_error *err);

/* Appends the gate's fields for one answer (nothing when g->set is 0). */
void gate_format(pj_buf *b, const gate *g, const answer_numbers *a);

/* Appends Python's repr() of a JSON value as json.loads builds it (messages). */
void gate_repr(pj_buf *b, const pj_value *v);

#endif
