/*
 * keys.h - the bearer key of `layad serve`: read, checked, and required off
 * loopback (keys.c).
 */
#ifndef LAYAD_SERVER_KEYS_H
#define LAYAD_SERVER_KEYS_H

#include "model/base/error.h"
#include "server/daemon/app.h"
#include "server/daemon/config.h"

/* The bearer key into app->key and app->key_len (cfg's api_key_file over its api_key), with
 * the warnings and the refusal to serve a non-loopback address without one (500). argv: the
 * subcommand's, where a key given as a flag is blanked once read. Logs its warnings. */
int keys_resolve(serve_app *app, const serve_config *cfg, int argc, char **argv, layad_error *err);

#endif
