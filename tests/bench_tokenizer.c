/*
 * bench_tokenizer.c - tokenizer speed on one core: load time of the 50k-vocab
 * ModernBERT tokenizer.json and encode time of a ~512-token request state.
 *
 *   make bench-tokenizer            (writes bench/results/cpu/tokenizer.json)
 *   build/tests/bench_tokenizer [OUT.json]
 *
 * Targets: load < 100 ms, encode of a 512-token state < 50 us.
 * Encodes are timed cold (per-thread word cache emptied first, as for a state
 * whose words this thread has never seen) and warm (the same state again).
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

#include "model/tokenizer/tokenizer.h"
#include "tests/lib/testutil.h"

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

/* A fixed 64-bit LCG (Knuth's MMIX constants): the state text is the same everywhere. */
static size_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return (size_t)(*x >> 33);
}

/* A deterministic request state of about `tokens` ids: a question line, then a
 * JSON record whose messages are sentences drawn (fixed LCG) from a few hundred
 * words, numbers and names, so that words recur as in real text (keys, "the",
 * quotes) but no passage repeats. */
static char *make_state(const tokenizer *t, size_t tokens, size_t *len_out)
{
    static const char *const words[] = {
        "the", "a", "to", "and", "of", "we", "our", "your", "please", "refund", "invoice", "billing",
        "payment", "charged", "twice", "customer", "support", "urgent", "outage", "login", "password",
        "account", "order", "shipping", "delivery", "cancel", "subscription", "technical", "error",
        "failed", "service", "offline", "yesterday", "today", "since", "Monday", "March", "agent",
        "ticket", "priority", "escalate", "manager", "duplicate", "card", "bank", "statement",
        "shows", "two", "identical", "charges", "for", "same", "plan", "upgrade", "downgrade",
        "annual", "monthly", "trial", "expired", "renewal", "discount", "coupon", "code", "applied",
        "warehouse", "tracking", "number", "carrier", "delayed", "damaged", "package", "arrived",
        "broken", "screen", "battery", "replacement", "warranty", "serial", "firmware", "update",
        "crashes", "whenever", "I", "open", "settings", "page", "browser", "Chrome", "Firefox",
        "Safari", "Android", "iOS", "app", "version", "latest", "reinstalled", "cleared", "cache",
        "cookies", "still", "happens", "every", "time", "frustrated", "disappointed", "happy",
        "thanks", "quickly", "resolved", "waiting", "hours", "days", "weeks", "nobody", "answered",
        "email", "phone", "chat", "callback", "requested", "address", "changed", "moved", "Berlin",
        "Zürich", "São", "Paulo", "Kraków", "naïve", "café", "résumé", "internationalization",
        "misconfigured", "authentication", "two-factor", "SMS", "token", "expired", "reset",
        "link", "doesn't", "work", "can't", "won't", "it's", "they're", "we've", "O'Neil",
    };
    const size_t nw = sizeof words / sizeof words[0];
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    uint64_t x = 0x2026120209ull;
    size_t ticket = lcg(&x) % 100000, cust = lcg(&x) % 1000000;
    len += (size_t)snprintf(s, cap, "choice question: Which department should handle this request? "
                                    "{\"ticket\": %zu, \"customer\": {\"id\": %zu, \"plan\": \"business\"}, "
                                    "\"messages\": [",
                            ticket, cust);
    tok_ids ids = { 0 };
    layad_error err;
    for (int m = 0; len < cap - 512; m++) {
        size_t mo = 1 + lcg(&x) % 12, d = 1 + lcg(&x) % 28, h = lcg(&x) % 24, mi = lcg(&x) % 60;
        len += (size_t)snprintf(s + len, cap - len, "%s{\"t\": \"2026-%02zu-%02zuT%02zu:%02zu:00Z\", \"text\": \"",
                                m ? ", " : "", mo, d, h, mi);
        size_t n = 8 + lcg(&x) % 14;
        for (size_t k = 0; k < n; k++) {
            const char *w = words[lcg(&x) % nw];
            len += (size_t)snprintf(s + len, cap - len, "%s%s", k ? " " : "", w);
            if (lcg(&x) % 9 == 0)
                len += (size_t)snprintf(s + len, cap - len, " %zu", lcg(&x) % 5000);
        }
        len += (size_t)snprintf(s + len, cap - len, ".\"}");
        ids.n = 0;
        if (tokenizer_encode(t, s, len, &ids, &err) != 0 || ids.n >= tokens)
            break;
    }
    /* trim back by words until at most `tokens` ids */
    while (len > 0) {
        ids.n = 0;
        if (tokenizer_encode(t, s, len, &ids, &err) != 0 || ids.n <= tokens)
            break;
        while (len > 0 && s[len - 1] != ' ')
            len--;
        while (len > 0 && s[len - 1] == ' ')
            len--;
    }
    free(ids.ids);
    s[len] = '\0';
    *len_out = len;
    return s;
}

