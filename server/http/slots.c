/*
 * slots.c - see slots.h. One mutex guards the free list: a get and a put per
 * request, a few instructions each under the lock.
 */
#include "server/http/slots.h"

#include <pthread.h>
#include <stdlib.h>

struct slot_pool {
    pthread_mutex_t lock;
    req_slot *free;       /* LIFO: the slot used last (its pages still resident) goes first */
    req_slot *slot;
    int n;
};

slot_pool *slots_create(int n, size_t max_body_bytes, layad_error *err)
{
    slot_pool *p = calloc(1, sizeof *p);
    size_t bytes = SLOT_FIXED_BYTES + SLOT_BODY_FACTOR * max_body_bytes;
    if (!p || !(p->slot = calloc((size_t)n, sizeof *p->slot)) || pthread_mutex_init(&p->lock, NULL)) {
        if (p)
            free(p->slot);
        free(p);
        layad_fail(err, 500, "request slots: out of memory");
        return NULL;
    }
    for (p->n = 0; p->n < n; p->n++) {
        req_slot *s = &p->slot[p->n];
        if (arena_reserve(&s->a, bytes)) {
            layad_fail(err, 500, "request slots: cannot reserve %d x %zu MiB of address space; lower "
                                 "max_connections, max_queue or max_body_bytes", n, bytes >> 20);
            slots_destroy(p);
            return NULL;
        }
        s->pool = p;
        s->next = p->free;
        p->free = s;
    }
    return p;
}

void slots_destroy(slot_pool *p)
{
    if (!p)
        return;
    int n_free = 0;
    for (req_slot *s = p->free; s; s = s->next)
        n_free++;
    if (n_free != p->n)
        return; /* a job still holds a slot at exit: left to the process's end, not unmapped under it */
    for (int i = 0; i < p->n; i++)
        arena_release(&p->slot[i].a);
    pthread_mutex_destroy(&p->lock);
    free(p->slot);
    free(p);
}

req_slot *slot_get(slot_pool *p)
{
    pthread_mutex_lock(&p->lock);
    req_slot *s = p->free;
    if (s)
        p->free = s->next;
    pthread_mutex_unlock(&p->lock);
    if (s)
        atomic_store(&s->refs, 1);
    return s;
}

void slot_ref(req_slot *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void slot_unref(void *ctx)
{
    req_slot *s = ctx;
    if (atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    arena_reset(&s->a, SLOT_KEEP_BYTES);
    slot_pool *p = s->pool;
    pthread_mutex_lock(&p->lock);
    s->next = p->free;
    p->free = s;
    pthread_mutex_unlock(&p->lock);
}
