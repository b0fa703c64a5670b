/*
 * models.h - the checkpoints one daemon serves, and which one a request's
 * "model" names.
 *
 * A table of up to MODELS_MAX entries, each a served name (the `id` of
 * /v1/models, the "model" of every answer it gives, the `model` label of the
 * metrics) with its checkpoint and the other names it answers to. The first
 * entry is the default: a request without "model" goes there.
 *
 * Names compare trimmed and case-insensitively, as the official client's
 * router does (laya 0.4.15 router.canonical_name). An entry named after one
 * of the official checkpoints also answers to the router's aliases for it
 * and to its published Hub id:
 *
 *   english          en, laya, default
 *   multilingual     multi, ml, laya-multilingual, convaiinnovations/laya-multilingual
 *   typed-decisions  typed, typed_decisions, laya-typed-decisions, decisions,
 *                    convaiinnovations/laya-typed-decisions
 *
 * and the default entry answers to the names that mean "whichever the server
 * picks" for laya-serve (a Jev id, the bundle id) or to the family tag the
 * official package prints: jev-latest, convaiinnovations/laya, laya-rl-agent,
 * and laya / default when no entry is named english. Any other name is
 * unknown (the request layer answers 422).
 *
 * Built once at start-up, read-only afterwards (HTTP threads share it).
 */
#ifndef LAYAD_SERVER_API_MODELS_H
#define LAYAD_SERVER_API_MODELS_H

#include <stddef.h>

#include "model/checkpoint/checkpoint.h"

#define MODELS_MAX 8        /* checkpoints per daemon */
#define MODEL_NAMES_MAX 24  /* names per checkpoint, served name included */
#define MODEL_NAME_LEN 128  /* longest name + 1 */

typedef struct served_model {
    char name[MODEL_NAME_LEN];                 /* served name */
    const laya_checkpoint *ck;
    char alias[MODEL_NAMES_MAX][MODEL_NAME_LEN]; /* other names, lower case */
    int n_alias;
} served_model;

typedef struct model_table {
    int n;
    served_model m[MODELS_MAX];
} model_table;

/* Appends a model named name (also the key of the built-in aliases above) on
 * checkpoint ck. Returns its index, or -1: table full, name empty, too long,
 * or already taken by an earlier entry (as a name or an alias). */
int model_table_add(model_table *t, const char *name, const laya_checkpoint *ck);

/* Adds alias to model i (trimmed, lower-cased; a duplicate of the same model
 * is ignored). -1 when it is empty, too long, the list is full, or it names
 * another model already. */
int model_table_alias(model_table *t, int i, const char *alias);

/* Gives model i the official checkpoint name `canonical` (english,
 * multilingual or typed-decisions) and its router aliases as aliases, those
 * not taken already: for a checkpoint served under another name but known to
 * be that one. -1 when canonical is not an official name. */
int model_table_adopt(model_table *t, int i, const char *canonical);

/* The names that fall back to the default model (NULL-terminated): those of
 * them model_table_find resolves to 0 are the default's aliases too. */
extern const char *const MODEL_DEFAULT_NAMES[];

/* The model s (len bytes, not NUL-terminated) names, or -1 when none. */
int model_table_find(const model_table *t, const char *s, size_t len);

#endif
