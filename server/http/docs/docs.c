/*
 * docs.c - see docs.h. Embedded with .incbin like server/api/openapi/openapi.c.
 */
#include "server/http/docs/docs.h"

#include <string.h>

__asm__(".section .rodata\n"
        ".balign 16\n"
        "layad_docs_html:\n"
        ".incbin \"server/http/docs/index.html\"\n"
        "layad_docs_html_end:\n"
        ".byte 0\n"
        ".previous\n");

extern const char layad_docs_html[] __asm__("layad_docs_html");
extern const char layad_docs_html_end[] __asm__("layad_docs_html_end");

const char *docs_page(size_t *len)
{
    *len = (size_t)(layad_docs_html_end - layad_docs_html);
    return layad_docs_html;
}

int docs_enabled(const char *docs_setting, int has_key)
{
    if (!strcmp(docs_setting, "true"))
        return 1;
    if (!strcmp(docs_setting, "false"))
        return 0;
    return !has_key;
}
