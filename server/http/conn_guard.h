/*
 * conn_guard.h - deadlines for the parts of a connection's life that the
 * client controls, and room for new connections when the slots run out.
 *
 * libmicrohttpd's connection timeout is an idle timeout: a client that sends
 * one header byte every few seconds never trips it, and ~1000 such clients
 * hold every slot (slowloris). MHD calls the application only once the head
 * is complete, so the application cannot see such a client at all. The guard
 * sees every connection through MHD's connection notifications and puts each
 * in one phase:
 *
 *   HEAD  opened, or its previous response sent: the next request head must
 *         be complete within header_s (so this is also the keep-alive idle
 *         limit);
 *   BODY  head in: the whole body must be in within body_s;
 *   BUSY  request complete (queued, running, or its response being sent):
 *         no guard deadline; the scheduler's request deadline and MHD's idle
 *         timeout apply.
 *
 * A reaper thread closes HEAD and BODY connections past their deadline (a
 * BODY one gets a 408 first). When a new connection takes the open count to
 * the high-water mark (seven eighths of the slots), the connection that has
 * waited longest in HEAD is closed, idle keep-alive ones before those that
 * never finished a request: waiting for a head is the one phase in which a
 * connection holds a slot without owing or being owed work, so slots stay
 * free for new clients (and /healthz) under any number of slow ones.
 *
 * Closing is shutdown(2) on MHD's socket; MHD then sees end-of-file and
 * frees the connection itself. The fd is never closed or reused while the
 * guard holds it: guard_close runs in MHD's close notification, before MHD
 * closes the fd, under the same lock as every shutdown.
 *
 * Rejected: a second listener for /healthz (a second port for every probe
 * and unit to know; with the guard the main listener keeps free slots), and
 * counting bytes per second (MHD hides the head's bytes from us; a deadline
 * for the whole head bounds what a slow head can hold just as well).
 */
#ifndef LAYAD_SERVER_CONN_GUARD_H
#define LAYAD_SERVER_CONN_GUARD_H

#include "model/base/error.h"

typedef struct conn_guard conn_guard;
typedef struct guard_conn guard_conn;

enum guard_reason { GUARD_OPEN = 0, GUARD_HEAD_LATE, GUARD_BODY_LATE, GUARD_EVICTED };

/* A table of max_conns connections (allocated here, once) and the reaper
 * thread. header_s / body_s: the HEAD and BODY deadlines, seconds. */
conn_guard *guard_create(int max_conns, double header_s, double body_s, layad_error *err);

/* Stops the reaper and frees the table; call after MHD has closed every connection. */
void guard_destroy(conn_guard *g);

/* A new connection on socket fd, in HEAD: its slot, or NULL when the table is
 * full (the caller then closes the connection). May close the longest-waiting
 * HEAD connection (see the file comment). */
guard_conn *guard_open(conn_guard *g, int fd);

/* MHD is about to close c's socket: frees the slot. NULL is ignored. */
void guard_close(guard_conn *c);

/* Phase changes (NULL is ignored): a request head arrived (BODY); the request
 * is complete or answered (BUSY); its response went out (HEAD again). */
void guard_head_in(guard_conn *c);
void guard_busy(guard_conn *c);
void guard_request_done(guard_conn *c);

/* Why the guard closed c (enum guard_reason; GUARD_OPEN when it did not, or c is NULL). */
int guard_reason_of(const guard_conn *c);

#endif
