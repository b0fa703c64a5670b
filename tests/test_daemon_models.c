/*
 * test_daemon_models.c - several checkpoints in one daemon.
 *
 * Two geometries side by side: the tiny English (ModernBERT tokenizer, 512
 * tokens) and the tiny mmBERT (Metaspace tokenizer, 1,024 tokens, made by
 * `layad-dev mkmodel --preset mmbert-tiny`), the second reached through the
 * offline HF cache as org/name@rev. Concurrent clients alternate the models
 * (by served name and by the official router's aliases) and every answer must
 * be byte-identical to the one a daemon serving that checkpoint alone gives;
 * both models must have run, the default must answer a request without
 * "model", unknown names get 422, and /v1/models, /health and /metrics must
 * name both. Entries that cannot be told apart (two unnamed checkpoints, a
 * name given twice) or an unknown revision fail the start.
 */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

#if defined(__SANITIZE_ADDRESS__)
#define PER_CLIENT 4
#else
#define PER_CLIENT 12
#endif
#define N_CLIENTS 6

static const char *BODY[] = {
    "{\"state\": \"Help! My payouts have been failing for 3 days.\", \"questions\": {"
    "\"department\": {\"type\": \"choice\", \"instructions\": \"Which team should handle this?\", \"criteria\": "
    "{\"billing\": \"Payments\", \"technical\": \"Bugs\", \"sales\": null}},"
    "\"frustration\": {\"type\": \"score\", \"instructions\": \"How frustrated?\", \"criteria\": "
    "[\"Calm\", \"Frustrated\", \"Very angry\"]}}}",
    "{\"state\": \"Bonjour, je voudrais annuler ma commande. Merci d'avance \\u00e0 vous.\", \"questions\": "
    "{\"intent\": {\"type\": \"choice\", \"instructions\": \"Intent\", \"criteria\": [\"cancel\", \"buy\", "
    "\"other\"]}, \"u\": {\"type\": \"noul\", \"instructions\": \"Urgent?\"}}}",
    "{\"states\": [\"one\", {\"user\": \"two\"}], \"questions\": {\"x\": {\"type\": \"noul\", \"instructions\": "
    "\"Is it a number?\"}}}",
};
#define N_BODIES (int)(sizeof BODY / sizeof BODY[0])
#define LONG_BODY N_BODIES /* a state past 512 tokens: the two max_len differ */
#define N_ALL (N_BODIES + 1)

static char g_root[128], g_mm_id[160];
static void run_sh(const char *cmd);
static char *g_long;                  /* the long body */
static char *WANT[2][N_ALL];          /* [model][body]: the answer of that model served alone */
static size_t WANT_LEN[2][N_ALL];
static const char *NAMES[2] = {"english", "multilingual"};

static const char *body(int b)
{
    return b == LONG_BODY ? g_long : BODY[b];
}

/* body b with "model": name first (name NULL: the body as is); malloc'ed. */
static char *with_model(int b, const char *name)
{
    const char *s = body(b);
    size_t n = strlen(s) + (name ? strlen(name) : 0) + 32;
    char *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    if (name)
        snprintf(out, n, "{\"model\": \"%s\", %s", name, s + 1);
    else
        snprintf(out, n, "%s", s);
    return out;
}

static int post(int port, const char *path, const char *b, td_resp *r)
{
    return td_request(port, "POST", path, NULL, b, strlen(b), r);
}

/* Collects WANT[m][*] from a daemon serving only model m. */
static void collect_alone(int m)
{
    char entry[512];
    if (m == 0)
        snprintf(entry, sizeof entry, "english=%s", tu_tiny());
    else
        snprintf(entry, sizeof entry, "multilingual=%s", g_mm_id);
    char env_cache[256];
    snprintf(env_cache, sizeof env_cache, "HF_HUB_CACHE=%s/hub", g_root);
    const char *env[] = {env_cache, NULL};
    const char *args[] = {"--model", entry, NULL};
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, args, env, 1), 0);
    for (int b = 0; b < N_ALL; b++) {
        td_resp r;
        ck_assert_int_eq(post(d.port, "/decide", body(b), &r), 0);
        ck_assert_msg(r.status == 200, "%s alone, body %d: %d %s", NAMES[m], b, r.status, r.body);
        WANT[m][b] = r.body;
        WANT_LEN[m][b] = r.body_len;
        r.body = NULL;
        td_resp_free(&r);
    }
    ck_assert_int_eq(td_stop(&d, SIGTERM, 60), 0);
}

