/*
 * gpt2_regex.h - the GPT-2 pre-tokenizer pattern compiled by PCRE2, as the
 * tokenizer ran it before gpt2_match.c: the oracle that matcher is tested against.
 */
#ifndef LAYAD_TESTS_GPT2_REGEX_H
#define LAYAD_TESTS_GPT2_REGEX_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>

/* The pattern with \s spelled out as White_Space, in UTF + UCP mode; with extra, its
 * letter and number classes include the generated tok_extra_letter / tok_extra_number
 * ranges (HF's newer Unicode tables). NULL on failure, with a message on stderr. */
pcre2_code *gpt2_regex(bool extra);

#endif
