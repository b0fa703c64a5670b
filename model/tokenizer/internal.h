/*
 * tokenizer_internal.h - the pieces of a loaded tokenizer, shared by the
 * tokenizer*.c files (not part of the public API).
 *
 * The HF pipeline that tokenizer_encode reproduces, stage by stage:
 *
 *   raw text --(1) non-normalized added tokens split out (tokenizer_added.c)
 *            --(2) each remaining piece normalized (tokenizer_normalize.c)
 *            --(3) normalized added tokens split out of each normalized piece
 *            --(4) pre-tokenizer: pieces -> words (tokenizer_pretok.c)
 *            --(5) model: each word -> ids by BPE (tokenizer_bpe.c)
 *
 * Everything reachable from `struct tokenizer` is written once by the loader
 * (tokenizer_load.c) and only read afterwards, so one tokenizer is shared by
 * all threads without locks. Everything an encode call writes lives in a
 * `tok_scratch`: one per thread (tokenizer.c), reused across calls, grown
 * only when an input is larger than any before it on that thread.
 */
#ifndef LAYAD_TOKENIZER_INTERNAL_H
#define LAYAD_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/base/arena.h"
#include "model/base/error.h"
#include "model/tokenizer/tokenizer.h"

/* ---- string -> id hash map (vocabulary, added tokens) ---------------------- */

/* Open addressing over keys stored in one arena; immutable after build. */
typedef struct tok_strmap {
    uint32_t *slots;     /* entry index + 1, 0 = empty; capacity is a power of two */
    size_t cap;
    char *arena;         /* all keys, back to back */
    size_t arena_len, arena_cap;
    uint64_t *key_off;   /* per entry: offset << 24 | length (keys < 16 MiB) */
    int32_t *val;        /* per entry: id */
    size_t n, n_cap;
} tok_strmap;

int tok_strmap_init(tok_strmap *m, size_t expected);
/* Inserts or overwrites key -> id. -1 on allocation failure. */
int tok_strmap_put(tok_strmap *m, const char *key, size_t len, int32_t id);
/* The id of key, or -1. */
int32_t tok_strmap_get(const tok_strmap *m, const char *key, size_t len);
void tok_strmap_free(tok_strmap *m);

/* ---- normalizers ------------------------------------------------------------ */

typedef enum {
    TOK_NORM_NFC,
    TOK_NORM_NFD,
    TOK_NORM_NFKC,
    TOK_NORM_NFKD,
    TOK_NORM_REPLACE,    /* literal string pattern -> content */
    TOK_NORM_PREPEND,    /* prepend content to a non-empty string */
} tok_norm_kind;

typedef struct tok_norm {
    tok_norm_kind kind;
    char *pattern;       /* REPLACE */
    size_t pattern_len;
    char *content;       /* REPLACE, PREPEND */
    size_t content_len;
} tok_norm;

/* ---- pre-tokenizers --------------------------------------------------------- */

typedef enum {
    TOK_PRE_BYTELEVEL,
    TOK_PRE_METASPACE,
} tok_pre_kind;

typedef enum { TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST, TOK_PREPEND_NEVER } tok_prepend;

/* How encode finds a piece's words: through the pre-tokenizer stages and their buffers, or,
 * for a pre-tokenizer of one stage, in the piece itself (encode.c, on_norm_piece):
 * - TOK_WORDS_GPT2: one ByteLevel stage splitting by the GPT-2 pattern (ModernBERT's): the
 *   words are the matches in the stage's input, each byte-mapped;
 * - TOK_WORDS_METASPACE: one splitting Metaspace stage (Gemma's, mmBERT's): the words are the
 *   input cut before each replacement, after the prepended one, once it holds no space. */
typedef enum { TOK_WORDS_STAGES, TOK_WORDS_GPT2, TOK_WORDS_METASPACE } tok_words;

typedef struct tok_pre {
    tok_pre_kind kind;
    /* BYTELEVEL */
    bool add_prefix_space;
    bool use_regex;
    /* METASPACE */
    char replacement[8]; /* UTF-8 of the replacement char */
    size_t replacement_len;
    tok_prepend prepend;
    bool split;
} tok_pre;

/* ---- added tokens ----------------------------------------------------------- */

