/*
 * fuzz_request.c - libFuzzer target for the request validator: arbitrary
 * bytes into request_parse (the whole body -> rows path the daemon runs on
 * its HTTP threads), on the tiny checkpoint.
 *
 * The first byte picks the endpoint options (/decide, /v1/systemone or its /batch,
 * strict or not, tight or default limits); the rest is the body. Checked on
 * every input, besides ASan/UBSan/LSan:
 *   - a rejected body gets 400, 413 or 422, and an error body that is JSON in
 *     the server/api/README.md shape;
 *   - an accepted body has rows the scheduler may trust: 1 <= len <= max_len, [CLS] first,
 *     ids inside the vocabulary, 1 <= n_markers, markers strictly increasing
 *     and inside the row, each marker on a [MASK] id, a valid question type;
 *     request_n_tokens is the sum of the lengths;
 *   - it formats (with arbitrary logits) into JSON as json.loads reads it (strict JSON
 *     but for NaN / Infinity labels and NUL in keys, which Python writes too).
 * Any UBSan report is a crash here (__ubsan_default_options below). Without it clang's
 * UBSan only prints a "runtime error" line, once per site, and goes on: libFuzzer counts no
 * crash. That is how 7.3 M executions passed `"state": ""` (a memcpy from NULL in the
 * sequence builder) as clean (a memcpy from NULL on `"state": ""` went unreported).
 *
 * Run from the repository root, with the seeds in tests/corpus/fuzz_request (new inputs
 * go to the first directory):
 *   make fuzz && build/fuzz/fuzz_request -max_len=8192 -max_total_time=300 -dict=tests/fuzz_request.dict \
 *       build/fuzz/corpus-request tests/corpus/fuzz_request
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "server/api/request.h"

static laya_checkpoint ck;

/* UBSan findings abort (the sanitizer's own default is to report and continue). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
    return "halt_on_error=1:print_stacktrace=1";
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tiny = getenv("LAYAD_TINY");
    layad_error err;
    if (checkpoint_open(&ck, tiny && *tiny ? tiny : "build/tiny", &err)) {
        fprintf(stderr, "fuzz_request: cannot open the tiny checkpoint (make build/tiny/model.safetensors): %s\n",
                err.msg);
        abort();
    }
    return 0;
}

static void check_error(const layad_error *e)
{
    if (e->status != 400 && e->status != 413 && e->status != 422) {
        fprintf(stderr, "unexpected status %d: %s (field %s)\n", e->status, e->msg, e->field);
        abort();
    }
    size_t n = 0;
    char *body = request_error_body(e, &n);
    if (!body)
        abort();
    json_t *j = json_loadb(body, n, 0, NULL);
    json_t *err = json_object_get(j, "error");
    if (!j || !json_is_string(json_object_get(err, "message")) ||
        !(json_is_null(json_object_get(err, "field")) || json_is_string(json_object_get(err, "field")))) {
        fprintf(stderr, "bad error body: %s\n", body);
        abort();
    }
    json_decref(j);
    free(body);
}

/* 1 if v holds a NaN or an infinity anywhere. */
static int has_nonfinite(const pj_value *v)
{
    if (v->type == PJ_FLOAT)
        return !isfinite(v->u.num);
    for (size_t i = 0; v->type == PJ_ARRAY && i < v->u.arr.n; i++)
        if (has_nonfinite(v->u.arr.items[i]))
            return 1;
    for (size_t i = 0; v->type == PJ_OBJECT && i < v->u.obj.n; i++)
        if (has_nonfinite(v->u.obj.m[i].val))
            return 1;
    return 0;
}

static void check_rows(laya_request *r, const decide_opts *o)
{
    int n = request_n_rows(r);
    const laya_row *rows = request_rows(r);
    int max_len = o->max_len_cap > ck.cfg.max_len ? o->max_len_cap : ck.cfg.max_len;
    long tokens = 0;
    int kmax = 0;
    for (int i = 0; i < n; i++) {
        const laya_row *w = &rows[i];
        if (w->len < 1 || w->len > max_len || w->n_markers < 1 || w->qtype < 0 || w->qtype > 2 ||
            w->ids[0] != ck.cfg.cls_id)
            abort();
        for (int t = 0; t < w->len; t++)
            if (w->ids[t] < 0 || w->ids[t] >= ck.cfg.vocab)
                abort();
        for (int m = 0; m < w->n_markers; m++) {
            if (w->markers[m] < 0 || w->markers[m] >= w->len || w->ids[w->markers[m]] != ck.cfg.mask_id)
                abort();
            if (m && w->markers[m] <= w->markers[m - 1])
                abort();
        }
        tokens += w->len;
        if (w->n_markers > kmax)
            kmax = w->n_markers;
        /* Arbitrary but deterministic logits, as a forward would write them. */
        float *lg = request_row_logits(r, i), *act = request_row_act(r, i);
        for (int m = 0; m < w->n_markers; m++)
            lg[m] = (float)((w->ids[w->markers[m] - 1] * 37 + m * 11) % 23) - 11.0f;
        act[0] = 3.0f;
        act[1] = -1.0f;
    }
    if (tokens != request_n_tokens(r) || kmax != request_max_markers(r))
        abort();
    size_t len = 0;
    layad_error err;
    char *out = request_format(r, &len, &err);
    if (!out) {
        fprintf(stderr, "format failed: %s\n", err.msg);
        abort();
    }
    json_error_t je;
    json_t *j = json_loadb(out, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je); /* labels past int64 */
    /* jansson refuses "\u0000" inside object keys (valid JSON, and what Python
     * writes for such a label): not a response defect. Nor is NaN / Infinity /
     * -Infinity for a non-finite label ("choice": Infinity for criteria [1e400]):
     * json.dumps writes them and json.loads reads them; pj_parse judges those. */
    if (!j && !strstr(je.text, "NUL byte in object key")) {
        arena a = {0};
        pj_value *v = NULL;
        layad_error pe;
        int python_json = pj_parse(&a, out, len, &v, &pe) == 0 && has_nonfinite(v);
        arena_release(&a);
        if (!python_json) {
            fprintf(stderr, "response is not JSON (%s): %.300s\n", je.text, out);
            abort();
        }
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t sel = data[0];
    decide_opts o;
    decide_opts_default(&o);
    o.systemone = o.jev_confidence = sel & 1;
    o.systemone_batch = (sel & 1) && (sel & 16); /* /v1/systemone/batch */
    o.jev_strict = (sel >> 1) & 1;
    if (sel & 4) { /* tight limits, as a small deployment would set them */
        o.max_questions = 3;
        o.max_options = 4;
        o.max_levels = 3;
        o.max_states = 2;
        o.max_state_bytes = 64;
    }
    static const char *const names[] = {"laya", "jev-latest", NULL};
    if (sel & 8)
        o.model_names = names;
    laya_request *r = NULL;
    layad_error err;
    layad_error_clear(&err);
    if (request_parse(&ck, (const char *)data + 1, size - 1, &o, &r, &err)) {
        if (r)
            abort(); /* contract: *out is NULL on failure */
        check_error(&err);
        return 0;
    }
    check_rows(r, &o);
    request_free(r);
    return 0;
}
