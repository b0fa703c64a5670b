/*
 * test_ops_monitoring.c - what operators read: `layad --version`, laya_build_info, the process_*
 * families, the latency histogram by endpoint and code, the padding fraction, and the shipped
 * monitoring (deploy/prometheus, deploy/grafana) against the series the daemon really exports.
 *
 * The dashboard and the rules are checked three ways: promtool (`check rules`, `check config`,
 * `test rules` with deploy/prometheus/layad-rules.test.yml), and tests/lib/promql_refs.py, which
 * finds every series selector they query and looks it up in a live /metrics of `layad serve` on
 * the tiny checkpoint (CPU). The laya_gpu_* families cannot be live here (no GPU, and NVML values
 * are never faked), so the GPU renderer itself renders a synthetic snapshot in this process
 * (gpu_snapshot_render_snapshot) and that exposition stands in for them; `promtool check metrics`
 * checks it too.
 */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/telemetry/build_info.h"
#include "server/telemetry/gpu_snapshot.h"
#include "server/telemetry/metrics.h"
#include "tests/lib/daemon.h"

static daemon_proc D;

static void start_shared(void)
{
    if (td_start(&D, NULL, NULL, 1)) {
        fprintf(stderr, "cannot start %s\n", tu_bin());
        exit(1);
    }
}

static void stop_shared(void)
{
    int st = td_stop(&D, SIGTERM, 30);
    if (st != 0) {
        fprintf(stderr, "daemon exit status %d (log %s)\n", st, D.log_path);
        exit(1);
    }
}

static const char DECIDE[] = "{\"state\": \"my payout failed twice\", \"questions\": {\"urgent\": {\"type\": "
                             "\"noul\", \"instructions\": \"The message conveys urgency.\"}}}";

