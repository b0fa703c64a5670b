/*
 * cmd_parity.c - `layad-dev parity-fast`: the GPU forward against the exact CPU one.
 *
 * Generates the deterministic sweep of tests/tools/synth_rows.h (288 questions over
 * 60 states, the three types, 1..40 options, string and JSON states, lengths
 * 10..max_len), runs it through the CPU fp32 backend (the reference) and, per
 * dtype, through the CUDA backend twice: eager launches and graph replay
 * (graphs captured on first use, then replayed again from the LRU), in buckets
 * of up to 64 rows, then once more with every row alone in a one-row bucket
 * (the daemon's common case, where the small-bucket paths run). Reports
 * per question type max |dlogit|, max |dp| (calibrated probabilities), the
 * same for the act head, and argmax agreement; the gates a GPU forward must
 * pass to serve:
 *   - argmax agrees wherever the fp32 top-2 probability margin exceeds 1e-2;
 *   - max |dp| <= 5e-3 in fp16 (batched and one-row passes); in bf16 no worse than
 *     the official bf16 path on the same rows: max |dp| and gated argmax agreement
 *     at least as good as an --external whose meta says dtype bf16 (scripts/
 *     torch_rows.py --dtype bf16), or max |dp| <= 2e-2 and every gated argmax when
 *     no such file is given;
 *   - graph replay bit-identical to eager launches.
 * The CPU reference of a big checkpoint takes minutes; --ref FILE caches it,
 * keyed by the checkpoint's sha256 and the row set's hash, so it can be
 * computed once on any host and checked on the GPU machine.
 * Other implementations join the same sweep through two files (so their numbers
 * come from the same delta_accum as layad's, on the same rows):
 *   --dump-rows FILE writes the rows as JSON (format "layad-parity-rows/1"):
 *     {"format", "model_sha256", "set_hash", "K", "pad_token_id", "cls_token_id",
 *      "n", "rows": [{"ids": [...], "markers": [...], "qtype": 0|1|2 (choice,
 *      score, noul), "state": s, "json_state": 0|1}, ...]}
 *     A row's attention mask is all ones over its ids (rows carry no padding);
 *     K is the widest row's marker count.
 *   --external FILE[:LABEL] reads an external forward of those rows (format
 *     "layad-external-logits/1"):
 *     {"label", "set_hash" (optional, checked), "logits": [[...] per row, at
 *      least the row's marker count and at most K values], "act_logits": [[a, b]
 *      per row], ...} (non-finite numbers as the strings "NaN", "Infinity") and
 *     reports it against the CPU fp32 reference under "external": {LABEL: ...};
 *     no gate of its own, but a bf16 one sets the bf16 gate (above).
 *     scripts/torch_rows.py writes such a file
 *     from the official PyTorch model.
 * --dtype none runs no GPU forward (the CPU reference and externals only).
 * Exit status: 0 all gates pass (or SKIP without a GPU, or --dtype none),
 * 1 a gate failed, 2 usage or runtime error.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backend/cpu.h"
#include "model/backend/cuda.h"
#include "model/checkpoint/checkpoint.h"
#include "tests/tools/ckpt_round.h"
#include "tests/tools/gpu_eval.h"
#include "tests/tools/synth_rows.h"
#include "tests/tools/tool.h"
#include "tests/tools/tools.h"

#define PARITY_SEED 20261202ull
#define MARGIN 1e-2

static void usage(FILE *f)
{
    fprintf(f,
            "usage: layad-dev parity-fast --model DIR [options]\n"
            "  --dtype LIST       GPU dtypes to check, comma list of fp16,bf16 (default both),\n"
            "                     or none (CPU reference and --external only)\n"
            "  --out FILE         write the JSON report here\n"
            "  --ref FILE         CPU fp32 reference cache (read if it matches, else written)\n"
            "  --threads N        CPU reference threads (default: all cores)\n"
            "  --device N         CUDA device (default 0)\n"
            "  --label NAME       name of this run in the report (default: the model dir)\n"
            "  --dump-rows FILE   write the sweep's rows as JSON (format in cmd_parity.c)\n"
            "  --fused-proj-tokens N  the backend's fused_proj_tokens (default: the backend's, 48)\n"
            "  --att-wo-tokens N   the backend's att_wo_tokens (default: the backend's, 48)\n"
            "  --tuning-cache FILE  tuned GEMM algorithms read from FILE (written after\n"
            "                     warm-up): two builds given one file run the same GEMMs,\n"
            "                     so their reports differ only where their kernels do\n"

            "  --external F[:L]   compare an external forward's logits (JSON, format in\n"
            "                     cmd_parity.c) with the CPU reference, as label L; repeatable\n");
}

static int cpu_reference(const laya_checkpoint *ck, const synth_set *s, const char *ref,
                         int threads, fwd_out *out, json_t *rep, layad_error *err)
{
    int got = ref ? ref_load(ref, ck->sha256, synth_hash(s), out, err) : 0;
    if (got < 0)
        return -1;
    if (got) {
        json_object_set_new(rep, "cpu_reference", json_pack("{s:s, s:s}", "source", "cache",
                                                            "file", ref));
        printf("cpu fp32 reference: read from %s\n", ref);
        return 0;
    }
    laya_backend *cpu = cpu_backend_create(ck, 8, threads, err);
    if (!cpu)
        return -1;
    double t0 = wall_ms();
    int rc = cpu->ops->forward(cpu, s->rows, s->n, out->K, out->logits, out->act, err);
    double ms = wall_ms() - t0;
    cpu->ops->destroy(cpu);
    if (rc)
        return -1;
    printf("cpu fp32 reference: %d rows in %.1f s\n", s->n, ms / 1e3);
    json_object_set_new(rep, "cpu_reference",
                        json_pack("{s:s, s:f, s:i}", "source", "computed", "ms", ms, "threads",
                                  threads));
    if (ref && ref_save(ref, ck->sha256, synth_hash(s), out, err))
        return -1;
    return 0;
}

static void print_stats(const char *what, const delta_stats st[3], const delta_stats *all);

/* CPU fp32 forward of a copy of the checkpoint whose weights are rounded to bf16
 * (tests/tools/ckpt_round.h), cached next to --ref as FILE.bf16w; also reports how far
 * that rounding alone moves the fp32 outputs (the floor of any bf16-weight path). */
