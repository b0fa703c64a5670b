/*
 * prompt.h - the sequence builder (laya-model.md §4.5; build_head /
 * build_sequence / Agent._encode_state of the official package).
 *
 *   [CLS] <type> question: <ins> [SEP] [MASK] opt0 [MASK] opt1 ... [SEP] <state> [SEP]
 *
 * The question half (prompt_head) does not depend on the state and is built
 * once per question per request; prompt_row appends one state to it. All
 * user text is scrubbed of the literal mask-token string (replaced by one
 * space) before tokenization, so user text can never create a marker.
 */
#ifndef LAYAD_PROMPT_H
#define LAYAD_PROMPT_H

#include <stdint.h>

#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "model/laya/question.h"
#include "model/tokenizer/tokenizer.h"

#define LAYA_OPT_TOKENS 48  /* option text tokens kept (before the [MASK]) */
#define LAYA_MIN_BUDGET 16  /* below this the options are cut to a per-option share */

typedef struct laya_qhead {
    int32_t *ids;          /* [CLS] head [SEP] ([MASK] opt)* [SEP] */
    int len;
    int32_t *markers;      /* absolute [MASK] positions, slot order */
    int n_markers;         /* == number of options */
    int n_distinct;        /* distinct option id spans after the cut */
    int tokens_per_option; /* the cut applied, or -1 (None) when none was */
} laya_qhead;

typedef struct laya_state_stats {
    int state_tokens, state_tokens_used;
} laya_state_stats;

/* Appends text[0..n) with every occurrence of the mask string replaced by " ". */
void prompt_scrub(pj_buf *b, const char *text, size_t n, const char *mask);

/* Builds the question half for head_max_len (allocated in a, with every temporary).
 * Errors: 400 on tokenizer failures, 500 out of memory. */
int prompt_head(arena *a, const laya_checkpoint *ck, const laya_question *q, int head_max_len,
                laya_qhead *out, layad_error *err);

/* Tokenizes a state (serialized text, not yet scrubbed) into *ids (in ids->a when set, with
 * the scrubbed copy; else malloc'ed); ids->ids is NULL when the state has no tokens, e.g. "". */
int prompt_state_ids(const laya_checkpoint *ck, const char *text, size_t n, tok_ids *ids, layad_error *err);

/* Writes one row from the state's n_state ids (state may be NULL when n_state is 0):
 * ids[] (capacity max_len), markers[] (capacity head->n_markers), *len and *n_markers.
 * truncate_left keeps the state's tail (conversation lists).
 * When markers fall past max_len it fails with 422 and the package's message,
 * naming qid; max_len and head_max_len appear in it. */
int prompt_row(const laya_qhead *head, const laya_question *q, const int32_t *state, int n_state,
               int truncate_left, int max_len, int head_max_len, int sep_id, int32_t *ids, int *len,
               int32_t *markers, int *n_markers, laya_state_stats *stats, layad_error *err);

#endif
