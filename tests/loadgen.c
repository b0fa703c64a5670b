/*
 * loadgen.c - closed-loop HTTP load generator for `layad serve` (the daemon's
 * end-to-end benchmark).
 *
 * The fixed request mix (bench/README.md): a 1-question request of ~83 input
 * tokens, a 4-question request of ~300 input tokens in total, and a
 * 1-question request whose state fills the 512-token row. The states are
 * calibrated against the server itself (binary search on the word count,
 * reading usage.input_tokens back), so the mix means the same token counts on
 * any tokenizer. Each client keeps one keep-alive connection and cycles
 * through the mix; at each concurrency level the clients run for a warm-up
 * and then a fixed window; throughput and latency percentiles (exact, every
 * request kept) are over the requests that completed inside the window. Output: one JSON document (stdout or --out).
 * Each level also reports the server's own account of the same requests (their Server-Timing
 * stages: means, and the infer stage's percentiles per request type), so a slow request can be
 * told apart as the server's or the loopback's and client's.
 *
 * --gap-ms G makes each client wait G ms after every answer before its next request: traffic
 * that leaves the daemon idle between requests (its threads asleep, the GPU's clocks down), as
 * sporadic clients do, where the closed loop without a gap keeps everything hot.
 *
 * --slow-ms X lists each answer of at least X ms in its level ("slow": when it completed,
 * its type, its time and its raw Server-Timing), so that a tail's requests can be read one
 * by one: which of the server's stages, if any, held each.
 *
 *   build/loadgen --port 8080 --concurrency 1,8,64 --duration 10 [--gap-ms G] --label "..." --out FILE
 *
 * What good output looks like: "errors": 0 at every level, req/s rising with
 * concurrency until the device saturates, p50 of the 1-question request near
 * the forward time at concurrency 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define N_TYPES 3
#define MAX_CLIENTS 512

static const char *type_name[N_TYPES] = {"q1_83tok", "q4_300tok", "q1_512tok"};
static int type_questions[N_TYPES] = {1, 4, 1};
static int type_target[N_TYPES] = {83, 300, 512};

/* The states' 20 words (--text): plain ASCII, the default and every committed result's mix, or
 * text that takes the tokenizer's paths beyond ASCII: English with typographic quotes, dashes,
 * an ellipsis and accents (what chat clients and LLMs write), Russian, Chinese. */
static const char *const text_name[] = {"ascii", "typographic", "russian", "chinese"};
static const char *const text_words[][20] = {
    {"my", "payout", "failed", "again", "and", "the", "invoice", "shows", "a", "double", "charge", "please",
     "refund", "it", "today", "or", "escalate", "this", "ticket", "now"},
    {"\u201cmy", "payout\u201d", "failed\u2014", "again", "and", "the", "invoice", "shows", "a", "double",
     "charge\u2026", "please", "refund", "it\u2019s", "today", "or", "escalate", "caf\u00e9", "ticket", "na\u00efve"},
    {"\u043c\u043e\u0439", "\u043f\u043b\u0430\u0442\u0451\u0436", "\u0441\u043d\u043e\u0432\u0430",
     "\u043d\u0435", "\u043f\u0440\u043e\u0448\u0451\u043b", "\u0438", "\u0441\u0447\u0451\u0442",
     "\u043f\u043e\u043a\u0430\u0437\u044b\u0432\u0430\u0435\u0442",
     "\u0434\u0432\u043e\u0439\u043d\u043e\u0435", "\u0441\u043f\u0438\u0441\u0430\u043d\u0438\u0435",
     "\u043f\u043e\u0436\u0430\u043b\u0443\u0439\u0441\u0442\u0430",
     "\u0432\u0435\u0440\u043d\u0438\u0442\u0435", "\u0434\u0435\u043d\u044c\u0433\u0438",
     "\u0441\u0435\u0433\u043e\u0434\u043d\u044f", "\u0438\u043b\u0438",
     "\u043f\u0435\u0440\u0435\u0434\u0430\u0439\u0442\u0435", "\u0437\u0430\u044f\u0432\u043a\u0443",
     "\u0434\u0430\u043b\u044c\u0448\u0435", "\u0441\u0440\u043e\u0447\u043d\u043e",
     "\u0441\u0435\u0439\u0447\u0430\u0441"},
    {"\u6211\u7684", "\u4ed8\u6b3e", "\u53c8", "\u5931\u8d25", "\u4e86", "\u53d1\u7968", "\u663e\u793a",
     "\u91cd\u590d", "\u6263\u6b3e", "\u8bf7", "\u4eca\u5929", "\u9000\u6b3e", "\u6216\u8005",
     "\u5347\u7ea7", "\u8fd9\u4e2a", "\u5de5\u5355", "\u9a6c\u4e0a", "\u5904\u7406", "\u8c22\u8c22",
     "\u7d27\u6025"},
};
static int g_text; /* index into text_name / text_words */