static int bf16_reference(const laya_checkpoint *ck, const synth_set *s, const char *ref,
                          int threads, const fwd_out *ref_out, fwd_out *rw, json_t *rep,
                          layad_error *err)
{
    char dir[] = "/tmp/layad-bf16w-XXXXXX", cache[PATH_MAX];
    laya_checkpoint *rc = calloc(1, sizeof *rc);
    int rcode = -1, opened = 0;
    if (!rc || fwd_out_alloc(rw, s->n, ref_out->K, err) || !mkdtemp(dir)) {
        layad_fail(err, 500, "bf16 reference: setup failed");
        goto out;
    }
    if (checkpoint_write_bf16_rounded(ck, dir, err) || checkpoint_open(rc, dir, err))
        goto out;
    opened = 1;
    snprintf(cache, sizeof cache, "%s.bf16w", ref ? ref : "");
    json_t *sub = json_object();
    printf("bf16-rounded weights (%s): ", dir);
    int r = cpu_reference(rc, s, ref ? cache : NULL, threads, rw, sub, err);
    json_object_set_new(rep, "cpu_reference_bf16_rounded_weights", sub);
    if (r)
        goto out;
    delta_stats st[3] = {0}, all = {0};
    delta_accum(st, &all, &ck->cfg, s->rows, ref_out, rw, MARGIN);
    print_stats("cpu fp32, bf16 weights", st, &all);
    json_object_set_new(sub, "vs_cpu_fp32", delta_json(st, &all));
    rcode = 0;
out:
    if (opened)
        checkpoint_close(rc);
    free(rc);
    if (dir[strlen(dir) - 1] != 'X') { /* created: remove the copy */
        static const char *files[] = {"model.safetensors", "rl_agent_config.json",
                                      "encoder/config.json", "tokenizer/tokenizer.json",
                                      "tokenizer/tokenizer_config.json", "encoder", "tokenizer", ""};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            char p[PATH_MAX + 64];
            snprintf(p, sizeof p, "%s/%s", dir, files[i]);
            remove(p);
        }
    }
    return rcode;
}

