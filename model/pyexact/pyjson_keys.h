/*
 * pyjson_keys.h - the duplicate-key index pyjson_parse.c builds for each
 * object it parses (not part of the pyjson API; see pyjson_keys.c for why it
 * is a keyed hash).
 */
#ifndef LAYAD_PYJSON_KEYS_H
#define LAYAD_PYJSON_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "model/base/error.h"
#include "model/pyexact/pyjson.h"

/* The SipHash key of one parse, shared by all its objects: drawn when the first object passes
 * PJ_LINEAR_KEYS members. Zero-initialize it at the start of a parse. */
typedef struct pj_hash_key {
    uint64_t k[2];
    int keyed;
} pj_hash_key;

/* One slot of an object's member index: the member's position + 1 (0: empty) and 32 bits of
 * its key's hash. */
typedef struct pj_key_slot {
    uint32_t hash, at;
} pj_key_slot;

/* An object's member index. Zero-initialize it per object; it lives in the parse's arena. */
typedef struct pj_key_index {
    pj_key_slot *slot; /* in the arena; NULL until the object passes PJ_LINEAR_KEYS members */
    size_t cap;        /* power of two */
} pj_key_index;

/* Position of key among m[0..n) (the members so far, keys distinct), or n when it is new; a
 * new key is entered in the index at position n, where the caller appends it. Small objects
 * are scanned; past PJ_LINEAR_KEYS members the index is built (drawing hk's key if not yet
 * drawn) in a and doubled whenever it would be more than 3/4 full. 0, or -1 with err set: 500 out
 * of memory, 400 past 2^32 - 2 members. */
int pj_key_find(arena *a, pj_key_index *ix, pj_hash_key *hk, const pj_member *m, size_t n, const char *key,
                size_t keylen, size_t *pos, layad_error *err);

#endif
