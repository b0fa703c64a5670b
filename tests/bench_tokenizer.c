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

enum { LOADS = 21, ENCODES = 4001, LONG_REPS = 9 };

/* Everything the report holds. */
typedef struct {
    char path[512];
    bool real;
    size_t vocab, n_tokens, big_len, big_tokens, gemma_tokens;
    stats load, loadc, enc, encc, warm, lng;
    double gemma_med;
} bench;

/* LOADS loads of b->path; the last one's tokenizer in *t. */
static int bench_load(bench *b, tokenizer **t)
{
    static double load_us[LOADS], load_cpu[LOADS];
    layad_error err;
    for (int i = 0; i < LOADS; i++) {
        double t0 = now_us(), c0 = cpu_us();
        tokenizer *x = tokenizer_load(b->path, &err);
        load_cpu[i] = cpu_us() - c0;
        load_us[i] = now_us() - t0;
        if (!x) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        if (*t)
            tokenizer_free(*t);
        *t = x;
    }
    b->load = summarize(load_us, LOADS);
    b->loadc = summarize(load_cpu, LOADS);
    b->vocab = tokenizer_vocab_size(*t);
    return 0;
}

/* ENCODES encodes of the state, each with the word cache emptied first (cold, or a state
 * with no word seen before on this thread), CPU time in cpu[] and wall time in wall[] when
 * given; the token count in *n (the same every time). */
static int encode_runs(const tokenizer *t, const char *state, size_t len, tok_ids *ids, bool cold, double *wall,
                       double *cpu, size_t *n)
{
    layad_error err;
    for (int i = 0; i < ENCODES; i++) {
        ids->n = 0;
        if (cold)
            tokenizer_thread_cache_clear();
        double t0 = now_us(), c0 = cpu_us();
        int rc = tokenizer_encode(t, state, len, ids, &err);
        cpu[i] = cpu_us() - c0;
        if (wall)
            wall[i] = now_us() - t0;
        if (rc != 0 || (i && ids->n != *n))
            return 1;
        *n = ids->n;
    }
    return 0;
}

/* The ~512-token state cold (wall and CPU) and warm (the same state again, every word
 * cached); the first call warms this thread's scratch. */