typedef struct client_args {
    int port, id;
    _Atomic int *ok, *wrong;
} client_args;

/* Names that must reach each model: its served name, router aliases (any case). */
static const char *const ALIASES[2][4] = {{"english", "EN", "laya", "jev-latest"},
                                           {"multilingual", "ml", "Laya-Multilingual", "intl"}};

static void *client(void *p)
{
    client_args *a = p;
    for (int i = 0; i < PER_CLIENT; i++) {
        int m = (a->id + i) % 2, b = (a->id * 7 + i) % N_ALL;
        char *req = with_model(b, ALIASES[m][(a->id + i / 2) % 4]);
        td_resp r;
        int rc = post(a->port, "/decide", req, &r);
        if (rc == 0 && r.status == 200 && r.body_len == WANT_LEN[m][b] && !memcmp(r.body, WANT[m][b], r.body_len)) {
            atomic_fetch_add(a->ok, 1);
        } else {
            atomic_fetch_add(a->wrong, 1);
            fprintf(stderr, "model %d body %d: rc %d status %d: %.300s\nwant %.300s\n", m, b, rc, r.status,
                    r.body ? r.body : "", WANT[m][b]);
        }
        free(req);
        td_resp_free(&r);
    }
    return NULL;
}

static void check_listings(int port)
{
    td_resp r;
    ck_assert_int_eq(td_request(port, "GET", "/v1/models", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL), *data = json_object_get(j, "data");
    ck_assert_int_eq((int)json_array_size(data), 2);
    for (int m = 0; m < 2; m++) {
        json_t *e = json_array_get(data, (size_t)m);
        ck_assert_str_eq(json_string_value(json_object_get(e, "id")), NAMES[m]);
        ck_assert(json_is_true(json_object_get(e, "default")) == (m == 0));
    }
    ck_assert_ptr_nonnull(strstr(r.body, "\"intl\""));
    ck_assert_ptr_nonnull(strstr(r.body, "\"jev-latest\""));
    json_decref(j);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(port, "GET", "/health", NULL, NULL, 0, &r), 0);
    j = json_loads(r.body, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "english");
    json_t *ms = json_object_get(j, "models");
    ck_assert_int_eq((int)json_array_size(ms), 2);
    ck_assert_int_eq((int)json_integer_value(json_object_get(json_array_get(ms, 1), "max_len")), 1024);
    ck_assert_int_eq((int)json_integer_value(json_object_get(json_array_get(ms, 0), "max_len")), 512);
    json_t *loaded = json_object_get(j, "loaded"); /* laya-serve's field: every served name */
    ck_assert_int_eq((int)json_array_size(loaded), 2);
    ck_assert_str_eq(json_string_value(json_array_get(loaded, 1)), "multilingual");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "revisions"), "multilingual")),
                     "1111111111111111111111111111111111111111");
    json_decref(j);
    td_resp_free(&r);
}

/* No "model": the default (the first); an unknown one, or an official name not served: 422. */
static void check_model_field(int port)
{
    td_resp r;
    ck_assert_int_eq(post(port, "/decide", BODY[0], &r), 0);
    ck_assert(r.status == 200 && r.body_len == WANT_LEN[0][0] && !memcmp(r.body, WANT[0][0], r.body_len));
    td_resp_free(&r);
    const char *unknown[] = {"gpt-9", "typed-decisions", "rl-agent-x"};
    for (int i = 0; i < 3; i++) {
        char *req = with_model(0, unknown[i]);
        ck_assert_int_eq(post(port, "/v1/systemone", req, &r), 0);
        ck_assert_msg(r.status == 422 && strstr(r.body, "unknown model"), "%s: %d %s", unknown[i], r.status, r.body);
        td_resp_free(&r);
        free(req);
    }
}

/* Body 1 posted with "prefix" in front of its own fields: status want (200: model m's answer;
 * otherwise the body must hold need). */
