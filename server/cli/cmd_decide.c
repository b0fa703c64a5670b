/*
 * cmd_decide.c - `layad decide` and `layad prompt`: one request body in,
 * the response (or the rows) out, through the same request API the daemon
 * uses (server/api/request.h), so the CLI answer is the daemon's answer.
 *
 *   layad decide --model X [--request FILE|-] [--systemone] [--strict]
 *                [--threads N] [--logits FILE] [--max-options N] [--jsonl]
 *   layad prompt --model X [--request FILE|-] [--states] [--max-options N] [--jsonl]
 *
 * --jsonl reads one request body per line and writes one answer per line
 * (an error line is {"status": N, "error": {...}}), loading the checkpoint and
 * the backend once: scripts/parity drives hundreds of requests through it.
 * A rejected request prints the error body on stdout, "layad: HTTP <status>:
 * <message>" on stderr, and exits 1. --logits takes the forward's outputs from
 * a file ({"logits": [[...] per row], "act_logits": [[a, b] per row]}) instead
 * of running the model: it separates post-processing parity from forward
 * parity in scripts/parity.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cpu.h"
#include "model/checkpoint/checkpoint.h"
#include "model/pyexact/pyjson.h"
#include "server/api/request.h"
#include "server/cli/commands.h"

static char *read_all(const char *path, size_t *len)
{
    FILE *f = (!path || !strcmp(path, "-")) ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
            }
            break;
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

/* Fills the request's result storage from a --logits file. */
static int load_logits(laya_request *r, const char *text, size_t len, const char *path, layad_error *err)
{
    arena a = {0};
    pj_value *root;
    int rc = pj_parse(&a, text, len, &root, err);
    if (rc)
        goto done;
    const pj_value *lg = pj_get(root, "logits"), *ac = pj_get(root, "act_logits");
    int n = request_n_rows(r);
    if (!lg || !ac || lg->type != PJ_ARRAY || ac->type != PJ_ARRAY || lg->u.arr.n != (size_t)n ||
        ac->u.arr.n != (size_t)n) {
        rc = layad_fail(err, 500, "%s: want logits and act_logits with %d rows", path, n);
        goto done;
    }
    const laya_row *rows = request_rows(r);
    for (int i = 0; i < n && !rc; i++) {
        const pj_value *l = lg->u.arr.items[i], *x = ac->u.arr.items[i];
        if (l->type != PJ_ARRAY || l->u.arr.n < (size_t)rows[i].n_markers || x->type != PJ_ARRAY ||
            x->u.arr.n != LAYA_N_ACT) {
            rc = layad_fail(err, 500, "%s: row %d has the wrong shape", path, i);
            break;
        }
        for (int k = 0; k < rows[i].n_markers; k++) {
            const pj_value *v = l->u.arr.items[k];
            request_row_logits(r, i)[k] = (float)(v->type == PJ_FLOAT ? v->u.num : strtod(v->u.str.s, NULL));
        }
        for (int k = 0; k < LAYA_N_ACT; k++) {
            const pj_value *v = x->u.arr.items[k];
            request_row_act(r, i)[k] = (float)(v->type == PJ_FLOAT ? v->u.num : strtod(v->u.str.s, NULL));
        }
    }
done:
    arena_release(&a);
    return rc;
}

typedef struct cli {
    const char *model, *request, *logits;
    int systemone, strict, threads, states, jsonl, max_options;
} cli;

static int parse_args(int argc, char **argv, cli *c, int prompt)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},   {"request", required_argument, 0, 'r'},
        {"systemone", no_argument, 0, 's'},     {"strict", no_argument, 0, 'S'},
        {"threads", required_argument, 0, 't'}, {"logits", required_argument, 0, 'l'},
        {"states", no_argument, 0, 'T'},        {"jsonl", no_argument, 0, 'j'},
        {"max-options", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    memset(c, 0, sizeof *c);
    c->request = "-";
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "m:r:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm': c->model = optarg; break;
        case 'r': c->request = optarg; break;
        case 's': c->systemone = 1; break;
        case 'S': c->strict = 1; break;
        case 't': c->threads = atoi(optarg); break;
        case 'l': c->logits = optarg; break;
        case 'T': c->states = 1; break;
        case 'j': c->jsonl = 1; break;
        case 'o': c->max_options = atoi(optarg); break;
        case 'h':
            if (prompt)
                printf("usage: layad prompt --model X [--request FILE|-] [--states] [--max-options N] [--jsonl]\n"
                       "  prints each question row {id, qtype, input_ids, markers} as JSON (a list;\n"
                       "  with --states a list per state), exactly as the official package builds it\n");
            else
                printf("usage: layad decide --model X [--request FILE|-] [--systemone] [--strict]\n"
                       "                    [--threads N] [--logits FILE] [--max-options N] [--jsonl]\n"
                       "  prints the response JSON for a request body (server/api/README.md); --systemone: the\n"
                       "  /v1/systemone form (one state), --strict: strict Jev answers, --logits: take\n"
                       "  the forward outputs from a file instead of running the model, --max-options:\n"
                       "  the per-question option limit (default 255), --jsonl: one body per line\n");
            return 0;
        default: return 2;
        }
    }
    if (!c->model) {
        fprintf(stderr, "layad %s: --model is required\n", prompt ? "prompt" : "decide");
        return 2;
    }
    return -1;
}

/* Prints a rejected request: the error body (with its status first in --jsonl mode). */
static void print_error(const cli *c, const layad_error *err)
{
    size_t n;
    char *body = request_error_body(err, &n);
    if (c->jsonl && body)
        printf("{\"status\": %d, %s\n", err->status, body + 1);
    else if (body)
        printf("%s\n", body);
    free(body);
    if (!c->jsonl)
        fprintf(stderr, "layad: HTTP %d: %s\n", err->status, err->msg);
}

