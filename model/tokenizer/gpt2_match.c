/*
 * gpt2_match.c - the GPT-2 pre-tokenizer pattern's matches, without a regex engine.
 *
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * Why: PCRE2's JIT match cost ~400 instructions a word (most of a request's
 * state encode once the text and word caches hold the rest), nearly all of it the
 * call and its setup, not the matching. Every code point falls in exactly one of
 * four classes, so every position starts a match, the matches tile the text, and
 * the leftmost-first alternation reduces to the rules in tok_gpt2_match.
 *
 * The classes are those of the pattern HF runs in Oniguruma (Unicode 16.0):
 * \s is the White_Space set as pretok.c used to spell it out (PCRE2's \s also
 * took U+180E); \p{L} and \p{N} are utf8proc's letter and number categories
 * (Unicode 15.0) widened by the generated tok_extra_letter / tok_extra_number;
 * anything else, marks, controls and NUL included, is "other".
 * tests/test_tokenizer_unicode.c checks the classes of every code point, and
 * random text, against the pattern compiled by PCRE2 with the same widening.
 */
#include "model/tokenizer/internal.h"

#include <utf8proc.h>

enum { C_OTHER = 0, C_LETTER = 1, C_DIGIT = 2, C_SPACE = 3 };

/* The class of each ASCII byte, as a digit: a table lookup where a chain of range compares
 * cost ~16 instructions a letter in run_end, the pre-tokenizer's inner loop. */
static const char ascii_cls[129] = "00000000033333000000000000000000"  /* \t-\r */
                                   "30000000000000002222222222000000"  /* ' ', 0-9 */
                                   "01111111111111111111111111100000"  /* A-Z */
                                   "01111111111111111111111111100000"; /* a-z */

static int cls_ascii(unsigned char c) { return ascii_cls[c] - '0'; }

static bool white_space(uint32_t cp)
{
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static int cls_cp(uint32_t cp)
{
    if (white_space(cp))
        return C_SPACE;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return C_LETTER;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return C_DIGIT;
    default:
        break;
    }
    if (tok_in_ranges(tok_extra_letter, tok_extra_letter_N, cp))
        return C_LETTER;
    return tok_in_ranges(tok_extra_number, tok_extra_number_N, cp) ? C_DIGIT : C_OTHER;
}

/* The class of the code point at p[i]; its length in *adv. Inline: ASCII, nearly every
 * byte of a request, then costs a few compares a byte. */
static inline int cls(const unsigned char *p, size_t i, size_t *adv)
{
    if (p[i] < 0x80) {
        *adv = 1;
        return cls_ascii(p[i]);
    }
    return cls_cp(tok_utf8_decode((const char *)p + i, adv));
}

/* The end of the run of class k from i: ASCII bytes by the table alone, the rest decoded. */
static inline size_t run_end(const unsigned char *p, size_t n, size_t i, int k)
{
    const char kc = (char)('0' + k);
    while (i < n) {
        if (p[i] < 0x80) {
            if (ascii_cls[p[i]] != kc)
                break;
            i++;
            continue;
        }
        size_t adv;
        if (cls_cp(tok_utf8_decode((const char *)p + i, &adv)) != k)
            break;
        i += adv;
    }
    return i;
}

/* 's 't 'm 'd 're 've 'll at i (p[i] == '\''): the contraction's length, else 0. */
static size_t contraction(const unsigned char *p, size_t n, size_t i)
{
    if (i + 1 >= n)
        return 0;
    const unsigned char a = p[i + 1], b = i + 2 < n ? p[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* The start of the code point that ends at p[e] (e > 0). */
static size_t last_start(const unsigned char *p, size_t e)
{
    do
        e--;
    while (e > 0 && (p[e] & 0xC0) == 0x80);
    return e;
}

size_t tok_gpt2_match(const char *text, size_t n, size_t pos)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t adv, adv1;
    const int k = cls(p, pos, &adv);
    if (k != C_SPACE) {
        const size_t c = p[pos] == '\'' ? contraction(p, n, pos) : 0;
        return c ? pos + c : run_end(p, n, pos + adv, k);
    }
    /* a space before a non-space joins that code point's run: ' ?\p{L}+' and its kin */
    if (p[pos] == ' ' && pos + 1 < n) {
        const int k1 = cls(p, pos + 1, &adv1);
        if (k1 != C_SPACE)
            return run_end(p, n, pos + 1 + adv1, k1);
    }
    /* \s+(?!\S): the whitespace run, less its last code point when a non-space follows it
     * (that one may join the next word); a single one before a non-space is \s+ alone */
    const size_t e = run_end(p, n, pos + adv, C_SPACE);
    return e == n || e - pos == adv ? e : last_start(p, e);
}
