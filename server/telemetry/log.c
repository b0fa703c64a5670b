/*
 * log.c - see log.h. Text lines read "2026-12-02T09:00:00.123Z info message";
 * JSON lines are objects with ts, level, msg (or the request fields). JSON
 * string escaping is done here by hand (a handful of characters) so that the
 * request path does not build jansson trees just to log.
 *
 * Text lines escape every logged string as well (put_text_str): a URL path
 * ("%0a" arrives decoded) or a model name in an error message is client
 * text, and a raw newline in it would let a client forge log lines. Control
 * bytes and DEL become \n \r \t or \xNN, a
 * backslash \\ (so an escape in the log always means one in the input); in
 * the space-separated request fields (id, method, path) a space is \x20, so
 * each field stays one token.
 */
#include "server/telemetry/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
    pthread_mutex_t lock; /* guards fd and path during reopen */
    int fd;
    int json;
    char path[4096];
} g_log = {PTHREAD_MUTEX_INITIALIZER, 2, 0, ""};

int log_open(const char *path, int json)
{
    g_log.json = json;
    if (!path || !path[0])
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0)
        return -1;
    pthread_mutex_lock(&g_log.lock);
    snprintf(g_log.path, sizeof g_log.path, "%s", path);
    g_log.fd = fd;
    pthread_mutex_unlock(&g_log.lock);
    return 0;
}

int log_reopen(void)
{
    int rc = 0;
    pthread_mutex_lock(&g_log.lock);
    if (g_log.path[0]) {
        int fd = open(g_log.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (fd < 0) {
            rc = -1;
        } else {
            if (g_log.fd > 2)
                close(g_log.fd);
            g_log.fd = fd;
        }
    }
    pthread_mutex_unlock(&g_log.lock);
    return rc;
}

void log_close(void)
{
    pthread_mutex_lock(&g_log.lock);
    if (g_log.fd > 2)
        close(g_log.fd);
    g_log.fd = 2;
    g_log.path[0] = 0;
    pthread_mutex_unlock(&g_log.lock);
}

static size_t put_ts(char *b, size_t cap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(b, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(b + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000);
    return n;
}

/* Appends s as a JSON string body (no quotes) to b[n..cap), control bytes and DEL as \u00XX;
 * returns the new n. */
static size_t put_json_str(char *b, size_t n, size_t cap, const char *s)
{
    for (; s && *s && n + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            b[n++] = '\\';
            b[n++] = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            n += (size_t)snprintf(b + n, cap - n, "\\u%04x", ch);
        } else {
            b[n++] = (char)ch;
        }
    }
    return n;
}

/* Appends s to b[n..lim) for a text line, escaped as the file comment says (space: escape
 * ' ' too); stops before an escape that would not fit. Returns the new n. */
static size_t put_text_str(char *b, size_t n, size_t lim, const char *s, int space)
{
    static const char hex[] = "0123456789abcdef";
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        char e[4] = {(char)ch};
        size_t k = 1;
        if (ch == '\\' || ch == '\n' || ch == '\r' || ch == '\t') {
            e[0] = '\\';
            e[1] = ch == '\n' ? 'n' : ch == '\r' ? 'r' : ch == '\t' ? 't' : '\\';
            k = 2;
        } else if (ch < 0x20 || ch == 0x7f || (space && ch == ' ')) {
            e[0] = '\\';
            e[1] = 'x';
            e[2] = hex[ch >> 4];
            e[3] = hex[ch & 15];
            k = 4;
        }
        if (n + k > lim)
            break;
        memcpy(b + n, e, k);
        n += k;
    }
    return n;
}

static void emit(char *b, size_t n, size_t cap)
{
    if (n >= cap - 1)
        n = cap - 2;
    b[n++] = '\n';
    pthread_mutex_lock(&g_log.lock);
    ssize_t w = write(g_log.fd, b, n);
    pthread_mutex_unlock(&g_log.lock);
    (void)w; /* nowhere left to report a failing log write */
}

void log_msg(const char *level, const char *fmt, ...)
{
    char msg[2048], b[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n;
    if (g_log.json) {
        n = (size_t)snprintf(b, sizeof b, "{\"ts\":\"");
        n += put_ts(b + n, sizeof b - n);
        n += (size_t)snprintf(b + n, sizeof b - n, "\",\"level\":\"%s\",\"msg\":\"", level);
        n = put_json_str(b, n, sizeof b - 3, msg);
        n += (size_t)snprintf(b + n, sizeof b - n, "\"}");
    } else {
        n = put_ts(b, sizeof b);
        n += (size_t)snprintf(b + n, sizeof b - n, " %s ", level);
        n = put_text_str(b, n, sizeof b - 2, msg, 0);
    }
    emit(b, n, sizeof b);
}

void log_request(const log_request_line *l)
{
    char b[4096];
    size_t n;
    if (g_log.json) {
        n = (size_t)snprintf(b, sizeof b, "{\"ts\":\"");
        n += put_ts(b + n, sizeof b - n);
        n += (size_t)snprintf(b + n, sizeof b - n, "\",\"level\":\"info\",\"request_id\":\"");
        n = put_json_str(b, n, 1024, l->request_id);
        n += (size_t)snprintf(b + n, sizeof b - n, "\",\"method\":\"");
        n = put_json_str(b, n, 1100, l->method);
        n += (size_t)snprintf(b + n, sizeof b - n, "\",\"path\":\"");
        n = put_json_str(b, n, 1800, l->path);
        if (l->model) {
            n += (size_t)snprintf(b + n, sizeof b - n, "\",\"model\":\"");
            n = put_json_str(b, n, 2200, l->model);
        }
        n += (size_t)snprintf(b + n, sizeof b - n,
                              "\",\"status\":%d,\"rows\":%d,\"tokens\":%ld,\"queue_ms\":%.3f,"
                              "\"infer_ms\":%.3f,\"total_ms\":%.3f",
                              l->status, l->rows, l->tokens, l->queue_ms, l->infer_ms, l->total_ms);
        if (l->error) {
            n += (size_t)snprintf(b + n, sizeof b - n, ",\"error\":\"");
            n = put_json_str(b, n, sizeof b - 4, l->error);
            n += (size_t)snprintf(b + n, sizeof b - n, "\"");
        }
        n += (size_t)snprintf(b + n, sizeof b - n, "}");
    } else {
        /* each string field capped (escaped bytes), so the numbers always fit the buffer */
        n = put_ts(b, sizeof b);
        n += (size_t)snprintf(b + n, sizeof b - n, " info request id=");
        n = put_text_str(b, n, n + 128, l->request_id, 1);
        b[n++] = ' ';
        n = put_text_str(b, n, n + 64, l->method, 1);
        b[n++] = ' ';
        n = put_text_str(b, n, n + 1024, l->path, 1);
        if (l->model) {
            n += (size_t)snprintf(b + n, sizeof b - n, " model=");
            n = put_text_str(b, n, n + 256, l->model, 1);
        }
        n += (size_t)snprintf(b + n, sizeof b - n,
                              " status=%d rows=%d tokens=%ld queue_ms=%.3f infer_ms=%.3f total_ms=%.3f",
                              l->status, l->rows, l->tokens, l->queue_ms, l->infer_ms, l->total_ms);
        if (l->error) {
            n += (size_t)snprintf(b + n, sizeof b - n, " error=");
            n = put_text_str(b, n, n + 1024, l->error, 0);
        }
    }
    emit(b, n, sizeof b);
}
