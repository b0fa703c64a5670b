/*
 * tokenizer.h - Hugging Face tokenizer.json, exactly, in C.
 *
 * Contract: tokenizer_encode(t, text) returns the same ids as HF `tokenizers`
 * `Tokenizer.from_file(path).encode(text, add_special_tokens=False).ids` for the
 * tokenizer.json files that Laya checkpoints ship (ModernBERT byte-level BPE,
 * mmBERT/Gemma Metaspace BPE with byte fallback). A file with a component or
 * option that is not implemented fails to load with an error naming it.
 *
 * A loaded tokenizer is immutable and shared by all threads without locks.
 * Memory: an encode writes only into the caller's tok_ids and into a scratch
 * owned by the calling thread (created on its first encode, reused, grown only
 * for a larger input than before, freed at thread exit, by
 * tokenizer_thread_cleanup, or right after an input over 256 KiB); for tok_ids
 * in an arena, its buffers come from that arena instead. The scratch includes a fixed-size per-thread cache
 * of short words' BPE results (see tokenizer.c). Cost is linear in the input
 * apart from BPE inside one word (O(n log n)).
 *
 * Implemented (everything else fails to load, naming what it met): normalizers
 * NFC/NFD/NFKC/NFKD/Replace(String)/Prepend/Sequence; pre-tokenizers
 * ByteLevel (GPT-2 regex or none, add_prefix_space), Metaspace (prepend_scheme,
 * split, legacy add_prefix_space), Sequence; model BPE with unk_token, fuse_unk,
 * byte_fallback, ignore_merges, both merge encodings; added tokens with every
 * flag. post_processor and decoder do not affect encode(add_special_tokens=False)
 * and are not read. Proof: scripts/tokenizer-parity, tests/test_tokenizer.c.
 */
#ifndef LAYAD_TOKENIZER_H
#define LAYAD_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "model/base/error.h"

typedef struct tokenizer tokenizer;

struct arena;

/* A growable id buffer owned by the caller; encode appends to it. With a NULL arena
 * (zero-initialized) ids are malloc'ed: free them with free(). With an arena, the ids and
 * everything the encode needs grow in it (see tokenizer_encode). */
typedef struct tok_ids {
    int32_t *ids;
    size_t n;
    size_t cap;
    struct arena *a;
} tok_ids;

/* Loads tokenizer.json from a file / from memory. NULL on error (err filled, status 500). */
tokenizer *tokenizer_load(const char *path, layad_error *err);
tokenizer *tokenizer_load_mem(const char *json, size_t len, const char *name, layad_error *err);
void tokenizer_free(tokenizer *t);

/* Appends the ids of text[0..len) to out. Invalid UTF-8 is an error (status 400), nothing appended.
 * When out->a is set, the encode's buffers come from that arena instead of the thread's
 * scratch (only the thread's word cache and regex match data are used), so an encode on the
 * serving path calls no allocator once its thread has encoded once. */
int tokenizer_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out, layad_error *err);

/* Frees the calling thread's encode scratch (buffers reused across encodes;
 * see tokenizer.c). Optional: a thread's scratch is also freed when it exits. */
void tokenizer_thread_cleanup(void);

/* Empties the calling thread's word and text caches and zeroes their hit counts
 * (benchmarks use it to time cold encodes). */
void tokenizer_thread_cache_clear(void);

/* The calling thread's word-cache and text-cache hits since its last clear (tests use
 * them to see that tokenizers sharing a thread keep their own entries). */
void tokenizer_thread_cache_hits(size_t *words, size_t *texts);

/* Id of a vocabulary or added token given its exact content, or -1. */
int32_t tokenizer_token_id(const tokenizer *t, const char *content);

/* Number of ids (vocabulary plus added tokens; max id + 1). */
size_t tokenizer_vocab_size(const tokenizer *t);

#endif
