/*
 * question.h - one question of a request, validated and normalized the way
 * the official package does it (laya-model.md §4.1, §4.2;
 * Agent._check_question, Agent._to_internal, render_options).
 *
 * Validation errors are 422 with field "questions.<qid>[.<part>]" and the
 * official package's ValueError text; the size limits (413) are checked
 * separately, before any question is looked at (question_check_limits).
 */
#ifndef LAYAD_QUESTION_H
#define LAYAD_QUESTION_H

#include <stddef.h>

#include "model/base/error.h"
#include "model/pyexact/pyjson.h"

typedef struct laya_question {
    const char *qid;         /* the question id (JSON key), UTF-8 */
    size_t qid_len;
    int qtype;               /* enum laya_qtype */
    const char *head;        /* "<type> question: <instructions>" (not yet mask-scrubbed) */
    size_t head_len;
    int n_opts;              /* options in label order (noul: 2, [false, true]) */
    const char **opt;        /* rendered option texts (not yet mask-scrubbed) */
    size_t *opt_len;
    const pj_value **labels; /* choice: the answer key of option i (caller's original label) */
    const pj_value **levels; /* score: the caller's level values (legend) */
    int *order;              /* option_order: slot s shows option order[s]; NULL = identity */
} laya_question;

/* The size limits (413), checked over the raw questions object before validation:
 * more than max_questions questions, a choice with more than max_options criteria,
 * a score with more than max_levels levels. */
int question_check_limits(const pj_value *questions, int max_questions, int max_options,
                          int max_levels, layad_error *err);

/* Validates question (qid, def) and fills q (allocations in arena a). */
int question_parse(arena *a, const char *qid, size_t qid_len, const pj_value *def,
                   laya_question *q, layad_error *err);

/* Appends render_criterion(v): strings as they are, anything else as compact JSON. */
void question_render_criterion(pj_buf *b, const pj_value *v);

/* Appends Python's repr() of a string (used in error messages, as the package words them). */
void py_repr_str(pj_buf *b, const char *s, size_t n);

#endif
