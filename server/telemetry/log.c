/*
 * log.c - see log.h. Text lines read "2026-12-02T09:00:00.123Z info message";
 * JSON lines are objects with ts, level, msg (or the request fields). JSON
 * string escaping is done here by hand (a handful of characters) so that the
 * request path does not build jansson trees just to log.
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

/* Appends s as a JSON string body (no quotes) to b[n..cap); returns the new n. */
static size_t put_json_str(char *b, size_t n, size_t cap, const char *s)
{
    for (; s && *s && n + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            b[n++] = '\\';
            b[n++] = (char)ch;
        } else if (ch < 0x20) {
            n += (size_t)snprintf(b + n, cap - n, "\\u%04x", ch);
        } else {
            b[n++] = (char)ch;
        }
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
        n += (size_t)snprintf(b + n, sizeof b - n, " %s %s", level, msg);
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
        n = put_ts(b, sizeof b);
        n += (size_t)snprintf(b + n, sizeof b - n,
                              " info request id=%.128s %s %.256s status=%d rows=%d tokens=%ld "
                              "queue_ms=%.3f infer_ms=%.3f total_ms=%.3f%s%.512s",
                              l->request_id, l->method, l->path, l->status, l->rows, l->tokens,
                              l->queue_ms, l->infer_ms, l->total_ms, l->error ? " error=" : "",
                              l->error ? l->error : "");
    }
    emit(b, n, sizeof b);
}
