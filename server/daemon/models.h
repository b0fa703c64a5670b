/*
 * models.h - the checkpoints `layad serve` loads, from the `model` and
 * `model_aliases` entries of its configuration to the served-model table
 * (server/api/models.h) that routes requests.
 *
 *   model = english=convaiinnovations/laya@v1.2      name=source
 *   model = multilingual=/srv/laya-multilingual
 *   model = /srv/ckpt                                 no name: laya-rl-agent (or model_name),
 *                                                     the checkpoint's own model_name an alias
 *   model = convaiinnovations/laya                    no name, an official hub id: also
 *                                                     english and its router aliases
 *   model_aliases = multilingual=mm,intl             name=alias,...
 *   model_aliases = stable                           without name=: the first model
 *
 * A name is [A-Za-z0-9][A-Za-z0-9._-]* before the first '=' and before any
 * '/', so a path holding '=' is still a path. The first entry is the default.
 */
#ifndef LAYAD_SERVER_DAEMON_MODELS_H
#define LAYAD_SERVER_DAEMON_MODELS_H

#include "model/base/error.h"
#include "model/checkpoint/checkpoint.h"
#include "server/api/models.h"
#include "server/daemon/config.h"

/* Opens and verifies every checkpoint of cfg->model into cks[0..MODELS_MAX)
 * (logging one line each) and fills t with their names and aliases. *n_open
 * counts the checkpoints opened, also on failure (models_close frees them). */
int models_open(const serve_config *cfg, laya_checkpoint *cks, int *n_open, model_table *t, layad_error *err);

void models_close(laya_checkpoint *cks, int n_open);

#endif
