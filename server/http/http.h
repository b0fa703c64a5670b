/*
 * http.h - the HTTP front: libmicrohttpd, a thread pool on epoll, with
 * connection suspend/resume while a request waits for its batch.
 *
 * What it enforces before a route ever runs: deadlines for the request head
 * and body, a per-address connection cap and room for new connections under
 * pressure (conn_guard.h); sound framing (HTTP/1.1 needs one Host; Content-
 * Length with Transfer-Encoding, or two Content-Lengths: 400 and the
 * connection closed); the body cap while the body
 * streams in (a declared Content-Length over the cap is refused before
 * reading; a chunked or lying body is cut off the moment it crosses the cap,
 * with a 413 written on the socket and the connection closed), the bearer
 * key (constant-time compare), 404/405. It adds X-Request-Id (echoed when
 * the client sent a sane one, generated otherwise) and, for the decide
 * endpoints, Server-Timing; it writes the per-request log line and the
 * request metrics when MHD reports the request complete.
 */
#ifndef LAYAD_SERVER_HTTP_H
#define LAYAD_SERVER_HTTP_H

#include "model/base/error.h"
#include "server/daemon/app.h"

typedef struct http_server http_server;

/* Binds cfg->bind:cfg->port (SO_REUSEPORT only with cfg->reuse_port, so a
 * second daemon on the port fails with "address already in use") and starts
 * the thread pool. The app may still be loading (readiness and the decide
 * endpoints answer 503 then). */
http_server *http_start(serve_app *app, layad_error *err);

/* The bound port (useful with port 0). */
int http_port(const http_server *h);

/* Waits up to timeout_s for every decided response to be handed to MHD and
 * sent (responses_pending == 0). Returns 0 when all went out. */
int http_wait_idle(http_server *h, double timeout_s);

/* Waits until no request has started for quiet_s (at most max_s): lets
 * clients that were already talking to us at shutdown get their 503 instead
 * of a reset. */
void http_wait_quiet(http_server *h, double quiet_s, double max_s);

/* Stops accepting connections (new ones are refused by the kernel); the open
 * ones are served on. */
void http_quiesce(http_server *h);

/* Waits up to timeout_s until every request begun has been answered and
 * completed (app->requests_open == 0) and every connection has closed, or the
 * ones left have been idle for 0.3 s. Returns 0 then, -1 on timeout. */
int http_wait_answered(http_server *h, double timeout_s);

/* Closes every connection; a request still open is counted in
 * app->requests_dropped. */
void http_stop(http_server *h);

/* Constant-time equality of a presented key and the configured one. */
int http_key_equal(const char *given, size_t given_len, const char *key, size_t key_len);

#endif
