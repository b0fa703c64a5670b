/*
 * notify.c - see notify.h. Thin wrappers over libsystemd's sd_notify so that
 * the messages the daemon sends are written down in one place.
 */
#include "server/daemon/notify.h"

#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "server/telemetry/log.h"

static void send_msg(const char *msg)
{
    int rc = sd_notify(0, msg);
    if (rc < 0)
        log_msg("warn", "sd_notify(\"%.64s\") failed: %d", msg, rc);
}

void notify_ready(const char *status)
{
    char m[512];
    snprintf(m, sizeof m, "READY=1\nSTATUS=%.400s\nMAINPID=%ld", status, (long)getpid());
    send_msg(m);
}

void notify_stopping(const char *status)
{
    char m[512];
    snprintf(m, sizeof m, "STOPPING=1\nSTATUS=%.400s", status);
    send_msg(m);
}

void notify_status(const char *status)
{
    char m[512];
    snprintf(m, sizeof m, "STATUS=%.400s", status);
    send_msg(m);
}

void notify_watchdog(void)
{
    send_msg("WATCHDOG=1");
}

uint64_t notify_watchdog_interval_us(void)
{
    uint64_t us = 0;
    if (sd_watchdog_enabled(0, &us) <= 0)
        return 0;
    return us / 2;
}
