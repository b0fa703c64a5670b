/*
 * cmd_bench_cpu.c - `layad-dev bench-cpu`: time the CPU fp32 forward on given rows.
 *
 *   layad-dev bench-cpu --model DIR --rows FILE [--reps N] [--threads N] [--max-rows N]
 *
 * FILE is scripts/ref-forward.py's input format ({"rows": [{"ids", "markers",
 * "qtype"}, ...]}). All rows go through one forward call (one chunk when
 * --max-rows >= their count); after one untimed warm-up the call is timed N
 * times (CLOCK_MONOTONIC, and process CPU time over all threads, which a shared
 * machine disturbs less). Prints one JSON object: load time, per-rep seconds,
 * median, tokens/s over the real (unpadded) tokens, and the logits / act logits
 * of the last rep so the caller can compare them with PyTorch.
 * scripts/bench-cpu-forward drives it next to PyTorch in the same run.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/backend/cpu.h"
#include "model/checkpoint/checkpoint.h"
#include "tests/tools/tool.h"
#include "tests/tools/tools.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: layad-dev bench-cpu --model DIR --rows FILE [--reps N] [--threads N] [--max-rows N]\n");
}

/* Reads the rows file into rows[] (ids/markers allocated in one block *store). */
static int read_rows(const char *path, laya_row **rows_out, int32_t **store_out, int *n_out, int *K_out)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je), *jr = root ? json_object_get(root, "rows") : NULL;
    if (!json_is_array(jr) || json_array_size(jr) == 0) {
        fprintf(stderr, "bench-cpu: %s: %s\n", path, root ? "no \"rows\" array" : je.text);
        json_decref(root);
        return -1;
    }
    const size_t nrows = json_array_size(jr);
    if (nrows > 100000) {
        fprintf(stderr, "bench-cpu: %s: too many rows\n", path);
        json_decref(root);
        return -1;
    }
    const int n = (int)nrows;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        json_t *r = json_array_get(jr, i);
        total += json_array_size(json_object_get(r, "ids")) + json_array_size(json_object_get(r, "markers"));
    }
    laya_row *rows = calloc(nrows, sizeof *rows);
    int32_t *store = malloc(sizeof(int32_t) * (total ? total : 1)), *p = store;
    if (!rows || !store) {
        free(rows), free(store), json_decref(root);
        fprintf(stderr, "bench-cpu: out of memory\n");
        return -1;
    }
    int K = 1;
    for (int i = 0; i < n; i++) {
        json_t *r = json_array_get(jr, i), *ji = json_object_get(r, "ids"), *jm = json_object_get(r, "markers");
        rows[i].ids = p;
        rows[i].len = (int)json_array_size(ji);
        for (int t = 0; t < rows[i].len; t++)
            *p++ = (int32_t)json_integer_value(json_array_get(ji, t));
        rows[i].markers = p;
        rows[i].n_markers = (int)json_array_size(jm);
        for (int k = 0; k < rows[i].n_markers; k++)
            *p++ = (int32_t)json_integer_value(json_array_get(jm, k));
        rows[i].qtype = (int)json_integer_value(json_object_get(r, "qtype"));
        K = rows[i].n_markers > K ? rows[i].n_markers : K;
    }
    json_decref(root);
    *rows_out = rows, *store_out = store, *n_out = n, *K_out = K;
    return 0;
}

/* The tool's own options and the rows they name (the common ones are in tool). */
typedef struct bench_cpu {
    const char *rows_path;
    int reps, max_rows;
    laya_row *rows;
    int32_t *store;
    int n, K;
    float *logits, *act;     /* [n * K], [n * LAYA_N_ACT]: the last rep's outputs */
    double *times, *cpu;     /* [reps]: wall and process CPU seconds per rep */
    double load_s;
} bench_cpu;

static int bench_cpu_opt(void *ctx, int c, const char *arg)
{
    bench_cpu *b = ctx;
    switch (c) {
    case 'r': b->rows_path = arg; return 0;
    case 'n': b->reps = atoi(arg); return 0;
    case 'b': b->max_rows = atoi(arg); return 0;
    default: usage(stderr); return 2;
    }
}

