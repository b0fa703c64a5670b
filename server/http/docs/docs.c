/*
 * docs.c - see docs.h. The page is embedded (model/base/embed.h).
 */
#include "server/http/docs/docs.h"

#include <string.h>

#include "model/base/embed.h"

LAYAD_EMBED(layad_docs_html, "server/http/docs/index.html");

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
