/*
 * tok_corpus.h - compare tokenizer_encode with HF ids over a corpus file
 * (JSON lines {"cat", "text", "ids"} written by scripts/tokenizer_gen.py).
 * Shared by tests/test_tokenizer.c (committed fixtures) and
 * tests/tokenizer_parity.c (the full corpus, scripts/tokenizer-parity).
 */
#ifndef LAYAD_TESTS_TOK_CORPUS_H
#define LAYAD_TESTS_TOK_CORPUS_H

#include <stddef.h>

#include "model/tokenizer/tokenizer.h"

typedef struct tok_corpus_result {
    size_t strings;      /* lines compared */
    size_t mismatches;   /* lines whose ids differ from HF's (or that failed to encode) */
    size_t bytes;        /* total text bytes */
} tok_corpus_result;

/* Encodes every line's text into malloc'ed ids and into an arena (the daemon's way) and
 * compares both with its ids; prints up to max_report mismatches to stderr. 0 when the file
 * was read completely (whatever the mismatch count), -1 with a message in err when it could
 * not be read/parsed. */
int tok_corpus_compare(const tokenizer *t, const char *path, size_t max_report,
                       tok_corpus_result *res, layad_error *err);

/* Loads tokenizer.json at path; with variant (non-NULL, not "-"), first patches
 * it with that entry of tests/fixtures/tokenizer/variants.json: top-level keys
 * are replaced, except "model", whose keys are replaced one by one (the rule
 * scripts/tokenizer_gen.py applies). NULL with err on failure. */
tokenizer *tok_corpus_load(const char *path, const char *variant, layad_error *err);

#endif
