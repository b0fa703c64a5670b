/*
 * clock.h - seconds on the monotonic clock, for durations measured across
 * threads (the serving path's stage times, warm-up, deadlines).
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

#endif
