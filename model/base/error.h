/*
 * error.h - one error type for the whole daemon.
 *
 * Every fallible function returns 0 on success and -1 on failure, and fills a
 * caller-owned layad_error. The status field is an HTTP status (400, 413, 422,
 * 500, ...) so that an error found deep in validation or tokenization reaches
 * the client with the right code without a translation table; `field` names the
 * request field at fault ("questions.dept.criteria") or is empty.
 */
#ifndef LAYAD_ERROR_H
#define LAYAD_ERROR_H

#include <stddef.h>

typedef struct layad_error {
    int status;          /* HTTP status to answer with; 500 for internal failures */
    char field[256];     /* request field at fault, "" when none */
    char msg[768];       /* human-readable message, names the file/tensor/field */
} layad_error;

/* Sets status and message (printf-style); clears field. Always returns -1 so
 * that `return layad_fail(err, 422, "...")` reads naturally. err may be NULL. */
int layad_fail(layad_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like layad_fail, and also records the field at fault. */
int layad_fail_field(layad_error *err, int status, const char *field,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Resets an error to "no error". */
void layad_error_clear(layad_error *err);

#endif