static void print_stats(const char *what, const delta_stats st[3], const delta_stats *all)
{
    static const char *names[3] = {"choice", "score", "noul"};
    printf("  %-22s %-7s %5s %12s %12s %12s %12s %9s %11s\n", what, "type", "rows", "max|dlogit|",
           "max|dp|", "max|dact|", "max|dact_p|", "argmax", "gated");
    for (int t = 0; t <= 3; t++) {
        const delta_stats *d = t < 3 ? &st[t] : all;
        printf("  %-22s %-7s %5d %12.3e %12.3e %12.3e %12.3e %4d/%-4d %5d/%-5d\n", "",
               t < 3 ? names[t] : "all", d->n, d->max_dlogit, d->max_dp, d->max_dact_logit,
               d->max_dact_p, d->n_agree, d->n, d->n_gated_agree, d->n_gated);
    }
}

/* One backend's four forwards of the sweep: eager, graph (captures), graph again (replays),
 * and each row alone in a one-row bucket (the daemon's common case: the batched passes run
 * buckets of 64 rows, so they never reach the small-bucket paths). */
typedef struct {
    fwd_out eager, graph, replay, single;
} four_runs;

static int run_four(laya_backend *b, const synth_set *s, int K, four_runs *f, layad_error *err)
{
    if (fwd_out_alloc(&f->eager, s->n, K, err) || fwd_out_alloc(&f->graph, s->n, K, err) ||
        fwd_out_alloc(&f->replay, s->n, K, err) || fwd_out_alloc(&f->single, s->n, K, err))
        return -1;
    if (cuda_backend_forward_mode(b, s->rows, s->n, K, f->eager.logits, f->eager.act, 0, err) ||
        cuda_backend_forward_mode(b, s->rows, s->n, K, f->graph.logits, f->graph.act, 1, err) ||
        cuda_backend_forward_mode(b, s->rows, s->n, K, f->replay.logits, f->replay.act, 1, err))
        return -1;
    for (int i = 0; i < s->n; i++)
        if (cuda_backend_forward_mode(b, &s->rows[i], 1, K, f->single.logits + (size_t)i * K,
                                      f->single.act + (size_t)i * LAYA_N_ACT, 1, err))
            return -1;
    return 0;
}

static void four_free(four_runs *f)
{
    fwd_out_free(&f->eager);
    fwd_out_free(&f->graph);
    fwd_out_free(&f->replay);
    fwd_out_free(&f->single);
}

/* A dtype's comparisons and gates. */
typedef struct {
    delta_stats st[3], all, ge[3], geall, s1[3], s1all;
    int capture_identical, replay_identical, vs_peer, need, argmax_ok, dp_ok, pass;
    double dp_gate;
} verdict;

static void judge(const laya_checkpoint *ck, const synth_set *s, const fwd_out *ref, const four_runs *f,
                  const delta_stats *peer, int dtype, verdict *v)
{
    memset(v, 0, sizeof *v);
    delta_accum(v->st, &v->all, &ck->cfg, s->rows, ref, &f->graph, MARGIN);
    delta_accum(v->ge, &v->geall, &ck->cfg, s->rows, &f->eager, &f->graph, MARGIN);
    delta_accum(v->s1, &v->s1all, &ck->cfg, s->rows, ref, &f->single, MARGIN);
    v->capture_identical = fwd_out_identical(&f->eager, &f->graph);
    v->replay_identical = fwd_out_identical(&f->eager, &f->replay);
    /* bf16 against the official bf16 path on the same rows when its forward was given */
    v->vs_peer = dtype == CUDA_DT_BF16 && peer && peer->n > 0;
    v->dp_gate = v->vs_peer ? peer->max_dp : dtype == CUDA_DT_BF16 ? 2e-2 : 5e-3;
    v->need = v->vs_peer ? peer->n_gated_agree : v->all.n_gated;
    v->argmax_ok = v->all.n_gated_agree >= v->need && v->s1all.n_gated_agree >= v->need;
    v->dp_ok = v->all.max_dp <= v->dp_gate && v->s1all.max_dp <= v->dp_gate; /* false for NaN */
    v->pass = v->argmax_ok && v->dp_ok && v->capture_identical && v->replay_identical;
}

