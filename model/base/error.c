/*
 * error.c - see error.h.
 *
 * Messages and fields quote client text, cut to a byte count ("%.*s", or the
 * buffer's size), and a cut can split a UTF-8 sequence. Such a message is no
 * longer UTF-8, and the JSON error body carrying it is not valid JSON for a
 * strict client (fuzz_request found one: a noul question's criteria keys
 * quoted past 768 bytes). utf8_scrub turns every byte of a broken sequence
 * into '?', in place, so a message is always valid UTF-8.
 */
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

/* Length of the valid UTF-8 sequence at s (1-4; what Python's decoder accepts), or 0. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n <= 1)
        return n;
    unsigned cp = c & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static void utf8_scrub(char *str)
{
    unsigned char *s = (unsigned char *)str;
    while (*s) {
        int n = utf8_len(s);
        if (n)
            s += n;
        else
            *s++ = '?';
    }
}

static void vset(layad_error *err, int status, const char *field, const char *fmt, va_list ap)
{
    err->status = status;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    utf8_scrub(err->field);
    utf8_scrub(err->msg);
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