typedef struct tok_added {
    char *content;
    size_t len;
    int32_t id;
    bool special, normalized, lstrip, rstrip, single_word;
} tok_added;

/* A byte trie over token contents, for leftmost-longest matching. */
typedef struct tok_trie_node {
    uint32_t first_edge; /* index into edges */
    uint16_t n_edges;
    int32_t token;       /* index into added[] of the token ending here, or -1 */
} tok_trie_node;

typedef struct tok_trie_edge {
    uint8_t byte;
    uint32_t child;
} tok_trie_edge;

#define TOK_TRIE_SKIP_BYTES 4

typedef struct tok_trie {
    tok_trie_node *nodes;
    size_t n_nodes;
    tok_trie_edge *edges;
    size_t n_edges;
    uint32_t root[256];  /* child of the root for each first byte, 0 = none */
    bool empty;          /* no patterns: skip matching entirely */
    /* The patterns' first bytes when there are at most TOK_TRIE_SKIP_BYTES of them and none is
     * ASCII whitespace (n_skip 0 otherwise): text is then scanned for them eight bytes a step
     * (added.c, next_start). */
    unsigned char skip[TOK_TRIE_SKIP_BYTES];
    int n_skip;
    /* Bit b0 << 8 | b1: a pattern starts with the bytes b0 b1, or b0 alone is one. A start is
     * looked for only where the next byte allows a match (a space before a letter does not). */
    uint64_t pairs[1024];
} tok_trie;

/* ---- BPE model -------------------------------------------------------------- */

/* A merge slot packs the pair and its rank into 8 bytes so that the table of a
 * 50k-merge vocabulary stays near the L2 size: bits 0-39 the pair
 * (left << 20 | right, ids < 2^20), bits 40-63 the rank (< 2^24); all ones = empty.
 * The merged token's id is merge_new[rank]. */
typedef uint64_t tok_merge_slot;
#define TOK_MAX_ID ((1 << 20) - 1)
#define TOK_MAX_MERGES ((1 << 24) - 2)

#define TOK_DIRECT_CHARS 0x800 /* code points below this have a direct char -> id table */

typedef struct tok_bpe {
    tok_strmap vocab;
    tok_merge_slot *merges; /* open addressing, linear probing, any capacity */
    size_t merges_cap;
    int32_t *merge_new;  /* per rank: the id of the merged token */
    size_t n_merges;
    int32_t unk_id;      /* -1 when no unk_token */
    char *unk_token;     /* as named in the file (NULL when none) */
    bool unk_missing;    /* unk_token named but absent from the vocabulary */
    bool fuse_unk;
    bool byte_fallback;
    bool ignore_merges;
    int32_t byte_ids[256];             /* id of "<0xNN>", -1 when absent */
    int32_t direct[TOK_DIRECT_CHARS];  /* id of the one-char token for small code points, -1 */
} tok_bpe;

/* ---- the tokenizer ---------------------------------------------------------- */

struct tokenizer {
    char name[256];
    uint64_t serial;     /* unique per load in this process: keys the word caches */

    tok_norm *norms;     /* applied in order; n_norms == 0: no normalizer */
    size_t n_norms;

    tok_pre *pres;       /* applied in order; n_pres == 0: the whole piece is one word */
    size_t n_pres;
    tok_words words;     /* tok_pre_words(pres), set at load */

    tok_added *added;    /* one per effective added-token entry */
    size_t n_added;
    tok_strmap added_map; /* content -> id */
    tok_trie trie_raw;   /* tokens with normalized=false, matched on raw text */
    tok_trie trie_norm;  /* tokens with normalized=true, matched on normalized text */

    tok_bpe bpe;
    size_t vocab_size;   /* max id + 1 */
};

/* ---- per-thread scratch ----------------------------------------------------- */

/* A growable byte buffer (in arena a, or malloc'ed when a is NULL). */
typedef struct tok_buf {
    char *p;
    size_t n, cap;
    arena *a;
} tok_buf;

/* A word/piece: a byte range of some buffer, and whether it starts at
 * offset 0 of the original input (Metaspace prepend_scheme "first"). */
typedef struct tok_span {
    size_t off, len;
    bool at_start;
} tok_span;

typedef struct tok_spans {
    tok_span *v;
    size_t n, cap;
    arena *a;            /* as in tok_buf */
} tok_spans;

