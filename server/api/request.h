/*
 * request.h - one decision request, from body bytes to response bytes.
 *
 * This is the API that both `layad decide` (CLI) and the HTTP daemon use, so
 * that their answers are byte-identical (one path from body to response: the
 * CLI reproduces any answer of the daemon). The life of a
 * request:
 *
 *   request_parse   body -> validated, normalized, tokenized rows (all 4xx here)
 *   (forward)       the caller runs the rows through a backend, writing each
 *                   row's raw decision logits and act logits into the storage
 *                   the request owns (request_row_logits / request_row_act);
 *                   request_run does this for a single backend in one call
 *   request_format  logits -> the official `laya` system_one response JSON
 *   request_free    (request_parse's requests; request_parse_in's live in the
 *                   caller's arena and go with it)
 *
 * Rows are state-major: row = state_index * n_questions + question_index,
 * questions in request (insertion) order. A request with no questions has no
 * rows; it still formats (empty answers, zero usage), so callers must not run
 * a forward with n == 0.
 *
 * Memory: everything a request holds, its response included, lives in one
 * arena (model/base/arena.h). request_parse makes its own (malloc'd blocks,
 * freed by request_free); request_parse_in uses the caller's, so a request in
 * a reserved arena calls no allocator from body to response bytes (the
 * daemon's request slots, server/http/slots.h).
 *
 * Threading: a laya_request is owned by one thread at a time; the checkpoint
 * and its tokenizer are shared read-only. Nothing here touches a device.
 */
#ifndef LAYAD_REQUEST_H
#define LAYAD_REQUEST_H

#include <stddef.h>

#include "model/base/arena.h"
#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "model/base/error.h"
#include "model/backend/rows.h"
#include "server/api/models.h"

/* Default limits (server/api/README.md): checked before tokenizing, answered 413. */
#define LAYA_LIMIT_QUESTIONS 64
#define LAYA_LIMIT_OPTIONS 255   /* choice options per question */
#define LAYA_LIMIT_LEVELS 32     /* score levels per question */
#define LAYA_LIMIT_STATES 64     /* states per /decide request */
#define LAYA_MAX_OPTIONS_HARD 512 /* largest option count the post-processing handles */

typedef struct decide_opts {
    int systemone;             /* 1: /v1/systemone (one `state`, no `states`); 0: /decide */
    int systemone_batch;       /* 1: /v1/systemone/batch (`states` and `questions` required, laya-serve's
                                  batch controls); overrides systemone */
    int jev_confidence;        /* 1: non-strict choice and score answers carry x_jev_confidence, as
                                  laya-serve's /v1/systemone routes add it */
    int jev_strict;            /* 1: strict Jev answers (no action/answer_confidence/noul confidence,
                                  usage = {input_tokens, output_tokens}) */
    int max_len_cap;           /* largest per-request `max_len` accepted (0: the encoder's
                                  max_position_embeddings);
                                  larger values are a 422 on field "max_len" */
    int head_max_len_cap;      /* same for `head_max_len` (0: max_position_embeddings) */
    int return_logits_allowed; /* 0: `return_logits` in a body is a 422 */
    int max_questions;         /* 0 means the LAYA_LIMIT_* default; exceeding -> 413 */
    int max_options;           /* at most LAYA_MAX_OPTIONS_HARD */
    int max_levels;
    int max_states;
    size_t max_state_bytes;    /* 0: unlimited; a serialized state longer than this -> 413 */
    const char *response_model; /* "model" in the response; NULL: "laya-rl-agent", what the
                                   official package always prints (whatever the config says) */
    const char *const *model_names; /* NULL-terminated names accepted in the body's "model"
                                       (a served name or alias); NULL: any string accepted */
    const model_table *models; /* the daemon's checkpoints: when set, the body's "model" picks one
                                  (models.h; absent: the first, unknown: 422), its checkpoint replaces
                                  request_parse's ck, its served name is the response "model", and
                                  model_names / response_model are not used */
} decide_opts;

/* Fills opts with the defaults above (systemone 0, strict 0, caps 0 = checkpoint values,
 * return_logits allowed). */
void decide_opts_default(decide_opts *o);

typedef struct laya_request laya_request;

/* Parses and validates a request body and builds its rows (laya-model.md §4).
 * ck may be NULL when o->models is set (the request's model decides).
 * Every client error is decided here: 400 (not JSON, not UTF-8, invalid
 * surrogate, not an object), 413 (limits), 422 (validation, unknown model,
 * options that cannot fit), with err->field naming the field at fault
 * ("questions.dept.criteria", "state", "max_len", ...). On success *out owns
 * everything (the body may be freed). On failure *out is NULL. */
int request_parse(const laya_checkpoint *ck, const char *body, size_t len,
                  const decide_opts *o, laya_request **out, layad_error *err);

/* request_parse into the caller's arena a: the request and everything it holds are
 * allocated there, and live until the caller resets a (request_free does nothing). When a
 * is a reserved arena that runs out, the request is refused with 413. */
int request_parse_in(arena *a, const laya_checkpoint *ck, const char *body, size_t len,
                     const decide_opts *o, laya_request **out, layad_error *err);

/* The index in o->models of the model the request named (0 without a table). */
int request_model(const laya_request *r);

/* The checkpoint the request's rows were built for. */
const laya_checkpoint *request_checkpoint(const laya_request *r);

/* Rows: n = states * questions. The row array and everything it points to
 * live until request_free. */
int request_n_rows(const laya_request *r);
const laya_row *request_rows(const laya_request *r);

/* Number of questions, and the id of question q (request order). */
int request_n_questions(const laya_request *r);
const char *request_question_id(const laya_request *r, int q, size_t *len);

/* Effective max_len of the rows (the per-request override or the checkpoint's). */
int request_max_len(const laya_request *r);

/* Largest n_markers over the rows (the K a batch of only this request needs); 0 if no rows. */
int request_max_markers(const laya_request *r);

/* Sum of row lengths (tokens the forward will see, unpadded). */
long request_n_tokens(const laya_request *r);

/* Result storage of row i: request_row_logits has rows[i].n_markers floats
 * (raw decision logits, slot order), request_row_act has LAYA_N_ACT floats
 * (raw act logits). The forward's caller writes them; request_format reads them. */
float *request_row_logits(laya_request *r, int i);
float *request_row_act(laya_request *r, int i);

/* Runs every row through backend b (in chunks of at most max_rows rows; max_rows <= 0
 * means all at once) and stores the results. Used by the CLI and by the daemon's
 * one-by-one retry after a failed batch. */
int request_run(laya_request *r, laya_backend *b, int max_rows, layad_error *err);

/* The response JSON (in the request's arena until request_free or the arena's reset,
 * NUL-terminated, *len bytes without the NUL):
 * the official system_one envelope for one `state`, or {"model", "results": [...]}
 * for `states` on /decide. Only a 500 can fail here. */
char *request_format(const laya_request *r, size_t *len, layad_error *err);

void request_free(laya_request *r);

/* The error body {"error": {"message": "...", "field": "..."|null}, "detail": "..."}
 * (malloc'ed, NUL-terminated). `detail` repeats the message at the top level because
 * that is where laya-serve (FastAPI) puts it, and where the official client reads the
 * text it shows its user. A 500 never carries internal details: its message is
 * "internal error". NULL only when out of memory. */
char *request_error_body(const layad_error *err, size_t *len);

/* The same body appended to b (any pj_buf storage). show_5xx keeps a 5xx message (503,
 * 504 and 529 are service answers meant for the client); the field of a 5xx is null. */
void request_error_write(pj_buf *b, const layad_error *err, int show_5xx);

#endif
