/*
 * cmd_bench_request.c - `layad-dev bench-request`: the host side of one decision, timed
 * without a device.
 *
 *   layad-dev bench-request --model DIR --body FILE [--systemone] [--iters N] [--thrash-mb M]
 *                           [--out FILE]
 *
 * Times request_parse_in (validate, tokenize, build the rows) and request_format
 * (answers and the response JSON) on one body, each N times, in a reserved arena reset
 * between iterations, as the daemon's request slots are (server/http/slots.h). No forward
 * runs: every row's logits are a fixed ramp, so the format path computes real answers.
 * With --thrash-mb, M MB are written and read between iterations, as a forward and the
 * daemon's other threads evict the caches between two requests; a tight loop (0) and a
 * thrashed one bracket the daemon's `parse` and `format` stages (laya_serving_stage_seconds),
 * which is how to tell a slow host CPU from cold caches. Prints a JSON report (also to
 * --out): p10 / median / p90 in microseconds, the body's bytes, rows and tokens.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/base/arena.h"
#include "model/base/clock.h"
#include "server/api/request.h"
#include "tests/tools/tool.h"
#include "tests/tools/tools.h"

#define BR_ITERS_MAX 1000000
#define BR_ARENA_BYTES ((size_t)256 << 20) /* address space for one request (a slot's default size) */

static void usage(FILE *f)
{
    fprintf(f, "usage: layad-dev bench-request --model DIR --body FILE [--systemone] [--iters N] [--thrash-mb M] "
               "[--out FILE]\n");
}

typedef struct br_opts {
    const char *body_path;
    int systemone, iters, thrash_mb;
} br_opts;

static int br_opt(void *ctx, int c, const char *arg)
{
    br_opts *o = ctx;
    switch (c) {
    case 'b': o->body_path = arg; return 0;
    case 's': o->systemone = 1; return 0;
    case 'n': o->iters = atoi(arg); return 0;
    case 't': o->thrash_mb = atoi(arg); return 0;
    default: usage(stderr); return 2;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* {"p10_us", "median_us", "p90_us"} of v[0..n) (sorted in place). */
static json_t *quantiles(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return json_pack("{s:f, s:f, s:f}", "p10_us", v[n / 10] * 1e6, "median_us", v[n / 2] * 1e6, "p90_us",
                     v[(n * 9) / 10] * 1e6);
}

/* Writes then reads every 64th byte of buf: the caches hold buf, not the request path. */
static void thrash(volatile unsigned char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; buf && i < n; i += 64)
        buf[i] = (unsigned char)seed;
    unsigned s = 0;
    for (size_t i = 0; buf && i < n; i += 64)
        s += buf[i];
    (void)s;
}

/* Gives every row of r a ramp of logits (markers) and act logits, as a forward would. */
static void fake_forward(laya_request *r)
{
    const laya_row *rows = request_rows(r);
    for (int i = 0; i < request_n_rows(r); i++) {
        float *lg = request_row_logits(r, i), *act = request_row_act(r, i);
        for (int k = 0; k < rows[i].n_markers; k++)
            lg[k] = 0.25f * (float)(k % 7) - 0.5f;
        for (int k = 0; k < LAYA_N_ACT; k++)
            act[k] = 1.0f - (float)k;
    }
}

/* The two loops; fills t->rep. 0, or -1 with t->err set. */
static int br_run(tool *t, const br_opts *o, const char *body, size_t len)
{
    decide_opts d;
    decide_opts_default(&d);
    d.systemone = o->systemone;
    const size_t tb = (size_t)o->thrash_mb << 20;
    unsigned char *buf = tb ? malloc(tb) : NULL;
    double *tp = malloc((size_t)o->iters * sizeof *tp), *tf = malloc((size_t)o->iters * sizeof *tf);
    laya_request *r = NULL;
    arena a = {0};
    int rc = -1;
    if (!tp || !tf || (tb && !buf) || arena_reserve(&a, BR_ARENA_BYTES)) {
        layad_fail(&t->err, 500, "out of memory");
        goto out;
    }
    for (int i = 0; i < o->iters; i++) {
        thrash(buf, tb, (unsigned)i);
        arena_reset(&a, BR_ARENA_BYTES);
        const double t0 = layad_now();
        if (request_parse_in(&a, t->ck, body, len, &d, &r, &t->err))
            goto out;
        tp[i] = layad_now() - t0;
    }
    fake_forward(r);
    const size_t mark = a.used;
    size_t n = 0;
    for (int i = 0; i < o->iters; i++) {
        thrash(buf, tb, (unsigned)i);
        arena_rewind(&a, mark);
        const double t0 = layad_now();
        const char *resp = request_format(r, &n, &t->err);
        tf[i] = layad_now() - t0;
        if (!resp)
            goto out;
    }
    t->rep = json_pack("{s:s, s:i, s:i, s:i, s:I, s:i, s:I, s:o, s:o}", "body", o->body_path, "body_bytes",
                       (int)len, "iters", o->iters, "thrash_mb", o->thrash_mb, "tokens",
                       (json_int_t)request_n_tokens(r), "rows", request_n_rows(r), "response_bytes", (json_int_t)n,
                       "parse", quantiles(tp, o->iters), "format", quantiles(tf, o->iters));
    rc = t->rep ? 0 : layad_fail(&t->err, 500, "out of memory");
out:
    arena_release(&a);
    free(buf);
    free(tp);
    free(tf);
    return rc;
}

/* The whole file at path (NUL-terminated, malloc'ed; its length in *len), or NULL. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (p = malloc((size_t)n + 1)) && fread(p, 1, (size_t)n, f) == (size_t)n) {
        p[n] = '\0';
        *len = (size_t)n;
    } else {
        free(p);
        p = NULL;
    }
    if (f)
        fclose(f);
    return p;
}

int cmd_bench_request(int argc, char **argv)
{
    static const struct option opts[] = {TOOL_MODEL, {"body", required_argument, 0, 'b'},
                                         {"systemone", no_argument, 0, 's'}, {"iters", required_argument, 0, 'n'},
                                         {"thrash-mb", required_argument, 0, 't'}, TOOL_OUT, TOOL_HELP, {0, 0, 0, 0}};
    tool t;
    tool_init(&t, "bench-request", usage);
    br_opts o = {NULL, 0, 2000, 0};
    int rc = tool_parse(&t, argc, argv, "h", opts, br_opt, &o);
    if (rc >= 0)
        return rc;
    if (!t.model || !o.body_path || o.iters < 1 || o.iters > BR_ITERS_MAX || o.thrash_mb < 0 || o.thrash_mb > 4096)
        return tool_usage_error(&t);
    size_t len = 0;
    char *body = read_file(o.body_path, &len);
    if (!body) {
        fprintf(stderr, "bench-request: cannot read %s\n", o.body_path);
        return 2;
    }
    if (tool_open_model(&t) || br_run(&t, &o, body, len)) {
        free(body);
        return tool_close(&t, tool_fail(&t));
    }
    free(body);
    char *s = json_dumps(t.rep, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (s)
        puts(s);
    free(s);
    return tool_close(&t, t.out && tool_write_report(&t, t.out) ? 2 : 0);
}
