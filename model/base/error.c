/* error.c - see error.h. */
#include "model/base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void layad_error_clear(layad_error *err)
{
    if (!err)
        return;
    err->status = 0;
    err->field[0] = '\0';
    err->msg[0] = '\0';
}

static void vset(layad_error *err, int status, const char *field, const char *fmt, va_list ap)
{
    err->status = status;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
}

int layad_fail(layad_error *err, int status, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(err, status, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

int layad_fail_field(layad_error *err, int status, const char *field, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vset(err, status, field, fmt, ap);
    va_end(ap);
    return -1;
}