/* One untimed warm-up, then b->reps timed forwards of every row. 0, or -1 after printing why. */
static int run_reps(tool *t, bench_cpu *b)
{
    laya_backend *be = t->cpu;
    for (int r = -1; r < b->reps; r++) {
        double s = now_s(), sc = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (be->ops->forward(be, b->rows, b->n, b->K, b->logits, b->act, &t->err)) {
            fprintf(stderr, "bench-cpu: forward: %s\n", t->err.msg);
            return -1;
        }
        if (r >= 0) {
            b->times[r] = now_s() - s;
            b->cpu[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - sc;
        }
    }
    return 0;
}

/* The report on stdout (one compact JSON line). Sorts b->times. 0, or 2. */
static int report(const tool *t, bench_cpu *b)
{
    const int n = b->n, K = b->K, reps = b->reps;
    long tokens = 0;
    for (int i = 0; i < n; i++)
        tokens += b->rows[i].len;
    json_t *o = json_object(), *jt = json_array(), *jc = json_array(), *jl = json_array(), *ja = json_array();
    for (int r = 0; r < reps; r++) {
        json_array_append_new(jt, json_real(b->times[r]));
        json_array_append_new(jc, json_real(b->cpu[r]));
    }
    qsort(b->times, (size_t)reps, sizeof(double), cmp_double);
    const double median = reps % 2 ? b->times[reps / 2] : 0.5 * (b->times[reps / 2 - 1] + b->times[reps / 2]);
    for (int i = 0; i < n; i++) {
        json_t *row = json_array(), *arow = json_array();
        for (int k = 0; k < K; k++)
            json_array_append_new(row, json_real(b->logits[(size_t)i * K + k]));
        for (int a = 0; a < LAYA_N_ACT; a++)
            json_array_append_new(arow, json_real(b->act[(size_t)i * LAYA_N_ACT + a]));
        json_array_append_new(jl, row);
        json_array_append_new(ja, arow);
    }
    json_object_set_new(o, "backend", json_string("cpu"));
    json_object_set_new(o, "threads", json_integer(t->threads));
    json_object_set_new(o, "max_rows", json_integer(b->max_rows));
    json_object_set_new(o, "rows", json_integer(n));
    json_object_set_new(o, "tokens", json_integer(tokens));
    json_object_set_new(o, "load_s", json_real(b->load_s));
    json_object_set_new(o, "times_s", jt);
    json_object_set_new(o, "cpu_times_s", jc); /* process CPU time (all threads) per call */
    json_object_set_new(o, "median_s", json_real(median));
    json_object_set_new(o, "min_s", json_real(b->times[0]));
    json_object_set_new(o, "max_s", json_real(b->times[reps - 1]));
    json_object_set_new(o, "tokens_per_s", json_real((double)tokens / median));
    json_object_set_new(o, "logits", jl);
    json_object_set_new(o, "act", ja);
    int rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9)) ? 2 : 0;
    fputc('\n', stdout);
    json_decref(o);
    return rc;
}

/* Loads the checkpoint and the backend (timed), runs the reps, reports. The exit status. */
static int bench(tool *t, bench_cpu *b)
{
    double t0 = now_s();
    if (!b->logits || !b->act || !b->times || !b->cpu) {
        fprintf(stderr, "bench-cpu: out of memory\n");
        return 2;
    }
    if (tool_open_model(t))
        return tool_fail(t);
    if (b->max_rows < 1)
        b->max_rows = b->n; /* one chunk holding every row, padded to the longest */
    if (!(t->cpu = cpu_backend_create(t->ck, b->max_rows, t->threads, &t->err)))
        return tool_fail(t);
    b->load_s = now_s() - t0;
    if (run_reps(t, b))
        return 2;
    return report(t, b);
}

int cmd_bench_cpu(int argc, char **argv)
{
    static const struct option opts[] = {TOOL_MODEL, {"rows", required_argument, 0, 'r'},
                                         {"reps", required_argument, 0, 'n'}, TOOL_THREADS,
                                         {"max-rows", required_argument, 0, 'b'}, TOOL_HELP,
                                         {0, 0, 0, 0}};
    tool t;
    tool_init(&t, "bench-cpu", usage);
    bench_cpu b = {.reps = 3};
    int rc = tool_parse(&t, argc, argv, "h", opts, bench_cpu_opt, &b);
    if (rc >= 0)
        return rc;
    if (!t.model || !b.rows_path || b.reps < 1)
        return tool_usage_error(&t);
    if (read_rows(b.rows_path, &b.rows, &b.store, &b.n, &b.K))
        return 2;
    b.logits = malloc(sizeof(float) * (size_t)b.n * b.K);
    b.act = malloc(sizeof(float) * (size_t)b.n * LAYA_N_ACT);
    b.times = calloc((size_t)b.reps, sizeof(double));
    b.cpu = calloc((size_t)b.reps, sizeof(double));
    rc = bench(&t, &b);
    free(b.logits), free(b.act), free(b.times), free(b.cpu), free(b.rows), free(b.store);
    return tool_close(&t, rc);
}
