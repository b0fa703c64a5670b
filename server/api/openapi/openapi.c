/*
 * openapi.c - see openapi.h. The JSON file is embedded with .incbin, as tests/tools/tiny_assets.c
 * embeds the tiny tokenizer: no generated source, no objcopy step, the same in every build
 * (CPU-only, CUDA, ASan). The Makefile names the file as a prerequisite of this object, since
 * -MMD does not see an .incbin.
 */
#include "server/api/openapi/openapi.h"

__asm__(".section .rodata\n"
        ".balign 16\n"
        "layad_openapi_json:\n"
        ".incbin \"server/api/openapi/openapi.json\"\n"
        "layad_openapi_json_end:\n"
        ".byte 0\n"
        ".previous\n");

extern const char layad_openapi_json[] __asm__("layad_openapi_json");
extern const char layad_openapi_json_end[] __asm__("layad_openapi_json_end");

const char *openapi_document(size_t *len)
{
    *len = (size_t)(layad_openapi_json_end - layad_openapi_json);
    return layad_openapi_json;
}