static void post_task(int port, const char *prefix, int want, int m, const char *need)
{
    char *tb = with_model(1, NULL);
    const size_t tl = strlen(tb) + 64;
    char *req = malloc(tl);
    ck_assert_ptr_nonnull(req);
    snprintf(req, tl, "{%s, %s", prefix, tb + 1);
    td_resp r;
    ck_assert_int_eq(post(port, "/decide", req, &r), 0);
    if (want == 200)
        ck_assert(r.status == 200 && r.body_len == WANT_LEN[m][1] && !memcmp(r.body, WANT[m][1], r.body_len));
    else
        ck_assert_msg(r.status == want && strstr(r.body, need), "%d %s", r.status, r.body);
    td_resp_free(&r);
    free(req);
    free(tb);
}

/* Each model's decisions counted apart in /metrics; ok answers were checked. */
static void check_model_metrics(int port, int ok)
{
    td_resp r;
    ck_assert_int_eq(td_request(port, "GET", "/metrics", NULL, NULL, 0, &r), 0);
    double n_en = td_sample(r.body, "laya_model_decisions_total{model=\"english\"}");
    double n_mm = td_sample(r.body, "laya_model_decisions_total{model=\"multilingual\"}");
    printf("side by side: %d answers byte-identical to each model alone (english %.0f, multilingual %.0f)\n", ok,
           n_en, n_mm);
    ck_assert_msg(n_en > 0 && n_mm > 0, "a model never ran: %.0f / %.0f", n_en, n_mm);
    ck_assert_ptr_nonnull(strstr(r.body, "laya_model_info{model=\"multilingual\""));
    td_resp_free(&r);
}

START_TEST(two_geometries_side_by_side_identical_to_alone)
{
    collect_alone(0);
    collect_alone(1);
    ck_assert_msg(WANT_LEN[0][1] != WANT_LEN[1][1] || memcmp(WANT[0][1], WANT[1][1], WANT_LEN[0][1]),
                  "the two checkpoints answer alike: the test could not tell them apart");
    char en[512], mm[512], env_cache[256];
    snprintf(en, sizeof en, "english=%s", tu_tiny());
    snprintf(mm, sizeof mm, "multilingual=%s", g_mm_id);
    snprintf(env_cache, sizeof env_cache, "HF_HUB_CACHE=%s/hub", g_root);
    const char *env[] = {env_cache, NULL};
    const char *args[] = {"--model", en, "--model", mm, "--model-aliases", "multilingual=intl",
                          "--batch-window-us", "2000", "--request-timeout-s", "900", "--max-queue-wait-s", "0", NULL};
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, args, env, 1), 0);
    check_listings(d.port);

    _Atomic int ok = 0, wrong = 0;
    client_args a[N_CLIENTS];
    for (int i = 0; i < N_CLIENTS; i++)
        a[i] = (client_args){d.port, i, &ok, &wrong};
    ck_assert_int_eq(td_run_threads(N_CLIENTS, client, a, sizeof a[0]), 0);
    ck_assert_int_eq(wrong, 0);
    ck_assert_int_eq(ok, N_CLIENTS * PER_CLIENT);

    check_model_field(d.port);
    /* task routes as in laya's Router (a model outranks it); an official checkpoint not served
     * and any other task are 422 */
    post_task(d.port, "\"task\": \"Multilingual\"", 200, 1, NULL);
    post_task(d.port, "\"model\": \"english\", \"task\": \"multilingual\"", 200, 0, NULL);
    post_task(d.port, "\"task\": \"typed_decisions\"", 422, 0, "typed-decisions checkpoint");
    check_model_metrics(d.port, ok);
    ck_assert_int_eq(td_stop(&d, SIGTERM, 60), 0);
}
END_TEST

