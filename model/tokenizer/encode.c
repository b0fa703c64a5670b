/*
 * tokenizer.c - tokenizer_encode: the HF encode pipeline (see
 * tokenizer_internal.h for the stages), plus the per-thread scratch.
 *
 * Scratch: every buffer an encode needs (normalized text, pre-tokenized words,
 * BPE symbols and heap, the caches) lives in one tok_scratch per
 * thread, created on the thread's first encode, reused by every later call
 * and freed when the thread exits (pthread key destructor) or on
 * tokenizer_thread_cleanup(). Buffers only grow, to the largest input the
 * thread has seen, so steady-state encodes allocate nothing except when the
 * caller's output buffer has to grow. One exception caps what a thread keeps:
 * after an input longer than TOK_SCRATCH_KEEP_BYTES the scratch is freed
 * again, so a few huge requests (a 2 MiB state makes ~100 MiB of scratch per
 * HTTP thread) do not pin that memory for the life of the process; such inputs
 * are rare and already cost far more than the allocation.
 *
 * Arena mode: when the caller's tok_ids live in an arena (the daemon's request
 * path), the encode takes its growable buffers from that arena and uses only
 * the thread's word cache and match data, created on the thread's first
 * encode; nothing is allocated or freed after that, whatever the input size.
 *
 * Word cache: the scratch also holds a small direct-mapped cache of BPE results
 * (TOK_CACHE_SLOTS words of up to TOK_CACHE_WORD bytes, 128 KiB per thread and
 * per tokenizer loaded: cache_scale), like the word cache HF's BPE keeps, but
 * per thread: no sharing, no locks, a bounded size. Entries carry the serial of
 * the tokenizer that made them, so one thread may use several tokenizers; the
 * serial also shifts their slots, so two tokenizers encoding the same words keep
 * their entries apart (cache_slot).
 * A word is keyed by its bytes after pre-tokenization, except for a ByteLevel-only
 * pre-tokenizer (ModernBERT's), whose words are keyed by their input bytes: the byte
 * map is one to one, and a hit then skips the mapping (gpt2_word_cached).
 * Prompts repeat their question, option and JSON-key words on every request,
 * which is what the cache is for; BPE of a word is a pure function of the
 * tokenizer and the word, so a hit returns exactly what a miss computes (the
 * parity corpora run with the cache on).
 *
 * Text cache: beside it, whole encodes of texts of up to TOK_TEXT_BYTES bytes
 * (TOK_TEXT_SLOTS of them, 128 KiB per thread and tokenizer, the same keying).
 * The sequence builder encodes a question's head and each option apart from the
 * state, and those texts repeat across requests; a hit skips the added-token
 * split, the normalizer and the pre-tokenizer as well, most of a short text's
 * encode once its words are in the word cache (request_parse_in: 107.7 K -> 85.6 K
 * instructions on a q1_83tok-like body, bench/results/experiments/README.md).
 * An encode is a pure function of the tokenizer and the bytes, so a hit
 * appends exactly what a miss would.
 */
#include "model/tokenizer/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- per-thread scratch ----------------------------------------------------- */

#define TOK_SCRATCH_KEEP_BYTES (256 * 1024) /* inputs above this free the scratch after use */

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_destroy(void *p)
{
    tok_scratch_free(p);
}

static void scratch_key_init(void)
{
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_destroy) == 0;
}

/* The caches' scale for the tokenizers loaded now: their count rounded up to a power of two,
 * at most TOK_CACHE_SCALE_MAX. Tokenizers share a thread's caches, each at its own offset
 * (cache_slot); at one size for all, two checkpoints served in turn would each keep about half
 * of what one keeps alone, and lose hits to each other's entries. */
static size_t cache_scale(void)
{
    const size_t n = tok_live();
    size_t k = 1;
    while (k < n && k < TOK_CACHE_SCALE_MAX)
        k <<= 1;
    return k;
}

/* Gives s empty caches at scale k. 0, or -1 with s's caches as they were. */
static int cache_alloc(tok_scratch *s, size_t k)
{
    tok_cache_entry *words = calloc(TOK_CACHE_SLOTS * k, sizeof *words);
    tok_text_entry *texts = calloc(TOK_TEXT_SLOTS * k, sizeof *texts);
    if (!words || !texts) {
        free(words);
        free(texts);
        return -1;
    }
    free(s->cache);
    free(s->texts);
    s->cache = words;
    s->texts = texts;
    s->scale = k;
    return 0;
}