static void print_rows(const cli *c, const laya_request *r)
{
    static const char *const qt[3] = {"choice", "score", "noul"};
    const laya_row *rows = request_rows(r);
    int n = request_n_rows(r), nq = request_n_questions(r);
    pj_buf b = {0};
    pj_buf_puts(&b, "[");
    for (int i = 0; i < n; i++) {
        int q = i % nq;
        if (c->states && q == 0)
            pj_buf_puts(&b, i ? ", [" : "[");
        else if (i)
            pj_buf_puts(&b, ", ");
        size_t ql;
        const char *qid = request_question_id(r, q, &ql);
        pj_buf_puts(&b, "{\"id\": ");
        pj_buf_string(&b, qid, ql);
        pj_buf_printf(&b, ", \"qtype\": \"%s\", \"input_ids\": [", qt[rows[i].qtype]);
        for (int k = 0; k < rows[i].len; k++)
            pj_buf_printf(&b, k ? ", %d" : "%d", rows[i].ids[k]);
        pj_buf_puts(&b, "], \"markers\": [");
        for (int k = 0; k < rows[i].n_markers; k++)
            pj_buf_printf(&b, k ? ", %d" : "%d", rows[i].markers[k]);
        pj_buf_puts(&b, "]}");
        if (c->states && q == nq - 1)
            pj_buf_puts(&b, "]");
    }
    pj_buf_puts(&b, "]\n");
    if (!b.failed)
        fwrite(b.p, 1, b.len, stdout);
    free(b.p);
}

#define CLI_MAX_ROWS 16 /* rows per forward chunk; a longer row than 16 x max_len is refused */

/* Handles one request body; returns 0 answered, 1 rejected (4xx), 2 failed. The backend
 * is created on first use and kept for the next body. */
static int one(const cli *c, const laya_checkpoint *ck, const char *body, size_t len, const char *logits,
               size_t logits_len, laya_backend **backend, int prompt)
{
    layad_error err = {0};
    decide_opts o;
    decide_opts_default(&o);
    o.systemone = c->systemone;
    o.jev_confidence = c->systemone;
    o.jev_strict = c->strict;
    o.max_options = c->max_options;
    laya_request *r = NULL;
    if (request_parse(ck, body, len, &o, &r, &err)) {
        print_error(c, &err);
        return err.status >= 500 ? 2 : 1;
    }
    if (prompt) {
        print_rows(c, r);
        request_free(r);
        return 0;
    }
    int rc = 0;
    if (logits) {
        rc = load_logits(r, logits, logits_len, c->logits, &err);
    } else if (request_n_rows(r) > 0) {
        if (!*backend)
            *backend = cpu_backend_create(ck, CLI_MAX_ROWS, c->threads, &err);
        if (!*backend) {
            rc = -1;
        } else {
            const laya_row *rows = request_rows(r);
            for (int i = 0; i < request_n_rows(r) && !rc; i++)
                if (rows[i].len > CLI_MAX_ROWS * ck->cfg.max_len)
                    rc = layad_fail(&err, 413, "a row of %d tokens is longer than this command handles (%d)",
                                    rows[i].len, CLI_MAX_ROWS * ck->cfg.max_len);
            if (!rc)
                rc = request_run(r, *backend, CLI_MAX_ROWS, &err);
        }
    }
    char *out = NULL;
    size_t n = 0;
    if (!rc)
        out = request_format(r, &n, &err); /* in r's memory */
    if (!out) {
        request_free(r);
        print_error(c, &err);
        fprintf(stderr, "layad decide: %s\n", err.msg);
        return 2;
    }
    fwrite(out, 1, n, stdout);
    fputc('\n', stdout);
    request_free(r);
    return 0;
}

static int run(int argc, char **argv, int prompt)
{
    cli c;
    int rc = parse_args(argc, argv, &c, prompt);
    if (rc >= 0)
        return rc;
    laya_checkpoint ck;
    layad_error err = {0};
    if (checkpoint_open(&ck, c.model, &err)) {
        fprintf(stderr, "layad: %s\n", err.msg);
        return 2;
    }
    size_t len, llen = 0;
    char *body = read_all(c.request, &len);
    char *logits = c.logits ? read_all(c.logits, &llen) : NULL;
    laya_backend *backend = NULL;
    if (!body || (c.logits && !logits)) {
        fprintf(stderr, "layad: cannot read %s\n", !body ? c.request : c.logits);
        rc = 2;
    } else if (!c.jsonl) {
        rc = one(&c, &ck, body, len, logits, llen, &backend, prompt);
    } else {
        /* one body per line; --logits then has one line per body as well */
        rc = 0;
        char *line = body, *lline = logits;
        while (line < body + len) {
            char *end = memchr(line, '\n', (size_t)(body + len - line));
            if (!end)
                end = body + len;
            char *lend = NULL;
            if (lline) {
                lend = memchr(lline, '\n', (size_t)(logits + llen - lline));
                if (!lend)
                    lend = logits + llen;
            }
            if (end > line) {
                int r1 = one(&c, &ck, line, (size_t)(end - line), lline, lline ? (size_t)(lend - lline) : 0,
                              &backend, prompt);
                if (r1 == 2)
                    rc = 2;
                fflush(stdout);
            }
            line = end + 1;
            if (lline)
                lline = lend + 1 < logits + llen ? lend + 1 : logits + llen;
        }
    }
    if (backend)
        backend->ops->destroy(backend);
    free(body);
    free(logits);
    checkpoint_close(&ck);
    return rc;
}

int cmd_decide(int argc, char **argv)
{
    return run(argc, argv, 0);
}

int cmd_prompt(int argc, char **argv)
{
    return run(argc, argv, 1);
}
