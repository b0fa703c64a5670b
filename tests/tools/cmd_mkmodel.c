/*
 * cmd_mkmodel.c - `layad-dev mkmodel --preset tiny|english-large|mmbert-base --out DIR
 *                  [--tokenizer FILE] [--seed N]`
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/tools/mkmodel.h"
#include "tests/tools/tools.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: layad-dev mkmodel --preset tiny|english-large|mmbert-base --out DIR [--tokenizer FILE] [--seed N]\n"
               "  Writes a deterministic random checkpoint in the real Laya layout (F16 weights).\n"
               "  tiny ships the embedded tokenizer; the full-size presets need --tokenizer.\n");
}

int cmd_mkmodel(int argc, char **argv)
{
    const char *preset = NULL, *out = NULL, *tok = NULL;
    unsigned long long seed = 1234;
    static const struct option opts[] = {{"preset", required_argument, 0, 'p'}, {"out", required_argument, 0, 'o'},
                                         {"tokenizer", required_argument, 0, 't'}, {"seed", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:o:t:s:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': preset = optarg; break;
        case 'o': out = optarg; break;
        case 't': tok = optarg; break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!preset || !out) {
        usage(stderr);
        return 2;
    }
    layad_error err = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (mkmodel_write(preset, out, tok, seed, &err)) {
        fprintf(stderr, "layad-dev mkmodel: %s\n", err.msg);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "layad-dev mkmodel: wrote %s checkpoint to %s in %.3f s\n", preset, out,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return 0;
}