static tok_scratch *scratch_get(void)
{
    if (pthread_once(&scratch_once, scratch_key_init) != 0 || !scratch_key_ok)
        return NULL;
    tok_scratch *s = pthread_getspecific(scratch_key);
    if (s) {
        /* A tokenizer loaded after this thread's first encode: the caches grow once, empty.
         * The daemon loads every checkpoint before it serves, so its threads never get here
         * with more tokenizers; when the allocation fails, the smaller caches go on serving. */
        if (s->scale < TOK_CACHE_SCALE_MAX && tok_live() > s->scale)
            (void)cache_alloc(s, cache_scale());
        return s;
    }
    s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (cache_alloc(s, cache_scale()) != 0 || pthread_setspecific(scratch_key, s) != 0) {
        tok_scratch_free(s);
        return NULL;
    }
    return s;
}

void tokenizer_thread_cache_clear(void)
{
    if (pthread_once(&scratch_once, scratch_key_init) != 0 || !scratch_key_ok)
        return;
    tok_scratch *s = pthread_getspecific(scratch_key);
    if (s) {
        memset(s->cache, 0, TOK_CACHE_SLOTS * s->scale * sizeof *s->cache);
        memset(s->texts, 0, TOK_TEXT_SLOTS * s->scale * sizeof *s->texts);
        s->word_hits = s->text_hits = 0;
    }
}

void tokenizer_thread_cache_hits(size_t *words, size_t *texts)
{
    *words = *texts = 0;
    if (pthread_once(&scratch_once, scratch_key_init) != 0 || !scratch_key_ok)
        return;
    const tok_scratch *s = pthread_getspecific(scratch_key);
    if (s) {
        *words = s->word_hits;
        *texts = s->text_hits;
    }
}

void tokenizer_thread_cleanup(void)
{
    if (pthread_once(&scratch_once, scratch_key_init) != 0 || !scratch_key_ok)
        return;
    tok_scratch *s = pthread_getspecific(scratch_key);
    if (s) {
        (void)pthread_setspecific(scratch_key, NULL);
        tok_scratch_free(s);
    }
}

/* The 128-bit product of a and b folded to 64 bits: every input bit reaches the low bits
 * the slot masks keep (a plain 64-bit multiply moves bits only upwards). */