static void print_verdict(const verdict *v, int dtype, const cuda_backend_stats *cs)
{
    printf("%s: graphs captured %lld, replayed %lld\n", cuda_dtype_name(dtype), cs->graph_misses,
           cs->graph_hits);
    print_stats("gpu graph vs cpu fp32", v->st, &v->all);
    print_stats("gpu graph vs eager", v->ge, &v->geall);
    print_stats("one row per forward", v->s1, &v->s1all);
    printf("  gates%s: argmax (margin > %.0e) %d/%d + %d/%d >= %d %s; max|dp| %.3e / %.3e <= %.3e %s; "
           "graph == eager bitwise: first run %s, replay %s => %s\n",
           v->vs_peer ? " (no worse than the official bf16 path on the same rows)" : "", MARGIN,
           v->all.n_gated_agree, v->all.n_gated, v->s1all.n_gated_agree, v->s1all.n_gated, v->need,
           v->argmax_ok ? "ok" : "FAIL", v->all.max_dp, v->s1all.max_dp, v->dp_gate,
           v->dp_ok ? "ok" : "FAIL", v->capture_identical ? "yes" : "NO", v->replay_identical ? "yes" : "NO",
           v->pass ? "PASS" : "FAIL");
}

/* The backend options parity-fast sets from its flags. */
typedef struct gpu_run {
    int device, fused_tokens, att_wo_tokens;
    const char *tuning_cache;
} gpu_run;

static json_t *verdict_json(const verdict *v, const cuda_backend_stats *cs, const cuda_backend_opts *o)
{
    json_t *d = json_pack(
        "{s:o, s:o, s:b, s:b, s:{s:f, s:s, s:i, s:b, s:b, s:b, s:b}, s:{s:I, s:I}}", "gpu_graph_vs_cpu_fp32",
        delta_json(v->st, &v->all), "gpu_graph_vs_gpu_eager", delta_json(v->ge, &v->geall),
        "graph_bit_identical_to_eager", v->capture_identical, "replay_bit_identical_to_eager",
        v->replay_identical, "gates", "max_dp_limit", v->dp_gate, "limits_from",
        v->vs_peer ? "the official bf16 path on the same rows (external, dtype bf16)" : "absolute",
        "gated_argmax_needed", v->need, "max_dp_ok", v->dp_ok, "argmax_ok",
        v->argmax_ok, "graph_identical_ok", v->capture_identical && v->replay_identical, "pass", v->pass,
        "graphs", "captured", (json_int_t)cs->graph_misses, "replayed", (json_int_t)cs->graph_hits);
    json_object_set_new(d, "gpu_graph_one_row_per_forward_vs_cpu_fp32", delta_json(v->s1, &v->s1all));
    json_object_set_new(d, "backend", json_pack("{s:b, s:b, s:s?, s:i}", "gemm_tune", o->gemm_tune, "branch16",
                                                  o->branch16, "tuning_cache", o->tuning_cache, "att_wo_tokens",
                                                  o->att_wo_tokens));
    return d;
}

/* One dtype: the four forwards against the CPU fp32 reference; returns 1 pass, 0 fail, -1 error.
 * ref_rw (bf16 only, may be NULL): the CPU fp32 forward with bf16-rounded weights, which
 * separates the GPU's arithmetic error from the weight rounding (reported, not a gate). */
static int check_dtype(const laya_checkpoint *ck, const synth_set *s, const fwd_out *ref,
                       const fwd_out *ref_rw, const delta_stats *peer, int dtype, const gpu_run *g,
                       json_t *rep, layad_error *err)
{
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    o.device = g->device;
    o.fused_proj_tokens = g->fused_tokens;
    o.att_wo_tokens = g->att_wo_tokens;
    o.tuning_cache = g->tuning_cache;
    o.dtype = dtype;
    o.max_batch_rows = 64;
    laya_backend *b = cuda_backend_create(ck, &o, err);
    if (!b)
        return -1;
    four_runs f = {0};
    int rc = -1;
    if (run_four(b, s, ref->K, &f, err))
        goto out;
    cuda_backend_stats cs;
    cuda_backend_stats_get(b, &cs);
    verdict v;
    judge(ck, s, ref, &f, peer, dtype, &v);
    print_verdict(&v, dtype, &cs);
    json_t *d = verdict_json(&v, &cs, &o);
    if (ref_rw) {
        delta_stats rw[3] = {0}, rwall = {0};
        delta_accum(rw, &rwall, &ck->cfg, s->rows, ref_rw, &f.graph, MARGIN);
        print_stats("gpu graph vs cpu fp32 on bf16-rounded weights", rw, &rwall);
        json_object_set_new(d, "gpu_graph_vs_cpu_fp32_bf16_rounded_weights", delta_json(rw, &rwall));
    }
    json_object_set_new(json_object_get(rep, "dtypes"), cuda_dtype_name(dtype), d);
    rc = v.pass;
out:
    four_free(&f);
    b->ops->destroy(b);
    return rc;
}

