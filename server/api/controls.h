/*
 * controls.h - the body fields laya-serve reads besides state, questions, model and the
 * token budgets, checked as laya.serve (0.4.15) checks them, with its statuses and
 * messages, so an official client gets from layad what it gets from laya-serve:
 *
 *   hooks, on_predict_start, on_predict_end, hooks_raise, hooks_timeout   422 (callables
 *            that run in the server process; layad runs none)
 *   diagnostics (batch)       422 (an out-parameter HTTP cannot return)
 *   lang, lang_guess          a string or null, else 422. They only choose between
 *            checkpoints (and per-language temperatures, which layad's checkpoints do not
 *            carry), so a valid one changes nothing here
 *   task                      names the checkpoint to answer with. Accepted when, spelled
 *            as laya does (trimmed, lower-cased, its alias table: laya -> english, typed ->
 *            typed-decisions, ...), it names the served model (config model_name or
 *            model_aliases, same spelling); a Laya checkpoint this server does not serve
 *            and any other value are 422, the latter with laya's "unknown model" message.
 *            With the daemon's model table (models.h) request.c routes a task that names a
 *            served model to it and asks this only about the others.
 *            An accepted `model` outranks it, as in laya's Router, and it is not checked
 *   batch_size, sort_by_length (batch)   a positive integer / a boolean, else 422; they
 *            shape laya's forward passes, and layad's scheduler shapes its own
 *
 * Other unknown fields are ignored, as laya-serve ignores them.
 */
#ifndef LAYAD_API_CONTROLS_H
#define LAYAD_API_CONTROLS_H

#include "model/base/error.h"
#include "model/pyexact/pyjson.h"

/* The refusals (hooks; diagnostics when batch): 422 when any is present and not null. */
int controls_refuse(const pj_value *body, int batch, layad_error *err);

/* lang, lang_guess, and for a batch batch_size and sort_by_length. */
int controls_check(const pj_value *body, int batch, layad_error *err);

/* task, after everything else laya-serve checks before its forward. served: the names
 * the body's "model" may carry (NULL-terminated); model_pinned: the body named one. */
int controls_task(const pj_value *body, const char *const *served, int model_pinned, layad_error *err);

#endif