static char *body[N_TYPES];
static size_t body_len[N_TYPES];
static int body_tokens[N_TYPES], body_words[N_TYPES];
static int g_port = 8080;
static const char *g_host = "127.0.0.1";
static char g_auth[300] = "";
static double g_gap_s; /* --gap-ms: a client's pause after each answer */
static double g_slow_ms; /* --slow-ms: answers at least this slow are listed one by one (0: none) */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- one keep-alive connection ------------------------------------------------ */

typedef struct conn {
    int fd;
    char *buf;
    size_t cap;
} conn;

static int conn_open(conn *c)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {120, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    inet_pton(AF_INET, g_host, &a.sin_addr);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a)) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static void conn_close(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* POSTs body to path; returns the status (0 on a transport error) and points
 * *resp at the response body inside c->buf. */
static int conn_post(conn *c, const char *path, const char *b, size_t n, const char **resp, size_t *resp_len)
{
    if (c->fd < 0 && conn_open(c))
        return 0;
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
                      path, g_host, g_auth, n);
    if (send(c->fd, head, (size_t)hn, MSG_NOSIGNAL | MSG_MORE) != hn || send(c->fd, b, n, MSG_NOSIGNAL) != (ssize_t)n) {
        conn_close(c);
        return 0;
    }
    size_t got = 0, head_end = 0;
    long want = -1;
    for (;;) {
        if (head_end && want >= 0 && got >= head_end + (size_t)want)
            break;
        if (got + 1 >= c->cap) {
            c->cap = c->cap ? c->cap * 2 : 65536;
            c->buf = realloc(c->buf, c->cap);
            if (!c->buf)
                abort();
        }
        ssize_t k = recv(c->fd, c->buf + got, c->cap - got - 1, 0);
        if (k <= 0) {
            conn_close(c);
            return 0;
        }
        got += (size_t)k;
        c->buf[got] = 0;
        if (!head_end) {
            char *e = strstr(c->buf, "\r\n\r\n");
            if (e) {
                head_end = (size_t)(e - c->buf) + 4;
                char *cl = strcasestr(c->buf, "\r\nContent-Length:");
                if (!cl || cl > e) {
                    conn_close(c);
                    return 0;
                }
                want = atol(cl + 17);
            }
        }
    }
    int status = atoi(c->buf + 9);
    if (strcasestr(c->buf, "\r\nConnection: close") && strcasestr(c->buf, "\r\nConnection: close") < c->buf + head_end)
        conn_close(c);
    *resp = c->buf + head_end;
    *resp_len = (size_t)want;
    return status;
}

/* ---- the mix ---------------------------------------------------------------------- */

