/*
 * test_noalloc.c - the serving path calls no allocator: from the body bytes to
 * the response bytes, a request in a reserved arena (the daemon's request
 * slot, server/http/slots.h) makes zero malloc/calloc/realloc/free/strdup/...
 * calls in our code, for answers and for every kind of refusal.
 *
 * How it counts: this binary is linked with -Wl,--wrap for each allocator
 * function (Makefile), so every call from our static libraries and from this
 * file goes through the __wrap_ functions below, which count while
 * g_counting is set and pass the call on. Calls made inside shared libraries
 * (libc, libpcre2, libutf8proc, libmicrohttpd, libgomp) are not seen, and are
 * not ours to remove. The path driven here is the daemon's, minus the HTTP
 * plumbing: request_parse_in in a reserved arena, the CPU forward
 * (request_run), request_format or request_error_write into the same arena,
 * then the arena's reset. The slot pool the HTTP layer takes that arena from
 * is checked on its own, and the whole daemon (cmd_serve in a thread of this
 * process, CPU backend, libmicrohttpd) answers 200 decisions and refusals on
 * one keep-alive connection while counting: http.c, routes, the scheduler,
 * the worker and the telemetry included.
 *
 * Warm-up first: a thread's first encode creates its tokenizer word cache and
 * regex match data (per thread, kept), so every body is run once uncounted.
 * No Check assertion runs while counting: libcheck is linked statically and
 * its assertions allocate.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "model/backend/cpu.h"
#include "model/base/arena.h"
#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "server/api/request.h"
#include "server/cli/commands.h"
#include "server/http/slots.h"
#include "tests/lib/daemon.h"
#include "tests/lib/testutil.h"

/* ---- counting allocator ----------------------------------------------------- */

enum { K_MALLOC, K_CALLOC, K_REALLOC, K_FREE, K_STRDUP, K_STRNDUP, K_MEMALIGN, K_ALIGNED, K_N };
static const char *const k_name[K_N] = {"malloc", "calloc", "realloc", "free", "strdup", "strndup",
                                        "posix_memalign", "aligned_alloc"};
static _Atomic int g_counting;
static _Atomic long g_calls[K_N];

static void count(int k)
{
    if (atomic_load(&g_counting))
        atomic_fetch_add(&g_calls[k], 1);
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);

