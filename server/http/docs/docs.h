/*
 * docs.h - GET /docs: a page to try the API by hand.
 *
 * One self-contained HTML file (server/http/docs/index.html: markup, style and script inline, no
 * CDN, nothing fetched but this daemon's own endpoints) linked into the binary. The page lists the
 * served models (GET /v1/models), lets a person write a state and questions, posts them to
 * /decide and draws each answer's probabilities as bars. tests/test_ops_docs.sh drives it in
 * headless Chromium.
 *
 * When it is served (config `docs`): `auto` serves it unless a bearer key is configured (a
 * keyed daemon faces a network, where a console is something to opt into), `true` always,
 * `false` never. The page itself holds no secret, so it is served without the key; the requests
 * it makes carry the key typed into it.
 */
#ifndef LAYAD_SERVER_HTTP_DOCS_H
#define LAYAD_SERVER_HTTP_DOCS_H

#include <stddef.h>

/* The browser enforces what the page promises: its own inline script and style, requests to this
 * daemon only, nothing loaded from elsewhere, no framing. */
#define DOCS_CSP                                                                                  \
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; " \
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* The page's bytes (static, read-only). */
const char *docs_page(size_t *len);

/* 1 when GET /docs is served: docs_setting is config `docs` (auto, true, false), has_key
 * whether a bearer key is configured. */
int docs_enabled(const char *docs_setting, int has_key);

#endif