static char *make_body(int type, int words)
{
    const char *const *w = text_words[g_text];
    size_t cap = (size_t)words * 32 + 2048; /* a word and its space: at most 31 bytes */
    char *s = malloc(cap);
    size_t n = (size_t)snprintf(s, cap, "{\"state\": \"");
    for (int i = 0; i < words; i++)
        n += (size_t)snprintf(s + n, cap - n, "%s%s", i ? " " : "", w[(i * 7 + 3) % 20]);
    if (type_questions[type] == 1)
        n += (size_t)snprintf(s + n, cap - n,
                              "\", \"questions\": {\"department\": {\"type\": \"choice\", \"instructions\": \"Which "
                              "team should handle this?\", \"criteria\": {\"billing\": \"Payments, invoicing, "
                              "refunds\", \"technical\": \"Bugs, outages, integrations\", \"sales\": null}}}}");
    else
        n += (size_t)snprintf(
            s + n, cap - n,
            "\", \"questions\": {\"department\": {\"type\": \"choice\", \"instructions\": \"Which team should "
            "handle this?\", \"criteria\": {\"billing\": \"Payments, invoicing, refunds\", \"technical\": \"Bugs, "
            "outages, integrations\", \"sales\": null}}, \"frustration\": {\"type\": \"score\", \"instructions\": "
            "\"How frustrated is the customer?\", \"criteria\": [\"Calm\", \"Frustrated\", \"Very angry\"]}, "
            "\"is_urgent\": {\"type\": \"noul\", \"instructions\": \"The message conveys urgency.\", \"criteria\": "
            "{\"true\": \"explicitly time-sensitive\", \"false\": \"no urgency\"}}, \"refund\": {\"type\": \"noul\", "
            "\"instructions\": \"The customer asks for money back.\"}}}");
    return s;
}

static int input_tokens(int type, int words)
{
    conn c = {-1, NULL, 0};
    char *b = make_body(type, words);
    const char *resp;
    size_t rl;
    int st = conn_post(&c, "/decide", b, strlen(b), &resp, &rl);
    int tokens = -1;
    if (st == 200) {
        json_t *j = json_loadb(resp, rl, 0, NULL);
        tokens = (int)json_integer_value(json_object_get(json_object_get(j, "usage"), "input_tokens"));
        json_decref(j);
    } else {
        fprintf(stderr, "loadgen: calibration request got status %d\n", st);
    }
    free(b);
    conn_close(&c);
    free(c.buf);
    return tokens;
}

static void calibrate(void)
{
    for (int t = 0; t < N_TYPES; t++) {
        int lo = 1, hi = 2048, best = 1, best_tokens = input_tokens(t, 1);
        if (best_tokens < 0)
            exit(1);
        while (lo <= hi) { /* smallest word count reaching the target */
            int mid = (lo + hi) / 2, k = input_tokens(t, mid);
            if (k < 0)
                exit(1);
            if (k >= type_target[t]) {
                best = mid;
                best_tokens = k;
                hi = mid - 1;
            } else {
                lo = mid + 1;
            }
        }
        body_words[t] = best;
        body_tokens[t] = best_tokens;
        body[t] = make_body(t, best);
        body_len[t] = strlen(body[t]);
    }
}

/* ---- clients ---------------------------------------------------------------------- */

typedef struct sample {
    float ms;
    float infer_ms; /* the server's infer stage (Server-Timing), -1 when absent */
    unsigned char type;
} sample;

/* The Server-Timing stages of a client's recorded answers: name, sum and count each. */
#define MAX_STAGES 16
typedef struct stage_sums {
    char name[MAX_STAGES][24];
    double sum_ms[MAX_STAGES];
    long n[MAX_STAGES];
    int k;
} stage_sums;

/* An answer of at least --slow-ms: when it completed (s into the window), its type and
 * time, its Server-Timing header's value. */
#define MAX_SLOW 200
typedef struct slow {
    float at_s, ms;
    unsigned char type;
    char timing[400];
} slow;

typedef struct client {
    int id;
    double t_start, t_end; /* record window */
    double t_stop;
    sample *s;
    size_t n, cap;
    long errors;
    stage_sums st;
    slow *slow; /* MAX_SLOW of them, allocated when --slow-ms is given */
    int n_slow;
    pthread_t th;
} client;

