/*
 * question_internal.h - what question.c (validation) and render.c (the
 * normalized form) share; not part of the question API.
 */
#ifndef LAYAD_QUESTION_INTERNAL_H
#define LAYAD_QUESTION_INTERNAL_H

#include <stddef.h>

#include "model/base/error.h"
#include "model/laya/question.h"
#include "model/pyexact/pyjson.h"

/* The "type" of a question, indexed by enum laya_qtype. */
extern const char *const question_type_names[3];

/* The rendered false/true answer words of a noul question (stripped labels or defaults). */
typedef struct noul_words {
    const char *w[2]; /* false, true */
    size_t n[2];
} noul_words;

/* 1 when s[0..n) equals the lower-case ASCII word ignoring ASCII case, else 0. */
int question_ascii_lower_eq(const char *s, size_t n, const char *word);

/* Fills q (qid, qtype and n_opts already set) from a validated definition: head, option texts,
 * labels or levels, option order, all allocated in a. Fails only out of memory (500). */
int question_normalize(arena *a, laya_question *q, const pj_value *ins, const pj_value *crit,
                       const pj_value *order, const noul_words *words, layad_error *err);

#endif
