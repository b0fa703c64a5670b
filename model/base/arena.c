/*
 * arena.c - see arena.h.
 */
#include "model/base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ALIGN 16
#define HEAP_BLOCK 65536

struct arena_block {
    struct arena_block *next;
    size_t used, cap, last;
    max_align_t data[];
};

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

int arena_reserve(arena *a, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t cap = round_up(bytes ? bytes : 1, page);
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    *a = (arena){.base = p, .cap = cap};
    return 0;
}

static void free_blocks(arena *a)
{
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

void arena_release(arena *a)
{
    if (a->base)
        munmap(a->base, a->cap);
    free_blocks(a);
    *a = (arena){0};
}

void arena_reset(arena *a, size_t keep)
{
    if (!a->base) {
        free_blocks(a);
        return;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (keep < a->used && round_up(keep, page) < a->used) {
        keep = round_up(keep, page);
        (void)madvise(a->base + keep, round_up(a->used, page) - keep, MADV_DONTNEED);
    }
    a->used = a->last = 0;
    a->full = 0;
}

void arena_rewind(arena *a, size_t mark)
{
    if (!a->base || mark > a->used)
        return;
    a->used = a->last = mark;
    a->full = 0;
}

/* Heap arena: room for n bytes in the newest block (a new block when it lacks it). */
static struct arena_block *heap_block(arena *a, size_t n)
{
    struct arena_block *b = a->head;
    if (b && b->cap - b->used >= n)
        return b;
    size_t cap = n > HEAP_BLOCK ? n : HEAP_BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b)
        return NULL;
    *b = (struct arena_block){.next = a->head, .cap = cap};
    a->head = b;
    return b;
}

/* n bytes, not zeroed. */
static void *take(arena *a, size_t n)
{
    n = round_up(n ? n : 1, ALIGN);
    if (a->base) {
        if (a->cap - a->used < n) {
            a->full = 1;
            return NULL;
        }
        a->last = a->used;
        a->used += n;
        if (a->used > a->peak)
            a->peak = a->used;
        return a->base + a->last;
    }
    struct arena_block *b = heap_block(a, n);
    if (!b)
        return NULL;
    b->last = b->used;
    b->used += n;
    return (char *)b->data + b->last;
}

void *arena_alloc(arena *a, size_t n)
{
    void *p = take(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

/* Grows the latest allocation p to n bytes in place; 0 when done. */
static int grow_in_place(arena *a, void *p, size_t n)
{
    n = round_up(n ? n : 1, ALIGN);
    if (a->base) {
        if ((char *)p != a->base + a->last || a->cap - a->last < n)
            return -1;
        a->used = a->last + n;
        if (a->used > a->peak)
            a->peak = a->used;
        return 0;
    }
    struct arena_block *b = a->head;
    if (!b || (char *)p != (char *)b->data + b->last || b->cap - b->last < n)
        return -1;
    b->used = b->last + n;
    return 0;
}

void *arena_grow(arena *a, void *p, size_t old, size_t n)
{
    if (p && grow_in_place(a, p, n) == 0)
        return p;
    void *q = take(a, n);
    if (q && p)
        memcpy(q, p, old < n ? old : n);
    return q;
}