/* ---- rows out, external forwards in ---------------------------------------------------- */

/* Writes the sweep's rows as "layad-parity-rows/1" JSON (format in the header). */
static int dump_rows(const char *path, const laya_checkpoint *ck, const synth_set *s,
                     layad_error *err)
{
    char hash[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, synth_hash(s));
    json_t *rows = json_array();
    json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:o}", "format",
                            "layad-parity-rows/1", "model_sha256", ck->sha256, "set_hash", hash,
                            "K", s->max_markers, "pad_token_id", ck->cfg.pad_id, "cls_token_id",
                            ck->cfg.cls_id, "n", s->n, "rows", rows);
    if (!doc)
        return layad_fail(err, 500, "dump-rows: out of memory");
    for (int i = 0; i < s->n; i++) {
        const laya_row *r = &s->rows[i];
        json_t *ids = json_array(), *mk = json_array();
        for (int t = 0; t < r->len; t++)
            json_array_append_new(ids, json_integer(r->ids[t]));
        for (int k = 0; k < r->n_markers; k++)
            json_array_append_new(mk, json_integer(r->markers[k]));
        json_array_append_new(rows, json_pack("{s:o, s:o, s:i, s:i, s:i}", "ids", ids, "markers",
                                              mk, "qtype", r->qtype, "state", s->state[i],
                                              "json_state", s->json_state[i]));
    }
    /* compact: 288 rows of up to 512 ids; indentation would triple the file */
    int rc = json_dump_file(doc, path, JSON_COMPACT);
    json_decref(doc);
    if (rc)
        return layad_fail(err, 500, "dump-rows: cannot write %s", path);
    printf("rows: %d written to %s\n", s->n, path);
    return 0;
}

/* A JSON number, or one of the strings "NaN", "Infinity", "-Infinity" (JSON has no
 * spelling for them, and an fp16 forward may produce them). 0 or -1. */
static int json_float(const json_t *v, float *out)
{
    if (json_is_number(v)) {
        *out = (float)json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        char *end;
        const char *t = json_string_value(v);
        double d = strtod(t, &end);
        if (end != t && !*end) {
            *out = (float)d;
            return 0;
        }
    }
    return -1;
}

/* Reads one row of n_min..n_max floats from arr into dst, filling dst[n..fill) with pad. */
static int json_row(const json_t *arr, int n_min, int n_max, float *dst, int fill, float pad)
{
    if (!json_is_array(arr))
        return -1;
    const int n = (int)json_array_size(arr);
    if (n < n_min || n > n_max)
        return -1;
    for (int k = 0; k < n; k++)
        if (json_float(json_array_get(arr, k), &dst[k]))
            return -1;
    for (int k = n; k < fill; k++)
        dst[k] = pad;
    return 0;
}

/* Loads an external forward of the sweep (format "layad-external-logits/1") into o
 * (allocated here, s->n rows, K = s->max_markers); its "set_hash" and "model_sha256",
 * when present, must name this sweep and checkpoint. *doc receives the parsed file
 * (caller decrefs). 0 or -1 (err set). */
