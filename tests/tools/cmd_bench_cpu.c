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

int cmd_bench_cpu(int argc, char **argv)
{
    const char *model = NULL, *rows_path = NULL;
    int reps = 3, threads = 0, max_rows = 0;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"rows", required_argument, 0, 'r'},
                                         {"reps", required_argument, 0, 'n'}, {"threads", required_argument, 0, 't'},
                                         {"max-rows", required_argument, 0, 'b'}, {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'r': rows_path = optarg; break;
        case 'n': reps = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'b': max_rows = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!model || !rows_path || reps < 1) {
        usage(stderr);
        return 2;
    }
    laya_row *rows;
    int32_t *store;
    int n, K;
    if (read_rows(rows_path, &rows, &store, &n, &K))
        return 2;
    int rc = 2;
    laya_checkpoint ck;
    laya_backend *be = NULL;
    float *logits = malloc(sizeof(float) * (size_t)n * K), *act = malloc(sizeof(float) * (size_t)n * LAYA_N_ACT);
    double *times = calloc((size_t)reps, sizeof(double)), *cpu = calloc((size_t)reps, sizeof(double));
    layad_error err;
    double t0 = now_s();
    if (!logits || !act || !times || !cpu) {
        fprintf(stderr, "bench-cpu: out of memory\n");
        goto out_rows;
    }
    if (checkpoint_open(&ck, model, &err)) {
        fprintf(stderr, "bench-cpu: %s\n", err.msg);
        goto out_rows;
    }
    if (max_rows < 1)
        max_rows = n; /* one chunk holding every row, padded to the longest */
    if (!(be = cpu_backend_create(&ck, max_rows, threads, &err))) {
        fprintf(stderr, "bench-cpu: %s\n", err.msg);
        goto out_ck;
    }
    const double load_s = now_s() - t0;
    for (int r = -1; r < reps; r++) {
        double s = now_s(), sc = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (be->ops->forward(be, rows, n, K, logits, act, &err)) {
            fprintf(stderr, "bench-cpu: forward: %s\n", err.msg);
            goto out_be;
        }
        if (r >= 0) {
            times[r] = now_s() - s;
            cpu[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - sc;
        }
    }
    long tokens = 0;
    for (int i = 0; i < n; i++)
        tokens += rows[i].len;
    json_t *o = json_object(), *jt = json_array(), *jc = json_array(), *jl = json_array(), *ja = json_array();
    for (int r = 0; r < reps; r++) {
        json_array_append_new(jt, json_real(times[r]));
        json_array_append_new(jc, json_real(cpu[r]));
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    const double median = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    for (int i = 0; i < n; i++) {
        json_t *row = json_array(), *arow = json_array();
        for (int k = 0; k < K; k++)
            json_array_append_new(row, json_real(logits[(size_t)i * K + k]));
        for (int a = 0; a < LAYA_N_ACT; a++)
            json_array_append_new(arow, json_real(act[(size_t)i * LAYA_N_ACT + a]));
        json_array_append_new(jl, row);
        json_array_append_new(ja, arow);
    }
    json_object_set_new(o, "backend", json_string("cpu"));
    json_object_set_new(o, "threads", json_integer(threads));
    json_object_set_new(o, "max_rows", json_integer(max_rows));
    json_object_set_new(o, "rows", json_integer(n));
    json_object_set_new(o, "tokens", json_integer(tokens));
    json_object_set_new(o, "load_s", json_real(load_s));
    json_object_set_new(o, "times_s", jt);
    json_object_set_new(o, "cpu_times_s", jc); /* process CPU time (all threads) per call */
    json_object_set_new(o, "median_s", json_real(median));
    json_object_set_new(o, "min_s", json_real(times[0]));
    json_object_set_new(o, "max_s", json_real(times[reps - 1]));
    json_object_set_new(o, "tokens_per_s", json_real((double)tokens / median));
    json_object_set_new(o, "logits", jl);
    json_object_set_new(o, "act", ja);
    rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(9)) ? 2 : 0;
    fputc('\n', stdout);
    json_decref(o);
out_be:
    be->ops->destroy(be);
out_ck:
    checkpoint_close(&ck);
out_rows:
    free(logits), free(act), free(times), free(cpu), free(rows), free(store);
    return rc;
}