void *__wrap_malloc(size_t n) { count(K_MALLOC); return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { count(K_CALLOC); return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { count(K_REALLOC); return __real_realloc(p, n); }
void __wrap_free(void *p) { count(K_FREE); __real_free(p); }
char *__wrap_strdup(const char *s) { count(K_STRDUP); return __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { count(K_STRNDUP); return __real_strndup(s, n); }
int __wrap_posix_memalign(void **p, size_t a, size_t n) { count(K_MEMALIGN); return __real_posix_memalign(p, a, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { count(K_ALIGNED); return __real_aligned_alloc(a, n); }

static long counted(char *what, size_t cap)
{
    long total = 0;
    what[0] = 0;
    for (int k = 0; k < K_N; k++) {
        long n = atomic_load(&g_calls[k]);
        total += n;
        if (n)
            snprintf(what + strlen(what), cap - strlen(what), " %s %ld", k_name[k], n);
    }
    return total;
}

/* ---- the bodies ------------------------------------------------------------- */

#define Q3 "\"questions\": {\"department\": {\"type\": \"choice\", "                                           \
           "\"instructions\": \"Which team should handle this?\", "                                             \
           "\"criteria\": {\"billing\": \"Payments, invoicing, refunds\", \"technical\": \"Bugs, outages\", "      \
           "\"sales\": null, \"other\": \"Anything else\"}}, "                                                      \
           "\"frustration\": {\"type\": \"score\", \"instructions\": \"How frustrated is the customer?\", "        \
           "\"criteria\": [\"Calm\", \"Frustrated\", \"Very angry\"]}, "                                             \
           "\"is_urgent\": {\"type\": \"noul\", \"instructions\": \"The message conveys urgency.\", "                \
           "\"criteria\": {\"true\": \"explicitly time-sensitive\", \"false\": \"no urgency\"}}}"
#define Q1 "\"questions\": {\"q\": {\"type\": \"choice\", \"instructions\": \"Pick one\", " \
           "\"criteria\": [\"a\", \"b\"]}}"

enum { PLAIN, STRICT, SYSTEMONE, BATCH, SMALL_LIMITS };

typedef struct body {
    const char *text;
    int mode;
    int status; /* expected */
} body;

static char g_long[24000], g_keys[16000], g_deep[4000], g_big[400000];

static const body g_bodies[] = {
    {"{\"state\": \"Help! My payouts have been failing for 3 days.\", " Q3 "}", PLAIN, 200},
    {"{\"states\": [\"a refund please\", {\"user\": \"bob\", \"msg\": [1, 2.5, null, true]}, "
     "[\"hi\", \"the app crashed\"]], " Q3 "}", PLAIN, 200},
    {"{\"state\": {\"ticket\": {\"id\": 12, \"tags\": [\"x\", \"y\"], "
     "\"body\": \"caf\\u00e9 \\ud83d\\ude00\"}}, " Q3 "}", PLAIN, 200},
    {g_long, PLAIN, 200},
    {"{\"state\": \"Refund my order\", " Q3 "}", STRICT, 200},
    {"{\"state\": \"Refund my order\", \"min_confidence\": {\"choice:3-5\": 0.4, \"default\": 0.2}, "
     "\"return_logits\": true, " Q3 "}", SYSTEMONE, 200},
    {"{\"states\": [\"one\", \"two\"], \"batch_size\": 4, \"sort_by_length\": true, " Q3 "}", BATCH, 200},
    {"{\"state\": \"x\", \"questions\": {}}", PLAIN, 200},
    {"{\"states\": [\"x\", \"y\"], \"questions\": {}}", PLAIN, 200},
    {g_keys, PLAIN, 200},
    {"{\"state\": \"x\", \"questions\": {\"o\": {\"type\": \"choice\", \"instructions\": \"Pick\", "
     "\"criteria\": [\"a\", \"b\", \"c\"], \"option_order\": [2, 0, 1]}}}", PLAIN, 200},
    {"{\"state\": \"x\", \"questions\": {\"n\": {\"type\": \"noul\", \"instructions\": \"Yes?\", "
     "\"labels\": {\"false\": \"nope\", \"true\": \"yep\"}}}}", PLAIN, 200},
    /* refusals, each from a different check */
    {"{\"state\": \"x\", ", PLAIN, 400},
    {"[1, 2]", PLAIN, 400},
    {"{\"state\": \"x\"}", PLAIN, 400},
    {"{\"state\": \"\\ud800\", " Q1 "}", PLAIN, 400},
    {g_deep, PLAIN, 400},
    {"{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"pick\", \"instructions\": \"I\"}}}", PLAIN, 422},
    {"{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"choice\", \"instructions\": \"I\", "
     "\"criteria\": [1, 1.0, true]}}}", PLAIN, 422},
    {"{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"choice\", \"instructions\": \"I\", "
     "\"criteria\": [[1], \"b\"]}}}", PLAIN, 422},
    {"{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"noul\", \"instructions\": \"I\", "
     "\"criteria\": {\"Yes\": \"a\", \"NO\": \"b\", \"yes\": \"c\", \"maybe\": \"d\"}}}}", PLAIN, 422},
    {"{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"choice\", \"instructions\": \"I\", "
     "\"criteria\": [\"a\", \"b\"], \"option_order\": [0, 0]}}}", PLAIN, 422},
    {"{\"state\": \"x\", \"questions\": {\"  \": {\"type\": \"noul\", \"instructions\": \"I\"}}}", PLAIN, 422},
    {"{\"state\": \"x\", \"model\": \"nope\", " Q1 "}", PLAIN, 422},
    {"{\"state\": \"x\", \"task\": [\"typed\", 1], " Q1 "}", PLAIN, 422},
    {"{\"state\": \"x\", \"min_confidence\": {\"choice:3-5\": 2}, " Q1 "}", PLAIN, 422},
    {"{\"state\": \"x\", \"max_len\": 12, " Q3 "}", PLAIN, 422},
    {"{\"state\": \"x\", \"hooks\": 1, " Q1 "}", PLAIN, 422},
    {"{\"states\": [\"x\"], " Q1 "}", SYSTEMONE, 422},
    {"{\"state\": \"x\", \"questions\": {\"a\": {\"type\": \"noul\", \"instructions\": \"I\"}, "
     "\"b\": {\"type\": \"noul\", \"instructions\": \"I\"}, \"c\": {\"type\": \"noul\", \"instructions\": \"I\"}}}",
     SMALL_LIMITS, 413},
    {"{\"state\": \"a state longer than the limit\", " Q1 "}", SMALL_LIMITS, 413},
    {g_big, PLAIN, 413}, /* more than the small arena holds */
};
#define N_BODIES ((int)(sizeof g_bodies / sizeof g_bodies[0]))

/* A long state that truncates, an object past the linear key scan (a keyed hash index),
 * nesting past the parser's depth limit, and a body larger than the small arena. */
static void make_bodies(void)
{
    size_t n = (size_t)snprintf(g_long, sizeof g_long, "{\"state\": \"");
    while (n < sizeof g_long - 600)
        n += (size_t)snprintf(g_long + n, sizeof g_long - n, "the payout failed again, word %zu; ", n);
    snprintf(g_long + n, sizeof g_long - n, "\", " Q3 "}");
    n = (size_t)snprintf(g_keys, sizeof g_keys, "{\"state\": {");
    for (int i = 0; n < sizeof g_keys - 400; i++)
        n += (size_t)snprintf(g_keys + n, sizeof g_keys - n, "%s\"k%d\": %d", i ? ", " : "", i % 900, i);
    snprintf(g_keys + n, sizeof g_keys - n, "}, " Q1 "}");
    n = 0;
    while (n < sizeof g_deep - 2)
        g_deep[n++] = '[';
    g_deep[n] = 0;
    n = (size_t)snprintf(g_big, sizeof g_big, "{\"state\": [");
    while (n < sizeof g_big - 200)
        n += (size_t)snprintf(g_big + n, sizeof g_big - n, "[1, {\"a\": 2}], ");
    snprintf(g_big + n, sizeof g_big - n, "0], " Q1 "}");
}

static laya_checkpoint g_ck;
static laya_backend *g_cpu;
static arena g_arena, g_small; /* a slot's arena, and one too small for g_big */

static void setup(void)
{
    layad_error err = {0};
    ck_assert_msg(checkpoint_open(&g_ck, tu_tiny(), &err) == 0, "%s: %s", tu_tiny(), err.msg);
    g_cpu = cpu_backend_create(&g_ck, 8, 1, &err);
    ck_assert_msg(g_cpu != NULL, "cpu backend: %s", err.msg);
    ck_assert(arena_reserve(&g_arena, (size_t)64 << 20) == 0);
    ck_assert(arena_reserve(&g_small, (size_t)1 << 20) == 0);
    make_bodies();
}

static void teardown(void)
{
    arena_release(&g_small);
    arena_release(&g_arena);
    g_cpu->ops->destroy(g_cpu);
    checkpoint_close(&g_ck);
}

/* One request the way the daemon serves it: parse, forward, format (or the error body),
 * all in a; then a is reset. Returns the status, or -1 when no error body could be made. */
static int serve(const body *b)
{
    static const char *const names[] = {"laya-rl-agent", "laya", NULL};
    arena *a = b->text == g_big ? &g_small : &g_arena;
    decide_opts o;
    decide_opts_default(&o);
    o.model_names = names;
    o.jev_strict = b->mode == STRICT;
    o.systemone = o.jev_confidence = b->mode == SYSTEMONE || b->mode == BATCH;
    o.systemone_batch = b->mode == BATCH;
    if (b->mode == SMALL_LIMITS) {
        o.max_questions = 2;
        o.max_state_bytes = 10;
    }
    layad_error err = {0};
    laya_request *r = NULL;
    size_t n = 0;
    char *out = NULL;
    if (request_parse_in(a, &g_ck, b->text, strlen(b->text), &o, &r, &err) == 0 &&
        request_run(r, g_cpu, 8, &err) == 0)
        out = request_format(r, &n, &err);
    int status = out ? 200 : err.status;
    if (!out) {
        pj_buf eb = pj_buf_in(a);
        request_error_write(&eb, &err, 0);
        if (eb.failed || !eb.len)
            status = -1;
    }
    arena_reset(a, (size_t)-1);
    return status;
}

START_TEST(request_path_makes_no_allocator_calls)
{
    for (int i = 0; i < N_BODIES; i++) { /* warm-up, and the statuses */
        int st = serve(&g_bodies[i]);
        ck_assert_msg(st == g_bodies[i].status, "body %d: status %d, want %d", i, st, g_bodies[i].status);
    }
    int wrong = -1;
    atomic_store(&g_counting, 1);
    for (int i = 0; i < 200; i++)
        if (serve(&g_bodies[(i * 7) % N_BODIES]) != g_bodies[(i * 7) % N_BODIES].status)
            wrong = (i * 7) % N_BODIES;
    atomic_store(&g_counting, 0);
    ck_assert_msg(wrong < 0, "body %d answered differently the second time", wrong);
    char what[256];
    long total = counted(what, sizeof what);
    ck_assert_msg(total == 0, "200 requests made %ld allocator calls:%s", total, what);
}
END_TEST

/* The slot pool hands out each slot once, refuses when empty, takes a slot back after
 * its last reference, with its arena empty, and does all of it without an allocator call. */
START_TEST(slot_pool_reuses_without_allocating)
{
    layad_error err = {0};
    slot_pool *p = slots_create(2, 4096, &err);
    ck_assert_msg(p != NULL, "%s", err.msg);
    atomic_store(&g_counting, 1);
    req_slot *a = slot_get(p), *b = slot_get(p), *none = slot_get(p);
    void *mem = a ? arena_alloc(&a->a, 1000) : NULL;
    slot_ref(a);   /* a job's hold */
    slot_unref(a); /* the connection is done: the job still holds it */
    req_slot *still_none = slot_get(p);
    slot_unref(a); /* the job is gone: back in the pool, empty */
    req_slot *c = slot_get(p);
    size_t used = c ? c->a.used : 1;
    slot_unref(b);
    slot_unref(c);
    atomic_store(&g_counting, 0);
    ck_assert(a && b && a != b && !none && mem && !still_none);
    ck_assert_ptr_eq(c, a);
    ck_assert_uint_eq(used, 0);
    char what[256];
    ck_assert_msg(counted(what, sizeof what) == 0, "slots made allocator calls:%s", what);
    slots_destroy(p);
}
END_TEST

/* ---- the daemon in this process ------------------------------------------------ */

static char g_port[16], g_log[64];

static void *serve_thread(void *arg)
{
    (void)arg;
    char *argv[] = {"serve", "--model", (char *)tu_tiny(), "--device", "cpu", "--bind", "127.0.0.1",
                    "--port", g_port, "--log-file", g_log, "--cpu-threads", "1", NULL};
    return (void *)(long)cmd_serve((int)(sizeof argv / sizeof argv[0]) - 1, argv);
}

/* Sends one request on fd and reads its whole response (Content-Length framed) into buf;
 * returns the status, or -1. No allocation: a fixed buffer, plain syscalls. */
static int roundtrip(int fd, const char *path, const char *body, char *buf, size_t cap)
{
    char head[256];
    int hn = snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n", path, strlen(body));
    if (write(fd, head, (size_t)hn) != hn || write(fd, body, strlen(body)) != (ssize_t)strlen(body))
        return -1;
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
        buf[got] = 0;
        char *end = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "\r\nContent-Length: ");
        if (end && cl && got >= (size_t)(end + 4 - buf) + strtoul(cl + 18, NULL, 10))
            return atoi(buf + 9);
        if (got + 1 >= cap)
            return -1;
    }
}

START_TEST(daemon_answers_without_allocator_calls)
{
    snprintf(g_port, sizeof g_port, "%d", td_free_port());
    snprintf(g_log, sizeof g_log, "/tmp/layad-noalloc-%d.log", (int)getpid());
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_t t;
    ck_assert(pthread_create(&t, NULL, serve_thread, NULL) == 0);
    int fd = -1;
    static char buf[1 << 16];
    for (int i = 0; i < 600 && fd < 0; i++, usleep(50000)) { /* up to 30 s for load and warm-up */
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(g_port))};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(s, (struct sockaddr *)&a, sizeof a) == 0 &&
            roundtrip(s, "/decide", g_bodies[0].text, buf, sizeof buf) == 200)
            fd = s;
        else
            close(s);
    }
    ck_assert_msg(fd >= 0, "the daemon did not answer (log: %s)", g_log);
    static const char *const paths[] = {"/decide", "/v1/systemone"};
    for (int i = 0; i < N_BODIES; i++) /* warm-up: every HTTP thread may take this connection */
        for (int p = 0; p < 2; p++)
            if (g_bodies[i].mode == PLAIN && g_bodies[i].text != g_big)
                roundtrip(fd, paths[p], g_bodies[i].text, buf, sizeof buf);
    int failed = 0, answered = 0;
    atomic_store(&g_counting, 1);
    for (int i = 0; answered < 200; i++) {
        const body *b = &g_bodies[(i * 7) % N_BODIES];
        if (b->mode != PLAIN || b->text == g_big)
            continue;
        failed += roundtrip(fd, paths[i % 2], b->text, buf, sizeof buf) < 0;
        answered++;
    }
    atomic_store(&g_counting, 0);
    close(fd);
    pthread_kill(t, SIGTERM);
    kill(getpid(), SIGTERM);
    void *rc;
    pthread_join(t, &rc);
    char what[256];
    long total = counted(what, sizeof what);
    ck_assert_int_eq(failed, 0);
    ck_assert_msg(total == 0, "200 requests through the daemon made %ld allocator calls:%s", total, what);
    unlink(g_log);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("noalloc");
    TCase *tc = tcase_create("noalloc");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, request_path_makes_no_allocator_calls);
    tcase_add_test(tc, slot_pool_reuses_without_allocating);
    tcase_add_test(tc, daemon_answers_without_allocator_calls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