/* The slot of stage name (its first 23 bytes) in t, added when new; -1 when t is full. */
static int stage_slot(stage_sums *t, const char *name, size_t len)
{
    len = len < sizeof t->name[0] - 1 ? len : sizeof t->name[0] - 1;
    int i = 0;
    while (i < t->k && (strncmp(t->name[i], name, len) || t->name[i][len]))
        i++;
    if (i == t->k) {
        if (t->k == MAX_STAGES)
            return -1;
        memcpy(t->name[i], name, len);
        t->name[i][len] = 0;
        t->k++;
    }
    return i;
}

/* n answers' sum_ms of stage name into t (stages beyond MAX_STAGES are dropped). */
static void stage_add(stage_sums *t, const char *name, size_t len, double sum_ms, long n)
{
    const int i = stage_slot(t, name, len);
    if (i >= 0)
        t->sum_ms[i] += sum_ms, t->n[i] += n;
}

/* The value of the Server-Timing header among head's bytes [0, n) ("a;dur=0.1, b;dur=2"),
 * its end at *end; NULL when the response has none. */
static const char *timing_value(const char *head, size_t n, const char **end)
{
    const char *h = strcasestr(head, "\r\nServer-Timing:");
    if (!h || h >= head + n)
        return NULL;
    const char *v = h + 16 + strspn(h + 16, " ");
    *end = strstr(v, "\r\n");
    return *end ? v : NULL;
}

/* The stages of a Server-Timing value [p, end) into t; returns the infer stage's ms, or -1
 * when it has none. */
static float server_timing(const char *p, const char *end, stage_sums *t)
{
    float infer = -1;
    while (p && p < end) {
        p += strspn(p, " ,");
        const char *semi = strstr(p, ";dur=");
        if (!semi || semi >= end)
            break;
        double dur = atof(semi + 5);
        stage_add(t, p, (size_t)(semi - p), dur, 1);
        if (semi - p == 5 && !strncmp(p, "infer", 5))
            infer = (float)dur;
        p = strchr(semi, ',');
    }
    return infer;
}

/* A slow answer with its Server-Timing value [v, end) (v NULL: none), cut to fit. */
static void slow_record(slow *w, double at_s, double secs, int type, const char *v, const char *end)
{
    *w = (slow){(float)at_s, (float)(secs * 1e3), (unsigned char)type, ""};
    if (v)
        snprintf(w->timing, sizeof w->timing, "%.*s", (int)(end - v), v);
}

/* The level's slow answers, client by client, in the order they completed. */
static json_t *slow_json(const client *cl, int conc)
{
    json_t *a = json_array();
    for (int i = 0; i < conc; i++)
        for (int k = 0; k < cl[i].n_slow; k++) {
            const slow *w = &cl[i].slow[k];
            json_array_append_new(a, json_pack("{s:i,s:f,s:s,s:f,s:s}", "client", i, "at_s", w->at_s, "type",
                                               type_name[w->type], "ms", w->ms, "server_timing", w->timing));
        }
    return a;
}

/* One answer of the client's: counted if it completed inside the window. */
static void client_record(client *cl, int st, double t0, double t1, const conn *c, const char *resp, int type)
{
    if (t1 < cl->t_start || t1 > cl->t_stop)
        return; /* completed during the warm-up or after the window */
    if (st != 200) {
        cl->errors++;
        return;
    }
    if (cl->n == cl->cap) {
        cl->cap = cl->cap ? cl->cap * 2 : 4096;
        cl->s = realloc(cl->s, cl->cap * sizeof *cl->s);
        if (!cl->s)
            abort();
    }
    const char *end = NULL, *v = timing_value(c->buf, (size_t)(resp - c->buf), &end);
    const float infer = v ? server_timing(v, end, &cl->st) : -1;
    cl->s[cl->n++] = (sample){(float)((t1 - t0) * 1e3), infer, (unsigned char)type};
    if (cl->slow && (t1 - t0) * 1e3 >= g_slow_ms && cl->n_slow < MAX_SLOW)
        slow_record(&cl->slow[cl->n_slow++], t1 - cl->t_start, t1 - t0, type, v, end);
}