int main(int argc, char **argv)
{
    const char *out_path = argc > 1 ? argv[1] : NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/data/modernbert-tokenizer.json", tu_shared());
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
    /* cold: the word cache emptied before every encode (a state with no word seen
     * before on this thread); warm: the same state again (every word cached) */
    static double enc_us[ENCODES], enc_cpu[ENCODES], warm_cpu[ENCODES];
    for (int i = 0; i < ENCODES; i++) {
        ids.n = 0;
        tokenizer_thread_cache_clear();
        double t0 = now_us(), c0 = cpu_us();
        int rc = tokenizer_encode(t, state, len, &ids, &err);
        enc_cpu[i] = cpu_us() - c0;
        enc_us[i] = now_us() - t0;
        if (rc != 0 || ids.n != n_tokens)
            return 1;
    }
    for (int i = 0; i < ENCODES; i++) {
        ids.n = 0;
        double c0 = cpu_us();
        int rc = tokenizer_encode(t, state, len, &ids, &err);
        warm_cpu[i] = cpu_us() - c0;
        if (rc != 0 || ids.n != n_tokens)
            return 1;
    }
    stats enc = summarize(enc_us, ENCODES), encc = summarize(enc_cpu, ENCODES),
          warm = summarize(warm_cpu, ENCODES);

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
        tokenizer_thread_cache_clear();
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
            tokenizer_thread_cache_clear();
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
             "                   \"cpu_median_us\": %.2f, \"cpu_min_us\": %.2f, \"cpu_p90_us\": %.2f,\n"
             "                   \"cache\": \"cold: per-thread word cache emptied before each run\"},\n"
             "  \"encode_state_warm\": {\"cpu_median_us\": %.2f, \"cpu_min_us\": %.2f, \"cpu_p90_us\": %.2f, \"runs\": %d,\n"
             "                        \"cache\": \"warm: the same state again, every word in the per-thread cache\"},\n"
             "  \"encode_100kb\": {\"bytes\": %zu, \"tokens\": %zu, \"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"runs\": %d},\n"
             "  \"encode_state_gemma_like\": {\"file\": \"tests/fixtures/tokenizer/gemma-like.json\", \"tokens\": %zu, \"cpu_median_us\": %.2f, \"cache\": \"cold\"}\n"
             "}\n",
             commit, cpu, host, sysconf(_SC_NPROCESSORS_ONLN), loadavg, path, file_sha,
             real ? "true" : "false", tokenizer_vocab_size(t), load.median / 1e3, load.min / 1e3,
             load.p90 / 1e3, load.max / 1e3, load.n, loadc.median / 1e3, loadc.min / 1e3, loadc.p90 / 1e3,
             n_tokens, len, state_sha, enc.median, enc.min, enc.p90, enc.max, enc.n, encc.median, encc.min,
             encc.p90, warm.median, warm.min, warm.p90, warm.n, big_len, big_tokens, lng.median / 1e3,
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
