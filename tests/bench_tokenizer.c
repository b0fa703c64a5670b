/*
 * bench_tokenizer.c - tokenizer speed on one core: load time of the 50k-vocab
 * ModernBERT tokenizer.json and encode time of a ~512-token request state.
 *
 *   make bench-tokenizer            (writes bench/results/tokenizer-cpu.json)
 *   build/tests/bench_tokenizer [OUT.json]
 *
 * Targets (issue 3): load < 100 ms, encode of a 512-token state < 50 us.
 * The ModernBERT file comes from $LAYAD_SHARED/data (default ../shared); when it
 * is absent the tiny tokenizer stands in and the result says so. Each number is
 * the median of many repetitions, with min and p90 as its spread, as wall time
 * and as thread CPU time (the machine is shared: its load average is recorded);
 * the state text is deterministic and its sha256 is recorded with the results.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/tokenizer.h"

static double clock_us(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Wall time, and this thread's CPU time (which excludes waiting for a core
 * on a shared machine). */
static double now_us(void) { return clock_us(CLOCK_MONOTONIC); }
static double cpu_us(void) { return clock_us(CLOCK_THREAD_CPUTIME_ID); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stats {
    double median, min, p90, max;
    int n;
} stats;

static stats summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (stats){ v[n / 2], v[0], v[(n * 9) / 10], v[n - 1], n };
}

/* First line of a command's output (trimmed), or "unknown". */
static void run_line(const char *cmd, char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (fgets(out, (int)cap, p))
        out[strcspn(out, "\n")] = '\0';
    if (pclose(p) != 0 || !out[0])
        snprintf(out, cap, "unknown");
}

/* A deterministic request state: the kind of text Laya encodes (question,
 * option criteria, a JSON state) repeated until it reaches `tokens` ids. */
static char *make_state(const tokenizer *t, size_t tokens, size_t *len_out)
{
    static const char *const parts[] = {
        "choice question: Which department should handle this request? ",
        "Options: billing (Invoices, refunds and duplicate charges), technical (Software faults, "
        "outages, login errors), other (Anything else). ",
        "{\"customer\": {\"id\": 48213, \"name\": \"Dana O'Neil\", \"plan\": \"business\"}, "
        "\"message\": \"We were billed twice for order #A-1093 on 2026-11-28 and the app "
        "keeps logging us out. Please refund the duplicate payment today!\", "
        "\"history\": [{\"t\": \"2026-11-02T10:15:00Z\", \"event\": \"login_failed\"}, "
        "{\"t\": \"2026-11-28T08:01:12Z\", \"event\": \"charge\", \"amount\": 129.99}], "
        "\"sentiment\": \"frustrated\", \"priority\": null} ",
    };
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    tok_ids ids = { 0 };
    layad_error err;
    for (size_t k = 0; s; k++) {
        const char *p = parts[k % 3];
        size_t n = strlen(p);
        if (len + n + 1 > cap)
            break;
        memcpy(s + len, p, n);
        len += n;
        ids.n = 0;
        if (tokenizer_encode(t, s, len, &ids, &err) != 0 || ids.n >= tokens)
            break;
    }
    /* trim back by words until at most `tokens` ids */
    while (s && len > 0) {
        ids.n = 0;
        if (tokenizer_encode(t, s, len, &ids, &err) != 0 || ids.n <= tokens)
            break;
        while (len > 0 && s[len - 1] != ' ')
            len--;
        while (len > 0 && s[len - 1] == ' ')
            len--;
    }
    free(ids.ids);
    if (s)
        s[len] = '\0';
    *len_out = len;
    return s;
}

