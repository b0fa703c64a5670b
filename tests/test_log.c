/*
 * test_log.c - the daemon's log lines (server/telemetry/log.h) hold client text safely:
 * a newline, carriage return or other control byte in any logged field (request id,
 * method, URL path, error message, event message) never starts a line of its own, in the
 * text format (escaped as \n \r \t \xNN, backslash as \\, spaces in the request fields as
 * \x20) and in the JSON format (JSON escapes, so each line parses back to the original
 * strings). Issue 14, defect 9: a "%0a" in the URL or a newline in `model` forged lines.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/telemetry/log.h"
#include "tests/lib/testutil.h"

/* Client text as an attacker would send it: a forged line after a newline, and every kind
 * of byte that needs escaping. */
#define FORGED "2026-01-01T00:00:00.000Z info request id=forged POST /decide status=200"
static const char *const PATH = "/v1/x\r\n" FORGED;
static const char *const MODEL_ERR = "unknown model 'x\n" FORGED "'";
static const char *const ODD = "tab\there\x01\x1b[31m\x7f back\\slash";

static char g_path[64];

static void log_to_file(int json)
{
    snprintf(g_path, sizeof g_path, "/tmp/layad-test-log-%d", (int)getpid());
    unlink(g_path);
    ck_assert_int_eq(log_open(g_path, json), 0);
}

/* Closes the log and returns its lines (malloc'ed array of malloc'ed strings, *n of them);
 * fails when the file does not end with a newline. */
static char **lines_of_log(size_t *n)
{
    log_close();
    size_t len;
    char *t = tu_read_file(g_path, &len);
    unlink(g_path);
    ck_assert_ptr_nonnull(t);
    ck_assert(len > 0 && t[len - 1] == '\n');
    char **lines = calloc(len + 1, sizeof *lines);
    *n = 0;
    for (char *s = t, *e; (e = strchr(s, '\n')); s = e + 1)
        lines[(*n)++] = strndup(s, (size_t)(e - s));
    free(t);
    return lines;
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* Every line starts with a timestamp of our own, not one from the client's text. */
static void assert_our_lines(char **lines, size_t n, size_t want, int json)
{
    ck_assert_uint_eq(n, want);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(json ? !strncmp(lines[i], "{\"ts\":\"20", 9) : !strncmp(lines[i], "20", 2), "line %zu: %s", i,
                      lines[i]);
        for (const char *c = lines[i]; *c; c++)
            ck_assert_msg((unsigned char)*c >= 0x20 && *c != 0x7f, "line %zu has a raw control byte: %s", i, lines[i]);
    }
}

static void write_lines(void)
{
    log_request_line l = {"rid-1", "GET", PATH, 404, 0, 0, 0, 0, 1.5, MODEL_ERR, NULL};
    log_request(&l);
    log_request_line m = {"rid 2\n", "PO\nST", ODD, 422, 1, 10, 0, 0, 2.0, ODD, ODD}; /* model: configured text */
    log_request(&m);
    log_msg("warn", "request failed: %s", MODEL_ERR);
    log_msg("info", "%s", ODD);
}

START_TEST(text_lines_escape_every_field)
{
    log_to_file(0);
    write_lines();
    size_t n;
    char **lines = lines_of_log(&n);
    assert_our_lines(lines, n, 4, 0);
    ck_assert_msg(strstr(lines[0], " info request id=rid-1 GET /v1/x\\r\\n2026-01-01T00:00:00.000Z\\x20info\\x20request"
                                   "\\x20id=forged\\x20POST\\x20/decide\\x20status=200 status=404 "),
                  "%s", lines[0]);
    ck_assert_msg(strstr(lines[0], " error=unknown model 'x\\n" FORGED "'"), "%s", lines[0]);
    ck_assert_msg(strstr(lines[1], " request id=rid\\x202\\n PO\\nST tab\\there\\x01\\x1b[31m\\x7f\\x20back\\\\slash "
                                   "model=tab\\there\\x01\\x1b[31m\\x7f\\x20back\\\\slash status=422 "),
                  "%s", lines[1]);
    ck_assert_msg(strstr(lines[1], " error=tab\\there\\x01\\x1b[31m\\x7f back\\\\slash"), "%s", lines[1]);
    ck_assert_msg(strstr(lines[2], " warn request failed: unknown model 'x\\n2026-01-01T"), "%s", lines[2]);
    ck_assert_msg(strstr(lines[3], " info tab\\there\\x01\\x1b[31m\\x7f back\\\\slash"), "%s", lines[3]);
    free_lines(lines, n);
}
END_TEST

/* A field too long for its cap is cut between escapes, never inside one. */
START_TEST(text_lines_cut_long_fields_whole)
{
    log_to_file(0);
    char path[3000];
    memset(path, '\n', sizeof path - 1);
    path[sizeof path - 1] = 0;
    log_request_line l = {"rid", "GET", path, 404, 0, 0, 0, 0, 1.0, path, NULL};
    log_request(&l);
    log_msg("info", "%s", path);
    size_t n;
    char **lines = lines_of_log(&n);
    assert_our_lines(lines, n, 2, 0);
    char *p = strstr(lines[0], " GET ") + 5;
    size_t k = strspn(p, "\\n");
    ck_assert_msg(k > 0 && k % 2 == 0 && p[k] == ' ' && !strncmp(p + k, " status=404 ", 12), "%s", lines[0]);
    free_lines(lines, n);
}
END_TEST

START_TEST(json_lines_round_trip_every_field)
{
    log_to_file(1);
    write_lines();
    size_t n;
    char **lines = lines_of_log(&n);
    assert_our_lines(lines, n, 4, 1);
    json_t *j[4];
    for (size_t i = 0; i < 4; i++) {
        json_error_t e;
        j[i] = json_loads(lines[i], 0, &e);
        ck_assert_msg(j[i] != NULL, "line %zu is not JSON (%s): %s", i, e.text, lines[i]);
    }
    ck_assert_str_eq(json_string_value(json_object_get(j[0], "path")), PATH);
    ck_assert_str_eq(json_string_value(json_object_get(j[0], "error")), MODEL_ERR);
    ck_assert_str_eq(json_string_value(json_object_get(j[1], "request_id")), "rid 2\n");
    ck_assert_str_eq(json_string_value(json_object_get(j[1], "method")), "PO\nST");
    ck_assert_str_eq(json_string_value(json_object_get(j[1], "path")), ODD);
    ck_assert_str_eq(json_string_value(json_object_get(j[1], "model")), ODD);
    ck_assert_ptr_null(json_object_get(j[0], "model"));
    ck_assert_str_eq(json_string_value(json_object_get(j[2], "msg")), "request failed: unknown model 'x\n" FORGED "'");
    ck_assert_str_eq(json_string_value(json_object_get(j[3], "msg")), ODD);
    for (size_t i = 0; i < 4; i++)
        json_decref(j[i]);
    free_lines(lines, n);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("client_text");
    tcase_add_test(tc, text_lines_escape_every_field);
    tcase_add_test(tc, text_lines_cut_long_fields_whole);
    tcase_add_test(tc, json_lines_round_trip_every_field);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
