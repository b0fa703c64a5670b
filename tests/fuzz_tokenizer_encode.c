/*
 * fuzz_tokenizer_encode.c - libFuzzer target: arbitrary bytes into tokenizer_encode.
 *
 * The first input byte picks one of the loaded tokenizers (tiny ByteLevel, the
 * Gemma-like Metaspace file and three of its option variants, the real
 * ModernBERT vocabulary when $LAYAD_SHARED/data has it); the rest is the text.
 * Checked on every input, besides ASan/UBSan/LSan: valid UTF-8 (judged by
 * utf8proc, independently of the tokenizer's own check) always encodes, to ids
 * inside the vocabulary, the same ids twice in a row (the first with the
 * thread's caches emptied, the second a text-cache hit when the text is short)
 * and a third time into an arena, as the daemon encodes, from emptied caches again;
 * invalid UTF-8 is a 400
 * with nothing appended. Run from the repository root:
 *   make fuzz && build/fuzz/fuzz_tokenizer_encode -max_len=4096 -max_total_time=600 DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "model/base/arena.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/lib/tok_corpus.h"

/* UBSan findings abort (the sanitizer's own default is to report and continue, which
 * libFuzzer does not count as a crash; see tests/fuzz_request.c). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

static tokenizer *toks[8];
static size_t n_toks;

static void add(const char *path, const char *variant)
{
    layad_error err;
    tokenizer *t = tok_corpus_load(path, variant, &err);
    if (t)
        toks[n_toks++] = t;
    else
        fprintf(stderr, "fuzz: skipping %s (%s): %s\n", path, variant ? variant : "-", err.msg);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *shared = getenv("LAYAD_SHARED");
    char mb[512];
    snprintf(mb, sizeof mb, "%s/data/modernbert-tokenizer.json", shared && *shared ? shared : "../shared");
    add("config/tiny-tokenizer.json", NULL);
    add("config/tiny-tokenizer.json", "tiny-added-edge");
    add("tests/fixtures/tokenizer/gemma-like.json", NULL);
    add("tests/fixtures/tokenizer/gemma-like.json", "gemma-unk-fused");
    add("tests/fixtures/tokenizer/gemma-like.json", "gemma-never-nosplit");
    add(mb, NULL);
    if (n_toks == 0) {
        fprintf(stderr, "fuzz: no tokenizer loaded (run from the repository root)\n");
        abort();
    }
    return 0;
}

static int valid_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0)
            return 0;
        i += (size_t)k;
    }
    return 1;
}

static int same(const tok_ids *a, const tok_ids *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->ids, b->ids, a->n * sizeof *a->ids) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const tokenizer *t = toks[data[0] % n_toks];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    tok_ids a = { 0 }, b = { 0 };
    layad_error err;
    tokenizer_thread_cache_clear(); /* a from empty caches, b (short texts) from the text cache */
    int rc = tokenizer_encode(t, text, len, &a, &err);
    if (valid_utf8(data + 1, len)) {
        if (rc != 0) {
            fprintf(stderr, "valid UTF-8 failed to encode: %s\n", err.msg);
            abort();
        }
        for (size_t i = 0; i < a.n; i++)
            if (a.ids[i] < 0 || (size_t)a.ids[i] >= tokenizer_vocab_size(t))
                abort();
        if (tokenizer_encode(t, text, len, &b, &err) != 0 || !same(&a, &b))
            abort();
        arena ar = { 0 };
        tok_ids c = { .a = &ar };
        tokenizer_thread_cache_clear();
        if (tokenizer_encode(t, text, len, &c, &err) != 0 || !same(&a, &c))
            abort();
        arena_release(&ar);
    } else if (rc != -1 || err.status != 400 || a.n != 0) {
        abort();
    }
    free(a.ids);
    free(b.ids);
    return 0;
}