static void *client_main(void *p)
{
    client *cl = p;
    conn c = {-1, NULL, 0};
    for (long i = cl->id;; i++) {
        if (g_gap_s > 0 && i != cl->id) /* sporadic traffic: the server idles between answer and request */
            usleep((useconds_t)(g_gap_s * 1e6));
        double t0 = now_s();
        if (t0 >= cl->t_stop)
            break;
        int type = (int)(i % N_TYPES);
        const char *resp = NULL;
        size_t rl;
        int st = conn_post(&c, "/decide", body[type], body_len[type], &resp, &rl);
        client_record(cl, st, t0, now_s(), &c, resp, type);
        if (!st)
            usleep(1000);
    }
    conn_close(&c);
    free(c.buf);
    return NULL;
}

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n). */
static double pct(const float *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static json_t *lat_json(float *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_f);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    return json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}", "n", (json_int_t)n, "p50_ms", pct(v, n, 50), "p95_ms", pct(v, n, 95),
                     "p99_ms", pct(v, n, 99), "mean_ms", n ? sum / (double)n : 0.0, "max_ms", n ? v[n - 1] : 0.0);
}

/* Latency percentiles per request type over the clients' samples: the client's (server 0) or
 * the server's infer stage (server 1, samples without one left out). */
static json_t *by_type_json(const client *cl, int conc, size_t total, int server)
{
    json_t *by = json_object();
    float *v = malloc((total + 1) * sizeof *v);
    for (int t = 0; t < N_TYPES; t++) {
        size_t n = 0;
        for (int i = 0; i < conc; i++)
            for (size_t k = 0; k < cl[i].n; k++) {
                const sample *x = &cl[i].s[k];
                if (x->type == t && (!server || x->infer_ms >= 0))
                    v[n++] = server ? x->infer_ms : x->ms;
            }
        json_object_set_new(by, type_name[t], lat_json(v, n));
    }
    free(v);
    return by;
}

/* The server's account of the level (Server-Timing): each stage's mean over the answers that
 * carried it, and the infer stage's percentiles per request type. */
static json_t *server_json(const client *cl, int conc, size_t total)
{
    stage_sums all = {0};
    for (int i = 0; i < conc; i++)
        for (int k = 0; k < cl[i].st.k; k++)
            stage_add(&all, cl[i].st.name[k], strlen(cl[i].st.name[k]), cl[i].st.sum_ms[k], cl[i].st.n[k]);
    json_t *mean = json_object();
    for (int k = 0; k < all.k; k++)
        json_object_set_new(mean, all.name[k], json_real(all.sum_ms[k] / (double)all.n[k]));
    return json_pack("{s:o,s:o}", "stage_mean_ms", mean, "infer_by_type", by_type_json(cl, conc, total, 1));
}

/* Runs conc clients for the warm-up and the window; returns the samples recorded, *errors the failures. */
static size_t run_clients(client *cl, int conc, double warmup, double duration, long *errors)
{
    double t0 = now_s();
    size_t total = 0;
    for (int i = 0; i < conc; i++) {
        cl[i].id = i;
        cl[i].t_start = t0 + warmup;
        cl[i].t_stop = t0 + warmup + duration;
        if (g_slow_ms > 0 && !(cl[i].slow = calloc(MAX_SLOW, sizeof *cl[i].slow)))
            abort();
        pthread_create(&cl[i].th, NULL, client_main, &cl[i]);
    }
    *errors = 0;
    for (int i = 0; i < conc; i++) {
        pthread_join(cl[i].th, NULL);
        total += cl[i].n;
        *errors += cl[i].errors;
    }
    return total;
}

