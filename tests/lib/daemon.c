/*
 * daemon.c - see daemon.h.
 */
#include "tests/lib/daemon.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_quiet; /* no diagnostics while polling for readiness */

double td_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int td_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &l)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static int decode_status(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int td_alive(daemon_proc *d)
{
    int st;
    if (d->exited || d->pid <= 0)
        return 0;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
        d->exited = 1;
        d->status = decode_status(st);
        return 0;
    }
    return 1;
}

/* The daemon's command line into argv[96] (NULL-terminated): `serve` on the tiny model unless
 * args name one, on the test device, loopback, d's port and log file, one CPU thread, then
 * args and LAYAD_TEST_SERVE_ARGS's words (split in extra[256], which argv points into). */
static void daemon_argv(const daemon_proc *d, const char *const *args, const char *port, const char **argv,
                        char extra[256])
{
    int n = 0;
    argv[n++] = tu_bin();
    argv[n++] = "serve";
    int own_model = 0; /* `model` repeats (several checkpoints): args naming one replace tiny */
    for (int i = 0; args && args[i]; i++)
        own_model |= !strcmp(args[i], "--model") || !strncmp(args[i], "--model=", 8);
    if (!own_model) {
        argv[n++] = "--model";
        argv[n++] = tu_tiny();
    }
    /* LAYAD_TEST_DEVICE (default cpu) and LAYAD_TEST_SERVE_ARGS (words added
     * to every start) let a daemon suite run on the GPU machine as well */
    const char *dev = getenv("LAYAD_TEST_DEVICE");
    argv[n++] = "--device";
    argv[n++] = dev && *dev ? dev : "cpu";
    argv[n++] = "--bind";
    argv[n++] = "127.0.0.1";
    argv[n++] = "--port";
    argv[n++] = port;
    argv[n++] = "--log-file";
    argv[n++] = d->log_path;
    argv[n++] = "--cpu-threads"; /* CI has 2 shared cores: no OpenMP barriers to starve */
    argv[n++] = "1";
    for (int i = 0; args && args[i] && n < 94; i++)
        argv[n++] = args[i];
    snprintf(extra, 256, "%s", getenv("LAYAD_TEST_SERVE_ARGS") ? getenv("LAYAD_TEST_SERVE_ARGS") : "");
    for (char *save = NULL, *w = strtok_r(extra, " ", &save); w && n < 95; w = strtok_r(NULL, " ", &save))
        argv[n++] = w;
    argv[n] = NULL;
}

/* Polls /readyz for up to 60 s; 0 once it answers 200, -1 if the daemon exits or never does. */
static int wait_ready(daemon_proc *d)
{
    double end = td_now() + 60;
    while (td_now() < end) {
        if (!td_alive(d))
            return -1;
        td_resp r;
        g_quiet = 1;
        int rc = td_request(d->port, "GET", "/readyz", NULL, NULL, 0, &r);
        g_quiet = 0;
        const int ok = rc == 0 && r.status == 200;
        td_resp_free(&r);
        if (ok)
            return 0;
        usleep(20000);
    }
    return -1;
}

int td_start(daemon_proc *d, const char *const *args, const char *const *env, int ready)
{
    static int seq;
    memset(d, 0, sizeof *d);
    d->port = td_free_port();
    if (d->port <= 0)
        return -1;
    snprintf(d->log_path, sizeof d->log_path, "/tmp/layad-test-%d-%d.log", (int)getpid(), ++seq);
    unlink(d->log_path);
    char port[16], extra[256];
    snprintf(port, sizeof port, "%d", d->port);
    const char *argv[96];
    daemon_argv(d, args, port, argv, extra);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            close(nul);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    d->pid = pid;
    return ready ? wait_ready(d) : 0;
}

int td_stop(daemon_proc *d, int sig, double timeout_s)
{
    if (d->pid <= 0)
        return -1;
    if (!d->exited && sig)
        kill(d->pid, sig);
    double end = td_now() + timeout_s;
    while (td_alive(d) && td_now() < end)
        usleep(10000);
    if (!d->exited) {
        kill(d->pid, SIGKILL);
        int st;
        waitpid(d->pid, &st, 0);
        d->pid = 0;
        return -1;
    }
    d->pid = 0;
    return d->status;
}

long td_rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

int td_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

const char *td_header(const td_resp *r, const char *name, char *buf, size_t cap)
{
    if (!r->head)
        return NULL;
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if (!strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ')
                v++;
            size_t k = strcspn(v, "\r\n");
            if (k >= cap)
                k = cap - 1;
            memcpy(buf, v, k);
            buf[k] = 0;
            return buf;
        }
    }
    return NULL;
}

/* A raw response read from fd: until the peer closes, or the head's Content-Length (*want,
 * -1 when absent) is in. *b (NUL-terminated, caller frees), *n bytes, *head_end just past the
 * blank line (0 when none came). -1 only when out of memory at the start. */
typedef struct {
    char *b;
    size_t n, head_end;
    long want;
} raw_resp;

