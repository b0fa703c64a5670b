/*
 * test_daemon_abuse.c - the abuse reproductions (slow clients, crafted bodies, forged log lines), over real HTTP on loopback against
 * `layad serve` on the tiny checkpoint (CPU), as regression tests:
 *
 *   defect 2: a 2 MB body of 120k keys in `state` is answered in about a second
 *             (the quadratic duplicate-key scan took 11-28 s of CPU to parse it);
 *   defect 6: `"state": ""` and empty strings are answered (the ASan+UBSan daemon
 *             aborted on a memcpy from NULL; `make test-asan` runs this suite on it);
 *   defect 9: a newline or other control byte in the URL or in `model` stays inside its
 *             log line, in the text and the JSON log formats;
 *   defect 1: slowloris (160 connections, one header byte per 2 s, against 64 slots) does not
 *             delay good clients; the per-address cap; head, keep-alive and body deadlines;
 *             idle connections closed first when slots run out;
 *   defect 5: a second daemon on the port fails clearly unless both set reuse_port;
 *   defect 8: a 3000-byte key file works whole, a 4097-byte one is refused at start;
 *   and: HTTP/1.1 without Host and CL+TE framing get 400 (the latter closes the connection),
 *   a non-loopback bind without a key refuses to start, key hygiene warnings.
 *
 * Each test starts its own daemon (Check forks per test) and stops it with SIGTERM; a
 * non-zero exit (a sanitizer abort included) fails the test.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/pyexact/pyjson.h"
#include "tests/lib/daemon.h"

#define Q1 "\"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"is it urgent\"}}"
#define FORGED "2026-01-01T00:00:00.000Z info request id=forged POST /decide status=200"

static daemon_proc D;

static void start(const char *const *args)
{
    ck_assert_msg(td_start(&D, args, NULL, 1) == 0, "cannot start %s", tu_bin());
}

static void stop(void)
{
    int st = td_stop(&D, SIGTERM, 60);
    ck_assert_msg(st == 0, "daemon exit status %d (log %s)", st, D.log_path);
}

/* POSTs body to /decide; returns the status. */
static int post(const char *body, size_t len, td_resp *r)
{
    ck_assert_int_eq(td_request(D.port, "POST", "/decide", NULL, body, len, r), 0);
    return r->status;
}

START_TEST(state_of_120k_keys_is_answered_in_linear_time)
{
    start(NULL);
    pj_buf b = {0};
    pj_buf_puts(&b, "{" Q1 ", \"state\": {");
    for (int i = 0; i < 120000; i++)
        pj_buf_printf(&b, "%s\"k%d\": %d", i ? ", " : "", i, i);
    pj_buf_puts(&b, "}}");
    ck_assert(!b.failed && b.len <= 2u << 20);
    td_resp r;
    double t0 = td_now();
    ck_assert_int_eq(post(b.p, b.len, &r), 200);
    double s = td_now() - t0;
    printf("daemon: 120k-key state (%zu bytes) answered in %.3f s\n", b.len, s);
    fflush(stdout);
    ck_assert_msg(strstr(r.body, "\"truncated\": true"), "%s", r.body);
    ck_assert_msg(s < 8.0, "120k-key state took %.1f s", s); /* ~0.7 s here, ~3 s under ASan */
    td_resp_free(&r);
    free(b.p);
    stop();
}
END_TEST