typedef struct tok_sym {
    int32_t id;
    int32_t prev, next;
    uint32_t len;        /* bytes of the word covered; 0 = merged away */
} tok_sym;

typedef struct tok_heap_item {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
} tok_heap_item;

/* The per-thread word cache: BPE results of short words, direct-mapped, one
 * cache line per entry. Valid when owner is the encoding tokenizer's serial
 * (0 = empty), so tokenizers never see each other's words, even at a reused
 * address. Bounded (TOK_CACHE_SLOTS entries) and never shared between threads. */
#define TOK_CACHE_SLOTS 2048
#define TOK_CACHE_WORD 26
#define TOK_CACHE_IDS 6

typedef struct tok_cache_entry {
    uint64_t owner;
    uint8_t len, n_ids;
    char word[TOK_CACHE_WORD];
    int32_t ids[TOK_CACHE_IDS];
} tok_cache_entry;

/* The per-thread text cache: whole encodes of short texts, direct-mapped, keyed by the
 * exact bytes and the tokenizer's serial like the word cache. A prompt's question head
 * and its options are encoded apart from the state and repeat across requests: a hit
 * skips the added-token split, normalization and pre-tokenization regex of the whole
 * text, which the word cache cannot (it caches BPE only). Texts longer than
 * TOK_TEXT_BYTES or yielding more than TOK_TEXT_IDS ids are never kept. */
#define TOK_TEXT_SLOTS 256
#define TOK_TEXT_BYTES 240
#define TOK_TEXT_IDS 64

/* Both caches hold their slot counts times the number of tokenizers loaded, rounded up to a
 * power of two and at most this: a thread serving several checkpoints gives each the room one
 * has alone (encode.c, cache_scale). */
#define TOK_CACHE_SCALE_MAX 8

typedef struct tok_text_entry {
    uint64_t owner;
    uint16_t len, n_ids;
    char text[TOK_TEXT_BYTES];
    int32_t ids[TOK_TEXT_IDS];
} tok_text_entry;

typedef struct tok_scratch {
    tok_buf norm[2];         /* normalizer ping-pong output */
    tok_buf prefixed;        /* ByteLevel add_prefix_space copy */
    int32_t *u32;            /* utf8proc working buffer */
    size_t u32_cap;
    tok_buf pre[2];          /* pre-tokenizer ping-pong text */
    tok_spans spans[2];      /* pre-tokenizer ping-pong words */
    tok_sym *syms;
    size_t syms_cap;
    tok_heap_item *heap;
    size_t heap_cap;
    tok_cache_entry *cache;  /* TOK_CACHE_SLOTS * scale entries */
    tok_text_entry *texts;   /* TOK_TEXT_SLOTS * scale entries */
    size_t scale;            /* a power of two, at most TOK_CACHE_SCALE_MAX (encode.c, cache_scale) */
    size_t word_hits, text_hits; /* the caches' hits since the thread's last clear */
    arena *a;                /* u32, syms, heap grow here; NULL: malloc (the thread's scratch) */
} tok_scratch;

void tok_scratch_free(tok_scratch *s);
/* The tokenizers loaded now (allocated and not yet freed), in this process. */
size_t tok_live(void);
/* realloc in arena a (p holds old bytes), or realloc itself when a is NULL. */
void *tok_realloc(arena *a, void *p, size_t old, size_t n);
/* An array of *cap elements of elem bytes at p, doubled (first elements when empty):
 * returns where it now is and sets *cap, or NULL with p and *cap unchanged. */
void *tok_grow(arena *a, void *p, size_t *cap, size_t elem, size_t first);
int tok_buf_reserve(tok_buf *b, size_t need);
int tok_spans_push(tok_spans *s, size_t off, size_t len, bool at_start);

/* ---- Unicode data differences (tokenizer_unidata.c, generated) --------------- */

extern const uint32_t tok_norm_inert[][2];   /* HF normalization leaves these alone */
extern const size_t tok_norm_inert_N;
extern const uint32_t tok_extra_letter[][2]; /* \p{L} for HF's regex, unassigned for PCRE2 */
extern const size_t tok_extra_letter_N;
extern const uint32_t tok_extra_number[][2]; /* \p{N} for HF's regex, unassigned for PCRE2 */
extern const size_t tok_extra_number_N;

