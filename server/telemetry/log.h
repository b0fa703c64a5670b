/*
 * log.h - the daemon's log: plain lines or JSON lines, one write() each.
 *
 * A single process-wide log (an explicitly shared object, like the metrics
 * registry). Lines are formatted into a stack buffer and written with one
 * write(2) on an O_APPEND descriptor, so lines from HTTP threads, the
 * scheduler and workers never interleave. log_reopen() is what SIGHUP calls
 * (logrotate's copy-less rotation); until it runs, lines keep going to the
 * old (renamed) file, none is lost.
 */
#ifndef LAYAD_SERVER_LOG_H
#define LAYAD_SERVER_LOG_H

/* Opens path for appending ("" or NULL: stderr); json selects JSON lines. */
int log_open(const char *path, int json);
/* Reopens the same path (no-op on stderr). Returns 0 or -1 (old fd kept). */
int log_reopen(void);
void log_close(void);

/* One event line: level is "info", "warn" or "error". */
void log_msg(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct log_request_line {
    const char *request_id;
    const char *method, *path;
    int status;
    int rows;
    long tokens;
    double queue_ms, infer_ms, total_ms;
    const char *error;  /* error message or NULL */
    const char *model;  /* the served model that answered a decision, or NULL */
} log_request_line;

/* The per-request line (request id, status, rows, tokens, queue and inference times). */
void log_request(const log_request_line *l);

#endif