START_TEST(empty_strings_are_answered)
{
    start(NULL);
    static const char *const bodies[] = {
        "{\"state\": \"\", " Q1 "}",
        "{\"states\": [\"\", \"x\", \"\"], \"model\": \"laya\", \"questions\": {\"c\": {\"type\": \"choice\", "
        "\"instructions\": \"i\", \"criteria\": {\"\": \"\", \"b\": \"\"}}, \"s\": {\"type\": \"score\", "
        "\"instructions\": [\"\"], \"criteria\": [\"\", \"\"]}}}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        td_resp r;
        ck_assert_msg(post(bodies[i], strlen(bodies[i]), &r) == 200, "%s -> %d %s", bodies[i], r.status, r.body);
        td_resp_free(&r);
    }
    td_resp r;
    const char *named = "{\"state\": \"\", \"model\": \"\", " Q1 "}"; /* not a served name */
    ck_assert_int_eq(post(named, strlen(named), &r), 422);
    td_resp_free(&r);
    ck_assert(td_alive(&D));
    stop();
}
END_TEST

/* Sends the requests whose client text would forge log lines, stops the daemon and returns
 * the log's lines (each checked: starts with the daemon's own timestamp, no control byte). */
static char **abuse_and_read_log(int json, size_t *n)
{
    const char *const text[] = {NULL}, *const js[] = {"--log-format", "json", NULL};
    start(json ? js : text);
    td_resp r;
    /* "%0d%0a" arrives decoded in the path the daemon logs */
    ck_assert_int_eq(td_request(D.port, "GET", "/nowhere%0d%0a2026-01-01T00:00:00.000Z%20info%20forged%7f%01", NULL,
                                NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 404);
    td_resp_free(&r);
    const char *b = "{\"state\": \"x\", \"model\": \"x\\n" FORGED "\", " Q1 "}";
    ck_assert_int_eq(post(b, strlen(b), &r), 422);
    td_resp_free(&r);
    stop();
    size_t len;
    char *t = tu_read_file(D.log_path, &len);
    ck_assert_ptr_nonnull(t);
    ck_assert(len > 0 && t[len - 1] == '\n');
    char **lines = calloc(len + 1, sizeof *lines);
    *n = 0;
    for (char *s = t, *e; (e = strchr(s, '\n')); s = e + 1) {
        char *l = lines[(*n)++] = strndup(s, (size_t)(e - s));
        ck_assert_msg(json ? !strncmp(l, "{\"ts\":\"20", 9) : !strncmp(l, "20", 2) && l[10] == 'T', "forged line: %s",
                      l);
        for (const char *c = l; *c; c++)
            ck_assert_msg((unsigned char)*c >= 0x20 && *c != 0x7f, "raw control byte in: %s", l);
    }
    free(t);
    return lines;
}

static const char *find_line(char **lines, size_t n, const char *needle)
{
    for (size_t i = 0; i < n; i++)
        if (strstr(lines[i], needle))
            return lines[i];
    return NULL;
}

START_TEST(control_bytes_stay_in_their_text_log_line)
{
    size_t n;
    char **lines = abuse_and_read_log(0, &n);
    const char *l = find_line(lines, n, " GET /nowhere");
    ck_assert_msg(l && strstr(l, "GET /nowhere\\r\\n2026-01-01T00:00:00.000Z\\x20info\\x20forged\\x7f\\x01 status=404"),
                  "%s", l ? l : "(no request line for /nowhere)");
    l = find_line(lines, n, " POST /decide status=422");
    ck_assert_msg(l && strstr(l, " error=unknown model 'x\\n2026-01-01T"), "%s", l ? l : "(no 422 line)");
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}
END_TEST

START_TEST(control_bytes_stay_in_their_json_log_line)
{
    size_t n;
    char **lines = abuse_and_read_log(1, &n);
    int seen_path = 0, seen_model = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_loads(lines[i], 0, NULL);
        ck_assert_msg(j != NULL, "not JSON: %s", lines[i]);
        const char *path = json_string_value(json_object_get(j, "path"));
        const char *err = json_string_value(json_object_get(j, "error"));
        seen_path += path && !strcmp(path, "/nowhere\r\n2026-01-01T00:00:00.000Z info forged\x7f\x01");
        seen_model += err && !strcmp(err, "unknown model 'x\n" FORGED "'");
        json_decref(j);
        free(lines[i]);
    }
    free(lines);
    ck_assert_int_eq(seen_path, 1);
    ck_assert_int_eq(seen_model, 1);
}
END_TEST

