/*
 * synth_rows.h - deterministic question rows for parity sweeps and benchmarks.
 *
 * Builds laya_rows straight from token ids in the layout of the sequence
 * builder (laya-model.md §4.5):
 *   [CLS] <type> question: <instructions> [SEP] ([MASK] option)* [SEP] <state> [SEP]
 * with random (seeded) ids for the words, so that a sweep exercises every
 * question type, option count, marker position and row length without needing
 * the tokenizer. "String" states draw words uniformly; "JSON" states repeat a
 * small set of structural ids ({ " : , }) between the words, as serialized
 * JSON does. The same seed gives the same rows on every machine (splitmix64,
 * integer arithmetic only), so a reference computed on one host can be checked
 * on another: synth_hash names the set.
 */
#ifndef LAYAD_SYNTH_ROWS_H
#define LAYAD_SYNTH_ROWS_H

#include <stdint.h>

#include "model/checkpoint/checkpoint.h"
#include "model/base/error.h"
#include "model/backend/rows.h"

typedef struct synth_set {
    laya_row *rows;
    int n;
    int *state;       /* state index of each row */
    int *json_state;  /* 1: JSON-like state, 0: string state */
    int max_markers;  /* largest n_markers */
    long tokens;      /* sum of lengths */
    int32_t *pool;    /* ids and markers of every row (owned) */
} synth_set;

/* The parity sweep: 288 questions over 60 states (4 or 5 questions each),
 * the three types, 1..40 options, row lengths from 10 to max_len (both ends
 * included). 0 or -1 (err set). */
int synth_parity(synth_set *s, const laya_config *cfg, int max_len, uint64_t seed,
                 layad_error *err);

/* n rows of exactly len tokens each (len >= 10), n_opts options per row
 * (choice questions), for timing. */
int synth_uniform(synth_set *s, const laya_config *cfg, int n, int len, int n_opts,
                  uint64_t seed, layad_error *err);

/* FNV-1a 64 over every row's type, length, ids and markers. */
uint64_t synth_hash(const synth_set *s);

void synth_free(synth_set *s);

#endif
