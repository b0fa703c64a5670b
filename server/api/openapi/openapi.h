/*
 * openapi.h - the OpenAPI 3.1 description of the HTTP API, served as GET /openapi.json.
 *
 * The document (server/api/openapi/openapi.json) is written by hand next to the contract it
 * describes (server/api/README.md) and linked into the binary as bytes, so the daemon serves
 * exactly the file CI validates: tests/test_ops_openapi.sh checks it with openapi-spec-validator
 * and checks live answers of a running daemon against its schemas.
 */
#ifndef LAYAD_SERVER_API_OPENAPI_H
#define LAYAD_SERVER_API_OPENAPI_H

#include <stddef.h>

/* The document's bytes (static, read-only, not NUL-terminated in *len). */
const char *openapi_document(size_t *len);

#endif
