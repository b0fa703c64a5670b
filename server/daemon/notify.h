/*
 * notify.h - the systemd service protocol (sd_notify), for Type=notify units.
 *
 * All calls are no-ops when NOTIFY_SOCKET is unset (not started by systemd),
 * and failures are logged, never fatal: a daemon must not stop serving
 * because its supervisor's socket went away.
 */
#ifndef LAYAD_SERVER_NOTIFY_H
#define LAYAD_SERVER_NOTIFY_H

#include <stdint.h>

void notify_ready(const char *status);   /* READY=1 + STATUS= + MAINPID= */
void notify_stopping(const char *status); /* STOPPING=1 + STATUS= */
void notify_status(const char *status);
void notify_watchdog(void);               /* WATCHDOG=1 */

/* The ping interval systemd asks for (half of WatchdogSec), in microseconds;
 * 0 when the watchdog is off. */
uint64_t notify_watchdog_interval_us(void);

#endif
