/*
 * http_internal.h - what http.c (the request handling) uses from head.c
 * (checks on a request head) and listen.c (the listening socket); not part
 * of the HTTP front's API.
 */
#ifndef LAYAD_SERVER_HTTP_INTERNAL_H
#define LAYAD_SERVER_HTTP_INTERNAL_H

#include <microhttpd.h>

#include "model/base/error.h"
#include "server/daemon/app.h"
#include "server/daemon/config.h"

/* 1 when the client's X-Request-Id s is fit to echo (1-64 of [A-Za-z0-9-_.:]), else 0. */
int http_rid_ok(const char *s);

/* 1 when the connection's peer is a loopback address (127.0.0.0/8, ::1, ::ffff:127.x.y.z). */
int http_peer_is_loopback(struct MHD_Connection *c);

/* 1 when the request carries "Authorization: Bearer <app->key>" (spaces around the key
 * trimmed; constant-time compare), else 0. */
int http_auth_ok(const serve_app *app, struct MHD_Connection *c);

/* RFC 9112's framing rules that libmicrohttpd lets through: NULL when the head of the
 * request on c is sound, else the 400 message. Sets *close_after when the connection must
 * be closed after the 400 (its next bytes cannot be trusted to start a request). */
const char *http_framing_error(struct MHD_Connection *c, const char *version, int *close_after);

/* The listening socket on cfg->bind:cfg->port (non-blocking, close-on-exec), or -1 with
 * err set; *ipv6 is set for an IPv6 address. */
int http_open_listener(const serve_config *cfg, int *ipv6, layad_error *err);

#endif