static int external_load(const char *path, const synth_set *s, const char *sha256, fwd_out *o,
                         json_t **doc, layad_error *err)
{
    json_error_t je;
    *doc = json_load_file(path, 0, &je);
    if (!*doc)
        return layad_fail(err, 500, "external %s: %s (line %d)", path, je.text, je.line);
    const json_t *lg = json_object_get(*doc, "logits"), *ac = json_object_get(*doc, "act_logits");
    const json_t *h = json_object_get(*doc, "set_hash");
    char hash[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, synth_hash(s));
    if (h && (!json_is_string(h) || strcmp(json_string_value(h), hash)))
        return layad_fail(err, 500, "external %s: rows of set %s, this sweep is %s", path,
                          json_is_string(h) ? json_string_value(h) : "?", hash);
    const json_t *m = json_object_get(*doc, "model_sha256");
    if (m && (!json_is_string(m) || strcmp(json_string_value(m), sha256)))
        return layad_fail(err, 500, "external %s: computed on checkpoint %.12s, this is %.12s",
                          path, json_is_string(m) ? json_string_value(m) : "?", sha256);
    if (!json_is_array(lg) || !json_is_array(ac) || (int)json_array_size(lg) != s->n ||
        (int)json_array_size(ac) != s->n)
        return layad_fail(err, 500, "external %s: need \"logits\" and \"act_logits\" arrays of "
                          "%d rows", path, s->n);
    if (fwd_out_alloc(o, s->n, s->max_markers, err))
        return -1;
    for (int i = 0; i < s->n; i++) {
        if (json_row(json_array_get(lg, i), s->rows[i].n_markers, o->K, o->logits + (size_t)i * o->K,
                     o->K, LAYA_MASK_FILL))
            return layad_fail(err, 500, "external %s: logits row %d: need %d..%d numbers", path, i,
                              s->rows[i].n_markers, o->K);
        if (json_row(json_array_get(ac, i), LAYA_N_ACT, LAYA_N_ACT,
                     o->act + (size_t)i * LAYA_N_ACT, LAYA_N_ACT, 0))
            return layad_fail(err, 500, "external %s: act_logits row %d: need %d numbers", path,
                              i, LAYA_N_ACT);
    }
    return 0;
}

/* One --external FILE[:LABEL] against the CPU fp32 reference (and, when rw is given, the
 * CPU fp32 forward on bf16-rounded weights): adds rep["external"][label]. 0 or -1. */
static int check_external(const char *spec, const laya_checkpoint *ck, const synth_set *s,
                          const fwd_out *ref, const fwd_out *rw, delta_stats *bf16_peer, json_t *rep,
                          layad_error *err)
{
    char path[PATH_MAX], label[PATH_MAX] = "";
    snprintf(path, sizeof path, "%s", spec);
    char *colon = strrchr(path, ':');
    if (colon && !strchr(colon, '/')) { /* FILE:LABEL (a ':' inside a directory name stays) */
        *colon = 0;
        snprintf(label, sizeof label, "%s", colon + 1);
    }
    fwd_out o = {0};
    json_t *doc = NULL;
    int rc = -1;
    if (external_load(path, s, ck->sha256, &o, &doc, err))
        goto out;
    if (!*label) {
        const char *l = json_string_value(json_object_get(doc, "label"));
        const char *base = strrchr(path, '/');
        snprintf(label, sizeof label, "%s", l ? l : base ? base + 1 : path);
    }
    delta_stats st[3] = {0}, all = {0};
    delta_accum(st, &all, &ck->cfg, s->rows, ref, &o, MARGIN);
    char what[PATH_MAX + 64];
    snprintf(what, sizeof what, "%s vs cpu fp32", label);
    printf("external %s (%s):\n", label, path);
    print_stats(what, st, &all);
    json_t *d = json_pack("{s:s, s:o}", "file", path, "vs_cpu_fp32", delta_json(st, &all));
    /* what the external program says about itself (dtype, device, versions), kept as is */
    json_t *meta = json_object_get(doc, "meta");
    if (meta)
        json_object_set(d, "meta", meta);
    const char *edt = json_string_value(json_object_get(meta, "dtype"));
    if (edt && !strcmp(edt, "bf16"))
        *bf16_peer = all; /* the bf16 gate's bound */
    if (rw) {
        delta_stats r[3] = {0}, rall = {0};
        delta_accum(r, &rall, &ck->cfg, s->rows, rw, &o, MARGIN);
        snprintf(what, sizeof what, "%s vs cpu fp32 bf16 weights", label);
        print_stats(what, r, &rall);
        json_object_set_new(d, "vs_cpu_fp32_bf16_rounded_weights", delta_json(r, &rall));
    }
    json_t *ext = json_object_get(rep, "external");
    if (!ext) {
        ext = json_object();
        json_object_set_new(rep, "external", ext);
    }
    json_object_set_new(ext, label, d);
    rc = 0;
out:
    fwd_out_free(&o);
    json_decref(doc);
    return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

enum { MAX_EXTERNAL = 8 };

/* The tool's own options (the common ones are in tool). */
typedef struct parity_opts {
    const char *dtypes, *ref, *label, *dump, *tuning_cache;
    const char *external[MAX_EXTERNAL];
    int n_external;
    int want[2]; /* CUDA_DT_FP16, CUDA_DT_BF16: from dtypes */
    int fused;   /* cuda_backend_opts.fused_proj_tokens */
    int att_wo;  /* cuda_backend_opts.att_wo_tokens */
} parity_opts;

static int parity_opt(void *ctx, int c, const char *arg)
{
    parity_opts *p = ctx;
    switch (c) {
    case 'd': p->dtypes = arg; return 0;
    case 'r': p->ref = arg; return 0;
    case 'l': p->label = arg; return 0;
    case 'R': p->dump = arg; return 0;
    case 'F': p->fused = atoi(arg); return p->fused < 0 ? 2 : 0;
    case 'W': p->att_wo = atoi(arg); return p->att_wo < 0 ? 2 : 0;
    case 'U': p->tuning_cache = arg; return 0;
    case 'x':
        if (p->n_external == MAX_EXTERNAL) {
            fprintf(stderr, "parity-fast: at most %d --external\n", MAX_EXTERNAL);
            return 2;
        }
        p->external[p->n_external++] = arg;
        return 0;
    default: usage(stderr); return 2;
    }
}

/* --dtype LIST into p->want. 0, or 2 after printing the bad name. */
static int parse_dtypes(parity_opts *p)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", p->dtypes);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int dt;
        if (!strcmp(t, "none"))
            continue;
        if (cuda_dtype_parse(t, &dt)) {
            fprintf(stderr, "parity-fast: unknown dtype '%s'\n", t);
            return 2;
        }
        p->want[dt] = 1;
    }
    return 0;
}

