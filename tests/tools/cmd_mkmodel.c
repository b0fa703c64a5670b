/*
 * cmd_mkmodel.c - `layad-dev mkmodel --preset tiny|mmbert-tiny|english-large|mmbert-base --out DIR
 *                  [--tokenizer FILE] [--seed N]`
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tools/mkmodel.h"
#include "tests/tools/tool.h"
#include "tests/tools/tools.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: layad-dev mkmodel --preset tiny|mmbert-tiny|english-large|mmbert-base --out DIR [--tokenizer FILE] [--seed N]\n"
               "  Writes a deterministic random checkpoint in the real Laya layout (F16 weights).\n"
               "  tiny and mmbert-tiny ship embedded tokenizers; the full-size presets need --tokenizer.\n");
}

/* The tool's options, all its own (its --out is a directory and has the short form -o). */
typedef struct mkmodel_opts {
    const char *preset, *out, *tok;
    unsigned long long seed;
} mkmodel_opts;

static int mkmodel_opt(void *ctx, int c, const char *arg)
{
    mkmodel_opts *m = ctx;
    switch (c) {
    case 'p': m->preset = arg; return 0;
    case 'o': m->out = arg; return 0;
    case 't': m->tok = arg; return 0;
    case 's': m->seed = strtoull(arg, NULL, 0); return 0;
    default: usage(stderr); return 2;
    }
}

int cmd_mkmodel(int argc, char **argv)
{
    static const struct option opts[] = {{"preset", required_argument, 0, 'p'}, {"out", required_argument, 0, 'o'},
                                         {"tokenizer", required_argument, 0, 't'}, {"seed", required_argument, 0, 's'},
                                         TOOL_HELP, {0, 0, 0, 0}};
    tool t;
    tool_init(&t, "mkmodel", usage);
    mkmodel_opts m = {.seed = 1234};
    int rc = tool_parse(&t, argc, argv, "p:o:t:s:h", opts, mkmodel_opt, &m);
    if (rc >= 0)
        return rc;
    if (!m.preset || !m.out)
        return tool_usage_error(&t);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mkmodel_write(m.preset, m.out, m.tok, m.seed, &t.err)) {
        fprintf(stderr, "layad-dev mkmodel: %s\n", t.err.msg);
        return tool_close(&t, 1);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "layad-dev mkmodel: wrote %s checkpoint to %s in %.3f s\n", m.preset, m.out,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return tool_close(&t, 0);
}
