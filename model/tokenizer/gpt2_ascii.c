/*
 * gpt2_ascii.c - the GPT-2 pre-tokenizer pattern's matches in ASCII text,
 * without the regex engine.
 *
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * Why: on a request's state, PCRE2's JIT match cost ~400 instructions a word
 * (most of the state's encode once the text and word caches hold the rest),
 * nearly all of it the call and its setup, not the matching. In ASCII the
 * classes are fixed (\s: tab, LF, VT, FF, CR, space, as pretok.c spells White_Space;
 * \p{L}: A-Z a-z; \p{N}: 0-9; anything else, control characters and DEL
 * included, is "other"), every position starts a match, so the matches tile the
 * text, and the leftmost-first alternation reduces to the rules below. Text with
 * any byte >= 0x80 still goes to PCRE2 (pretok.c). tests/test_tokenizer.c checks
 * this against the compiled pattern on random text from the classes' edges.
 */
#include "model/tokenizer/internal.h"

enum { C_OTHER = 0, C_LETTER = 1, C_DIGIT = 2, C_SPACE = 3 };

static int cls(unsigned char c)
{
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
        return C_LETTER;
    if (c >= '0' && c <= '9')
        return C_DIGIT;
    if (c == ' ' || (c >= '\t' && c <= '\r'))
        return C_SPACE;
    return C_OTHER;
}

/* The end of the run of class k from i. */
static size_t run_end(const unsigned char *p, size_t n, size_t i, int k)
{
    while (i < n && cls(p[i]) == k)
        i++;
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

size_t tok_gpt2_ascii_match(const char *text, size_t n, size_t pos)
{
    const unsigned char *p = (const unsigned char *)text;
    const int k = cls(p[pos]);
    if (k != C_SPACE) {
        const size_t c = p[pos] == '\'' ? contraction(p, n, pos) : 0;
        return c ? pos + c : run_end(p, n, pos + 1, k);
    }
    /* a space before a non-space joins that character's run: ' ?\p{L}+' and its kin */
    if (p[pos] == ' ' && pos + 1 < n && cls(p[pos + 1]) != C_SPACE)
        return run_end(p, n, pos + 2, cls(p[pos + 1]));
    /* \s+(?!\S): the whitespace run, less its last character when a non-space follows it
     * (that one may join the next word); a single one before a non-space is \s+ alone */
    const size_t e = run_end(p, n, pos + 1, C_SPACE);
    return e == n || e - pos == 1 ? e : e - 1;
}
