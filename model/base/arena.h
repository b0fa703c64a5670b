/*
 * arena.h - a bump allocator whose memory is kept between uses.
 *
 * Why: the serving path must not call the allocator per request (a request
 * used to make ~30 malloc/realloc/free calls, and each is a lock, a cache
 * miss and a fragmentation risk on a daemon that runs for months). A request
 * takes everything it needs from one arena, and the arena is reset, not
 * freed, when the request is over.
 *
 * Two kinds, one API:
 *   reserved (arena_reserve): one virtual region mapped once at start-up
 *     (mmap with MAP_NORESERVE, so only the pages a request touches become
 *     resident). Allocation never calls the allocator; a request that needs
 *     more than the region gets NULL, which the callers answer cleanly. The
 *     daemon's request slots are of this kind.
 *   heap (a zero-initialized arena, for tools and tests): malloc'd blocks of
 *     64 KiB (larger for a larger allocation), freed by arena_release.
 *
 * Allocations are 16-byte aligned and zeroed. The latest allocation can grow
 * in place (arena_grow), which is how buffers that grow while they are
 * written (response text, token ids) live in an arena. An arena belongs to
 * one thread at a time.
 */
#ifndef LAYAD_ARENA_H
#define LAYAD_ARENA_H

#include <stddef.h>

typedef struct arena {
    char *base;                 /* reserved region; NULL for a heap arena */
    size_t cap, used;           /* the region's size and bytes handed out */
    size_t last;                /* offset of the latest allocation (in-place growth) */
    size_t peak;                /* the most bytes used since arena_reserve */
    int full;                   /* an allocation found the region full since the last reset */
    struct arena_block *head;   /* heap arena: its blocks, newest first */
} arena;

/* Maps a region of bytes (rounded up to pages) for a. 0, or -1 with errno. */
int arena_reserve(arena *a, size_t bytes);

/* Unmaps the region or frees the blocks; a is then an empty heap arena. */
void arena_release(arena *a);

/* Empties a. A reserved arena keeps its region; resident pages past keep
 * bytes that a large request touched go back to the kernel (madvise), so one
 * huge request does not pin its memory in every slot it ever used. A heap
 * arena frees its blocks. */
void arena_reset(arena *a, size_t keep);

/* Gives back everything allocated after mark (a->used when it was read), clearing `full`:
 * the work of a failed step, so that its error can still be written. Reserved arenas only;
 * a heap arena keeps its blocks until reset. */
void arena_rewind(arena *a, size_t mark);

/* n zeroed bytes, 16-aligned; NULL when the region is full (or out of memory). */
void *arena_alloc(arena *a, size_t n);

/* p (old bytes, from a, or NULL) grown to n bytes: in place when p is the
 * latest allocation and there is room, else copied to a new allocation (the
 * old one stays until reset). The bytes past old are not zeroed. NULL on
 * failure, p then unchanged. */
void *arena_grow(arena *a, void *p, size_t old, size_t n);

#endif
