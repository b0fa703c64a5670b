/*
 * test_daemon_workers.c - one daemon with several workers (the multi-device path,
 * on CPUs): `layad serve --cpu-workers 2` runs two CPU backends, each with
 * its own weights copy and arenas, behind one scheduler, exactly as two GPUs
 * would run behind it (one worker per device).
 *
 * Over real HTTP: concurrent clients get answers byte-identical to `layad
 * decide` whichever worker computed them; both workers did work (their
 * laya_inference_seconds{device} histograms in /metrics and their counters
 * in /health); the exposition still passes promtool. A bad worker count is
 * refused at start.
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

/* ASan+UBSan makes the fp32 forward ~50x slower: fewer requests there. */
#if defined(__SANITIZE_ADDRESS__)
#define PER_CLIENT 3
#else
#define PER_CLIENT 12
#endif
#define N_CLIENTS 8

static const char *BODY[] = {
    "{\"state\": \"Help! My payouts have been failing for 3 days.\", \"questions\": {"
    "\"department\": {\"type\": \"choice\", \"instructions\": \"Which team should handle this?\", \"criteria\": "
    "{\"billing\": \"Payments\", \"technical\": \"Bugs\", \"sales\": null}},"
    "\"frustration\": {\"type\": \"score\", \"instructions\": \"How frustrated?\", \"criteria\": "
    "[\"Calm\", \"Frustrated\", \"Very angry\"]}}}",
    "{\"state\": \"short\", \"questions\": {\"q\": {\"type\": \"choice\", \"instructions\": \"Pick one\", "
    "\"criteria\": [\"a\", \"b\"]}}}",
    "{\"states\": [\"one\", {\"user\": \"two\"}], \"questions\": {\"x\": {\"type\": \"noul\", \"instructions\": "
    "\"Is it a number?\"}, \"y\": {\"type\": \"score\", \"instructions\": \"Rate\", \"criteria\": [\"low\", "
    "\"mid\", \"high\", \"top\"]}}}",
    "{\"state\": \"refund please, the invoice was charged twice and nobody answers\", \"questions\": {\"u\": "
    "{\"type\": \"noul\", \"instructions\": \"Urgent.\"}}}",
};
#define N_BODIES (int)(sizeof BODY / sizeof BODY[0])
static char *WANT[N_BODIES];
static size_t WANT_LEN[N_BODIES];

typedef struct client_args {
    int port, id;
    _Atomic int *ok, *wrong;
} client_args;

static void *client(void *p)
{
    client_args *a = p;
    for (int i = 0; i < PER_CLIENT; i++) {
        int b = (a->id + i) % N_BODIES;
        td_resp r;
        int rc = td_request(a->port, "POST", "/decide", NULL, BODY[b], strlen(BODY[b]), &r);
        if (rc == 0 && r.status == 200 && r.body_len == WANT_LEN[b] && !memcmp(r.body, WANT[b], WANT_LEN[b])) {
            atomic_fetch_add(a->ok, 1);
        } else {
            atomic_fetch_add(a->wrong, 1);
            fprintf(stderr, "body %d: rc %d status %d: %.200s\n", b, rc, r.status, r.body ? r.body : "");
        }
        td_resp_free(&r);
    }
    return NULL;
}