/* ---- the HTTP front: connection abuse, framing, port, key (slowloris, second daemon, key file, framing) ---- */

/* A TCP connection to the daemon from src (any 127.0.0.0/8 address: each is a
 * distinct client address to the per-address cap); non-blocking if asked. */
static int connect_from(const char *src, int port, int nonblock)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &a.sin_addr);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    if (connect(fd, (struct sockaddr *)&d, sizeof d) && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Seconds until the daemon closed fd (end-of-file or reset; a response before
 * it is read and skipped), or -1 when still open after timeout_s. */
static double closed_within(int fd, double timeout_s)
{
    double t0 = td_now();
    while (td_now() - t0 < timeout_s) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 20) == 1) {
            char buf[512];
            ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                return td_now() - t0;
        }
    }
    return -1;
}

static int send_str(int fd, const char *s)
{
    return send(fd, s, strlen(s), MSG_NOSIGNAL) == (ssize_t)strlen(s) ? 0 : -1;
}

/* The slowloris attacker: n connections from 4 per address (127.0.0.2...),
 * each sending one more byte of an endless request head every 2 s, and
 * reopening at its next tick when the daemon closes it. */
#define LORIS_MAX 256
typedef struct loris {
    int port, n;
    _Atomic int stop;
    int fd[LORIS_MAX];
    size_t sent[LORIS_MAX];
    double next[LORIS_MAX];
    long opened, closed_by_daemon;
} loris;

