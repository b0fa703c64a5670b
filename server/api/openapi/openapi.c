/*
 * openapi.c - see openapi.h. The JSON file is embedded (model/base/embed.h); the Makefile
 * names it as a prerequisite of this object.
 */
#include "server/api/openapi/openapi.h"

#include "model/base/embed.h"

LAYAD_EMBED(layad_openapi_json, "server/api/openapi/openapi.json");

const char *openapi_document(size_t *len)
{
    *len = (size_t)(layad_openapi_json_end - layad_openapi_json);
    return layad_openapi_json;
}
