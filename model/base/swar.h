/*
 * swar.h - eight bytes of text tested at once in a 64-bit word: the scans of a
 * request's bytes (the JSON parser's plain runs, the tokenizer's search for
 * added tokens) test a word where they tested every byte.
 *
 * Each test returns a mask with the high bit of a byte set where the byte
 * matches. Borrows of the subtraction can also set it in a byte above a match,
 * never below one, so a mask is zero exactly when no byte matches, and its
 * lowest set byte is the first match (swar_first).
 */
#ifndef LAYAD_SWAR_H
#define LAYAD_SWAR_H

#include <stdint.h>
#include <string.h>

#define SWAR_ONES 0x0101010101010101ull
#define SWAR_HIGHS 0x8080808080808080ull

static inline uint64_t swar_load(const void *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* The bytes of w equal to c. */
static inline uint64_t swar_eq(uint64_t w, unsigned char c)
{
    const uint64_t x = w ^ (SWAR_ONES * c);
    return (x - SWAR_ONES) & ~x & SWAR_HIGHS;
}

/* The bytes of w below n (n <= 0x80), and those at or above 0x80. */
static inline uint64_t swar_lt_or_high(uint64_t w, unsigned char n)
{
    return (((w - SWAR_ONES * n) & ~w) | w) & SWAR_HIGHS;
}

/* How many bytes of the loaded text come before the first one a non-zero mask flags:
 * the lowest byte of the word is the first byte of the text on a little-endian machine. */
static inline unsigned swar_first(uint64_t mask)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (unsigned)__builtin_ctzll(mask) >> 3;
#else
    (void)mask;
    return 0; /* the callers then look at the bytes one by one from the word's first */
#endif
}

#endif
