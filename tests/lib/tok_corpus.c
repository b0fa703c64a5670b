/* tok_corpus.c - see tok_corpus.h. */
#include "tests/lib/tok_corpus.h"

#include "model/base/arena.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(size_t line, const char *cat, const char *text, size_t len, json_t *want,
                   const tok_ids *got, const char *errmsg)
{
    fprintf(stderr, "MISMATCH line %zu [%s] %zu bytes: \"%.80s%s\"\n", line, cat, len, text,
            len > 80 ? "..." : "");
    if (errmsg) {
        fprintf(stderr, "  encode failed: %s\n", errmsg);
        return;
    }
    size_t nw = json_array_size(want), k = 0;
    while (k < nw && k < got->n && json_integer_value(json_array_get(want, k)) == got->ids[k])
        k++;
    fprintf(stderr, "  HF %zu ids, layad %zu ids, first difference at %zu:", nw, got->n, k);
    for (size_t i = k; i < k + 8 && i < nw; i++)
        fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(want, i)));
    fprintf(stderr, " | layad:");
    for (size_t i = k; i < k + 8 && i < got->n; i++)
        fprintf(stderr, " %d", got->ids[i]);
    fprintf(stderr, "\n");
}

/* Whether got holds want's ids. */
static bool same_ids(json_t *want, const tok_ids *got)
{
    bool same = json_array_size(want) == got->n;
    for (size_t i = 0; same && i < got->n; i++)
        same = json_integer_value(json_array_get(want, i)) == got->ids[i];
    return same;
}

/* Encodes text both ways the library is used, into malloc'ed ids (tools, tests) and into
 * an arena (the daemon's requests, whose scratch buffers then come from the arena too),
 * and counts a mismatch when either differs from want. */
static void compare_line(const tokenizer *t, const char *s, size_t len, json_t *want, const char *cat,
                         size_t lineno, size_t max_report, tok_ids *got, arena *a, tok_corpus_result *res)
{
    arena_reset(a, 0);
    tok_ids in_arena = { .a = a };
    tok_ids *const outs[2] = { got, &in_arena };
    for (int m = 0; m < 2; m++) {
        layad_error e;
        outs[m]->n = 0;
        const int rc = tokenizer_encode(t, s, len, outs[m], &e);
        if (rc == 0 && same_ids(want, outs[m]))
            continue;
        if (res->mismatches++ < max_report)
            report(lineno, m ? "arena" : cat, s, len, want, outs[m], rc ? e.msg : NULL);
        return;
    }
}

int tok_corpus_compare(const tokenizer *t, const char *path, size_t max_report,
                       tok_corpus_result *res, layad_error *err)
{
    memset(res, 0, sizeof *res);
    FILE *f = fopen(path, "r");
    if (!f)
        return layad_fail(err, 500, "%s: cannot open", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    size_t lineno = 0;
    tok_ids got = { 0 };
    arena a = { 0 };
    int rc = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        json_error_t jerr;
        json_t *o = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &jerr);
        json_t *text = json_object_get(o, "text"), *ids = json_object_get(o, "ids");
        if (!o || !json_is_string(text) || !json_is_array(ids)) {
            json_decref(o);
            rc = layad_fail(err, 500, "%s:%zu: bad corpus line", path, lineno);
            break;
        }
        const char *s = json_string_value(text);
        size_t len = json_string_length(text);
        const char *cat = json_string_value(json_object_get(o, "cat"));
        res->strings++;
        res->bytes += len;
        compare_line(t, s, len, ids, cat ? cat : "?", lineno, max_report, &got, &a, res);
        json_decref(o);
    }
    arena_release(&a);
    free(line);
    free(got.ids);
    fclose(f);
    return rc;
}

tokenizer *tok_corpus_load(const char *path, const char *variant, layad_error *err)
{
    if (!variant || strcmp(variant, "-") == 0)
        return tokenizer_load(path, err);
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, &jerr);
    json_t *all = json_load_file("tests/fixtures/tokenizer/variants.json", 0, &jerr);
    json_t *patch = json_object_get(all, variant);
    tokenizer *t = NULL;
    if (!json_is_object(root) || !json_is_object(patch)) {
        layad_fail(err, 500, "%s / variant %s: cannot load", path, variant);
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach(patch, key, v) {
        if (strcmp(key, "model") == 0) {
            if (json_object_update(json_object_get(root, "model"), v) != 0) {
                layad_fail(err, 500, "variant %s: bad model patch", variant);
                goto out;
            }
        } else if (json_object_set(root, key, v) != 0) {
            layad_fail(err, 500, "variant %s: bad patch", variant);
            goto out;
        }
    }
    char *text = json_dumps(root, JSON_COMPACT);
    if (!text) {
        layad_fail(err, 500, "variant %s: cannot serialize", variant);
        goto out;
    }
    t = tokenizer_load_mem(text, strlen(text), variant, err);
    free(text);
out:
    json_decref(root);
    json_decref(all);
    return t;
}
