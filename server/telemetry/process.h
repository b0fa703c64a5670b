/*
 * process.h - the standard process_* families of Prometheus client libraries
 * (CPU time, resident and virtual memory, open and maximum file descriptors,
 * start time), read from /proc/self at each scrape.
 *
 * Only /proc/self is read: under the unit's ProcSubset=pid the rest of /proc
 * (/proc/stat and its boot time among it) is hidden, so the start time is
 * derived from the clocks instead (process_start_time below).
 */
#ifndef LAYAD_SERVER_PROCESS_H
#define LAYAD_SERVER_PROCESS_H

#include <stdio.h>

/* This process's start as Unix time in seconds: its start in clock ticks after
 * boot (/proc/self/stat) plus the boot time (CLOCK_REALTIME - CLOCK_BOOTTIME).
 * Call once and keep the value: the clock difference moves by microseconds
 * between calls, and a start time that changes looks like a restart. Returns
 * -1 when /proc/self/stat cannot be read. */
double process_start_time(void);

/* Appends the process_* families to f; start_time from process_start_time
 * (left out when < 0). A family whose source cannot be read is left out. */
void process_render(FILE *f, double start_time);

#endif