/* True when cp lies in one of the n sorted, disjoint ranges. */
bool tok_in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp);

/* ---- stage entry points ----------------------------------------------------- */

/* UTF-8 validity exactly as Rust's str: no overlongs, surrogates or > U+10FFFF. */
bool tok_utf8_valid(const char *s, size_t len);
/* Decodes the code point at s[0..] (valid UTF-8 assumed); stores its length. */
uint32_t tok_utf8_decode(const char *s, size_t *adv);
/* Encodes cp, returns its length (1..4). */
size_t tok_utf8_encode(uint32_t cp, char *out);

/* Builds the table behind tok_nfc_quick once a process (nfc_quick.c); -1 on failure. */
int tok_nfc_quick_init(void);
/* True when NFC can cut text in front of cp: nothing before it reorders or composes with it
 * or anything after, and NFC leaves it alone. False for every cp above U+FFFF. */
bool tok_nfc_quick(uint32_t cp);
/* Normalizes in[0..len) through every normalizer; *out points at the result
 * (in itself when nothing changed, else a scratch buffer valid until the next call). */
int tok_normalize(const tokenizer *t, tok_scratch *s, const char *in, size_t len,
                  const char **out, size_t *out_len);

/* Callback for each piece the added-token splitter produces: either a
 * token (id >= 0) or a gap of text (id == -1). */
typedef int (*tok_piece_fn)(void *ctx, const char *p, size_t len, size_t off, int32_t id);
/* Splits text by leftmost-longest matches of trie, honouring each token's
 * single_word / lstrip / rstrip, and calls fn for every non-empty piece in order. */
int tok_added_split(const tokenizer *t, const tok_trie *trie, const char *text, size_t len,
                    tok_piece_fn fn, void *ctx);
int tok_trie_build(tok_trie *trie, const tok_added *added, size_t n_added, bool normalized,
                   const tokenizer *t, tok_scratch *s);
void tok_trie_free(tok_trie *trie);

/* Pre-tokenizes text into words; the result is in s->pre[*which] / s->spans[*which]. */
int tok_pretokenize(const tokenizer *t, tok_scratch *s, const char *text, size_t len,
                    bool at_start, int *which);
/* How t's pre-tokenizer cuts words (tok_pre_words), decided once at load. */
tok_words tok_pre_words(const tokenizer *t);
/* The input of ByteLevel stage pre for text[0..len): text itself, or a copy in s->prefixed with
 * the space in front that the stage adds. -1 when the copy cannot grow. */
int tok_bytelevel_input(const tok_pre *pre, tok_scratch *s, const char *text, size_t len, const char **p,
                        size_t *n);
/* Writes word[0..len) through GPT-2's bytes_to_unicode at o (room for 2 * len bytes; after
 * tok_bytelevel_input has run once in the process); returns the bytes written. */
size_t tok_bytelevel_map(const char *word, size_t len, char *o);
/* Whether Metaspace stage pre prepends its replacement to text[0..len) (at_start: the text starts
 * the whole input, for prepend_scheme "first"). */
bool tok_metaspace_prepends(const tok_pre *pre, const char *text, size_t len, bool at_start);
/* The end of the GPT-2 pattern's match at pos (< n, a code point's start) in valid UTF-8
 * p[0..n) (gpt2_match.c): every position starts one, so the matches from 0 tile the text. */
size_t tok_gpt2_match(const char *p, size_t n, size_t pos);

/* Runs BPE on one word and appends its ids. -1 with err on failure. */
int tok_bpe_word(const tok_bpe *m, tok_scratch *s, const char *w, size_t len, tok_ids *out,
                 layad_error *err);
/* Sizes the merge table for n merges (all slots empty). */
int tok_bpe_merges_alloc(tok_bpe *m, size_t n);
/* Records merge (a, b) -> new_id at rank; a later duplicate pair overwrites. */
void tok_bpe_merge_put(tok_bpe *m, int32_t a, int32_t b, int32_t rank, int32_t new_id);
/* Fills byte_ids and the direct char table from the loaded vocabulary. */
int tok_bpe_init_tables(tok_bpe *m);
void tok_bpe_free(tok_bpe *m);

int tok_ids_push(tok_ids *out, int32_t id);

#endif