int main(int argc, char **argv)
{
    const char *out_path = argc > 1 ? argv[1] : NULL;
    const char *shared = getenv("LAYAD_SHARED");
    char path[512];
    snprintf(path, sizeof path, "%s/data/modernbert-tokenizer.json", shared && *shared ? shared : "../shared");
    FILE *probe = fopen(path, "r");
    bool real = probe != NULL;
    if (probe)
        fclose(probe);
    else
        snprintf(path, sizeof path, "config/tiny-tokenizer.json");

    /* load */
    enum { LOADS = 21, ENCODES = 4001, LONG_REPS = 9 };
    double load_us[LOADS], load_cpu[LOADS];
    layad_error err;
    tokenizer *t = NULL;
    for (int i = 0; i < LOADS; i++) {
        double t0 = now_us(), c0 = cpu_us();
        tokenizer *x = tokenizer_load(path, &err);
        load_cpu[i] = cpu_us() - c0;
        load_us[i] = now_us() - t0;
        if (!x) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        if (t)
            tokenizer_free(t);
        t = x;
    }
    stats load = summarize(load_us, LOADS), loadc = summarize(load_cpu, LOADS);

    /* encode a ~512-token state; the first call warms this thread's scratch */
    size_t len;
    char *state = make_state(t, 512, &len);
    if (!state)
        return 1;
    tok_ids ids = { 0 };
    if (tokenizer_encode(t, state, len, &ids, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    size_t n_tokens = ids.n;
    static double enc_us[ENCODES], enc_cpu[ENCODES];
    for (int i = 0; i < ENCODES; i++) {
        ids.n = 0;
        double t0 = now_us(), c0 = cpu_us();
        int rc = tokenizer_encode(t, state, len, &ids, &err);
        enc_cpu[i] = cpu_us() - c0;
        enc_us[i] = now_us() - t0;
        if (rc != 0 || ids.n != n_tokens)
            return 1;
    }
    stats enc = summarize(enc_us, ENCODES), encc = summarize(enc_cpu, ENCODES);

    /* 100 KB of mixed text (the state repeated): throughput for long inputs */
    size_t big_len = 100 * 1024;
    char *big = malloc(big_len);
    if (!big)
        return 1;
    for (size_t i = 0; i < big_len; i++)
        big[i] = state[i % len];
    while (big_len > 0 && ((unsigned char)big[big_len - 1] & 0xC0) == 0x80)
        big_len--; /* keep the cut on a character boundary */
    if (big_len > 0 && (unsigned char)big[big_len - 1] >= 0xC0)
        big_len--;
    double long_us[LONG_REPS];
    size_t big_tokens = 0;
    for (int i = 0; i < LONG_REPS; i++) {
        ids.n = 0;
        double t0 = now_us();
        int rc = tokenizer_encode(t, big, big_len, &ids, &err);
        long_us[i] = now_us() - t0;
        if (rc != 0)
            return 1;
        big_tokens = ids.n;
    }
    stats lng = summarize(long_us, LONG_REPS);

    /* the same text through the Gemma-like (Metaspace, byte fallback) fixture */
    double gemma_med = -1;
    size_t gemma_tokens = 0;
    tokenizer *g = tokenizer_load("tests/fixtures/tokenizer/gemma-like.json", &err);
    if (g) {
        static double g_us[ENCODES];
        for (int i = 0; i < ENCODES; i++) {
            ids.n = 0;
            double c0 = cpu_us();
            int rc = tokenizer_encode(g, state, len, &ids, &err);
            g_us[i] = cpu_us() - c0;
            if (rc != 0)
                return 1;
            gemma_tokens = ids.n;
        }
        gemma_med = summarize(g_us, ENCODES).median;
        tokenizer_free(g);
    }

    char commit[128], cpu[256], host[256], file_sha[128], cmd[1024], loadavg[128];
    run_line("cut -d' ' -f1-3 /proc/loadavg", loadavg, sizeof loadavg);
    run_line("git rev-parse HEAD 2>/dev/null", commit, sizeof commit);
    run_line("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'", cpu, sizeof cpu);
    run_line("uname -srm", host, sizeof host);
    snprintf(cmd, sizeof cmd, "sha256sum '%s' | cut -d' ' -f1", path);
    run_line(cmd, file_sha, sizeof file_sha);
    char state_sha[128] = "unknown";
    FILE *tmp = fopen("build/bench_tokenizer_state.txt", "w");
    if (tmp) {
        fwrite(state, 1, len, tmp);
        fclose(tmp);
        run_line("sha256sum build/bench_tokenizer_state.txt | cut -d' ' -f1", state_sha, sizeof state_sha);
    }

    char json[4096];
    snprintf(json, sizeof json,
             "{\n"
             "  \"benchmark\": \"tokenizer-cpu\",\n"
             "  \"command\": \"make bench-tokenizer (build/tests/bench_tokenizer)\",\n"
             "  \"git_commit\": \"%s\",\n"
             "  \"machine\": {\"cpu\": \"%s\", \"kernel\": \"%s\", \"cores\": %ld, \"loadavg_1_5_15\": \"%s\", \"threads_used\": 1},\n"
             "  \"tokenizer\": {\"file\": \"%s\", \"sha256\": \"%s\", \"real_modernbert\": %s, \"vocab_size\": %zu},\n"
             "  \"load_ms\": {\"median\": %.3f, \"min\": %.3f, \"p90\": %.3f, \"max\": %.3f, \"runs\": %d, \"target\": 100,\n"
             "              \"cpu_median\": %.3f, \"cpu_min\": %.3f, \"cpu_p90\": %.3f},\n"
             "  \"encode_state\": {\"tokens\": %zu, \"bytes\": %zu, \"text_sha256\": \"%s\",\n"
             "                   \"median_us\": %.2f, \"min_us\": %.2f, \"p90_us\": %.2f, \"max_us\": %.2f, \"runs\": %d, \"target_us\": 50,\n"
             "                   \"cpu_median_us\": %.2f, \"cpu_min_us\": %.2f, \"cpu_p90_us\": %.2f},\n"
             "  \"encode_100kb\": {\"bytes\": %zu, \"tokens\": %zu, \"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"runs\": %d},\n"
             "  \"encode_state_gemma_like\": {\"file\": \"tests/fixtures/tokenizer/gemma-like.json\", \"tokens\": %zu, \"cpu_median_us\": %.2f}\n"
             "}\n",
             commit, cpu, host, sysconf(_SC_NPROCESSORS_ONLN), loadavg, path, file_sha,
             real ? "true" : "false", tokenizer_vocab_size(t), load.median / 1e3, load.min / 1e3,
             load.p90 / 1e3, load.max / 1e3, load.n, loadc.median / 1e3, loadc.min / 1e3, loadc.p90 / 1e3,
             n_tokens, len, state_sha, enc.median, enc.min, enc.p90, enc.max, enc.n, encc.median, encc.min,
             encc.p90, big_len, big_tokens, lng.median / 1e3,
             lng.min / 1e3, lng.max / 1e3, lng.n, gemma_tokens, gemma_med);
    fputs(json, stdout);
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f || fputs(json, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "%s: cannot write\n", out_path);
            return 1;
        }
    }
    free(ids.ids);
    free(big);
    free(state);
    tokenizer_free(t);
    tokenizer_thread_cleanup();
    return 0;
}
