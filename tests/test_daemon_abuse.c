/*
 * test_daemon_abuse.c - issue 14's abuse reproductions, over real HTTP on loopback against
 * `layad serve` on the tiny checkpoint (CPU), as regression tests:
 *
 *   defect 2: a 2 MB body of 120k keys in `state` is answered in about a second
 *             (the quadratic duplicate-key scan took 11-28 s of CPU to parse it);
 *   defect 6: `"state": ""` and empty strings are answered (the ASan+UBSan daemon
 *             aborted on a memcpy from NULL; `make test-asan` runs this suite on it);
 *   defect 9: a newline or other control byte in the URL or in `model` stays inside its
 *             log line, in the text and the JSON log formats.
 *
 * Each test starts its own daemon (Check forks per test) and stops it with SIGTERM; a
 * non-zero exit (a sanitizer abort included) fails the test.
 */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    return tu_run(s);
}
