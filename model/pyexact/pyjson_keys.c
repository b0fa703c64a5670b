/*
 * pyjson_keys.c - duplicate keys of a JSON object, found in linear time.
 *
 * json.loads keeps a repeated key at its first position with its last value,
 * so each new key is looked up among the members so far. Objects of up to
 * PJ_LINEAR_KEYS members are scanned; past that a hash index is built, so
 * parsing stays linear in the body: a scan per key made a 2 MB state of 120k
 * keys cost 11 s of CPU here (27.8 s where it was first reported); with the
 * index it parses in ~20 ms, and the most keys 2 MiB holds (262k) in ~45 ms
 * (tests/test_pyjson.c prints the times).
 * The hash is SipHash-1-3, keyed per parse from getrandom(), as CPython
 * hashes str for its dicts: with a fixed, unkeyed hash a client could send
 * keys that all collide and have the quadratic scan back. Sorting the keys
 * instead was rejected: O(n log n) and a second pass.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "model/pyexact/pyjson_keys.h"

#define PJ_LINEAR_KEYS 16 /* objects up to this many members are scanned for duplicates */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                    \
    do {                                                                                            \
        v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                                   \
        v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                                      \
        v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                                      \
        v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                                   \
    } while (0)

/* SipHash-1-3 of s[0..n) under key k (CPython's str hash). */
static uint64_t siphash13(const uint64_t k[2], const unsigned char *s, size_t n)
{
    uint64_t v0 = k[0] ^ 0x736f6d6570736575ULL, v1 = k[1] ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k[0] ^ 0x6c7967656e657261ULL, v3 = k[1] ^ 0x7465646279746573ULL;
    uint64_t b = (uint64_t)n << 56;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t m = 0;
        for (int i = 0; i < 8; i++)
            m |= (uint64_t)s[i] << (8 * i);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t i = 0; i < n; i++)
        b |= (uint64_t)s[i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* Draws the parse's hash key: getrandom() (never blocking), else the clock and an address
 * (still unknown to a client, if weaker). */
static void draw_hash_key(pj_hash_key *hk)
{
    if (getrandom(hk->k, sizeof hk->k, GRND_NONBLOCK) != (ssize_t)sizeof hk->k) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        hk->k[0] = ((uint64_t)t.tv_sec << 32) ^ (uint64_t)t.tv_nsec;
        hk->k[1] = (uint64_t)(uintptr_t)hk ^ ((uint64_t)(uintptr_t)&t << 17);
    }
    hk->keyed = 1;
}

/* The index is open addressing with linear probing, at most 3/4 full (half full was 45%
 * slower on 2 MiB of 3-byte keys: twice the table, twice the cache misses). */
static void index_put(pj_key_index *ix, uint32_t hash, uint32_t at)
{
    size_t j = hash & (ix->cap - 1);
    while (ix->slot[j].at)
        j = (j + 1) & (ix->cap - 1);
    ix->slot[j] = (pj_key_slot){hash, at};
}

/* Makes room in ix for member n + 1: builds the index from m[0..n) on first use, doubles it
 * when it would pass 3/4 full. 0, or -1 (500) out of memory with ix unchanged. */
static int index_reserve(arena *a, pj_key_index *ix, const pj_hash_key *hk, const pj_member *m, size_t n,
                         layad_error *err)
{
    if (4 * (n + 1) <= 3 * ix->cap)
        return 0;
    pj_key_index grown = {.cap = ix->cap ? 2 * ix->cap : 4 * PJ_LINEAR_KEYS};
    grown.slot = arena_alloc(a, grown.cap * sizeof *grown.slot);
    if (!grown.slot)
        return layad_fail(err, 500, "out of memory parsing the request");
    if (ix->slot) {
        for (size_t j = 0; j < ix->cap; j++)
            if (ix->slot[j].at)
                index_put(&grown, ix->slot[j].hash, ix->slot[j].at);
    } else {
        for (size_t i = 0; i < n; i++)
            index_put(&grown, (uint32_t)siphash13(hk->k, (const unsigned char *)m[i].key, m[i].keylen),
                      (uint32_t)i + 1);
    }
    *ix = grown; /* the old table stays in the arena until the request ends */
    return 0;
}

int pj_key_find(arena *a, pj_key_index *ix, pj_hash_key *hk, const pj_member *m, size_t n, const char *key,
                size_t keylen, size_t *pos, layad_error *err)
{
    *pos = n;
    if (n < PJ_LINEAR_KEYS) {
        size_t i;
        for (i = 0; i < n; i++)
            if (m[i].keylen == keylen && !memcmp(m[i].key, key, keylen))
                break;
        *pos = i;
        return 0;
    }
    if (n >= UINT32_MAX - 1)
        return layad_fail(err, 400, "request body has an object with more than %u keys", UINT32_MAX - 2);
    if (!hk->keyed)
        draw_hash_key(hk);
    if (index_reserve(a, ix, hk, m, n, err))
        return -1;
    uint32_t hash = (uint32_t)siphash13(hk->k, (const unsigned char *)key, keylen);
    for (size_t j = hash & (ix->cap - 1);; j = (j + 1) & (ix->cap - 1)) {
        pj_key_slot *sl = &ix->slot[j];
        if (!sl->at) {
            *sl = (pj_key_slot){hash, (uint32_t)n + 1};
            *pos = n;
            return 0;
        }
        const pj_member *o = &m[sl->at - 1];
        if (sl->hash == hash && o->keylen == keylen && !memcmp(o->key, key, keylen)) {
            *pos = sl->at - 1;
            return 0;
        }
    }
}
