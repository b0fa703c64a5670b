/*
 * test_daemon_lifecycle.c - start, readiness, drain, signals, configuration
 * and deployment of `layad serve`.
 *
 * sd_notify is checked with a real NOTIFY_SOCKET: a unix datagram socket this
 * test owns and reads (READY=1 with STATUS and MAINPID, WATCHDOG=1 at the
 * requested period, STOPPING=1 on SIGTERM). The unit file goes through
 * `systemd-analyze verify` after `make install DESTDIR=... PREFIX=...`.
 */
#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/lib/daemon.h"

static const char *BODY = "{\"state\": \"refund please\", \"questions\": {\"q\": {\"type\": \"noul\", "
                          "\"instructions\": \"Mentions money.\"}}}";

/* Reads datagrams for up to timeout_s, appending them to out (separated by '|'). */
static void read_notify(int fd, double timeout_s, char *out, size_t cap)
{
    double end = td_now() + timeout_s;
    size_t n = strlen(out);
    while (td_now() < end) {
        struct timeval tv = {0, 50000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[1024];
        ssize_t k = recv(fd, buf, sizeof buf - 1, 0);
        if (k > 0 && n + (size_t)k + 2 < cap) {
            memcpy(out + n, buf, (size_t)k);
            n += (size_t)k;
            out[n++] = '|';
            out[n] = 0;
        }
    }
}

START_TEST(sd_notify_protocol)
{
    char path[108];
    snprintf(path, sizeof path, "/tmp/layad-notify-%d.sock", (int)getpid());
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    char env_sock[160], env_wd[64];
    snprintf(env_sock, sizeof env_sock, "NOTIFY_SOCKET=%s", path);
    snprintf(env_wd, sizeof env_wd, "WATCHDOG_USEC=%d", 400000); /* ping every 200 ms */
    const char *env[] = {env_sock, env_wd, NULL};
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, NULL, env, 1), 0);
    static char got[65536];
    got[0] = 0;
    read_notify(fd, 1.2, got, sizeof got);
    ck_assert_msg(strstr(got, "READY=1") != NULL, "no READY=1 in: %s", got);
    ck_assert_msg(strstr(got, "STATUS=serving") != NULL, "no STATUS in: %s", got);
    char mainpid[32];
    snprintf(mainpid, sizeof mainpid, "MAINPID=%d", (int)d.pid);
    ck_assert_msg(strstr(got, mainpid) != NULL, "no %s in: %s", mainpid, got);
    /* READY comes after loading: the loading status precedes it. */
    ck_assert(strstr(got, "STATUS=loading") && strstr(got, "STATUS=loading") < strstr(got, "READY=1"));
    int pings = 0;
    for (const char *p = got; (p = strstr(p, "WATCHDOG=1")); p++)
        pings++;
    ck_assert_msg(pings >= 3, "%d WATCHDOG=1 pings in 1.2 s (want one per 200 ms): %s", pings, got);
    got[0] = 0;
    kill(d.pid, SIGTERM);
    read_notify(fd, 0.5, got, sizeof got);
    ck_assert_msg(strstr(got, "STOPPING=1") != NULL, "no STOPPING=1 in: %s", got);
    ck_assert_int_eq(td_stop(&d, 0, 30), 0);
    close(fd);
    unlink(path);
}
END_TEST

START_TEST(drain_then_sigterm)
{
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, NULL, NULL, 1), 0);
    td_resp r;
    ck_assert_int_eq(td_request(d.port, "POST", "/decide", NULL, BODY, strlen(BODY), &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "GET", "/drain", NULL, NULL, 0, &r), 0); /* POST only */
    ck_assert_int_eq(r.status, 405);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "POST", "/drain", NULL, "", 0, &r), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "draining"));
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "GET", "/readyz", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 503);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 200); /* alive, just not taking work */
    td_resp_free(&r);
    char v[16];
    ck_assert_int_eq(td_request(d.port, "POST", "/decide", NULL, BODY, strlen(BODY), &r), 0);
    ck_assert_int_eq(r.status, 503);
    ck_assert_ptr_nonnull(td_header(&r, "Retry-After", v, sizeof v));
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "POST", "/v1/systemone", NULL, BODY, strlen(BODY), &r), 0);
    ck_assert_int_eq(r.status, 503); /* systemone_busy_status: 503 unless set to 529 */
    ck_assert_ptr_nonnull(td_header(&r, "Retry-After", v, sizeof v));
    ck_assert_ptr_nonnull(strstr(r.body, "\"detail\": \"the server is draining; retry later\""));
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "GET", "/health", NULL, NULL, 0, &r), 0);
    ck_assert_ptr_nonnull(strstr(r.body, "\"status\":\"draining\""));
    td_resp_free(&r);
    ck_assert_int_eq(td_stop(&d, SIGINT, 30), 0);
}
END_TEST

