/*
 * cmd_decide.c - `layad decide` and `layad prompt`: one request body in,
 * the response (or the rows) out, through the same request API the daemon
 * uses (model/request.h), so the CLI answer is the daemon's answer.
 *
 *   layad decide --model X [--request FILE|-] [--systemone] [--strict]
 *                [--threads N] [--logits FILE]
 *   layad prompt --model X [--request FILE|-] [--states]
 *
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

#include "model/backend_cpu.h"
#include "model/checkpoint.h"
#include "model/pyjson.h"
#include "model/request.h"
#include "server/commands.h"

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

static int reject(const layad_error *err)
{
    size_t n;
    char *body = request_error_body(err, &n);
    if (body) {
        fwrite(body, 1, n, stdout);
        fputc('\n', stdout);
        free(body);
    }
    fprintf(stderr, "layad: HTTP %d: %s\n", err->status, err->msg);
    return 1;
}

/* Fills the request's result storage from a --logits file. */
static int load_logits(laya_request *r, const char *path, layad_error *err)
{
    size_t len;
    char *text = read_all(path, &len);
    if (!text)
        return layad_fail(err, 500, "cannot read %s", path);
    pj_arena a = {0};
    pj_value *root;
    int rc = pj_parse(&a, text, len, &root, err);
    free(text);
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
    pj_arena_free(&a);
    return rc;
}

typedef struct cli {
    const char *model, *request, *logits;
    int systemone, strict, threads, states;
} cli;

static int parse_args(int argc, char **argv, cli *c, int prompt)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'}, {"request", required_argument, 0, 'r'},
        {"systemone", no_argument, 0, 's'},   {"strict", no_argument, 0, 'S'},
        {"threads", required_argument, 0, 't'}, {"logits", required_argument, 0, 'l'},
        {"states", no_argument, 0, 'T'},      {"help", no_argument, 0, 'h'},
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
        case 'h':
            if (prompt)
                printf("usage: layad prompt --model X [--request FILE|-] [--states]\n"
                       "  prints each question row {id, qtype, input_ids, markers} as JSON (a list;\n"
                       "  with --states a list per state), exactly as the official package builds it\n");
            else
                printf("usage: layad decide --model X [--request FILE|-] [--systemone] [--strict]\n"
                       "                    [--threads N] [--logits FILE]\n"
                       "  prints the response JSON for a request body (api.md); --systemone: the\n"
                       "  /v1/systemone form (one state), --strict: strict Jev answers, --logits: take\n"
                       "  the forward outputs from a file instead of running the model\n");
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

/* Opens the checkpoint and parses the request; returns an exit status or -1 to go on. */
static int load(const cli *c, laya_checkpoint *ck, laya_request **r)
{
    layad_error err = {0};
    if (checkpoint_open(ck, c->model, &err)) {
        fprintf(stderr, "layad: %s\n", err.msg);
        return 2;
    }
    size_t len;
    char *body = read_all(c->request, &len);
    if (!body) {
        fprintf(stderr, "layad: cannot read request %s\n", c->request);
        checkpoint_close(ck);
        return 2;
    }
    decide_opts o;
    decide_opts_default(&o);
    o.systemone = c->systemone;
    o.jev_strict = c->strict;
    int rc = request_parse(ck, body, len, &o, r, &err);
    free(body);
    if (rc) {
        checkpoint_close(ck);
        return reject(&err);
    }
    return -1;
}

int cmd_decide(int argc, char **argv)
{
    cli c;
    int rc = parse_args(argc, argv, &c, 0);
    if (rc >= 0)
        return rc;
    laya_checkpoint ck;
    laya_request *r = NULL;
    if ((rc = load(&c, &ck, &r)) >= 0)
        return rc;
    layad_error err = {0};
    rc = 0;
    if (c.logits) {
        rc = load_logits(r, c.logits, &err);
    } else if (request_n_rows(r) > 0) {
        const laya_row *rows = request_rows(r);
        int longest = 0;
        for (int i = 0; i < request_n_rows(r); i++)
            longest = rows[i].len > longest ? rows[i].len : longest;
        int max_rows = request_n_rows(r) < 8 ? request_n_rows(r) : 8;
        int need = (longest + ck.cfg.max_len - 1) / ck.cfg.max_len;
        if (max_rows < need)
            max_rows = need;
        laya_backend *b = cpu_backend_create(&ck, max_rows, c.threads, &err);
        if (!b) {
            rc = -1;
        } else {
            rc = request_run(r, b, max_rows, &err);
            b->ops->destroy(b);
        }
    }
    char *out = NULL;
    size_t len = 0;
    if (!rc)
        out = request_format(r, &len, &err);
    if (out) {
        fwrite(out, 1, len, stdout);
        fputc('\n', stdout);
        free(out);
    } else {
        fprintf(stderr, "layad decide: %s\n", err.msg);
        rc = 2;
    }
    request_free(r);
    checkpoint_close(&ck);
    return rc ? 2 : 0;
}

int cmd_prompt(int argc, char **argv)
{
    cli c;
    int rc = parse_args(argc, argv, &c, 1);
    if (rc >= 0)
        return rc;
    laya_checkpoint ck;
    laya_request *r = NULL;
    if ((rc = load(&c, &ck, &r)) >= 0)
        return rc;
    static const char *const qt[3] = {"choice", "score", "noul"};
    const laya_row *rows = request_rows(r);
    int n = request_n_rows(r);
    /* question ids are not on the rows; recover them from the request order */
    pj_buf b = {0};
    pj_buf_puts(&b, "[");
    int nq = request_n_questions(r);
    for (int i = 0; i < n; i++) {
        int q = nq ? i % nq : 0;
        if (c.states && q == 0)
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
        if (c.states && q == nq - 1)
            pj_buf_puts(&b, "]");
    }
    pj_buf_puts(&b, "]\n");
    rc = 0;
    if (b.failed) {
        fprintf(stderr, "layad prompt: out of memory\n");
        rc = 2;
    } else {
        fwrite(b.p, 1, b.len, stdout);
    }
    free(b.p);
    request_free(r);
    checkpoint_close(&ck);
    return rc;
}
