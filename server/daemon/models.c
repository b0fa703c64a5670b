/*
 * models.c - configuration entries to opened checkpoints and the served-model
 * table (see models.h).
 *
 * Every checkpoint is opened and verified (sha256 of its weights) before the
 * first backend is built, so a typo in the last entry fails the start in
 * seconds instead of after the first checkpoint's GPU warm-up.
 */
#include "server/daemon/models.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/sched/scheduler.h"
#include "server/telemetry/log.h"

#define UNNAMED_DEFAULT "laya-rl-agent" /* what the official package answers in "model" */

/* Splits "name=rest" into name (NUL-terminated in name[]) and rest; a text
 * without a valid name before '=' (and before any '/') has no name. */
static const char *split_name(const char *entry, char *name, size_t cap)
{
    size_t n = strspn(entry, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
    name[0] = 0;
    if (!n || entry[n] != '=' || !isalnum((unsigned char)entry[0]) || n >= cap)
        return entry;
    memcpy(name, entry, n);
    name[n] = 0;
    return entry + n + 1;
}

static int open_one(laya_checkpoint *ck, const char *source, const char *name, layad_error *err)
{
    double t0 = sched_now();
    if (checkpoint_open(ck, source, err))
        return -1;
    if (ck->clamp_warning[0])
        log_msg("warn", "%s: %s", name, ck->clamp_warning);
    log_msg("info", "model %s: checkpoint %s verified: %lld parameters, sha256 %s (%.2f s)", name, ck->dir,
            ck->n_params, ck->sha256, sched_now() - t0);
    return 0;
}

/* The official checkpoint a hub id names (laya 0.4.15 router: the bundle and
 * its subfolders, and the standalone repos), or NULL. Case-insensitive; a
 * revision after '@' does not matter. */
static const char *official_name(const char *source)
{
    static const struct {
        const char *id, *name;
    } ids[] = {
        {"convaiinnovations/laya", "english"},
        {"convaiinnovations/laya/multilingual", "multilingual"},
        {"convaiinnovations/laya-multilingual", "multilingual"},
        {"convaiinnovations/laya/typed-decisions", "typed-decisions"},
        {"convaiinnovations/laya-typed-decisions", "typed-decisions"},
    };
    size_t len = strcspn(source, "@");
    while (len && source[len - 1] == '/')
        len--;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (strlen(ids[i].id) == len && !strncasecmp(ids[i].id, source, len))
            return ids[i].name;
    return NULL;
}

/* A model entry: opens its checkpoint and adds it to t under its name. An
 * unnamed entry that is an official hub id also answers to that checkpoint's
 * router names, so `predict(model="english")` reaches `--model convaiinnovations/laya`. */
static int add_entry(const serve_config *cfg, const char *entry, laya_checkpoint *ck, int *n_open, model_table *t,
                     layad_error *err)
{
    char name[MODEL_NAME_LEN];
    const char *source = split_name(entry, name, sizeof name);
    if (!name[0])
        snprintf(name, sizeof name, "%s", cfg->model_name[0] ? cfg->model_name : UNNAMED_DEFAULT);
    if (!source[0])
        return layad_fail(err, 500, "model '%s': no checkpoint after '='", entry);
    if (open_one(ck, source, name, err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return layad_fail(err, 500, "model %s: %s", name, why);
    }
    (*n_open)++;
    int i = model_table_add(t, name, ck);
    if (i < 0)
        return layad_fail(err, 500, "model '%s': the name %s is taken%s", entry, name,
                          source == entry ? " (give each checkpoint its own name=)" : "");
    /* the checkpoint's own name keeps answering, as it did in /v1/models */
    if (source == entry && ck->cfg.model_name[0] && model_table_alias(t, i, ck->cfg.model_name))
        log_msg("warn", "model %s: its checkpoint's name %s already names another model", name,
                ck->cfg.model_name);
    const char *official = source == entry ? official_name(source) : NULL;
    if (official)
        model_table_adopt(t, i, official);
    return 0;
}

/* An alias entry "[name=]alias,alias" (without name=: the first model). */
static int add_aliases(model_table *t, const char *entry, layad_error *err)
{
    char name[MODEL_NAME_LEN];
    const char *list = split_name(entry, name, sizeof name);
    int i = name[0] ? model_table_find(t, name, strlen(name)) : 0;
    if (i < 0)
        return layad_fail(err, 500, "model_aliases '%s': no model is named %s", entry, name);
    while (*list) {
        size_t len = strcspn(list, ",");
        char a[MODEL_NAME_LEN];
        if (len >= sizeof a)
            return layad_fail(err, 500, "model_aliases '%s': an alias longer than %zu bytes", entry, sizeof a - 1);
        memcpy(a, list, len);
        a[len] = 0;
        size_t sp = strspn(a, " \t");
        if (a[sp] && model_table_alias(t, i, a))
            return layad_fail(err, 500, "model_aliases '%s': '%s' names another model already (or model %s has "
                              "%d names)", entry, a + sp, t->m[i].name, MODEL_NAMES_MAX);
        list += len + (list[len] == ',');
    }
    return 0;
}

int models_open(const serve_config *cfg, laya_checkpoint *cks, int *n_open, model_table *t, layad_error *err)
{
    memset(t, 0, sizeof *t);
    *n_open = 0;
    if (cfg->model.n < 1)
        return layad_fail(err, 500, "no model configured (--model [name=]DIR|org/name[@rev])");
    if (cfg->model.n > MODELS_MAX)
        return layad_fail(err, 500, "%d models configured: at most %d", cfg->model.n, MODELS_MAX);
    for (int k = 0; k < cfg->model.n; k++)
        if (add_entry(cfg, cfg->model.item[k], &cks[k], n_open, t, err))
            return -1;
    for (int k = 0; k < cfg->model_aliases.n; k++)
        if (add_aliases(t, cfg->model_aliases.item[k], err))
            return -1;
    return 0;
}

void models_close(laya_checkpoint *cks, int n_open)
{
    for (int k = 0; k < n_open; k++)
        checkpoint_close(&cks[k]);
}