static int bench_encode(bench *b, const tokenizer *t, const char *state, size_t len, tok_ids *ids)
{
    static double enc_us[ENCODES], enc_cpu[ENCODES], warm_cpu[ENCODES];
    layad_error err;
    if (tokenizer_encode(t, state, len, ids, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    b->n_tokens = ids->n;
    size_t n = b->n_tokens;
    if (encode_runs(t, state, len, ids, true, enc_us, enc_cpu, &n) || n != b->n_tokens ||
        encode_runs(t, state, len, ids, false, NULL, warm_cpu, &n) || n != b->n_tokens)
        return 1;
    b->enc = summarize(enc_us, ENCODES);
    b->encc = summarize(enc_cpu, ENCODES);
    b->warm = summarize(warm_cpu, ENCODES);
    return 0;
}

/* 100 KB of mixed text (the state repeated): throughput for long inputs. */
static int bench_long(bench *b, const tokenizer *t, const char *state, size_t len, tok_ids *ids)
{
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
    layad_error err;
    int rc = 0;
    for (int i = 0; i < LONG_REPS && !rc; i++) {
        ids->n = 0;
        tokenizer_thread_cache_clear();
        double t0 = now_us();
        rc = tokenizer_encode(t, big, big_len, ids, &err);
        long_us[i] = now_us() - t0;
        b->big_tokens = ids->n;
    }
    free(big);
    b->big_len = big_len;
    b->lng = summarize(long_us, LONG_REPS);
    return rc != 0;
}

/* The same state through the Gemma-like (Metaspace, byte fallback) fixture, cold; -1 when
 * the fixture does not load. */
static int bench_gemma(bench *b, const char *state, size_t len, tok_ids *ids)
{
    static double g_us[ENCODES];
    layad_error err;
    b->gemma_med = -1;
    tokenizer *g = tokenizer_load("tests/fixtures/tokenizer/gemma-like.json", &err);
    if (!g)
        return 0;
    int rc = encode_runs(g, state, len, ids, true, NULL, g_us, &b->gemma_tokens);
    b->gemma_med = summarize(g_us, ENCODES).median;
    tokenizer_free(g);
    return rc;
}

/* The report (JSON) into json[cap]: the numbers with the commit, machine and inputs' hashes. */
static void report(const bench *b, const char *state, size_t len, char *json, size_t cap)
{
    char commit[128], cpu[256], host[256], file_sha[128], cmd[1024], loadavg[128];
    run_line("cut -d' ' -f1-3 /proc/loadavg", loadavg, sizeof loadavg);
    run_line("git rev-parse HEAD 2>/dev/null", commit, sizeof commit);
    run_line("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'", cpu, sizeof cpu);
    run_line("uname -srm", host, sizeof host);
    snprintf(cmd, sizeof cmd, "sha256sum '%s' | cut -d' ' -f1", b->path);
    run_line(cmd, file_sha, sizeof file_sha);
    char state_sha[128] = "unknown";
    FILE *tmp = fopen("build/bench_tokenizer_state.txt", "w");
    if (tmp) {
        fwrite(state, 1, len, tmp);
        fclose(tmp);
        run_line("sha256sum build/bench_tokenizer_state.txt | cut -d' ' -f1", state_sha, sizeof state_sha);
    }
    snprintf(json, cap,
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
             commit, cpu, host, sysconf(_SC_NPROCESSORS_ONLN), loadavg, b->path, file_sha,
             b->real ? "true" : "false", b->vocab, b->load.median / 1e3, b->load.min / 1e3, b->load.p90 / 1e3,
             b->load.max / 1e3, b->load.n, b->loadc.median / 1e3, b->loadc.min / 1e3, b->loadc.p90 / 1e3,
             b->n_tokens, len, state_sha, b->enc.median, b->enc.min, b->enc.p90, b->enc.max, b->enc.n,
             b->encc.median, b->encc.min, b->encc.p90, b->warm.median, b->warm.min, b->warm.p90, b->warm.n,
             b->big_len, b->big_tokens, b->lng.median / 1e3, b->lng.min / 1e3, b->lng.max / 1e3, b->lng.n,
             b->gemma_tokens, b->gemma_med);
}

int main(int argc, char **argv)
{
    const char *out_path = argc > 1 ? argv[1] : NULL;
    static bench b;
    snprintf(b.path, sizeof b.path, "%s/data/modernbert-tokenizer.json", tu_shared());
    FILE *probe = fopen(b.path, "r");
    b.real = probe != NULL;
    if (probe)
        fclose(probe);
    else
        snprintf(b.path, sizeof b.path, "config/tiny-tokenizer.json");
    tokenizer *t = NULL;
    size_t len;
    char *state = NULL;
    tok_ids ids = {0};
    int rc = 1;
    if (bench_load(&b, &t) || !(state = make_state(t, 512, &len)) || bench_encode(&b, t, state, len, &ids) ||
        bench_long(&b, t, state, len, &ids) || bench_gemma(&b, state, len, &ids))
        goto out;
    char json[4096];
    report(&b, state, len, json, sizeof json);
    fputs(json, stdout);
    FILE *f = out_path ? fopen(out_path, "w") : NULL;
    if (out_path && (!f || fputs(json, f) < 0 || fclose(f) != 0)) {
        fprintf(stderr, "%s: cannot write\n", out_path);
        goto out;
    }
    rc = 0;
out:
    free(ids.ids);
    free(state);
    if (t)
        tokenizer_free(t);
    tokenizer_thread_cleanup();
    return rc;
}