START_TEST(sighup_reopens_log_json)
{
    daemon_proc d;
    const char *args[] = {"--log-format", "json", NULL};
    ck_assert_int_eq(td_start(&d, args, NULL, 1), 0);
    char rotated[300];
    snprintf(rotated, sizeof rotated, "%s.1", d.log_path);
    ck_assert_int_eq(rename(d.log_path, rotated), 0);
    kill(d.pid, SIGHUP);
    struct stat st;
    for (int i = 0; i < 200 && stat(d.log_path, &st) != 0; i++)
        usleep(10000);
    ck_assert_int_eq(stat(d.log_path, &st), 0);
    td_resp r;
    ck_assert_int_eq(td_request(d.port, "POST", "/decide", NULL, BODY, strlen(BODY), &r), 0);
    ck_assert_int_eq(r.status, 200);
    char rid[80];
    ck_assert_ptr_nonnull(td_header(&r, "X-Request-Id", rid, sizeof rid));
    td_resp_free(&r);
    ck_assert_int_eq(td_stop(&d, SIGTERM, 30), 0);
    /* The request line went to the new file, as one JSON object with the fields. */
    size_t n;
    char *log = tu_read_file(d.log_path, &n);
    ck_assert_ptr_nonnull(log);
    int found = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        ck_assert_msg(j != NULL, "log line is not JSON: %s", line);
        const char *id = json_string_value(json_object_get(j, "request_id"));
        if (id && !strcmp(id, rid)) {
            found = 1;
            ck_assert_int_eq(json_integer_value(json_object_get(j, "status")), 200);
            ck_assert_int_eq(json_integer_value(json_object_get(j, "rows")), 1);
            ck_assert_int_gt(json_integer_value(json_object_get(j, "tokens")), 0);
            ck_assert(json_is_number(json_object_get(j, "queue_ms")));
            ck_assert(json_is_number(json_object_get(j, "infer_ms")));
        }
        json_decref(j);
    }
    ck_assert_msg(found, "request %s not logged in the reopened file", rid);
    free(log);
    char *old = tu_read_file(rotated, &n);
    ck_assert_ptr_nonnull(strstr(old, "\"msg\":\"ready: serving"));
    free(old);
    unlink(rotated);
}
END_TEST

START_TEST(config_precedence)
{
    /* file < env < flags, observed through /health's max_queue. */
    char conf[128];
    snprintf(conf, sizeof conf, "/tmp/layad-test-%d.conf", (int)getpid());
    FILE *f = fopen(conf, "w");
    fprintf(f, "# test\nmax_queue = 11\nhttp_threads = 3\n[serve]\nrequest_timeout_s = 7.5\n");
    fclose(f);
    const char *env[] = {"LAYAD_MAX_QUEUE=22", NULL};
    const char *a_file[] = {"--config", conf, NULL};
    const char *a_flag[] = {"--config", conf, "--max-queue", "33", NULL};
    int want[3] = {11, 22, 33};
    for (int k = 0; k < 3; k++) {
        daemon_proc d;
        ck_assert_int_eq(td_start(&d, k == 2 ? a_flag : a_file, k ? env : NULL, 1), 0);
        td_resp r;
        ck_assert_int_eq(td_request(d.port, "GET", "/health", NULL, NULL, 0, &r), 0);
        json_t *j = json_loads(r.body, 0, NULL);
        ck_assert_int_eq(json_integer_value(json_object_get(j, "max_queue")), want[k]);
        json_decref(j);
        td_resp_free(&r);
        ck_assert_int_eq(td_stop(&d, SIGTERM, 30), 0);
    }
    /* Bad values and unknown options fail the start with status 2. */
    const char *bad[][3] = {{"--max-queue", "lots", NULL}, {"--no-such-option", "1", NULL}, {"--device", "tpu", NULL}};
    for (int k = 0; k < 3; k++) {
        daemon_proc d;
        ck_assert_int_eq(td_start(&d, bad[k], NULL, 0), 0);
        ck_assert_int_eq(td_stop(&d, 0, 20), 2);
    }
    f = fopen(conf, "w");
    fprintf(f, "max_queue = 5\nbogus_key = 1\n");
    fclose(f);
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, a_file, NULL, 0), 0);
    ck_assert_int_eq(td_stop(&d, 0, 20), 2);
    unlink(conf);
}
END_TEST