/* Prints the sweep and records rep["run"] and rep["rows"]. */
static void sweep_json(tool *t, const parity_opts *p, const synth_set *s)
{
    const laya_checkpoint *ck = t->ck;
    const laya_config *cfg = &ck->cfg;
    int minlen = s->rows[0].len, maxlen = 0, types[3] = {0}, json_rows = 0;
    for (int i = 0; i < s->n; i++) {
        json_rows += s->json_state[i];
        minlen = s->rows[i].len < minlen ? s->rows[i].len : minlen;
        maxlen = s->rows[i].len > maxlen ? s->rows[i].len : maxlen;
        types[s->rows[i].qtype]++;
    }
    char hash[32];
    snprintf(hash, sizeof hash, "%016" PRIx64, synth_hash(s));
    printf("parity-fast: %s (sha256 %.12s), %d rows over 60 states, lengths %d..%d, K %d, "
           "%ld tokens, set %s\n",
           ck->dir, ck->sha256, s->n, minlen, maxlen, s->max_markers, s->tokens, hash);
    json_object_set_new(
        t->rep, "run",
        json_pack("{s:s, s:s, s:s, s:{s:i, s:i, s:i, s:i}}", "label", p->label ? p->label : ck->dir,
                  "model_dir", ck->dir, "model_sha256", ck->sha256, "geometry", "hidden",
                  cfg->hidden, "layers", cfg->n_layers, "intermediate", cfg->intermediate,
                  "max_len", cfg->max_len));
    json_object_set_new(t->rep, "rows",
                        json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:s, s:I, s:{s:i, "
                                  "s:i, s:i}}",
                                  "count", s->n, "states", 60, "min_len", minlen, "max_len",
                                  maxlen, "max_markers", s->max_markers, "rows_with_json_state",
                                  json_rows, "tokens", (json_int_t)s->tokens, "set_hash", hash, "seed",
                                  (json_int_t)PARITY_SEED, "types", "choice", types[0], "score",
                                  types[1], "noul", types[2]));
}

/* The references: rows out (--dump-rows), the CPU fp32 forward, the bf16-rounded
 * one when bf16 is checked, the --external forwards. 0, or -1 with t->err set. */
static int references(tool *t, const parity_opts *p, const synth_set *s, fwd_out *ref_out, fwd_out *rw_out,
                      delta_stats *bf16_peer)
{
    const int bf16 = p->want[CUDA_DT_BF16];
    if (p->dump && dump_rows(p->dump, t->ck, s, &t->err))
        return -1;
    if (cpu_reference(t->ck, s, p->ref, t->threads, ref_out, t->rep, &t->err))
        return -1;
    if (bf16 && bf16_reference(t->ck, s, p->ref, t->threads, ref_out, rw_out, t->rep, &t->err))
        return -1;
    for (int i = 0; i < p->n_external; i++)
        if (check_external(p->external[i], t->ck, s, ref_out, bf16 ? rw_out : NULL, bf16_peer, t->rep,
                           &t->err))
            return -1;
    return 0;
}

