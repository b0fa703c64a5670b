/*
 * unicode_oracle.h - what the tokenizer's Unicode shortcuts are tested against
 * (tests/test_tokenizer_unicode.c, tests/fuzz_tokenizer_unicode.c): the GPT-2
 * pre-tokenizer pattern compiled by PCRE2, as the tokenizer ran it before
 * gpt2_match.c, and utf8proc's NFC of a whole text, as the normalizer ran it before
 * it cut text at quick code points.
 */
#ifndef LAYAD_TESTS_UNICODE_ORACLE_H
#define LAYAD_TESTS_UNICODE_ORACLE_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

/* The pattern with \s spelled out as White_Space, in UTF + UCP mode; with extra, its
 * letter and number classes include the generated tok_extra_letter / tok_extra_number
 * ranges (HF's newer Unicode tables). NULL on failure, with a message on stderr. */
pcre2_code *gpt2_regex(bool extra);

/* From every match start in text[0..n), tok_gpt2_match ends where re's match from there
 * does, and that match starts there: the number of matches, or -1 with the first
 * disagreement described in why (capacity why_n). */
long gpt2_same_matches(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t n, char *why,
                       size_t why_n);

/* utf8proc's NFC of the valid UTF-8 p[0..n) into out (room for 3 n + 4 bytes), split at the
 * code points HF's Unicode 9.0 tables lack and at U+11A7 (utf8proc before 2.11 deletes it
 * after a Hangul LV syllable, JuliaStrings/utf8proc#317), which are copied as they are: the
 * normalizer's whole-text algorithm, less that defect. Its length, or (size_t)-1 when
 * utf8proc fails. */
size_t nfc_whole(const char *p, size_t n, char *out);

#endif