/* "--" + name (dashes) in help names the environment variable LAYAD_NAME (underscores). */
static void check_env_named(const char *help, const char *name)
{
    char env_name[80];
    snprintf(env_name, sizeof env_name, "LAYAD_");
    for (size_t i = 0; name[i] && i < 60; i++)
        env_name[6 + i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]), env_name[7 + i] = 0;
    ck_assert_msg(strstr(help, env_name) != NULL, "--help does not name %s", env_name);
}

START_TEST(help_and_shipped_config)
{
    /* --help lists every option, and config/layad.conf documents each of them. */
    const char *argv[] = {tu_bin(), "serve", "--help", NULL};
    int st;
    size_t n;
    char *help = td_run_capture(argv, NULL, &n, &st);
    ck_assert_int_eq(st, 0);
    char *conf_text = tu_read_file("config/layad.conf", &n);
    ck_assert_ptr_nonnull(conf_text);
    int count = 0;
    for (char *p = help; (p = strstr(p, "\n  --")); p++) {
        char name[64];
        if (sscanf(p + 5, "%63[a-z0-9-]", name) != 1 || !strcmp(name, "config") || !strcmp(name, "help"))
            continue;
        for (char *q = name; *q; q++)
            if (*q == '-')
                *q = '_';
        char key[80];
        snprintf(key, sizeof key, "\n%s =", name);
        ck_assert_msg(strstr(conf_text, key) != NULL, "config/layad.conf does not document %s", name);
        check_env_named(help, name);
        count++;
    }
    ck_assert_int_ge(count, 30);
    free(help);
    free(conf_text);
    /* The shipped config file itself loads (td_start's --model/--port flags win over it). */
    const char *a_ship[] = {"--config", "config/layad.conf", NULL};
    daemon_proc d;
    ck_assert_int_eq(td_start(&d, a_ship, NULL, 1), 0);
    ck_assert_int_eq(td_stop(&d, SIGTERM, 30), 0);
}
END_TEST

START_TEST(api_key_file)
{
    char keyf[128];
    snprintf(keyf, sizeof keyf, "/tmp/layad-test-key-%d", (int)getpid());
    FILE *f = fopen(keyf, "w");
    fprintf(f, "k3y-from-file\n");
    fclose(f);
    daemon_proc d;
    const char *args[] = {"--api-key-file", keyf, NULL};
    ck_assert_int_eq(td_start(&d, args, NULL, 1), 0);
    td_resp r;
    ck_assert_int_eq(td_request(d.port, "POST", "/decide", NULL, BODY, strlen(BODY), &r), 0);
    ck_assert_int_eq(r.status, 401);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "POST", "/decide", "Authorization: Bearer k3y-from-file\r\n", BODY,
                                strlen(BODY), &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(d.port, "POST", "/drain", NULL, "", 0, &r), 0); /* key applies to /drain too */
    ck_assert_int_eq(r.status, 401);
    td_resp_free(&r);
    ck_assert_int_eq(td_stop(&d, SIGTERM, 30), 0);
    unlink(keyf);
}
END_TEST