static uint64_t fold_mul(uint64_t a, uint64_t b)
{
    const unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* The caches' slot hash of p[0..len), eight bytes a step: FNV-1a's byte a step was most of
 * a cached word's lookup (~5 instructions a byte). The last 1-8 bytes are read as two
 * overlapping 4-byte words (or three single bytes below 4), so every byte counts once at
 * least; the length seeds the hash. */
static uint64_t key_hash(const char *p, size_t len)
{
    const uint64_t k1 = 0xa0761d6478bd642full, k2 = 0xe7037ed1a0b428dbull;
    uint64_t h = len ^ 0x9e3779b97f4a7c15ull, v;
    for (; len > 8; len -= 8, p += 8) {
        memcpy(&v, p, 8);
        h = fold_mul(v ^ k1, h ^ k2);
    }
    if (len >= 4) {
        uint32_t lo, hi;
        memcpy(&hi, p, 4);
        memcpy(&lo, p + len - 4, 4);
        v = (uint64_t)hi << 32 | lo;
    } else {
        v = len ? (uint64_t)(uint8_t)p[0] << 16 | (uint64_t)(uint8_t)p[len >> 1] << 8 | (uint8_t)p[len - 1] : 0;
    }
    return fold_mul(v ^ k1, h ^ k2);
}

/* Slot of bytes p[0..len) for tokenizer t in a direct-mapped cache of slots entries (a
 * power of two). The serial shifts each tokenizer's slots by its own offset: a daemon
 * serving two checkpoints encodes the same prompt words and option texts through both
 * tokenizers, and with one slot per text the two would evict each other on every
 * request. The multiplier is odd, so two tokenizers whose serials differ by less than
 * slots never share an offset; for one tokenizer the shift keeps its collisions as they were. */
static size_t cache_slot(const tokenizer *t, const char *p, size_t len, size_t slots)
{
    const uint64_t h = key_hash(p, len);
    return (size_t)(((h ^ h >> 32) + t->serial * 0x9e3779b97f4a7c15ull) & (slots - 1));
}

/* ---- the pipeline ----------------------------------------------------------- */

typedef struct enc_ctx {
    const tokenizer *t;
    tok_scratch *s;
    tok_ids *out;
    layad_error *err;
    bool raw_at_start;   /* the raw piece being normalized starts the input */
} enc_ctx;

static int emit(enc_ctx *c, int32_t id)
{
    if (tok_ids_push(c->out, id) != 0)
        return layad_fail(c->err, 500, "tokenizer: out of memory");
    return 0;
}

/* The word cache's entry for key[0..len) (NULL when the key is too long to be kept), and
 * whether it holds that key. */
static tok_cache_entry *word_slot(const enc_ctx *c, const char *key, size_t len, bool *hit)
{
    *hit = false;
    if (len > TOK_CACHE_WORD)
        return NULL;
    tok_cache_entry *e = &c->s->cache[cache_slot(c->t, key, len, TOK_CACHE_SLOTS * c->s->scale)];
    *hit = e->owner == c->t->serial && e->len == len && memcmp(e->word, key, len) == 0;
    return e;
}

static int word_emit(enc_ctx *c, const tok_cache_entry *e)
{
    c->s->word_hits++;
    for (size_t k = 0; k < e->n_ids; k++)
        if (emit(c, e->ids[k]) != 0)
            return -1;
    return 0;
}

/* BPE of word[0..wlen), kept in e (if any) under key[0..klen) when its ids fit, replacing
 * whatever held the slot. */
static int word_bpe(enc_ctx *c, tok_cache_entry *e, const char *key, size_t klen, const char *word,
                    size_t wlen)
{
    size_t n0 = c->out->n;
    if (tok_bpe_word(&c->t->bpe, c->s, word, wlen, c->out, c->err) != 0)
        return -1;
    size_t n = c->out->n - n0;
    if (e && n <= TOK_CACHE_IDS) {
        e->owner = c->t->serial;
        e->len = (uint8_t)klen;
        e->n_ids = (uint8_t)n;
        memcpy(e->word, key, klen);
        if (n) /* a word may yield no id; ids may then still be unallocated */
            memcpy(e->ids, c->out->ids + n0, n * sizeof *e->ids);
    }
    return 0;
}

/* BPE of one pre-tokenized word through this thread's word cache: a word of at most
 * TOK_CACHE_WORD bytes whose ids fit an entry is looked up first and stored after a miss. */
static int bpe_cached(enc_ctx *c, const char *word, size_t len)
{
    bool hit;
    tok_cache_entry *e = word_slot(c, word, len, &hit);
    return hit ? word_emit(c, e) : word_bpe(c, e, word, len, word, len);
}

/* Room for an n-byte word that a direct pre-tokenizer path assembles: local (cap bytes, on
 * the caller's stack) when it fits, else the scratch's first word buffer, which those paths
 * leave unused; NULL when that cannot grow. */
static char *word_room(enc_ctx *c, char *local, size_t cap, size_t n)
{
    if (n <= cap)
        return local;
    tok_buf *b = &c->s->pre[0];
    return tok_buf_reserve(b, n) == 0 ? b->p : NULL;
}

/* BPE of one GPT-2 match raw[0..len) of a ByteLevel-only pre-tokenizer's input. The cache is
 * keyed by the raw bytes: the byte mapping is one to one, so they name the mapped word as
 * well, and a hit (most words of a request) skips the mapping and the pre-tokenizer's
 * buffers; a miss maps the word for BPE. */
static int gpt2_word_cached(enc_ctx *c, const char *raw, size_t len)
{
    bool hit;
    tok_cache_entry *e = word_slot(c, raw, len, &hit);
    if (hit)
        return word_emit(c, e);
    char local[256], *m = word_room(c, local, sizeof local, 2 * len);
    if (!m)
        return layad_fail(c->err, 500, "tokenizer: out of memory");
    return word_bpe(c, e, raw, len, m, tok_bytelevel_map(raw, len, m));
}

/* The words of a normalized piece for a ByteLevel-only pre-tokenizer (TOK_WORDS_GPT2):
 * what tok_pretokenize would produce, one GPT-2 match at a time, without its buffers. */
static int gpt2_words(enc_ctx *c, const char *text, size_t len)
{
    const char *p;
    size_t n;
    if (tok_bytelevel_input(&c->t->pres[0], c->s, text, len, &p, &n) != 0)
        return layad_fail(c->err, 500, "tokenizer: pre-tokenization failed");
    for (size_t pos = 0, end; pos < n; pos = end) {
        end = tok_gpt2_match(p, n, pos);
        if (gpt2_word_cached(c, p + pos, end - pos) != 0)
            return -1;
    }
    return 0;
}

/* BPE of the first Metaspace word, text[0..len) behind the prepended replacement rep[0..rl). */
static int prefixed_word_cached(enc_ctx *c, const char *rep, size_t rl, const char *text, size_t len)
{
    char local[256], *w = word_room(c, local, sizeof local, rl + len);
    if (!w)
        return layad_fail(c->err, 500, "tokenizer: out of memory");
    memcpy(w, rep, rl);
    memcpy(w + rl, text, len);
    return bpe_cached(c, w, rl + len);
}

/* The words of a normalized piece for a splitting Metaspace-only pre-tokenizer
 * (TOK_WORDS_METASPACE) whose text holds no space: what tok_pretokenize would produce, cut
 * in the text itself (the words are its bytes from one replacement to the next, the first
 * behind the prepended one), without copying the text; 1 when the text holds a space, which
 * the stage would replace first. */
static int metaspace_words(enc_ctx *c, const char *text, size_t len, bool at_start)
{
    const tok_pre *pre = &c->t->pres[0];
    const char *rep = pre->replacement;
    const size_t rl = pre->replacement_len;
    if (memchr(text, ' ', len))
        return 1;
    size_t w = 0; /* the word being cut starts here */
    /* from 1: a replacement at 0 starts the first word and cuts nothing before it */
    for (size_t i = 1; i + rl <= len; i++) {
        const char *hit = memchr(text + i, rep[0], len - rl + 1 - i);
        if (!hit)
            break;
        i = (size_t)(hit - text);
        if (memcmp(hit, rep, rl) != 0)
            continue;
        const int rc = w == 0 && tok_metaspace_prepends(pre, text, len, at_start)
                           ? prefixed_word_cached(c, rep, rl, text, i)
                           : bpe_cached(c, text + w, i - w);
        if (rc != 0)
            return -1;
        w = i;
        i += rl - 1;
    }
    if (w == 0 && tok_metaspace_prepends(pre, text, len, at_start))
        return prefixed_word_cached(c, rep, rl, text, len);
    return len > w ? bpe_cached(c, text + w, len - w) : 0;
}

/* A piece of normalized text that holds no added token: pre-tokenize, BPE. */
static int on_norm_piece(void *ctx, const char *p, size_t len, size_t off, int32_t id)
{
    enc_ctx *c = ctx;
    if (id >= 0)
        return emit(c, id);
    if (c->t->words == TOK_WORDS_GPT2)
        return gpt2_words(c, p, len);
    const bool at_start = c->raw_at_start && off == 0;
    if (c->t->words == TOK_WORDS_METASPACE && len > 0) {
        const int rc = metaspace_words(c, p, len, at_start);
        if (rc <= 0)
            return rc;
    }
    int which;
    if (tok_pretokenize(c->t, c->s, p, len, at_start, &which) != 0)
        return layad_fail(c->err, 500, "tokenizer: pre-tokenization failed");
    const tok_spans *w = &c->s->spans[which];
    for (size_t i = 0; i < w->n; i++) {
        const char *word = c->s->pre[which].p + w->v[i].off;
        if (bpe_cached(c, word, w->v[i].len) != 0)
            return -1;
    }
    return 0;
}

/* A piece of raw text that holds no non-normalized added token: normalize it,
 * then split out the normalized added tokens. */
static int on_raw_piece(void *ctx, const char *p, size_t len, size_t off, int32_t id)
{
    enc_ctx *c = ctx;
    if (id >= 0)
        return emit(c, id);
    const char *np;
    size_t nlen;
    if (tok_normalize(c->t, c->s, p, len, &np, &nlen) != 0)
        return layad_fail(c->err, 500, "tokenizer: normalization failed");
    c->raw_at_start = off == 0;
    if (tok_added_split(c->t, &c->t->trie_norm, np, nlen, on_norm_piece, c) != 0)
        return c->err && c->err->status ? -1
                                        : layad_fail(c->err, 500, "tokenizer: added-token split failed");
    return 0;
}

/* ---- the text cache ---------------------------------------------------------- */

/* The text cache's slot for text (NULL when it is too long to be kept). */
static tok_text_entry *text_slot(tok_scratch *s, const tokenizer *t, const char *text, size_t len)
{
    if (len > TOK_TEXT_BYTES)
        return NULL;
    return &s->texts[cache_slot(t, text, len, TOK_TEXT_SLOTS * s->scale)];
}

static bool text_hit(const tok_text_entry *e, const tokenizer *t, const char *text, size_t len)
{
    return e && e->owner == t->serial && e->len == len && (len == 0 || memcmp(e->text, text, len) == 0);
}

/* Appends e's ids to out; -1 (out as it was) when out cannot grow. */
static int text_emit(const tok_text_entry *e, tok_ids *out, layad_error *err)
{
    const size_t n0 = out->n;
    for (size_t k = 0; k < e->n_ids; k++)
        if (tok_ids_push(out, e->ids[k]) != 0) {
            out->n = n0;
            return layad_fail(err, 500, "tokenizer: out of memory");
        }
    return 0;
}

/* Keeps text's ids, out's from n0 on, in e, replacing what held the slot, when they fit. */
static void text_store(tok_text_entry *e, const tokenizer *t, const char *text, size_t len, const tok_ids *out,
                       size_t n0)
{
    const size_t n = out->n - n0;
    if (!e || n > TOK_TEXT_IDS)
        return;
    e->owner = t->serial;
    e->len = (uint16_t)len;
    e->n_ids = (uint16_t)n;
    if (len) /* the empty text may come as NULL */
        memcpy(e->text, text, len);
    if (n) /* a text may yield no id; out's ids may then still be unallocated (NULL) */
        memcpy(e->ids, out->ids + n0, n * sizeof *e->ids);
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, tok_ids *out, layad_error *err)
{
    if (!tok_utf8_valid(text, len))
        return layad_fail(err, 400, "text is not valid UTF-8");
    tok_scratch *s = scratch_get();
    if (!s)
        return layad_fail(err, 500, "tokenizer: out of memory");
    layad_error local;
    if (!err)
        err = &local;
    layad_error_clear(err);
    tok_text_entry *e = text_slot(s, t, text, len);
    if (text_hit(e, t, text, len)) {
        s->text_hits++;
        return text_emit(e, out, err);
    }
    arena *a = out->a;
    tok_scratch in_arena = { .norm = { { .a = a }, { .a = a } }, .prefixed = { .a = a },
                             .pre = { { .a = a }, { .a = a } }, .spans = { { .a = a }, { .a = a } },
                             .cache = s->cache, .scale = s->scale, .a = a };
    tok_scratch *thread = s;
    if (a)
        s = &in_arena;
    size_t n0 = out->n;
    enc_ctx c = { t, s, out, err, false };
    const int rc = tok_added_split(t, &t->trie_raw, text, len, on_raw_piece, &c);
    if (a)
        thread->word_hits += in_arena.word_hits;
    if (!a && len > TOK_SCRATCH_KEEP_BYTES)
        tokenizer_thread_cleanup();
    if (rc != 0) {
        out->n = n0;
        if (!err->status)
            layad_fail(err, 500, "tokenizer: added-token split failed");
        return -1;
    }
    text_store(e, t, text, len, out, n0);
    return 0;
}

int32_t tokenizer_token_id(const tokenizer *t, const char *content)
{
    size_t len = strlen(content);
    int32_t id = tok_strmap_get(&t->added_map, content, len);
    return id >= 0 ? id : tok_strmap_get(&t->bpe.vocab, content, len);
}

size_t tokenizer_vocab_size(const tokenizer *t)
{
    return t->vocab_size;
}