/* GET /metrics of the shared daemon (malloc'ed body). */
static char *live_metrics(void)
{
    td_resp r;
    ck_assert_int_eq(td_request(D.port, "GET", "/metrics", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 200);
    char *body = r.body;
    r.body = NULL;
    td_resp_free(&r);
    return body;
}

/* Runs `sh -c cmd` (stderr folded into stdout); returns the output, *status its exit status. */
static char *shell(const char *cmd, int *status)
{
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    size_t n;
    char *out = td_run_capture(argv, NULL, &n, status);
    ck_assert_ptr_nonnull(out);
    return out;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* Every family gpu_snapshot can export: two GPUs, the first served by layad as device "0"
 * with every reading present, the second another process's, without ECC. */
static char *synthetic_gpu_exposition(void)
{
    gpu_snapshot s;
    memset(&s, 0, sizeof s);
    s.valid = 1;
    s.n = 2;
    snprintf(s.driver, sizeof s.driver, "580.65.06");
    for (int i = 0; i < 2; i++) {
        gpu_dev_snapshot *d = &s.dev[i];
        d->index = i;
        snprintf(d->name, sizeof d->name, "NVIDIA H200");
        snprintf(d->uuid, sizeof d->uuid, "GPU-0000000%d-0000-0000-0000-000000000000", i);
        snprintf(d->pstate, sizeof d->pstate, "P0");
        d->have_util = d->have_mem = d->have_temp = d->have_power = d->have_sm_clock = d->have_mem_clock = 1;
        d->have_proc_mem = 1;
        d->utilization_ratio = 0.42;
        d->memory_used_bytes = 3e9;
        d->memory_total_bytes = 150e9;
        d->temperature_celsius = 41;
        d->power_watts = 120.5;
        d->sm_clock_hertz = 1.98e9;
        d->memory_clock_hertz = 2.619e9;
    }
    snprintf(s.dev[0].device, sizeof s.dev[0].device, "0");
    s.dev[0].process_memory_bytes = 2e9;
    s.dev[0].have_ecc = 1;
    s.dev[0].ecc_corrected = 3;
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    ck_assert_ptr_nonnull(f);
    gpu_snapshot_render_snapshot(f, &s);
    ck_assert_int_eq(fclose(f), 0);
    return p;
}

START_TEST(version_and_build_info)
{
    int st;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s --version", tu_bin());
    char *v = shell(cmd, &st);
    ck_assert_int_eq(st, 0);
    snprintf(cmd, sizeof cmd, "%s version", tu_bin());
    char *v2 = shell(cmd, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_str_eq(v, v2);
    char version[32], commit[64], cuda[32], cublas[32];
    ck_assert_msg(sscanf(v, "layad %31s\ncommit: %63s\ncuda: %31s\ncublas: %31s", version, commit, cuda, cublas) == 4,
                  "unexpected --version output:\n%s", v);
    ck_assert_str_eq(version, LAYAD_VERSION);
    /* An abbreviated commit (12 hex digits) in a checkout, "unknown" outside one. */
    ck_assert_msg(!strcmp(commit, "unknown") || (strlen(commit) == 12 && strspn(commit, "0123456789abcdef") == 12),
                  "commit '%s'", commit);
    if (access(".git", F_OK) == 0)
        ck_assert_str_ne(commit, "unknown");
    /* /metrics says the same, in one series. */
    char series[256];
    snprintf(series, sizeof series, "laya_build_info{version=\"%s\",commit=\"%s\",cuda=\"%s\",cublas=\"%s\"}", version,
             commit, cuda, cublas);
    char *m = live_metrics();
    ck_assert_msg(td_sample(m, series) == 1, "missing %s 1", series);
    free(m);
    free(v);
    free(v2);
}
END_TEST

START_TEST(process_families)
{
    char *m = live_metrics();
    double rss = td_sample(m, "process_resident_memory_bytes"), vsz = td_sample(m, "process_virtual_memory_bytes");
    double cpu = td_sample(m, "process_cpu_seconds_total"), fds = td_sample(m, "process_open_fds");
    double maxfds = td_sample(m, "process_max_fds"), start = td_sample(m, "process_start_time_seconds");
    /* RSS within a factor of two of what /proc/PID/status says from outside. */
    long kb = td_rss_kb(D.pid);
    ck_assert_int_gt(kb, 0);
    ck_assert_msg(rss > 0.5 * kb * 1024.0 && rss < 2.0 * kb * 1024.0, "rss %.0f vs VmRSS %ld kB", rss, kb);
    ck_assert_msg(vsz >= rss, "virtual %.0f < resident %.0f", vsz, rss);
    ck_assert_msg(cpu >= 0 && cpu < 3600, "cpu %f", cpu);
    /* stdin, the listener, the log file, NVML/libuv handles: a few, bounded by the limit */
    ck_assert_msg(fds >= 3 && fds < maxfds, "open fds %.0f, max %.0f", fds, maxfds);
    /* Started after this suite began and not in the future (the daemon started in the fixture). */
    double now = (double)time(NULL);
    ck_assert_msg(start > now - 600 && start <= now + 1, "start %.3f, now %.0f", start, now);
    /* Read once at start: the same value in the next scrape. */
    char *m2 = live_metrics();
    ck_assert_msg(td_sample(m2, "process_start_time_seconds") == start, "start time moved between scrapes");
    free(m2);
    free(m);
}
END_TEST

START_TEST(latency_by_endpoint_and_code)
{
    td_resp r;
    ck_assert_int_eq(td_request(D.port, "POST", "/decide", NULL, DECIDE, strlen(DECIDE), &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    ck_assert_int_eq(td_request(D.port, "GET", "/no-such-endpoint", NULL, NULL, 0, &r), 0);
    ck_assert_int_eq(r.status, 404);
    td_resp_free(&r);
    char *m = td_metrics_when(D.port, "laya_request_duration_seconds_count{endpoint=\"other\",code=\"404\"}", 1, 2.0);
    ck_assert_ptr_nonnull(m);
    /* The 404 has its own series: it is not among the decisions. */
    ck_assert_msg(td_sample(m, "laya_request_duration_seconds_count{endpoint=\"other\",code=\"404\"}") >= 1, "no 404 series");
    ck_assert_msg(td_sample(m, "laya_request_duration_seconds_count{endpoint=\"/decide\",code=\"200\"}") >= 1,
                  "no /decide 200 series");
    ck_assert_msg(td_sample(m, "laya_request_duration_seconds_bucket{endpoint=\"/decide\",code=\"200\",le=\"+Inf\"}") ==
                      td_sample(m, "laya_requests_total{endpoint=\"/decide\",code=\"200\"}"),
                  "histogram count differs from laya_requests_total");
    /* Always present, so that dashboards have a series before the first request. */
    ck_assert_msg(td_sample(m, "laya_request_duration_seconds_count{endpoint=\"/v1/systemone\",code=\"200\"}") >= 0,
                  "no /v1/systemone 200 series");
    free(m);
}
END_TEST

START_TEST(gpu_families_promtool)
{
    char *g = synthetic_gpu_exposition();
    const char *fams[] = {"laya_gpu_info{index=\"0\",device=\"0\",name=\"NVIDIA H200\"",
                          "laya_gpu_utilization_ratio{index=\"0\",device=\"0\"} 0.42",
                          "laya_gpu_temperature_celsius{index=\"1\"} 41.0",
                          "laya_gpu_ecc_errors_total{index=\"0\",device=\"0\",type=\"corrected\"} 3.0",
                          "laya_gpu_ecc_errors_total{index=\"0\",device=\"0\",type=\"uncorrected\"} 0.0"};
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++)
        ck_assert_msg(strstr(g, fams[i]) != NULL, "missing %s in\n%s", fams[i], g);
    ck_assert_msg(!strstr(g, "laya_gpu_ecc_errors_total{index=\"1\""), "ECC series for a GPU without ECC");
    if (access("/usr/bin/promtool", X_OK) != 0) {
        printf("SKIP promtool check metrics: /usr/bin/promtool missing\n");
        free(g);
        return;
    }
    char path[128], cmd[256];
    snprintf(path, sizeof path, "/tmp/layad-ops-gpu-%d.txt", (int)getpid());
    write_file(path, g);
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
    int st;
    char *out = shell(cmd, &st);
    ck_assert_msg(st == 0, "promtool check metrics failed:\n%s", out);
    unlink(path);
    free(out);
    free(g);
}
END_TEST

START_TEST(rules_config_promtool)
{
    if (access("/usr/bin/promtool", X_OK) != 0) {
        printf("SKIP promtool checks: /usr/bin/promtool missing\n");
        return;
    }
    const char *cmds[] = {"promtool check rules deploy/prometheus/layad-rules.yml 2>&1",
                          "promtool check config deploy/prometheus/prometheus.yml 2>&1",
                          "cd deploy/prometheus && promtool test rules layad-rules.test.yml 2>&1"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int st;
        char *out = shell(cmds[i], &st);
        ck_assert_msg(st == 0, "%s failed:\n%s", cmds[i], out);
        free(out);
    }
}
END_TEST

START_TEST(dashboard_and_rules_select_exported_series)
{
    /* A decision first, so that every family the daemon exports has its series. */
    td_resp r;
    ck_assert_int_eq(td_request(D.port, "POST", "/decide", NULL, DECIDE, strlen(DECIDE), &r), 0);
    ck_assert_int_eq(r.status, 200);
    td_resp_free(&r);
    char live[128], gpu[128], cmd[1024];
    snprintf(live, sizeof live, "/tmp/layad-ops-live-%d.txt", (int)getpid());
    snprintf(gpu, sizeof gpu, "/tmp/layad-ops-gpu-%d.txt", (int)getpid());
    char *m = live_metrics(), *g = synthetic_gpu_exposition();
    ck_assert_ptr_null(strstr(m, "laya_gpu_")); /* no GPU here: the synthetic file alone has them */
    const double ready = td_sample(m, "laya_ready");
    ck_assert_msg(ready == 1, "laya_ready %g on a ready daemon", ready);
    write_file(live, m);
    write_file(gpu, g);
    snprintf(cmd, sizeof cmd,
             "python3 tests/lib/promql_refs.py --metrics %s --metrics %s "
             "deploy/grafana/layad-dashboard.json deploy/prometheus/layad-rules.yml 2>&1",
             live, gpu);
    int st;
    char *out = shell(cmd, &st);
    printf("%s", out);
    ck_assert_msg(st == 0, "the dashboard or the rules query series layad does not export:\n%s", out);
    free(out);
    /* ...and it does catch a wrong name, label and value. */
    char bad[128];
    snprintf(bad, sizeof bad, "/tmp/layad-ops-bad-%d.yml", (int)getpid());
    write_file(bad, "groups:\n  - name: x\n    rules:\n"
                    "      - alert: A\n        expr: laya_nope > 0\n"
                    "      - alert: B\n        expr: rate(laya_requests_total{endpont=\"/decide\"}[5m]) > 0\n"
                    "      - alert: C\n        expr: sum by (le) (laya_requests_total{endpoint=\"/decid\"}) > 0\n");
    snprintf(cmd, sizeof cmd, "python3 tests/lib/promql_refs.py --metrics %s %s 2>&1", live, bad);
    out = shell(cmd, &st);
    ck_assert_msg(st == 1 && strstr(out, "laya_nope is not exported") && strstr(out, "has no label endpont") &&
                      strstr(out, "endpoint=\"/decid\""),
                  "promql_refs missed a wrong selector:\n%s", out);
    unlink(bad);
    unlink(live);
    unlink(gpu);
    free(out);
    free(m);
    free(g);
}
END_TEST

/* In this process: the registry alone, no daemon. */
START_TEST(registry_padding_ready_codes)
{
    metrics_init();
    metrics_batch(3, 90, 100); /* 10 of 100 tokens are padding: le="0.1", not le="0.05" */
    metrics_batch(1, 64, 64);  /* an exact pack (CPU backend): le="0" */
    metrics_batch(0, 0, 0);    /* nothing padded: counted as 0 */
    metrics_request(EP_DECIDE, 299, 0.002); /* a code outside the table: code="other" */
    size_t n;
    char *m = metrics_render(&n);
    ck_assert_ptr_nonnull(m);
    ck_assert_double_eq(td_sample(m, "laya_batch_padding_fraction_bucket{le=\"0.0\"}"), 2);
    ck_assert_double_eq(td_sample(m, "laya_batch_padding_fraction_bucket{le=\"0.05\"}"), 2);
    ck_assert_double_eq(td_sample(m, "laya_batch_padding_fraction_bucket{le=\"0.1\"}"), 3);
    ck_assert_double_eq(td_sample(m, "laya_batch_padding_fraction_count"), 3);
    ck_assert_double_eq_tol(td_sample(m, "laya_batch_padding_fraction_sum"), 0.1, 1e-12);
    /* the deprecated ratio keeps its meaning: padded / real */
    ck_assert_double_eq(td_sample(m, "laya_batch_padding_ratio_bucket{le=\"1.0\"}"), 2);
    ck_assert_double_eq(td_sample(m, "laya_batch_padding_ratio_bucket{le=\"1.25\"}"), 3);
    ck_assert_double_eq(td_sample(m, "laya_batch_rows_sum"), 4);
    ck_assert_double_eq(td_sample(m, "laya_batch_tokens_sum"), 154);
    ck_assert_double_eq(td_sample(m, "laya_request_duration_seconds_count{endpoint=\"/decide\",code=\"other\"}"), 1);
    ck_assert_ptr_null(strstr(m, "laya_ready"));
    ck_assert_ptr_nonnull(strstr(m, "laya_build_info{version=\"" LAYAD_VERSION "\""));
    free(m);

    _Atomic int state = 0; /* loading */
    metrics_watch_ready(&state, 1);
    m = metrics_render(&n);
    ck_assert_double_eq(td_sample(m, "laya_ready"), 0);
    free(m);
    atomic_store(&state, 1);
    m = metrics_render(&n);
    ck_assert_double_eq(td_sample(m, "laya_ready"), 1);
    free(m);
    atomic_store(&state, 2); /* draining */
    m = metrics_render(&n);
    ck_assert_double_eq(td_sample(m, "laya_ready"), 0);
    free(m);
}
END_TEST

Suite *suite(void)
{
    Suite *s = suite_create("ops_monitoring");
    TCase *reg = tcase_create("registry");
    tcase_add_test(reg, registry_padding_ready_codes);
    tcase_add_test(reg, gpu_families_promtool);
    tcase_add_test(reg, rules_config_promtool);
    suite_add_tcase(s, reg);
    TCase *tc = tcase_create("daemon");
    tcase_add_unchecked_fixture(tc, start_shared, stop_shared);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, version_and_build_info);
    tcase_add_test(tc, process_families);
    tcase_add_test(tc, latency_by_endpoint_and_code);
    tcase_add_test(tc, dashboard_and_rules_select_exported_series);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
