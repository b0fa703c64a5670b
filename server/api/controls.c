/*
 * controls.c - see controls.h. The messages are laya.serve's and laya.router's
 * (0.4.15) word for word, except where layad has to say something laya-serve
 * never does (a Laya checkpoint it does not serve; hooks it cannot run).
 */
#include "server/api/controls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/laya/question.h"
#include "server/api/gate.h"

static const char *const hook_fields[] = {"hooks", "hooks_raise", "hooks_timeout", "on_predict_end",
                                          "on_predict_start"}; /* sorted, as laya joins them */

/* laya.router._ALIASES: the spellings people type for the three checkpoints. */
static const char *const aliases[][2] = {
    {"en", "english"},          {"laya", "english"},         {"default", "english"},
    {"multi", "multilingual"},  {"ml", "multilingual"},      {"laya-multilingual", "multilingual"},
    {"typed", "typed-decisions"}, {"typed_decisions", "typed-decisions"},
    {"laya-typed-decisions", "typed-decisions"}, {"decisions", "typed-decisions"},
};
static const char *const checkpoints[] = {"english", "multilingual", "typed-decisions"};

static int present(const pj_value *body, const char *key)
{
    const pj_value *v = pj_get(body, key);
    return v && v->type != PJ_NULL;
}

int controls_refuse(const pj_value *body, int batch, layad_error *err)
{
    char given[128] = "";
    for (size_t i = 0; i < sizeof hook_fields / sizeof hook_fields[0]; i++)
        if (present(body, hook_fields[i]))
            snprintf(given + strlen(given), sizeof given - strlen(given), "%s%s", given[0] ? ", " : "",
                     hook_fields[i]);
    if (given[0])
        return layad_fail_field(err, 422, NULL,
                                "%s run inside the server process and cannot be sent to this endpoint; "
                                "layad runs no hooks, so drop them", given);
    if (batch && present(body, "diagnostics"))
        return layad_fail_field(err, 422, "diagnostics",
                                "diagnostics is filled in place for an in-process caller and cannot be returned "
                                "over HTTP; read the per-group report from the CLI or a local Router");
    return 0;
}

int controls_check(const pj_value *body, int batch, layad_error *err)
{
    static const char *const lang_keys[] = {"lang", "lang_guess"};
    for (int i = 0; i < 2; i++)
        if (present(body, lang_keys[i]) && pj_get(body, lang_keys[i])->type != PJ_STRING)
            return layad_fail_field(err, 422, lang_keys[i], "%s must be a language code string such as \"de\", or null",
                                    lang_keys[i]);
    if (!batch)
        return 0;
    const pj_value *bs = pj_get(body, "batch_size");
    if (bs && bs->type != PJ_NULL) {
        if (bs->type != PJ_INT)
            return layad_fail_field(err, 422, "batch_size", "batch_size must be an integer");
        if (bs->u.str.s[0] == '-' || !strcmp(bs->u.str.s, "0"))
            return layad_fail_field(err, 422, "batch_size", "batch_size must be a positive integer, got %.40s",
                                    bs->u.str.s);
    }
    const pj_value *sl = pj_get(body, "sort_by_length");
    if (sl && sl->type != PJ_NULL && sl->type != PJ_TRUE && sl->type != PJ_FALSE)
        return layad_fail_field(err, 422, "sort_by_length", "sort_by_length must be a boolean");
    return 0;
}

/* laya.router.canonical_name: str(name).strip().lower(), then the alias table. Writes
 * into out (cut at cap; no name that long matches anything). */
static void canonical(const char *s, size_t n, char *out, size_t cap)
{
    while (n && strchr(" \t\n\r\v\f\x1c\x1d\x1e\x1f", *s) && *s)
        s++, n--;
    while (n && strchr(" \t\n\r\v\f\x1c\x1d\x1e\x1f", s[n - 1]) && s[n - 1])
        n--;
    size_t i = 0;
    for (; i < n && i + 1 < cap; i++)
        out[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
    out[i] = 0;
    for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
        if (!strcmp(out, aliases[a][0]))
            snprintf(out, cap, "%s", aliases[a][1]);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 422 on task: "unknown model <repr>; choose one of [<served names, sorted>]". */
static int unknown_task(const pj_value *task, const char *const *served, layad_error *err)
{
    const char *names[64];
    int n = 0;
    for (; served && served[n] && n < 64; n++)
        names[n] = served[n];
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    char mem[sizeof err->msg];
    pj_buf m = pj_buf_fixed(mem, sizeof mem); /* cut to err->msg anyway */
    pj_buf_puts(&m, "unknown model ");
    gate_repr(&m, task);
    pj_buf_puts(&m, "; choose one of [");
    for (int i = 0; i < n; i++) {
        if (i)
            pj_buf_puts(&m, ", ");
        py_repr_str(&m, names[i], strlen(names[i]));
    }
    pj_buf_puts(&m, "]");
    return layad_fail_field(err, 422, "task", "%s", m.p);
}

int controls_task(const pj_value *body, const char *const *served, int model_pinned, layad_error *err)
{
    const pj_value *task = pj_get(body, "task");
    if (!task || task->type == PJ_NULL || model_pinned)
        return 0;
    /* str(task), then canonical: a string as it is; anything else prints without edge
     * whitespace, so the prefix a fixed buffer keeps is all canonical reads */
    char mem[1024], want[160], have[160];
    pj_buf text = pj_buf_fixed(mem, sizeof mem);
    if (task->type == PJ_STRING) {
        canonical(task->u.str.s, task->u.str.len, want, sizeof want);
    } else {
        pj_str(&text, task);
        canonical(text.p, text.len, want, sizeof want);
    }
    if (!served)
        return 0;
    for (const char *const *s = served; *s; s++) {
        canonical(*s, strlen(*s), have, sizeof have);
        if (!strcmp(want, have))
            return 0;
    }
    for (size_t c = 0; c < sizeof checkpoints / sizeof checkpoints[0]; c++)
        if (!strcmp(want, checkpoints[c]))
            return layad_fail_field(err, 422, "task",
                                    "task names the %s checkpoint, which this server does not serve; it serves %s",
                                    checkpoints[c], served[0]);
    return unknown_task(task, served, err);
}
