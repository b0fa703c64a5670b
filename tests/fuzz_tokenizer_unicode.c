/*
 * fuzz_tokenizer_unicode.c - libFuzzer target: the tokenizer's Unicode shortcuts
 * against the libraries they stand in for, on arbitrary valid UTF-8.
 *
 * - the GPT-2 pattern (gpt2_match.c): from every match start, its match ends where
 *   the pattern compiled by PCRE2 with the same classes (tests/lib/gpt2_regex.c)
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
#include "tests/lib/gpt2_regex.h"

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
    for (size_t pos = 0; pos < n;) {
        const size_t end = tok_gpt2_match(p, n, pos);
        const int rc = pcre2_match(re, (PCRE2_SPTR)p, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (rc <= 0 || ov[0] != pos || ov[1] != end || end <= pos || end > n) {
            fprintf(stderr, "gpt2 at %zu: pattern rc %d [%zu, %zu), ours [%zu, %zu)\n", pos, rc,
                    (size_t)ov[0], (size_t)ov[1], pos, end);
            abort();
        }
        pos = end;
    }
}

/* Appends utf8proc's NFC of p[0..n) to out (capacity checked by the caller). */
static size_t nfc_run(const char *p, size_t n, char *out)
{
    if (n == 0)
        return 0;
    utf8proc_uint8_t *r = NULL;
    const utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)p, (utf8proc_ssize_t)n, &r,
                                            UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (m < 0)
        abort();
    memcpy(out, r, (size_t)m);
    free(r);
    return (size_t)m;
}

static void check_nfc(const char *p, size_t n)
{
    char *want = malloc(n * 3 + 4); /* NFC grows UTF-8 by at most 3x */
    if (!want)
        abort();
    size_t o = 0, seg = 0;
    for (size_t i = 0; i < n;) {
        size_t adv;
        const uint32_t cp = tok_utf8_decode(p + i, &adv);
        if (cp == 0x11A7 || tok_in_ranges(tok_norm_inert, tok_norm_inert_N, cp)) {
            o += nfc_run(p + seg, i - seg, want + o);
            memcpy(want + o, p + i, adv);
            o += adv;
            seg = i + adv;
        }
        i += adv;
    }
    o += nfc_run(p + seg, n - seg, want + o);
    const char *got;
    size_t got_n;
    if (tok_normalize(nfc_tok, scratch, p, n, &got, &got_n) != 0 || got_n != o ||
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
