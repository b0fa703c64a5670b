/*
 * cache-probe.c - how often the tokenizer's thread caches hit when one thread parses requests for two
 * checkpoints in turn, against one checkpoint alone: deterministic counts where the daemon's parse-stage times
 * are noisy (models-full/cpu-ab.sh, call2.sh).
 *
 *   cache-probe MODEL SET.jsonl ROUNDS [alone|pair]
 *
 * Opens MODEL twice (two tokenizers of one tokenizer.json, serials one apart, as a daemon serving two
 * checkpoints of one family), then on this one thread, as the daemon's connection thread at concurrency 1:
 * ROUNDS passes over SET's bodies (/v1/systemone bodies, one a line) through the first checkpoint only, then
 * through the two alternately (body i to checkpoint i % 2, each body once per checkpoint so the work matches),
 * then the second only, then the first again. Prints, per phase, the text- and word-cache hits and the parse
 * time per request. With `alone`, MODEL is opened once and only the first checkpoint's phase runs, twice: a
 * daemon serving one checkpoint. With `pair`, only the alternating phase runs (to count instructions under
 * callgrind, where one phase a run keeps the counts apart). Built and run by cache-probe.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/base/arena.h"
#include "model/base/clock.h"
#include "model/checkpoint/checkpoint.h"
#include "model/tokenizer/internal.h"
#include "model/tokenizer/tokenizer.h"
#include "server/api/request.h"

#define MAX_BODIES 4096

static int parse_one(arena *a, const laya_checkpoint *ck, const char *body, size_t len)
{
    decide_opts d;
    decide_opts_default(&d);
    d.systemone = 1;
    laya_request *r = NULL;
    layad_error err;
    layad_error_clear(&err);
    arena_reset(a, (size_t)256 << 20);
    if (request_parse_in(a, ck, body, len, &d, &r, &err)) {
        fprintf(stderr, "cache-probe: parse failed: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* One phase: ROUNDS passes; each body goes to ck[0], ck[1] or (mode 2) alternately. */
static int phase(const char *name, arena *a, laya_checkpoint *ck, int mode, char **bodies, size_t *lens, int n,
                 int rounds)
{
    size_t w0, t0, w1, t1;
    tokenizer_thread_cache_hits(&w0, &t0);
    const double s = layad_now();
    int reqs = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++)
            for (int k = 0; k < (mode == 2 ? 2 : 1); k++, reqs++)
                if (parse_one(a, &ck[mode == 2 ? k : mode], bodies[i], lens[i]))
                    return -1;
    const double el = layad_now() - s;
    tokenizer_thread_cache_hits(&w1, &t1);
    printf("%-6s requests %5d  text hits %6.2f  word hits %7.2f  parse %6.1f us a request\n", name, reqs,
           (double)(t1 - t0) / reqs, (double)(w1 - w0) / reqs, 1e6 * el / reqs);
    return 0;
}

/* SET's bodies, one a line, into bodies[] and lens[]; how many (0 when none could be read). */
static int read_bodies(const char *path, char **bodies, size_t *lens)
{
    int n = 0;
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while (f && n < MAX_BODIES && (got = getline(&line, &cap, f)) > 0) {
        if (!(bodies[n] = strndup(line, (size_t)got)))
            break;
        lens[n++] = (size_t)got;
    }
    free(line);
    if (f)
        fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    const int alone = argc == 5 && strcmp(argv[4], "alone") == 0, pair = argc == 5 && strcmp(argv[4], "pair") == 0;
    if (argc != 4 && !alone && !pair) {
        fprintf(stderr, "usage: cache-probe MODEL SET.jsonl ROUNDS [alone|pair]\n");
        return 2;
    }
    static char *bodies[MAX_BODIES];
    static size_t lens[MAX_BODIES];
    const int n = read_bodies(argv[2], bodies, lens), rounds = atoi(argv[3]);
    laya_checkpoint ck[2];
    memset(ck, 0, sizeof ck);
    int opened = 0, rc = 1;
    layad_error err;
    layad_error_clear(&err);
    arena a = {0};
    if (n == 0 || rounds < 1) {
        fprintf(stderr, "cache-probe: no bodies in %s, or no rounds\n", argv[2]);
        goto out;
    }
    for (; opened < (alone ? 1 : 2); opened++)
        if (checkpoint_open(&ck[opened], argv[1], &err)) {
            fprintf(stderr, "cache-probe: %s\n", err.msg);
            goto out;
        }
    if (arena_reserve(&a, (size_t)256 << 20)) {
        fprintf(stderr, "cache-probe: out of memory\n");
        goto out;
    }
    if (alone)
        rc = phase("alone", &a, ck, 0, bodies, lens, n, rounds) || phase("alone", &a, ck, 0, bodies, lens, n, rounds);
    else if (pair)
        rc = phase("pair", &a, ck, 2, bodies, lens, n, rounds);
    else
        rc = phase("first", &a, ck, 0, bodies, lens, n, rounds) || phase("pair", &a, ck, 2, bodies, lens, n, rounds) ||
             phase("second", &a, ck, 1, bodies, lens, n, rounds) || phase("first", &a, ck, 0, bodies, lens, n, rounds);
    printf("base slots: text %d, word %d (times the tokenizers loaded, rounded up to a power of two)\n", TOK_TEXT_SLOTS,
           TOK_CACHE_SLOTS);
out:
    arena_release(&a);
    while (opened-- > 0)
        checkpoint_close(&ck[opened]);
    for (int i = 0; i < n; i++)
        free(bodies[i]);
    return rc ? 1 : 0;
}
