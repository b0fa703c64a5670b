/*
 * nfc_quick.c - the code points in front of which NFC can cut text: what comes
 * before such a code point never reorders or composes with what comes after.
 *
 * Why: NFC through utf8proc costs ~100 instructions a byte of the whole piece,
 * and one curly quote or accented letter in an English state sent all of it
 * there (half of a request's parse). Cut at these code points, only the few
 * short chunks around the others need utf8proc; the rest is copied.
 *
 * A code point is "quick" when its canonical combining class is 0 (nothing
 * reorders across it), no full canonical decomposition has it (or the first code
 * point of its own) after its first place (so no composition takes it as a second
 * element), and NFC leaves it alone. Read once from the utf8proc data the
 * normalization itself uses, with the same options, for the Basic Multilingual
 * Plane; every code point above it counts as not quick (its chunk goes to utf8proc,
 * as all text did before).
 */
#include "model/tokenizer/internal.h"

#include <pthread.h>
#include <string.h>
#include <utf8proc.h>

enum { BMP = 0x10000, DECOMP_MAX = 32 };

static uint8_t second[BMP / 8]; /* in some decomposition after its first place */
static uint8_t quick[BMP / 8];
static pthread_once_t quick_once = PTHREAD_ONCE_INIT;

static bool bit(const uint8_t *set, uint32_t cp)
{
    return set[cp >> 3] >> (cp & 7) & 1;
}

static bool surrogate(uint32_t cp)
{
    return cp >= 0xD800 && cp <= 0xDFFF;
}

/* NFC of cp alone, as unicode_norm_append runs it (decompose, order, compose), is cp. */
static bool nfc_keeps(uint32_t cp)
{
    char u[4];
    const size_t len = tok_utf8_encode(cp, u);
    utf8proc_int32_t d[DECOMP_MAX];
    const utf8proc_option_t opt = UTF8PROC_STABLE | UTF8PROC_COMPOSE;
    utf8proc_ssize_t n = utf8proc_decompose((const utf8proc_uint8_t *)u, (utf8proc_ssize_t)len, d,
                                            DECOMP_MAX, opt);
    if (n < 0 || n > DECOMP_MAX)
        return false;
    n = utf8proc_normalize_utf32(d, n, opt);
    return n == 1 && (uint32_t)d[0] == cp;
}

static void quick_init(void)
{
    utf8proc_int32_t d[DECOMP_MAX];
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        int last = 0;
        if (surrogate(cp))
            continue;
        const utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, d, DECOMP_MAX,
                                                           UTF8PROC_DECOMPOSE, &last);
        for (utf8proc_ssize_t j = 1; j < n && j < DECOMP_MAX; j++)
            if ((uint32_t)d[j] < BMP)
                second[d[j] >> 3] |= (uint8_t)(1u << (d[j] & 7));
    }
    for (uint32_t cp = 0; cp < BMP; cp++) {
        int last = 0;
        if (surrogate(cp) || utf8proc_get_property((utf8proc_int32_t)cp)->combining_class != 0)
            continue;
        /* d[0] is cp itself when it does not decompose */
        const utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, d, DECOMP_MAX,
                                                           UTF8PROC_DECOMPOSE, &last);
        if (n < 1 || n > DECOMP_MAX || (uint32_t)d[0] >= BMP || bit(second, (uint32_t)d[0]))
            continue;
        if (nfc_keeps(cp))
            quick[cp >> 3] |= (uint8_t)(1u << (cp & 7));
    }
}

int tok_nfc_quick_init(void)
{
    return pthread_once(&quick_once, quick_init) == 0 ? 0 : -1;
}

bool tok_nfc_quick(uint32_t cp)
{
    return cp < BMP && bit(quick, cp);
}
