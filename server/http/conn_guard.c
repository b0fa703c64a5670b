/*
 * conn_guard.c - see conn_guard.h.
 *
 * One mutex over a fixed table: every operation is a few stores, and the two
 * scans (the reaper's, a few times a second, and the eviction's, only at the
 * high-water mark) walk at most max_connections slots.
 */
#include "server/http/conn_guard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "server/telemetry/log.h"

enum { PH_FREE, PH_HEAD, PH_BODY, PH_BUSY, PH_CLOSING };

struct guard_conn {
    conn_guard *g;
    int fd;
    int phase;
    int served;     /* responses sent on this connection */
    int reason;     /* enum guard_reason */
    double since;   /* start of the phase, monotonic seconds */
    int next_free;  /* free list link (slot index, -1 ends) */
};

struct conn_guard {
    pthread_mutex_t lock;
    pthread_cond_t wake;  /* signals the reaper to stop */
    pthread_t reaper;
    int stop;
    guard_conn *slot;     /* n_slots entries, owned */
    int n_slots, free_head;
    int open, closing;    /* connections held; of those, shut down and not yet freed */
    int high_water;
    double header_s, body_s;
    long closed[4];       /* by reason since the last summary line */
    double last_summary;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Closes c's connection for reason (lock held): MHD reads end-of-file and frees it. */
static void cut(conn_guard *g, guard_conn *c, int reason)
{
    if (reason == GUARD_BODY_LATE) { /* MHD has queued nothing yet in BODY: the socket is ours to write */
        static const char body[] = "{\"error\": {\"message\": \"request body not received within "
                                   "body_timeout_s\", \"field\": null}, \"detail\": \"request body not "
                                   "received within body_timeout_s\"}";
        char r[320];
        int n = snprintf(r, sizeof r, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: "
                         "application/json\r\nContent-Length: %zu\r\n\r\n%s", sizeof body - 1, body);
        if (n > 0 && (size_t)n < sizeof r)
            (void)!send(c->fd, r, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    shutdown(c->fd, SHUT_RDWR);
    c->phase = PH_CLOSING;
    c->reason = reason;
    g->closing++;
    g->closed[reason]++;
}

/* One reaper pass (lock held): HEAD and BODY connections past their deadline. */
static void reap(conn_guard *g, double t)
{
    for (int i = 0; i < g->n_slots; i++) {
        guard_conn *c = &g->slot[i];
        if (c->phase == PH_HEAD && t - c->since > g->header_s)
            cut(g, c, GUARD_HEAD_LATE);
        else if (c->phase == PH_BODY && t - c->since > g->body_s)
            cut(g, c, GUARD_BODY_LATE);
    }
    if (t - g->last_summary >= 10.0) {
        if (g->closed[GUARD_HEAD_LATE] || g->closed[GUARD_BODY_LATE] || g->closed[GUARD_EVICTED])
            log_msg("warn", "closed %ld connection(s) without a request head within header_timeout_s, %ld without "
                    "their body within body_timeout_s and %ld idle one(s) to free slots (%d open) in the last %.0f s",
                    g->closed[GUARD_HEAD_LATE], g->closed[GUARD_BODY_LATE], g->closed[GUARD_EVICTED], g->open,
                    t - g->last_summary);
        g->closed[GUARD_HEAD_LATE] = g->closed[GUARD_BODY_LATE] = g->closed[GUARD_EVICTED] = 0;
        g->last_summary = t;
    }
}

static void *reaper_main(void *arg)
{
    conn_guard *g = arg;
    double tick = (g->header_s < g->body_s ? g->header_s : g->body_s) / 10;
    tick = tick < 0.02 ? 0.02 : tick > 0.25 ? 0.25 : tick;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long long ns = ts.tv_nsec + (long long)(tick * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        if (!g->stop)
            reap(g, now_s());
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

conn_guard *guard_create(int max_conns, double header_s, double body_s, layad_error *err)
{
    conn_guard *g = calloc(1, sizeof *g);
    pthread_condattr_t ca;
    int have_lock = 0, have_cond = 0;
    if (!g || !(g->slot = calloc((size_t)max_conns, sizeof *g->slot)))
        goto fail;
    if (pthread_mutex_init(&g->lock, NULL))
        goto fail;
    have_lock = 1;
    if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
        pthread_cond_init(&g->wake, &ca))
        goto fail;
    have_cond = 1;
    g->n_slots = max_conns;
    for (int i = 0; i < max_conns; i++)
        g->slot[i].next_free = i + 1 < max_conns ? i + 1 : -1;
    g->free_head = 0;
    g->high_water = max_conns - max_conns / 8;
    g->header_s = header_s;
    g->body_s = body_s;
    g->last_summary = now_s();
    if (pthread_create(&g->reaper, NULL, reaper_main, g))
        goto fail;
    return g;
fail:
    if (have_cond)
        pthread_cond_destroy(&g->wake);
    if (have_lock)
        pthread_mutex_destroy(&g->lock);
    if (g)
        free(g->slot);
    free(g);
    layad_fail(err, 500, "connection guard: out of memory or threads");
    return NULL;
}

void guard_destroy(conn_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->reaper, NULL);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g->slot);
    free(g);
}

/* The HEAD connection to close for room (lock held): idle keep-alive ones
 * (served > 0) before never-served ones, the longest-waiting first; or NULL. */
static guard_conn *eviction_victim(conn_guard *g)
{
    guard_conn *best = NULL;
    for (int i = 0; i < g->n_slots; i++) {
        guard_conn *c = &g->slot[i];
        if (c->phase != PH_HEAD)
            continue;
        if (!best || (c->served > 0) > (best->served > 0) ||
            ((c->served > 0) == (best->served > 0) && c->since < best->since))
            best = c;
    }
    return best;
}

guard_conn *guard_open(conn_guard *g, int fd)
{
    pthread_mutex_lock(&g->lock);
    guard_conn *c = NULL;
    if (g->free_head >= 0) {
        c = &g->slot[g->free_head];
        g->free_head = c->next_free;
        *c = (guard_conn){.g = g, .fd = fd, .phase = PH_HEAD, .since = now_s(), .next_free = -1};
        g->open++;
        guard_conn *v;
        while (g->open - g->closing >= g->high_water && (v = eviction_victim(g)) && v != c)
            cut(g, v, GUARD_EVICTED);
    }
    pthread_mutex_unlock(&g->lock);
    return c;
}

void guard_close(guard_conn *c)
{
    if (!c)
        return;
    conn_guard *g = c->g;
    pthread_mutex_lock(&g->lock);
    if (c->phase == PH_CLOSING)
        g->closing--;
    c->phase = PH_FREE;
    c->fd = -1;
    c->next_free = g->free_head;
    g->free_head = (int)(c - g->slot);
    g->open--;
    pthread_mutex_unlock(&g->lock);
}

/* Moves c to phase (unless the guard is closing it). */
static void set_phase(guard_conn *c, int phase, int served)
{
    if (!c)
        return;
    conn_guard *g = c->g;
    pthread_mutex_lock(&g->lock);
    if (c->phase != PH_CLOSING && c->phase != PH_FREE) {
        c->phase = phase;
        c->since = now_s();
        c->served += served;
    }
    pthread_mutex_unlock(&g->lock);
}

void guard_head_in(guard_conn *c)
{
    set_phase(c, PH_BODY, 0);
}

void guard_busy(guard_conn *c)
{
    set_phase(c, PH_BUSY, 0);
}

void guard_request_done(guard_conn *c)
{
    set_phase(c, PH_HEAD, 1);
}

int guard_reason_of(const guard_conn *c)
{
    if (!c)
        return GUARD_OPEN;
    pthread_mutex_lock(&c->g->lock);
    int r = c->reason;
    pthread_mutex_unlock(&c->g->lock);
    return r;
}
