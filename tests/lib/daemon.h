/*
 * daemon.h - test helpers for the HTTP daemon: start $LAYAD_BIN serve on a
 * free loopback port with the tiny checkpoint, talk raw HTTP/1.1 to it over
 * blocking sockets (so that tests control exactly what goes on the wire:
 * chunked bodies, lying lengths, slow clients), stop it with a signal and
 * collect its exit status.
 */
#ifndef LAYAD_TESTS_DAEMON_H
#define LAYAD_TESTS_DAEMON_H

#include <stddef.h>
#include <sys/types.h>

#include "tests/lib/testutil.h" /* tu_bin, tu_tiny, tu_read_file */

typedef struct daemon_proc {
    pid_t pid;
    int port;
    char log_path[256];
    int exited, status; /* set once the process was reaped (td_alive/td_stop) */
} daemon_proc;

/* A port that was free a moment ago (bind to 0, read, close). */
int td_free_port(void);

/* Starts `layad serve --model tiny --device cpu --bind 127.0.0.1 --port P
 * --log-file L --cpu-threads 1` plus extra args (later flags win; args with --model replace
 * the tiny one, since models add up) (NULL-terminated), with extra environment
 * entries "K=V" (NULL-terminated; may be NULL). If ready, waits until
 * /readyz answers 200 (60 s). Returns 0 or -1. */
int td_start(daemon_proc *d, const char *const *args, const char *const *env, int ready);

/* Sends sig (0: none) and waits up to timeout_s for exit; returns the exit status
 * (0..255), 128+signal when killed by a signal, or -1 on timeout (then the
 * process is SIGKILLed). */
int td_stop(daemon_proc *d, int sig, double timeout_s);

/* 1 while the process has not exited (reaps it and records its status when it has). */
int td_alive(daemon_proc *d);

long td_rss_kb(pid_t pid);

typedef struct td_resp {
    int status;          /* 0 when no complete response arrived */
    char *head;          /* status line + headers, NUL-terminated */
    char *body;          /* NUL-terminated */
    size_t body_len;
} td_resp;

/* One request on a fresh connection (Connection: close). extra_headers are
 * complete "Name: value\r\n" lines or NULL. Returns 0 when a complete response
 * was read, -1 otherwise (r->status 0). */
int td_request(int port, const char *method, const char *path, const char *extra_headers, const char *body,
               size_t len, td_resp *r);
void td_resp_free(td_resp *r);

/* Header value (case-insensitive name) copied into buf, or NULL. */
const char *td_header(const td_resp *r, const char *name, char *buf, size_t cap);

/* Connects to 127.0.0.1:port (blocking socket with 60 s timeouts), or -1. */
int td_connect(int port);
/* Reads one complete response from fd (Content-Length or until EOF). */
int td_read_response(int fd, td_resp *r);

/* Runs argv, stdin from in_path (or /dev/null), returns stdout (malloc'ed) and
 * sets *status to the exit status. */
char *td_run_capture(const char *const *argv, const char *in_path, size_t *len, int *status);

/* The answer of `layad decide --model tiny --request FILE [flags...]` for body
 * (flags NULL-terminated or NULL), without the CLI's trailing newline. */
char *td_decide_cli(const char *body, size_t len, const char *const *flags, size_t *out_len);

double td_now(void);

/* A /metrics exposition through `promtool check metrics`: its exit status, its output in *out
 * (malloc'ed), or -1 (out NULL) when /usr/bin/promtool is missing. */
int td_promtool(const char *body, size_t len, char **out);

/* The value of the /metrics sample line that starts with `series ` (name plus
 * labels, no trailing space), or -1 when there is none. */
double td_sample(const char *metrics, const char *series);

/* GET /metrics of the daemon on port until series reads at least min, or
 * timeout_s passed: the last body (malloc'ed), or NULL when a request failed.
 * A request is counted in its connection's completion callback, just after
 * its last byte left, so a scrape right after its answer can come first. */
char *td_metrics_when(int port, const char *series, double min, double timeout_s);

/* Runs fn on n threads (n <= 128), thread i on (char *)args + i * size, and
 * joins them all. 0, or -1 when a thread could not start (the started ones
 * are joined first). */
int td_run_threads(int n, void *(*fn)(void *), void *args, size_t size);

#endif