START_TEST(ambiguous_entries_fail_start)
{
    char a[512], b[512], env_cache[256];
    snprintf(env_cache, sizeof env_cache, "HF_HUB_CACHE=%s/hub", g_root);
    const char *env[] = {env_cache, NULL};
    struct {
        const char *why;
        const char *m1, *m2;
    } cases[] = {
        {"two unnamed", "%s", "%s"},
        {"one name twice", "x=%s", "x=%s"},
        {"a name that is another's alias", "english=%s", "en=%s"},
        {"an uncached revision", "english=%s", "mm=layad-test/mm@v9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(a, sizeof a, cases[i].m1, tu_tiny());
        snprintf(b, sizeof b, cases[i].m2, tu_tiny());
        const char *args[] = {"--model", a, "--model", b, NULL};
        daemon_proc d;
        ck_assert_int_eq(td_start(&d, args, env, 0), 0);
        int st = td_stop(&d, 0, 30);
        ck_assert_msg(st == 1, "%s: exit %d", cases[i].why, st);
    }
}
END_TEST

/* An unnamed checkpoint given by an official hub id keeps today's answers
 * (laya-rl-agent) and also answers to that checkpoint's router names. */
START_TEST(unnamed_official_id_answers_router_names)
{
    char cmd[1024], env_cache[256];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/hub/models--convaiinnovations--laya/refs %s/hub/models--convaiinnovations--laya/snapshots && "
             "cp -r %s %s/hub/models--convaiinnovations--laya/snapshots/abc && "
             "printf abc > %s/hub/models--convaiinnovations--laya/refs/main",
             g_root, g_root, tu_tiny(), g_root, g_root);
    run_sh(cmd);
    snprintf(env_cache, sizeof env_cache, "HF_HUB_CACHE=%s/hub", g_root);
    const char *env[] = {env_cache, NULL};
    const char *args[] = {"--model", "convaiinnovations/laya", NULL};
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, args, env, 1), 0);
    const char *names[] = {"english", "EN", "laya", "rl-agent", "laya-rl-agent", NULL};
    for (int i = 0; names[i]; i++) {
        char *req = with_model(0, names[i]);
        td_resp r;
        ck_assert_int_eq(post(d.port, "/decide", req, &r), 0);
        ck_assert_msg(r.status == 200 && strstr(r.body, "{\"model\": \"laya-rl-agent\""), "%s: %d %s", names[i],
                      r.status, r.body);
        td_resp_free(&r);
        free(req);
    }
    char *req = with_model(0, "multilingual");
    td_resp r;
    ck_assert_int_eq(post(d.port, "/decide", req, &r), 0);
    ck_assert_int_eq(r.status, 422);
    td_resp_free(&r);
    free(req);
    ck_assert_int_eq(td_stop(&d, SIGTERM, 60), 0);
}
END_TEST

static void run_sh(const char *cmd)
{
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    int st;
    size_t n;
    char *out = td_run_capture(argv, NULL, &n, &st);
    if (st != 0) {
        fprintf(stderr, "%s failed (%d):\n%s\n", cmd, st, out ? out : "");
        exit(1);
    }
    free(out);
}

/* The mmBERT-geometry checkpoint in an HF cache layout, as layad-test/mm@v1. */
static void setup(void)
{
    snprintf(g_root, sizeof g_root, "/tmp/layad-models-%d", (int)getpid());
    char cmd[2048];
    const char *snap = "hub/models--layad-test--mm/snapshots/1111111111111111111111111111111111111111";
    snprintf(cmd, sizeof cmd,
             "rm -rf %s && mkdir -p %s/hub/models--layad-test--mm/refs && %s mkmodel --preset mmbert-tiny --out %s/%s "
             "2>/dev/null && printf 1111111111111111111111111111111111111111 > %s/hub/models--layad-test--mm/refs/v1",
             g_root, g_root, tu_env_or("LAYAD_DEV", "build/layad-dev"), g_root, snap, g_root);
    run_sh(cmd);
    snprintf(g_mm_id, sizeof g_mm_id, "layad-test/mm@v1");
    /* about 700 words: past the English checkpoint's 512 tokens, within mmBERT's 1,024 */
    size_t cap = 16384, n = 0;
    g_long = malloc(cap);
    if (!g_long)
        exit(1);
    n += (size_t)snprintf(g_long, cap, "{\"state\": \"");
    for (int i = 0; i < 700; i++)
        n += (size_t)snprintf(g_long + n, cap - n, "%s%s", i ? " " : "", i % 3 ? "commande" : "refund");
    snprintf(g_long + n, cap - n, "\", \"questions\": {\"u\": {\"type\": \"noul\", \"instructions\": \"Urgent?\"}}}");
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_root);
    run_sh(cmd);
    for (int m = 0; m < 2; m++)
        for (int b = 0; b < N_ALL; b++)
            free(WANT[m][b]);
    free(g_long);
}

Suite *suite(void)
{
    Suite *s = suite_create("daemon_models");
    TCase *tc = tcase_create("daemon_models");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, two_geometries_side_by_side_identical_to_alone);
    tcase_add_test(tc, ambiguous_entries_fail_start);
    tcase_add_test(tc, unnamed_official_id_answers_router_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
