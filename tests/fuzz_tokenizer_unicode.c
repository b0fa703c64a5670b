/*
 * fuzz_tokenizer_unicode.c - libFuzzer target: the tokenizer's Unicode shortcuts
 * against the libraries they stand in for, on arbitrary valid UTF-8.
 *
 * - the GPT-2 pattern (gpt2_match.c): from every match start, its match ends where
 *   the pattern compiled by PCRE2 with the same classes (tests/lib/unicode_oracle.c)
 *   ends its match from there, and that match starts there;
 * - NFC cut at quick code points (normalize.c, nfc_quick.c): the output equals
 *   utf8proc's NFC of the whole text, split at the code points HF's Unicode 9.0
 *   tables leave alone, as the normalizer ran before, and at U+11A7 (utf8proc
 *   before 2.11 deletes it after a Hangul LV syllable, JuliaStrings/utf8proc#317;
 *   this target found that the old normalizer did, and HF does not).
 * Invalid UTF-8 (judged by utf8proc) is skipped: the tokenizer rejects it first. Run from
 * the repository root:
 *   make fuzz && build/fuzz/fuzz_tokenizer_unicode -max_len=512 -max_total_time=600 DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "model/tokenizer/internal.h"
#include "tests/lib/unicode_oracle.h"

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

static pcre2_code *re;
static pcre2_match_data *md;
static tokenizer *nfc_tok;
static tok_scratch *scratch;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    static const char json[] = "{\"normalizer\":{\"type\":\"NFC\"},\"model\":{\"type\":\"BPE\","
                               "\"vocab\":{\"a\":0},\"merges\":[]}}";
    layad_error err;
    re = gpt2_regex(true);
    md = pcre2_match_data_create(1, NULL);
    nfc_tok = tokenizer_load_mem(json, sizeof json - 1, "nfc.json", &err);
    scratch = calloc(1, sizeof *scratch);
    if (!re || !md || !nfc_tok || !scratch) {
        fprintf(stderr, "fuzz_tokenizer_unicode: set-up failed\n");
        abort();
    }
    return 0;
}

static void check_gpt2(const char *p, size_t n)
{
    char why[128];
    if (gpt2_same_matches(re, md, p, n, why, sizeof why) < 0) {
        fprintf(stderr, "gpt2 %s\n", why);
        abort();
    }
}

static void check_nfc(const char *p, size_t n)
{
    char *want = malloc(n * 3 + 4); /* NFC grows UTF-8 by at most 3x */
    if (!want)
        abort();
    const size_t o = nfc_whole(p, n, want);
    const char *got;
    size_t got_n;
    if (o == (size_t)-1 || tok_normalize(nfc_tok, scratch, p, n, &got, &got_n) != 0 || got_n != o ||
        memcmp(got, want, o) != 0) {
        fprintf(stderr, "NFC differs from utf8proc's on %zu bytes\n", n);
        abort();
    }
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size;) {
        utf8proc_int32_t cp;
        const utf8proc_ssize_t k = utf8proc_iterate(data + i, (utf8proc_ssize_t)(size - i), &cp);
        if (k <= 0)
            return 0;
        i += (size_t)k;
    }
    check_gpt2((const char *)data, size);
    check_nfc((const char *)data, size);
    return 0;
}
