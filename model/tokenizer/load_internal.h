/*
 * load_internal.h - what the tokenizer.json loader's files share: load.c (the
 * document, normalizers, pre-tokenizers, the BPE model) and load_added.c (the
 * added_tokens list). Not part of any API; only these two files include it.
 */
#ifndef LAYAD_TOKENIZER_LOAD_INTERNAL_H
#define LAYAD_TOKENIZER_LOAD_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/base/error.h"
#include "model/tokenizer/internal.h"

/* Checks that obj has only keys from the NULL-terminated list; the error names `what` and the key. */
int tok_check_keys(const tokenizer *t, json_t *obj, const char *what, const char *const *allowed,
                   layad_error *err);

/* Optional boolean member: absent or null -> def; non-boolean -> error naming what.key. */
int tok_get_bool(const tokenizer *t, json_t *obj, const char *key, bool def, bool *out,
                 const char *what, layad_error *err);

/* A NUL-terminated malloc'd copy of the n bytes at s (the caller frees it), or NULL. */
char *tok_dup_mem(const char *s, size_t n);

/* Registers the added_tokens list (NULL: none) into t->added_map and t->added, the way HF's
 * AddedVocabulary::add_tokens does, and raises t->vocab_size to cover their ids. Needs the
 * model vocabulary loaded. Status 500 on failure; t is then left for tokenizer_free. */
int tok_load_added(tokenizer *t, json_t *list, layad_error *err);

#endif
