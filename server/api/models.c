/*
 * models.c - the served-model table and name resolution (see models.h).
 *
 * The alias lists are copied from the official client (laya 0.4.15,
 * router._ALIASES and STANDALONE_MODELS) so that `predict(model="english")`
 * and the names its router picks reach the checkpoint that the official
 * server would use. The table is small (at most 8 x 24 names), so a linear
 * scan per request costs less than parsing the body's first field.
 */
#include "server/api/models.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct builtin {
    const char *canonical;
    const char *aliases[6];
} builtin;

static const builtin BUILTIN[] = {
    {"english", {"en", "laya", "default", NULL}},
    {"multilingual", {"multi", "ml", "laya-multilingual", "convaiinnovations/laya-multilingual", NULL}},
    {"typed-decisions", {"typed", "typed_decisions", "laya-typed-decisions", "decisions",
                         "convaiinnovations/laya-typed-decisions", NULL}},
};

/* Names that mean the default model when no entry claims them. */
const char *const MODEL_DEFAULT_NAMES[] = {"jev-latest", "convaiinnovations/laya", "laya-rl-agent", "laya",
                                            "default", NULL};

/* s trimmed and lower-cased into out (MODEL_NAME_LEN); -1 when empty or too long. */
static int canon(const char *s, size_t len, char *out)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (!len || len >= MODEL_NAME_LEN)
        return -1;
    for (size_t i = 0; i < len; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[len] = 0;
    return 0;
}

/* The model whose served name or alias is exactly key (canonical), or -1. */
static int find_exact(const model_table *t, const char *key)
{
    for (int i = 0; i < t->n; i++) {
        char nm[MODEL_NAME_LEN];
        if (!canon(t->m[i].name, strlen(t->m[i].name), nm) && !strcmp(nm, key))
            return i;
        for (int a = 0; a < t->m[i].n_alias; a++)
            if (!strcmp(t->m[i].alias[a], key))
                return i;
    }
    return -1;
}

int model_table_alias(model_table *t, int i, const char *alias)
{
    char key[MODEL_NAME_LEN];
    if (i < 0 || i >= t->n || canon(alias, strlen(alias), key))
        return -1;
    int owner = find_exact(t, key);
    if (owner == i)
        return 0;
    if (owner >= 0 || t->m[i].n_alias >= MODEL_NAMES_MAX)
        return -1;
    memcpy(t->m[i].alias[t->m[i].n_alias++], key, strlen(key) + 1);
    return 0;
}

/* The built-in aliases of official name key to model i, those not taken
 * (an earlier entry's explicit alias wins). -1 when key is not official. */
static int add_builtin(model_table *t, int i, const char *key)
{
    for (size_t b = 0; b < sizeof BUILTIN / sizeof BUILTIN[0]; b++)
        if (!strcmp(BUILTIN[b].canonical, key)) {
            for (const char *const *a = BUILTIN[b].aliases; *a; a++)
                if (find_exact(t, *a) < 0)
                    model_table_alias(t, i, *a);
            return 0;
        }
    return -1;
}

int model_table_add(model_table *t, const char *name, const laya_checkpoint *ck)
{
    char key[MODEL_NAME_LEN];
    if (t->n >= MODELS_MAX || canon(name, strlen(name), key) || find_exact(t, key) >= 0)
        return -1;
    served_model *m = &t->m[t->n];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->ck = ck;
    int i = t->n++;
    add_builtin(t, i, key);
    return i;
}

int model_table_adopt(model_table *t, int i, const char *canonical)
{
    if (i < 0 || i >= t->n)
        return -1;
    for (size_t b = 0; b < sizeof BUILTIN / sizeof BUILTIN[0]; b++)
        if (!strcmp(BUILTIN[b].canonical, canonical)) {
            if (find_exact(t, canonical) < 0)
                model_table_alias(t, i, canonical);
            return add_builtin(t, i, canonical);
        }
    return -1;
}

int model_table_find(const model_table *t, const char *s, size_t len)
{
    char key[MODEL_NAME_LEN];
    if (canon(s, len, key))
        return -1;
    int i = find_exact(t, key);
    if (i >= 0 || !t->n)
        return i;
    for (const char *const *d = MODEL_DEFAULT_NAMES; *d; d++)
        if (!strcmp(*d, key))
            return 0;
    return -1;
}
