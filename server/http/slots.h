/*
 * slots.h - the request slots: all the memory a request uses, reserved at
 * start-up.
 *
 * A slot is one reserved arena (model/base/arena.h) that holds everything of
 * one HTTP request: its connection state, its body, the parsed request and
 * rows, the scheduler's job, the logits and the response bytes, which
 * libmicrohttpd sends from there without a copy. A request takes a slot when
 * its head arrives and the slot is reset and put back when nothing refers to
 * it any more: the connection has finished with the request (the request-
 * completed callback) and, for a decision, the scheduler has dropped the job
 * (which can be later, when the client left while its rows were queued).
 * So the serving path calls no allocator of ours.
 *
 * Bound: max_connections + max_queue slots. A connection holds at most one
 * slot at a time, and a slot outlives its connection only while the
 * scheduler still holds the job of a client that left: at most max_queue
 * queued jobs plus the few in the batches in flight. When the pool is empty
 * anyway, the request is answered 503 with Retry-After (http.c), never
 * blocked. Size of a slot: SLOT_FIXED_BYTES + SLOT_BODY_FACTOR * max_body_bytes
 * of address space (MAP_NORESERVE: only touched pages cost memory; a request
 * needing more is a 413, request.c). Pages past SLOT_KEEP_BYTES that a large
 * request touched are given back to the kernel when its slot is put back.
 */
#ifndef LAYAD_SERVER_SLOTS_H
#define LAYAD_SERVER_SLOTS_H

#include <stdatomic.h>
#include <stddef.h>

#include "model/base/arena.h"
#include "model/base/error.h"

#define SLOT_FIXED_BYTES ((size_t)64 << 20) /* rows, heads, logits and tokenizer buffers of small bodies */
#define SLOT_BODY_FACTOR 96                 /* parse tree, serialized states, tokenizer buffers per body byte */
#define SLOT_KEEP_BYTES ((size_t)8 << 20)   /* resident pages a slot keeps between requests */

typedef struct slot_pool slot_pool;

typedef struct req_slot {
    arena a;               /* the request's memory; reset when the slot is put back */
    struct req_slot *next; /* free list */
    _Atomic int refs;      /* the connection's, plus the job's while it lives */
    slot_pool *pool;
} req_slot;

/* n slots of SLOT_FIXED_BYTES + SLOT_BODY_FACTOR * max_body_bytes each. NULL with err. */
slot_pool *slots_create(int n, size_t max_body_bytes, layad_error *err);
void slots_destroy(slot_pool *p);

/* A free slot (refs 1, its arena empty), or NULL when every slot is in use. */
req_slot *slot_get(slot_pool *p);
void slot_ref(req_slot *s);
/* Drops a reference; the last one resets the arena and puts the slot back.
 * Takes void * to serve as a serve_job release hook. */
void slot_unref(void *s);

#endif