/* /health lists both devices with their own counters, agreeing with /metrics (c0, c1 forwards). */
static void check_health_devices(int port, double c0, double c1)
{
    td_resp r;
    ck_assert_int_eq(td_request(port, "GET", "/health", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 200);
    json_t *h = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(h);
    json_t *devs = json_object_get(h, "devices");
    ck_assert_int_eq((int)json_array_size(devs), 2);
    for (int i = 0; i < 2; i++) {
        json_t *dv = json_array_get(devs, (size_t)i);
        ck_assert_int_eq((int)json_integer_value(json_object_get(dv, "index")), i);
        ck_assert_str_eq(json_string_value(json_object_get(dv, "kind")), "cpu");
        ck_assert_int_eq((int)json_integer_value(json_object_get(dv, "threads")), 1);
        ck_assert_int_gt((int)json_integer_value(json_object_get(dv, "batches")), 0);
        ck_assert_int_gt((int)json_integer_value(json_object_get(dv, "rows")), 0);
        ck_assert_int_eq((int)json_integer_value(json_object_get(dv, "failed_forwards")), 0);
        /* /health was read after /metrics and nothing ran in between (the
         * warm-up forward is not counted by either). */
        ck_assert_int_eq((int)json_integer_value(json_object_get(dv, "forwards")), (int)(i ? c1 : c0));
    }
    json_decref(h);
    td_resp_free(&r);
}

START_TEST(two_cpu_workers_identical_answers_both_used)
{
    daemon_proc d;
    /* A batch window and small batches, so that concurrent requests make
     * several batches at once and the scheduler must spread them. */
    const char *args[] = {"--cpu-workers", "2", "--cpu-threads", "2", "--batch-window-us", "2000",
                          "--max-batch-rows", "4", "--request-timeout-s", "900",
                          "--max-queue-wait-s", "0", NULL}; /* answers, not shedding */
    ck_assert_int_eq(td_start(&d, args, NULL, 1), 0);
    _Atomic int ok = 0, wrong = 0;
    client_args a[N_CLIENTS];
    for (int i = 0; i < N_CLIENTS; i++)
        a[i] = (client_args){d.port, i, &ok, &wrong};
    ck_assert_int_eq(td_run_threads(N_CLIENTS, client, a, sizeof a[0]), 0);
    ck_assert_int_eq(wrong, 0);
    ck_assert_int_eq(ok, N_CLIENTS * PER_CLIENT);

    td_resp r;
    ck_assert_int_eq(td_request(d.port, "GET", "/metrics", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 200);
    double c0 = td_sample(r.body, "laya_inference_seconds_count{device=\"cpu0\"}");
    double c1 = td_sample(r.body, "laya_inference_seconds_count{device=\"cpu1\"}");
    printf("2 CPU workers: %d answers, forwards per worker %.0f / %.0f\n", ok, c0, c1);
    ck_assert_msg(c0 > 0 && c1 > 0, "a worker did nothing: forwards %.0f / %.0f", c0, c1);
    ck_assert_ptr_null(strstr(r.body, "laya_inference_seconds_count{device=\"cpu\"}")); /* one series per worker */
    char *out;
    const int st = td_promtool(r.body, r.body_len, &out);
    if (st < 0)
        printf("SKIP promtool check: /usr/bin/promtool missing\n");
    else
        ck_assert_msg(st == 0, "promtool check metrics failed:\n%s", out);
    free(out);
    td_resp_free(&r);
    check_health_devices(d.port, c0, c1);
    ck_assert_int_eq(td_stop(&d, SIGTERM, 60), 0);
}
END_TEST

START_TEST(bad_worker_count_refused)
{
    const char *counts[] = {"0", "17", "two"};
    for (int i = 0; i < 3; i++) {
        daemon_proc d;
        const char *args[] = {"--cpu-workers", counts[i], NULL};
        ck_assert_int_eq(td_start(&d, args, NULL, 0), 0);
        ck_assert_int_eq(td_stop(&d, 0, 30), 2); /* a configuration error: exit 2, nothing served */
    }
}
END_TEST

static void setup(void)
{
    for (int i = 0; i < N_BODIES; i++) {
        WANT[i] = td_decide_cli(BODY[i], strlen(BODY[i]), NULL, &WANT_LEN[i]);
        if (!WANT[i]) {
            fprintf(stderr, "layad decide failed on body %d\n", i);
            exit(1);
        }
    }
}

static void teardown(void)
{
    for (int i = 0; i < N_BODIES; i++)
        free(WANT[i]);
}

Suite *suite(void)
{
    Suite *s = suite_create("daemon_workers");
    TCase *tc = tcase_create("daemon_workers");
    tcase_add_unchecked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 900); /* two shared cores under ASan can be slow; the work is fixed */
    tcase_add_test(tc, two_cpu_workers_identical_answers_both_used);
    tcase_add_test(tc, bad_worker_count_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