/* /drain without a key is for loopback only: from another address it is 403. */
START_TEST(drain_remote_forbidden)
{
    struct ifaddrs *ifs = NULL, *i;
    char ip[64] = "";
    if (getifaddrs(&ifs) == 0)
        for (i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *)i->ifa_addr;
                if ((ntohl(a->sin_addr.s_addr) >> 24) != 127) {
                    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
                    break;
                }
            }
    freeifaddrs(ifs);
    if (!ip[0]) {
        printf("SKIP drain_remote_forbidden: no non-loopback IPv4 address\n");
        return;
    }
    daemon_proc d;
    const char *args[] = {"--bind", ip, "--allow-unauthenticated-remote", NULL}; /* no key, on purpose */
    ck_assert_int_eq(td_start(&d, args, NULL, 0), 0);
    int fd = -1;
    for (int k = 0; k < 600 && fd < 0; k++) { /* wait for the listener on ip */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
        inet_pton(AF_INET, ip, &a.sin_addr);
        if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
            close(fd);
            fd = -1;
            usleep(50000);
        }
    }
    ck_assert_int_ge(fd, 0);
    const char *req = "POST /drain HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    ck_assert_int_eq((int)send(fd, req, strlen(req), MSG_NOSIGNAL), (int)strlen(req));
    td_resp r;
    ck_assert_int_eq(td_read_response(fd, &r), 0);
    ck_assert_int_eq(r.status, 403);
    td_resp_free(&r);
    close(fd);
    ck_assert_int_eq(td_stop(&d, SIGTERM, 30), 0);
}
END_TEST

START_TEST(bad_model_fails_start)
{
    daemon_proc d;
    const char *args[] = {"--model", "/nonexistent/checkpoint", NULL};
    ck_assert_int_eq(td_start(&d, args, NULL, 0), 0);
    int st = td_stop(&d, 0, 30);
    ck_assert_msg(st == 1, "exit status %d for a missing checkpoint", st);
}
END_TEST

START_TEST(install_and_unit_verify)
{
    char root[128], cmd[4096];
    snprintf(root, sizeof root, "/tmp/layad-install-%d", (int)getpid());
    const char *bin = tu_bin();
    /* Install the binary under test (BUILD is its directory). */
    char build[256];
    snprintf(build, sizeof build, "%s", bin);
    char *slash = strrchr(build, '/');
    ck_assert_ptr_nonnull(slash);
    *slash = 0;
    snprintf(cmd, sizeof cmd,
             "rm -rf %s && make --no-print-directory -s -o %s/layad install BUILD=%s DESTDIR=%s PREFIX=/opt/layad >/dev/null 2>&1 && "
             "test -x %s/opt/layad/bin/layad && test -f %s/etc/layad/layad.conf && test -f %s/etc/default/layad && "
             "test -f %s/opt/layad/share/doc/layad/README.md && "
             "grep -q '^ExecStart=/opt/layad/bin/layad serve' %s/opt/layad/lib/systemd/system/layad.service",
             root, build, build, root, root, root, root, root, root);
    ck_assert_msg(system(cmd) == 0, "make install DESTDIR/PREFIX layout wrong: %s", cmd);
    if (access("/usr/bin/systemd-analyze", X_OK) != 0) {
        printf("SKIP systemd-analyze verify: not installed\n");
        return;
    }
    /* verify needs ExecStart to exist on this machine: point it at the
     * installed copy inside DESTDIR. */
    snprintf(cmd, sizeof cmd,
             "sed 's|^ExecStart=/opt/layad/bin/layad|ExecStart=%s/opt/layad/bin/layad|' "
             "%s/opt/layad/lib/systemd/system/layad.service > %s/layad.service && "
             "systemd-analyze verify %s/layad.service 2>&1",
             root, root, root, root);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    int st;
    size_t n;
    char *out = td_run_capture(argv, NULL, &n, &st);
    ck_assert_msg(st == 0 && n == 0, "systemd-analyze verify (status %d):\n%s", st, out);
    free(out);
    char *unit = tu_read_file("deploy/layad.service", &n);
    const char *must[] = {"Type=notify", "NotifyAccess=main", "WatchdogSec=", "Restart=on-failure", "User=layad",
                          "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
                          "DevicePolicy=closed", "DeviceAllow=/dev/nvidiactl", "TimeoutStartSec="};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        ck_assert_msg(strstr(unit, must[i]) != NULL, "unit lacks %s", must[i]);
    ck_assert_ptr_null(strstr(unit, "\nMemoryDenyWriteExecute=yes"));
    free(unit);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("daemon_lifecycle");
    TCase *tc = tcase_create("lifecycle");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, sd_notify_protocol);
    tcase_add_test(tc, drain_then_sigterm);
    tcase_add_test(tc, sighup_reopens_log_json);
    tcase_add_test(tc, config_precedence);
    tcase_add_test(tc, help_and_shipped_config);
    tcase_add_test(tc, api_key_file);
    tcase_add_test(tc, drain_remote_forbidden);
    tcase_add_test(tc, bad_model_fails_start);
    tcase_add_test(tc, install_and_unit_verify);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