static json_t *run_level(int conc, double warmup, double duration)
{
    client *cl = calloc((size_t)conc, sizeof *cl);
    long errors;
    const size_t total = run_clients(cl, conc, warmup, duration, &errors);
    const double elapsed = duration; /* completions inside [t_start, t_stop] only */
    float *all = malloc((total + 1) * sizeof *all);
    size_t na = 0;
    double tok = 0;
    for (int i = 0; i < conc; i++)
        for (size_t k = 0; k < cl[i].n; k++) {
            all[na++] = cl[i].s[k].ms;
            tok += body_tokens[cl[i].s[k].type];
        }
    json_t *lv = json_pack("{s:i,s:f,s:f,s:I,s:I,s:f,s:f,s:o,s:o,s:o}", "concurrency", conc, "gap_ms", g_gap_s * 1e3,
                           "duration_s", elapsed, "requests", (json_int_t)total, "errors", (json_int_t)errors,
                           "requests_per_s", (double)total / elapsed, "input_tokens_per_s", tok / elapsed, "latency",
                           lat_json(all, na), "by_type", by_type_json(cl, conc, total, 0), "server",
                           server_json(cl, conc, total));
    fprintf(stderr,
            "loadgen: concurrency %d, gap %.1f ms: %zu requests, %ld errors, %.1f req/s, p50 %.2f ms, p99 %.2f ms\n",
            conc, g_gap_s * 1e3, total, errors, (double)total / elapsed,
            json_real_value(json_object_get(json_object_get(lv, "latency"), "p50_ms")),
            json_real_value(json_object_get(json_object_get(lv, "latency"), "p99_ms")));
    if (g_slow_ms > 0)
        json_object_set_new(lv, "slow", slow_json(cl, conc));
    free(all);
    for (int i = 0; i < conc; i++)
        free(cl[i].s), free(cl[i].slow);
    free(cl);
    return lv;
}

static char *sha256_hex(void)
{
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_DigestInit_ex(x, EVP_sha256(), NULL);
    for (int t = 0; t < N_TYPES; t++)
        EVP_DigestUpdate(x, body[t], body_len[t]);
    EVP_DigestFinal_ex(x, md, &mdlen);
    EVP_MD_CTX_free(x);
    static char hex[65];
    for (unsigned i = 0; i < 32; i++)
        sprintf(hex + 2 * i, "%02x", md[i]);
    return hex;
}

static json_t *get_json(const char *path)
{
    conn c = {-1, NULL, 0};
    if (conn_open(&c))
        return json_null();
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n", path, g_auth);
    json_t *j = NULL;
    if (send(c.fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
        static char buf[65536];
        size_t got = 0;
        ssize_t k;
        while (got + 1 < sizeof buf && (k = recv(c.fd, buf + got, sizeof buf - 1 - got, 0)) > 0)
            got += (size_t)k;
        buf[got] = 0;
        char *e = strstr(buf, "\r\n\r\n");
        if (e)
            j = json_loads(e + 4, 0, NULL);
    }
    conn_close(&c);
    return j ? j : json_null();
}

static int text_index(const char *name)
{
    for (int i = 0; i < (int)(sizeof text_name / sizeof text_name[0]); i++)
        if (!strcmp(name, text_name[i]))
            return i;
    return -1;
}

/* The command line; 2 on a bad one (usage printed), else 0. */
typedef struct {
    const char *levels, *label, *out;
    json_t *meta;
    double duration, warmup;
} lg_args;

static int parse_args(int argc, char **argv, lg_args *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--port") && v)
            g_port = atoi(v), i++;
        else if (!strcmp(a, "--host") && v)
            g_host = v, i++;
        else if (!strcmp(a, "--concurrency") && v)
            o->levels = v, i++;
        else if (!strcmp(a, "--duration") && v)
            o->duration = atof(v), i++;
        else if (!strcmp(a, "--warmup") && v)
            o->warmup = atof(v), i++;
        else if (!strcmp(a, "--gap-ms") && v && atof(v) >= 0)
            g_gap_s = atof(v) * 1e-3, i++;
        else if (!strcmp(a, "--slow-ms") && v && atof(v) > 0)
            g_slow_ms = atof(v), i++;
        else if (!strcmp(a, "--label") && v)
            o->label = v, i++;
        else if (!strcmp(a, "--out") && v)
            o->out = v, i++;
        else if (!strcmp(a, "--meta") && v && strchr(v, '=')) {
            char k[128];
            snprintf(k, sizeof k, "%.*s", (int)(strchr(v, '=') - v), v);
            json_object_set_new(o->meta, k, json_string(strchr(v, '=') + 1));
            i++;
        } else if (!strcmp(a, "--key") && v)
            snprintf(g_auth, sizeof g_auth, "Authorization: Bearer %.256s\r\n", v), i++;
        else if (!strcmp(a, "--text") && v && text_index(v) >= 0)
            g_text = text_index(v), i++;
        else {
            fprintf(stderr, "usage: loadgen [--host H] [--port P] [--concurrency 1,8,64] [--duration S] "
                            "[--warmup S] [--gap-ms G] [--slow-ms X] [--label TEXT] [--meta KEY=VALUE]... [--key KEY] "
                            "[--text ascii|typographic|russian|chinese] [--out FILE]\n");
            return 2;
        }
    }
    return 0;
}

