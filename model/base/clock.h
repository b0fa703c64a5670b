/*
 * clock.h - seconds on the monotonic clock, for durations measured across
 * threads (the serving path's stage times, warm-up, deadlines), and the pause
 * a polling thread spins on.
 */
#ifndef LAYAD_CLOCK_H
#define LAYAD_CLOCK_H

#include <time.h>

static inline double layad_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One step of a polling loop: yields the core's pipeline to its sibling
 * hyperthread and keeps the loop from flooding the memory system. */
static inline void layad_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#endif