/* The GPU dtypes asked for: the exit status (0 all gates pass or nothing to
 * run, 1 a gate failed), or -1 with t->err set. */
static int gpu_gates(tool *t, const parity_opts *p, const synth_set *s, const fwd_out *ref_out,
                     const fwd_out *rw_out, const delta_stats *bf16_peer)
{
    if (!p->want[CUDA_DT_FP16] && !p->want[CUDA_DT_BF16]) {
        printf("parity-fast: no GPU dtype asked for (--dtype none)\n");
        return 0;
    }
    if (cuda_device_count() == 0) {
        printf("SKIP: no CUDA device (GPU parity not run)\n");
        json_object_set_new(t->rep, "skipped", json_string("no CUDA device"));
        return 0;
    }
    json_object_set_new(t->rep, "dtypes", json_object());
    int all_pass = 1;
    const gpu_run g = {t->device, p->fused, p->att_wo, p->tuning_cache};
    for (int dt = 0; dt < 2; dt++) {
        if (!p->want[dt])
            continue;
        int r = check_dtype(t->ck, s, ref_out, dt == CUDA_DT_BF16 ? rw_out : NULL, bf16_peer, dt, &g,
                            t->rep, &t->err);
        if (r < 0)
            return -1;
        all_pass &= r;
    }
    json_object_set_new(t->rep, "pass", json_boolean(all_pass));
    printf("parity-fast: %s\n", all_pass ? "PASS" : "FAIL");
    return all_pass ? 0 : 1;
}

/* The sweep, its references and the GPU gates: the exit status, or -1 with t->err set. */
static int parity(tool *t, const parity_opts *p)
{
    synth_set s = {0};
    fwd_out ref_out = {0}, rw_out = {0};
    delta_stats bf16_peer = {0}; /* n > 0 once an external bf16 forward was read */
    int status = -1;
    const laya_config *cfg = &t->ck->cfg;
    if (synth_parity(&s, cfg, cfg->max_len, PARITY_SEED, &t->err) ||
        fwd_out_alloc(&ref_out, s.n, s.max_markers, &t->err))
        goto out;
    sweep_json(t, p, &s);
    if (references(t, p, &s, &ref_out, &rw_out, &bf16_peer))
        goto out;
    status = gpu_gates(t, p, &s, &ref_out, &rw_out, &bf16_peer);
out:
    fwd_out_free(&ref_out);
    fwd_out_free(&rw_out);
    synth_free(&s);
    return status;
}

int cmd_parity_fast(int argc, char **argv)
{
    static const struct option opts[] = {
        TOOL_MODEL, {"dtype", required_argument, 0, 'd'},
        TOOL_OUT,   {"ref", required_argument, 0, 'r'},
        TOOL_THREADS, TOOL_DEVICE,
        {"label", required_argument, 0, 'l'}, TOOL_HELP,
        {"dump-rows", required_argument, 0, 'R'}, {"external", required_argument, 0, 'x'},
        {"fused-proj-tokens", required_argument, 0, 'F'},
        {"att-wo-tokens", required_argument, 0, 'W'},
        {"tuning-cache", required_argument, 0, 'U'},
        {0, 0, 0, 0}};
    tool t;
    tool_init(&t, "parity-fast", usage);
    cuda_backend_opts d;
    cuda_backend_opts_default(&d); /* the serving paths unless a flag says otherwise */
    parity_opts p = {.dtypes = "fp16,bf16", .fused = d.fused_proj_tokens, .att_wo = d.att_wo_tokens};
    int rc = tool_parse(&t, argc, argv, "h", opts, parity_opt, &p);
    if (rc >= 0)
        return rc;
    if (!t.model)
        return tool_usage_error(&t);
    if (parse_dtypes(&p))
        return 2;
    t.rep = json_object();
    if (tool_open_model(&t))
        return tool_close(&t, tool_fail(&t));
    int status = parity(&t, &p);
    if (status < 0)
        return tool_close(&t, tool_fail(&t));
    if (t.out && tool_write_report(&t, t.out))
        status = 2;
    return tool_close(&t, status);
}