/* This machine's CPU model name (/proc/cpuinfo), "unknown" when not found. */
static void cpu_model(char cpu[256])
{
    snprintf(cpu, 256, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            snprintf(cpu, 256, "%.200s", c ? c + 2 : line);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    fclose(f);
}

/* The report: the run's inputs, machine and server, then the levels' results. */
static json_t *report(const lg_args *o, json_t *res)
{
    json_t *mix = json_array();
    for (int t = 0; t < N_TYPES; t++)
        json_array_append_new(mix, json_pack("{s:s,s:i,s:i,s:i,s:i}", "name", type_name[t], "questions",
                                             type_questions[t], "target_input_tokens", type_target[t],
                                             "input_tokens", body_tokens[t], "state_words", body_words[t]));
    struct utsname u;
    uname(&u);
    char cpu[256];
    cpu_model(cpu);
    return json_pack("{s:s,s:O,s:{s:s,s:s,s:s,s:i},s:o,s:s,s:s,s:o,s:{s:f,s:f,s:s},s:o,s:o}", "label", o->label,
                     "meta", o->meta, "machine", "hostname", u.nodename, "kernel", u.release, "cpu", cpu, "cpus",
                     (int)sysconf(_SC_NPROCESSORS_ONLN), "server", get_json("/health"), "inputs_sha256",
                     sha256_hex(), "text", text_name[g_text], "mix", mix, "method", "warmup_s", o->warmup,
                     "duration_s", o->duration, "loop",
                     "closed loop, one keep-alive connection per client, mix round-robin per client; "
                     "requests completed inside the window after the warm-up",
                     "levels", res, "server_metrics_note",
                     json_string("latency = client-side, request sent to response read, loopback"));
}

/* The report to out, or to stdout when out is NULL. */
static int write_report(json_t *doc, const char *out)
{
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    int rc = 0;
    FILE *o = out ? fopen(out, "w") : stdout;
    if (!s || !o || fprintf(o, "%s\n", s) < 0)
        rc = 1;
    if (!o)
        perror(out);
    if (o && o != stdout && fclose(o))
        rc = 1;
    free(s);
    return rc;
}

int main(int argc, char **argv)
{
    lg_args o = {.levels = "1,8,64", .label = "", .meta = json_object(), .duration = 10, .warmup = 2};
    int rc = parse_args(argc, argv, &o);
    if (rc)
        goto out;
    calibrate();
    json_t *res = json_array();
    for (const char *p = o.levels; *p;) {
        int c = atoi(p);
        if (c < 1 || c > MAX_CLIENTS) {
            fprintf(stderr, "loadgen: bad concurrency in '%s'\n", o.levels);
            json_decref(res);
            rc = 2;
            goto out;
        }
        json_array_append_new(res, run_level(c, o.warmup, o.duration));
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
    }
    json_t *doc = report(&o, res);
    rc = write_report(doc, o.out);
    json_decref(doc);
out:
    json_decref(o.meta);
    for (int t = 0; t < N_TYPES; t++)
        free(body[t]);
    return rc;
}