static void *loris_main(void *arg)
{
    static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ";
    loris *L = arg;
    for (int i = 0; i < L->n; i++)
        L->fd[i] = -1;
    while (!atomic_load(&L->stop)) {
        double t = td_now();
        struct pollfd p[LORIS_MAX];
        for (int i = 0; i < L->n; i++) {
            if (L->fd[i] < 0 && t >= L->next[i]) {
                char src[32];
                snprintf(src, sizeof src, "127.0.0.%d", 2 + i / 4);
                L->fd[i] = connect_from(src, L->port, 1);
                L->sent[i] = 0;
                L->opened += L->fd[i] >= 0;
            }
            if (L->fd[i] >= 0 && t >= L->next[i]) {
                char c = L->sent[i] < sizeof head - 1 ? head[L->sent[i]] : 'a';
                if (send(L->fd[i], &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
                    L->sent[i]++;
                L->next[i] = t + 2.0;
            }
            p[i] = (struct pollfd){L->fd[i], POLLIN, 0};
        }
        if (poll(p, (nfds_t)L->n, 50) <= 0)
            continue;
        for (int i = 0; i < L->n; i++) {
            char buf[256];
            if (L->fd[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t k = recv(L->fd[i], buf, sizeof buf, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN)) {
                close(L->fd[i]);
                L->fd[i] = -1;
                L->closed_by_daemon++;
            }
        }
    }
    for (int i = 0; i < L->n; i++)
        if (L->fd[i] >= 0)
            close(L->fd[i]);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Issue 14 defect 1: 1,100 slow-header connections held all 1,024 slots and good clients got no
 * answer for 70 s. Here 160 such connections (40 addresses, under the per-address cap) against 64
 * slots: good clients (/healthz and /decide, one every 100 ms) must all be answered promptly. */
START_TEST(slowloris_does_not_starve_good_clients)
{
    const char *args[] = {"--max-connections", "64", "--max-connections-per-ip", "8", "--header-timeout-s", "3",
                          "--request-timeout-s", "900", NULL};
    start(args);
    static loris L;
    memset(&L, 0, sizeof L);
    L.port = D.port;
    L.n = 160;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, loris_main, &L), 0);
    usleep(1500000); /* every attack connection open and trickling */
    double lat[200];
    int n = 0, bad = 0;
    double end = td_now() + 9.0;
    while (td_now() < end && n < 200) {
        td_resp r;
        double t0 = td_now();
        const char *b = "{\"state\": \"refund please\", " Q1 "}";
        int rc = n % 2 ? td_request(D.port, "POST", "/decide", NULL, b, strlen(b), &r)
                       : td_request(D.port, "GET", "/healthz", NULL, NULL, 0, &r);
        lat[n++] = td_now() - t0;
        bad += rc != 0 || r.status != 200;
        td_resp_free(&r);
        usleep(100000);
    }
    atomic_store(&L.stop, 1);
    pthread_join(th, NULL);
    qsort(lat, (size_t)n, sizeof lat[0], cmp_double);
    printf("slowloris: 160 connections from 40 addresses, 1 header byte per 2 s, vs 64 slots: %d good requests "
           "(/healthz, /decide), %d failed; latency p50 %.1f ms, p99 %.1f ms, max %.1f ms; %ld attack connections "
           "opened, %ld closed by the daemon\n", n, bad, lat[n / 2] * 1e3, lat[(n * 99) / 100] * 1e3,
           lat[n - 1] * 1e3, L.opened, L.closed_by_daemon);
    fflush(stdout);
    ck_assert_int_eq(bad, 0);
    ck_assert_int_ge(n, 40);
    ck_assert_msg(lat[n - 1] < 2.0, "a good request took %.2f s under slowloris", lat[n - 1]);
    ck_assert_msg(L.closed_by_daemon >= 96, "only %ld slow connections closed", L.closed_by_daemon);
    stop();
}
END_TEST

/* The per-address cap, and the head, keep-alive and body deadlines, timed. */
START_TEST(per_ip_cap_and_deadlines)
{
    /* One HTTP thread: with a pool, the 4th and 5th connections can be accepted by
     * two threads at once and either may be the one over the cap (the 4th was,
     * once, under ThreadSanitizer). */
    const char *args[] = {"--max-connections-per-ip", "4", "--header-timeout-s", "1.5", "--body-timeout-s", "1.5",
                          "--http-threads", "1", NULL};
    start(args);
    int held[4];
    for (int i = 0; i < 4; i++) {
        held[i] = connect_from("127.0.0.7", D.port, 0);
        ck_assert_int_ge(held[i], 0);
        ck_assert_int_eq(send_str(held[i], "GET /healthz HTTP/1.1\r\nHo"), 0);
    }
    int fifth = connect_from("127.0.0.7", D.port, 0); /* over the cap: closed at once */
    ck_assert_int_ge(fifth, 0);
    double t5 = closed_within(fifth, 1.0);
    ck_assert_msg(t5 >= 0, "a 5th connection from one address was not refused");
    close(fifth);
    td_resp r; /* another address is served meanwhile */
    ck_assert_int_eq(td_request(D.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    double th = closed_within(held[0], 6.0); /* unfinished heads: closed at header_timeout_s */
    for (int i = 1; i < 4; i++)
        ck_assert_msg(closed_within(held[i], 1.0) >= 0, "unfinished head %d still open", i);
    for (int i = 0; i < 4; i++)
        close(held[i]);
    ck_assert_msg(th > 0.9 && th < 4.0, "unfinished head closed after %.2f s (header_timeout_s 1.5)", th);
    /* An idle keep-alive connection: closed header_timeout_s after its response. */
    int ka = connect_from("127.0.0.8", D.port, 0); /* (127.0.0.7's count drops when MHD gets to it) */
    ck_assert_int_eq(send_str(ka, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    ck_assert_int_eq(td_read_response(ka, &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    double tk = closed_within(ka, 6.0);
    close(ka);
    ck_assert_msg(tk > 0.9 && tk < 4.0, "idle keep-alive closed after %.2f s", tk);
    /* A body that stops coming: 408, then closed. */
    int sb = connect_from("127.0.0.9", D.port, 0);
    ck_assert_int_eq(send_str(sb, "POST /decide HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"state\": "), 0);
    double t0 = td_now();
    ck_assert_int_eq(td_read_response(sb, &r), 0);
    double tb = td_now() - t0;
    close(sb);
    ck_assert_int_eq(r.status, 408);
    ck_assert_msg(tb > 0.9 && tb < 4.0, "stalled body answered after %.2f s", tb);
    td_resp_free(&r);
    printf("per-address cap: 5th connection refused in %.3f s; unfinished head closed after %.2f s, idle keep-alive "
           "after %.2f s, stalled body 408 after %.2f s (both timeouts 1.5 s)\n", t5, th, tk, tb);
    fflush(stdout);
    stop();
}
END_TEST

/* Slots running out: idle keep-alive connections are closed first, then the
 * longest-waiting unfinished head; work in progress is never picked. */
START_TEST(idle_connections_make_room_first)
{
    const char *args[] = {"--max-connections", "16", "--max-connections-per-ip", "0", "--http-threads", "1",
                          "--header-timeout-s", "60", NULL};
    start(args); /* room is made at 14 open connections (seven eighths) */
    int ka[4], slow[11];
    td_resp r;
    for (int i = 0; i < 4; i++) {
        ka[i] = td_connect(D.port);
        ck_assert_int_eq(send_str(ka[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
        ck_assert_int_eq(td_read_response(ka[i], &r), 0);
        ck_assert_int_eq(r.status, 200);
        td_resp_free(&r);
    }
    for (int i = 0; i < 11; i++) {
        slow[i] = td_connect(D.port);
        ck_assert_int_eq(send_str(slow[i], "GET /healthz HTTP/1.1\r\n"), 0);
        usleep(20000);
    }
    /* 15 opened: the 14th and 15th each closed a keep-alive one, the oldest first */
    ck_assert_msg(closed_within(ka[0], 2.0) >= 0 && closed_within(ka[1], 2.0) >= 0, "idle keep-alive kept");
    ck_assert_msg(closed_within(ka[2], 0.3) < 0 && closed_within(slow[0], 0.3) < 0, "closed more than needed");
    int more[3]; /* each new one closes one: the two keep-alive left, then the oldest unfinished head */
    for (int i = 0; i < 3; i++) {
        more[i] = td_connect(D.port);
        ck_assert_int_eq(send_str(more[i], "GET /healthz HTTP/1.1\r\n"), 0);
        ck_assert_msg(closed_within(i < 2 ? ka[2 + i] : slow[0], 2.0) >= 0, "new connection %d closed nothing", i);
    }
    for (int i = 1; i < 11; i++)
        ck_assert_msg(closed_within(slow[i], 0.02) < 0, "unfinished head %d closed out of order", i);
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(closed_within(more[i], 0.02) < 0, "the newest connection %d was closed", i);
        close(more[i]);
    }
    ck_assert_int_eq(td_request(D.port, "GET", "/healthz", NULL, NULL, 0, &r), 0); /* and new clients are served */
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    for (int i = 0; i < 4; i++)
        close(ka[i]);
    for (int i = 0; i < 11; i++)
        close(slow[i]);
    stop();
}
END_TEST

/* Reads everything until the daemon closes fd (at most 5 s); returns the bytes read. */
static size_t read_to_close(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    double end = td_now() + 5;
    while (n + 1 < cap && td_now() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) != 1)
            continue;
        ssize_t k = recv(fd, buf + n, cap - 1 - n, MSG_DONTWAIT);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = 0;
    return n;
}

static int count_responses(const char *s)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, "X-Request-Id:")); p++)
        n++;
    return n;
}

/* HTTP/1.1 without Host, several Hosts: 400. Content-Length with Transfer-Encoding, or two
 * Content-Lengths: 400 and the connection closed, so a request smuggled behind is never run. */
START_TEST(request_framing_is_enforced)
{
    start(NULL);
    static const char *const cases[][2] = {
        {"GET /healthz HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "without a Host"},
        {"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
         "more than one Host"},
        {"POST /decide HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
         "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "Transfer-Encoding together"},
        {"POST /decide HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n"
         "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "Transfer-Encoding together"},
        {"POST /decide HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}"
         "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "more than one Content-Length"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = td_connect(D.port);
        ck_assert_int_eq(send_str(fd, cases[i][0]), 0);
        char buf[8192];
        read_to_close(fd, buf, sizeof buf);
        close(fd);
        ck_assert_msg(!strncmp(buf, "HTTP/1.1 400", 12) && strstr(buf, cases[i][1]), "case %zu: %s", i, buf);
        ck_assert_msg(count_responses(buf) == 1, "case %zu: the request behind was answered: %s", i, buf);
        ck_assert_msg(strcasestr(buf, "Connection: close"), "case %zu: %s", i, buf);
    }
    int fd = td_connect(D.port); /* HTTP/1.0 needs no Host */
    ck_assert_int_eq(send_str(fd, "GET /healthz HTTP/1.0\r\n\r\n"), 0);
    td_resp r;
    ck_assert_int_eq(td_read_response(fd, &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    close(fd);
    stop();
}
END_TEST

/* Issue 14 defect 5: a second daemon on the port fails with a clear error, unless both ask for sharing. */
START_TEST(second_daemon_on_the_port_fails)
{
    start(NULL);
    char port[16];
    snprintf(port, sizeof port, "%d", D.port);
    const char *same[] = {"--port", port, NULL};
    daemon_proc b;
    ck_assert_int_eq(td_start(&b, same, NULL, 0), 0);
    int st = td_stop(&b, 0, 30);
    ck_assert_msg(st == 1, "second daemon on port %s: exit status %d", port, st);
    char *log = tu_read_file(b.log_path, NULL);
    ck_assert_msg(log && strstr(log, "address already in use") && strstr(log, "reuse_port"), "%s", log ? log : "");
    free(log);
    stop();
    const char *shared[] = {"--reuse-port", NULL};
    start(shared);
    snprintf(port, sizeof port, "%d", D.port);
    const char *shared_same[] = {"--port", port, "--reuse-port", NULL};
    ck_assert_int_eq(td_start(&b, shared_same, NULL, 0), 0); /* (td_start would poll its own port) */
    double end = td_now() + 60;
    while (td_alive(&b) && td_now() < end && !(log = tu_read_file(b.log_path, NULL), log && strstr(log, "ready:"))) {
        free(log);
        usleep(50000);
    }
    ck_assert_msg(td_alive(&b) && log && strstr(log, "ready: serving"), "second daemon with reuse_port: %s",
                  log ? log : "");
    free(log);
    ck_assert_int_eq(td_stop(&b, SIGTERM, 30), 0);
    stop();
}
END_TEST

static void write_key(const char *path, size_t len, mode_t mode)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < len; i++)
        fputc('A' + (int)(i * 7 % 26), f);
    fputs("\n", f);
    fclose(f);
    chmod(path, mode);
}

static char *auth_header(const char *keyf, size_t len)
{
    size_t n;
    char *k = tu_read_file(keyf, &n);
    ck_assert(k && n > len);
    char *h = malloc(len + 32);
    snprintf(h, len + 32, "Authorization: Bearer %.*s\r\n", (int)len, k);
    free(k);
    return h;
}

/* Issue 14 defect 8: a 3000-byte key from a file works whole and its first 255 bytes do not;
 * over 4096 bytes the start is refused. A world-readable key file is warned about. */
START_TEST(long_key_file)
{
    char keyf[128];
    snprintf(keyf, sizeof keyf, "/tmp/layad-abuse-key-%d", (int)getpid());
    write_key(keyf, 3000, 0644);
    const char *args[] = {"--api-key-file", keyf, NULL};
    start(args);
    const char *b = "{\"state\": \"x\", " Q1 "}";
    td_resp r;
    char *full = auth_header(keyf, 3000), *cut = auth_header(keyf, 255);
    ck_assert_int_eq(td_request(D.port, "POST", "/decide", full, b, strlen(b), &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(D.port, "POST", "/decide", cut, b, strlen(b), &r), 0);
    ck_assert_int_eq(r.status, 401);
    td_resp_free(&r);
    free(full);
    free(cut);
    stop();
    char *log = tu_read_file(D.log_path, NULL);
    ck_assert_msg(log && strstr(log, "readable by every user"), "no warning for a 0644 key file");
    free(log);
    write_key(keyf, 4097, 0600);
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, args, NULL, 0), 0);
    int st = td_stop(&d, 0, 30);
    log = tu_read_file(d.log_path, NULL);
    ck_assert_msg(st == 2 && log && strstr(log, "longer than 4096 bytes") && !strstr(log, "readable by every"),
                  "exit %d: %s", st, log ? log : "");
    free(log);
    unlink(keyf);
}
END_TEST

/* --api-key on the command line is warned about and blanked in /proc/PID/cmdline. */
START_TEST(api_key_flag_is_warned_and_blanked)
{
    const char *args[] = {"--api-key", "s3cret-on-argv", NULL};
    start(args);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)D.pid);
    size_t n;
    char *cmd = tu_read_file(path, &n);
    ck_assert_ptr_nonnull(cmd);
    ck_assert_ptr_null(memmem(cmd, n, "s3cret", 6));
    free(cmd);
    td_resp r;
    const char *b = "{\"state\": \"x\", " Q1 "}";
    ck_assert_int_eq(td_request(D.port, "POST", "/decide", "Authorization: Bearer s3cret-on-argv\r\n", b, strlen(b),
                                &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    stop();
    char *log = tu_read_file(D.log_path, NULL);
    ck_assert_msg(log && strstr(log, "--api-key on the command line"), "no warning");
    free(log);
}
END_TEST

/* A non-loopback bind without a key refuses to start (before it listens) unless asked on purpose. */
START_TEST(remote_bind_without_key_refused)
{
    static const char *const binds[] = {"0.0.0.0", "::"};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"--bind", binds[i], NULL};
        daemon_proc d;
        ck_assert_int_eq(td_start(&d, args, NULL, 0), 0);
        int st = td_stop(&d, 0, 30);
        char *log = tu_read_file(d.log_path, NULL);
        ck_assert_msg(st == 2 && log && strstr(log, "allow_unauthenticated_remote") && !strstr(log, "listening"),
                      "--bind %s: exit %d: %s", binds[i], st, log ? log : "");
        free(log);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("daemon_abuse");
    TCase *tc = tcase_create("abuse");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, state_of_120k_keys_is_answered_in_linear_time);
    tcase_add_test(tc, empty_strings_are_answered);
    tcase_add_test(tc, control_bytes_stay_in_their_text_log_line);
    tcase_add_test(tc, control_bytes_stay_in_their_json_log_line);
    suite_add_tcase(s, tc);
    TCase *front = tcase_create("front");
    tcase_set_timeout(front, 120);
    tcase_add_test(front, slowloris_does_not_starve_good_clients);
    tcase_add_test(front, per_ip_cap_and_deadlines);
    tcase_add_test(front, idle_connections_make_room_first);
    tcase_add_test(front, request_framing_is_enforced);
    tcase_add_test(front, second_daemon_on_the_port_fails);
    tcase_add_test(front, long_key_file);
    tcase_add_test(front, api_key_flag_is_warned_and_blanked);
    tcase_add_test(front, remote_bind_without_key_refused);
    suite_add_tcase(s, front);
    return tu_run(s);
}