static int read_raw(int fd, raw_resp *w)
{
    size_t cap = 65536;
    w->b = malloc(cap + 1);
    w->n = w->head_end = 0;
    w->want = -1;
    if (!w->b)
        return -1;
    for (;;) {
        if (w->head_end && w->want >= 0 && w->n >= w->head_end + (size_t)w->want)
            break;
        if (w->n == cap) {
            char *nb = realloc(w->b, 2 * cap + 1);
            if (!nb)
                break;
            w->b = nb;
            cap *= 2;
        }
        ssize_t k = recv(fd, w->b + w->n, cap - w->n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        w->n += (size_t)k;
        w->b[w->n] = 0;
        char *e = w->head_end ? NULL : strstr(w->b, "\r\n\r\n");
        if (e) {
            w->head_end = (size_t)(e - w->b) + 4;
            char tmp = w->b[w->head_end];
            w->b[w->head_end] = 0;
            td_resp hr = {.head = w->b};
            char v[32];
            if (td_header(&hr, "Content-Length", v, sizeof v))
                w->want = atol(v);
            w->b[w->head_end] = tmp;
        }
    }
    w->b[w->n] = 0;
    return 0;
}

int td_read_response(int fd, td_resp *r)
{
    memset(r, 0, sizeof *r);
    raw_resp w;
    if (read_raw(fd, &w))
        return -1;
    const char *b = w.b;
    if (!w.head_end || (w.want >= 0 && w.n < w.head_end + (size_t)w.want) || strncmp(b, "HTTP/1.", 7)) {
        int e = errno;
        if (!g_quiet)
            fprintf(stderr, "td_read_response: incomplete response (%zu bytes, errno %d %s): %.120s\n", w.n, e,
                    strerror(e), b);
        free(w.b);
        return -1;
    }
    size_t blen = w.want >= 0 ? (size_t)w.want : w.n - w.head_end;
    r->head = malloc(w.head_end + 1);
    r->body = malloc(blen + 1);
    if (!r->head || !r->body) {
        free(w.b);
        td_resp_free(r);
        return -1;
    }
    memcpy(r->head, b, w.head_end);
    r->head[w.head_end] = 0;
    memcpy(r->body, b + w.head_end, blen);
    r->body[blen] = 0;
    r->body_len = blen;
    r->status = atoi(b + 9);
    free(w.b);
    return 0;
}

int td_request(int port, const char *method, const char *path, const char *extra_headers, const char *body,
               size_t len, td_resp *r)
{
    memset(r, 0, sizeof *r);
    int fd = td_connect(port);
    if (fd < 0) {
        if (!g_quiet)
            fprintf(stderr, "td_request: connect to port %d: %s\n", port, strerror(errno));
        return -1;
    }
    char head[4096], clen[64] = "";
    if (body)
        snprintf(clen, sizeof clen, "Content-Type: application/json\r\nContent-Length: %zu\r\n", len);
    int hn = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s%s\r\n",
                      method, path, extra_headers ? extra_headers : "", clen);
    int rc = -1;
    if (send_all(fd, head, (size_t)hn) == 0 && (!body || send_all(fd, body, len) == 0))
        rc = td_read_response(fd, r);
    else
        fprintf(stderr, "td_request: send: %s\n", strerror(errno));
    close(fd);
    return rc;
}

void td_resp_free(td_resp *r)
{
    free(r->head);
    free(r->body);
    r->head = r->body = NULL;
}

char *td_run_capture(const char *const *argv, const char *in_path, size_t *len, int *status)
{
    int p[2];
    if (pipe(p))
        return NULL;
    pid_t pid = fork();
    if (pid < 0)
        return NULL;
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 1);
        close(p[1]);
        int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
        if (in >= 0) {
            dup2(in, 0);
            close(in);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    size_t cap = 4096, n = 0;
    char *b = malloc(cap + 1);
    ssize_t k;
    while (b && (k = read(p[0], b + n, cap - n)) > 0) {
        n += (size_t)k;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap + 1);
        }
    }
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (b) {
        b[n] = 0;
        if (len)
            *len = n;
    }
    return b;
}

char *td_decide_cli(const char *body, size_t len, const char *const *flags, size_t *out_len)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/layad-test-req-%d.json", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    fwrite(body, 1, len, f);
    fclose(f);
    const char *argv[16] = {tu_bin(), "decide", "--model", tu_tiny(), "--request", path};
    int n = 6;
    for (int i = 0; flags && flags[i] && n < 15; i++)
        argv[n++] = flags[i];
    argv[n] = NULL;
    int st = -1;
    char *out = td_run_capture(argv, NULL, out_len, &st);
    unlink(path);
    if (st != 0) {
        free(out);
        return NULL;
    }
    /* The CLI ends its output with a newline; the HTTP body does not. */
    while (out && *out_len && (out[*out_len - 1] == '\n'))
        out[--*out_len] = 0;
    return out;
}

int td_run_threads(int n, void *(*fn)(void *), void *args, size_t size)
{
    pthread_t th[128];
    int started = 0;
    while (started < n && started < 128 &&
           !pthread_create(&th[started], NULL, fn, (char *)args + (size_t)started * size))
        started++;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return started == n ? 0 : -1;
}

int td_promtool(const char *body, size_t len, char **out)
{
    *out = NULL;
    if (access("/usr/bin/promtool", X_OK) != 0)
        return -1;
    char path[128], cmd[256];
    snprintf(path, sizeof path, "/tmp/layad-metrics-%d-%p.txt", (int)getpid(), (const void *)body);
    FILE *f = fopen(path, "w");
    if (!f || fwrite(body, 1, len, f) != len) {
        if (f)
            fclose(f);
        unlink(path);
        *out = strdup("cannot write the exposition into /tmp");
        return 127;
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    int st;
    size_t n;
    *out = td_run_capture(argv, NULL, &n, &st);
    unlink(path);
    return st;
}

double td_sample(const char *metrics, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = metrics; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, series, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

char *td_metrics_when(int port, const char *series, double min, double timeout_s)
{
    const double until = td_now() + timeout_s;
    for (;;) {
        td_resp r;
        if (td_request(port, "GET", "/metrics", NULL, NULL, 0, &r) || r.status != 200) {
            td_resp_free(&r);
            return NULL;
        }
        char *body = r.body;
        r.body = NULL;
        td_resp_free(&r);
        if (td_sample(body, series) >= min || td_now() >= until)
            return body;
        free(body);
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
}
