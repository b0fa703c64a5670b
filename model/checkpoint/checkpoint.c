/*
 * checkpoint.c - open and verify a Laya checkpoint directory (see checkpoint.h).
 *
 * Verification happens once, at start-up, and reports every problem it finds
 * (missing tensors, wrong shapes, unexpected names) in one message, so that a
 * broken conversion is diagnosed in one run rather than one tensor at a time.
 */
#include "model/checkpoint/checkpoint.h"
#include "model/backend/rows.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole small file (configs); caller frees. */
static char *slurp(const char *path, size_t *len, layad_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        layad_fail(err, 500, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 > cap) {
            cap = cap ? cap * 2 : 65536;
            if (cap > (64u << 20)) {
                layad_fail(err, 500, "%s: config file too large", path);
                goto fail;
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                layad_fail(err, 500, "%s: out of memory", path);
                goto fail;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        layad_fail(err, 500, "%s: read error", path);
        goto fail;
    }
    fclose(f);
    *len = n;
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}

static int parse_file(laya_config *cfg, const char *dir, const char *rel,
                      int (*parse)(laya_config *, const char *, size_t, const char *, layad_error *),
                      layad_error *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    size_t len;
    char *buf = slurp(path, &len, err);
    if (!buf)
        return -1;
    int rc = parse(cfg, buf, len, path, err);
    free(buf);
    return rc;
}

/* tokenizer_config.json: special tokens are strings or {"content": ...} objects. */
static int special_token(json_t *root, const char *key, const char *fallback_key, char *out, size_t n)
{
    json_t *v = json_object_get(root, key);
    if ((!v || json_is_null(v)) && fallback_key)
        v = json_object_get(root, fallback_key);
    if (json_is_object(v))
        v = json_object_get(v, "content");
    if (!json_is_string(v))
        return -1;
    snprintf(out, n, "%s", json_string_value(v));
    return 0;
}

static int load_specials(laya_checkpoint *ck, layad_error *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/tokenizer/tokenizer_config.json", ck->dir);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return layad_fail(err, 500, "%s: %s", path, root ? "not a JSON object" : je.text);
    }
    /* Python reads cls/sep/mask/pad from here; mmBERT-style files may only name bos/eos. */
    struct { const char *key, *fallback; int *id; char *save; } sp[] = {
        {"cls_token", "bos_token", &ck->cfg.cls_id, NULL},
        {"sep_token", "eos_token", &ck->cfg.sep_id, NULL},
        {"mask_token", NULL, &ck->cfg.mask_id, ck->cfg.mask_token},
        {"pad_token", NULL, &ck->cfg.pad_id, NULL},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof sp / sizeof sp[0] && !rc; i++) {
        char content[64];
        if (special_token(root, sp[i].key, sp[i].fallback, content, sizeof content)) {
            rc = layad_fail(err, 500, "%s: missing %s", path, sp[i].key);
            break;
        }
        int32_t id = tokenizer_token_id(ck->tok, content);
        if (id < 0)
            rc = layad_fail(err, 500, "%s: %s '%s' is not in tokenizer.json", path, sp[i].key, content);
        *sp[i].id = id;
        if (sp[i].save)
            snprintf(sp[i].save, sizeof ck->cfg.mask_token, "%s", content);
    }
    json_decref(root);
    return rc;
}

/* ---- inventory ---- */

typedef struct inventory {
    char *msg;
    size_t len, cap;
    int problems;
    unsigned char *seen; /* per st tensor index */
} inventory;

static void inv_note(inventory *inv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void inv_note(inventory *inv, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    inv->problems++;
    if (w < 0 || inv->problems > 12)
        return; /* the count is reported; the first dozen are enough to diagnose */
    size_t need = inv->len + (size_t)w + 3;
    if (need > inv->cap) {
        size_t cap = need * 2;
        char *m = realloc(inv->msg, cap);
        if (!m)
            return;
        inv->msg = m;
        inv->cap = cap;
    }
    inv->len += (size_t)sprintf(inv->msg + inv->len, "%s%s", inv->len ? "; " : "", line);
}

static const st_tensor *want(const laya_checkpoint *ck, inventory *inv, int ndim, int64_t d0, int64_t d1,
                             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static const st_tensor *want(const laya_checkpoint *ck, inventory *inv, int ndim, int64_t d0, int64_t d1,
                             const char *fmt, ...)
{
    char name[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const st_tensor *t = st_find(&ck->st, name);
    if (!t) {
        inv_note(inv, "missing tensor '%s'", name);
        return NULL;
    }
    inv->seen[t - ck->st.tensors] = 1;
    if (t->ndim != ndim || t->shape[0] != d0 || (ndim == 2 && t->shape[1] != d1)) {
        char got[96] = "", exp[64];
        int w = 0;
        for (int i = 0; i < t->ndim; i++)
            w += snprintf(got + w, sizeof got - (size_t)w, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        if (ndim == 2)
            snprintf(exp, sizeof exp, "%lld, %lld", (long long)d0, (long long)d1);
        else
            snprintf(exp, sizeof exp, "%lld", (long long)d0);
        inv_note(inv, "tensor '%s' has shape [%s], expected [%s]", name, got, exp);
        return NULL;
    }
    return t;
}

/* The encoder's tensors: embeddings, the layers (layer 0 has no attention norm), the final norm. */
static void want_encoder(laya_checkpoint *ck, inventory *inv)
{
    const laya_config *c = &ck->cfg;
    laya_weights *w = &ck->w;
    const int64_t D = c->hidden, F = c->intermediate;
    w->tok_emb = want(ck, inv, 2, c->vocab, D, "encoder.embeddings.tok_embeddings.weight");
    w->emb_norm = want(ck, inv, 1, D, 0, "encoder.embeddings.norm.weight");
    w->final_norm = want(ck, inv, 1, D, 0, "encoder.final_norm.weight");
    for (int i = 0; i < c->n_layers; i++) {
        laya_enc_layer *L = &w->enc[i];
        if (i == 0) {
            const st_tensor *extra = st_find(&ck->st, "encoder.layers.0.attn_norm.weight");
            if (extra)
                inv_note(inv, "unexpected tensor 'encoder.layers.0.attn_norm.weight' (layer 0 has no attn_norm)");
            L->attn_norm = NULL;
        } else {
            L->attn_norm = want(ck, inv, 1, D, 0, "encoder.layers.%d.attn_norm.weight", i);
        }
        L->wqkv = want(ck, inv, 2, 3 * D, D, "encoder.layers.%d.attn.Wqkv.weight", i);
        L->wo = want(ck, inv, 2, D, D, "encoder.layers.%d.attn.Wo.weight", i);
        L->mlp_norm = want(ck, inv, 1, D, 0, "encoder.layers.%d.mlp_norm.weight", i);
        L->wi = want(ck, inv, 2, 2 * F, D, "encoder.layers.%d.mlp.Wi.weight", i);
        L->mlp_wo = want(ck, inv, 2, D, F, "encoder.layers.%d.mlp.Wo.weight", i);
    }
}

/* The decision head's tensors: the type embedding, the head's transformer layers, the scorer
 * and the act head. */
static void want_head(laya_checkpoint *ck, inventory *inv)
{
    const laya_config *c = &ck->cfg;
    laya_weights *w = &ck->w;
    const int64_t d = c->hidden;
    w->type_emb = want(ck, inv, 2, 3, d, "type_emb.weight");
    for (int j = 0; j < c->head_layers; j++) {
        laya_head_layer *H = &w->head[j];
        const char *p = "head.layers";
        H->in_w = want(ck, inv, 2, 3 * d, d, "%s.%d.self_attn.in_proj_weight", p, j);
        H->in_b = want(ck, inv, 1, 3 * d, 0, "%s.%d.self_attn.in_proj_bias", p, j);
        H->out_w = want(ck, inv, 2, d, d, "%s.%d.self_attn.out_proj.weight", p, j);
        H->out_b = want(ck, inv, 1, d, 0, "%s.%d.self_attn.out_proj.bias", p, j);
        H->l1_w = want(ck, inv, 2, 4 * d, d, "%s.%d.linear1.weight", p, j);
        H->l1_b = want(ck, inv, 1, 4 * d, 0, "%s.%d.linear1.bias", p, j);
        H->l2_w = want(ck, inv, 2, d, 4 * d, "%s.%d.linear2.weight", p, j);
        H->l2_b = want(ck, inv, 1, d, 0, "%s.%d.linear2.bias", p, j);
        H->n1_w = want(ck, inv, 1, d, 0, "%s.%d.norm1.weight", p, j);
        H->n1_b = want(ck, inv, 1, d, 0, "%s.%d.norm1.bias", p, j);
        H->n2_w = want(ck, inv, 1, d, 0, "%s.%d.norm2.weight", p, j);
        H->n2_b = want(ck, inv, 1, d, 0, "%s.%d.norm2.bias", p, j);
    }
    w->sc0_w = want(ck, inv, 1, d, 0, "scorer.0.weight");
    w->sc0_b = want(ck, inv, 1, d, 0, "scorer.0.bias");
    w->sc1_w = want(ck, inv, 2, d, d, "scorer.1.weight");
    w->sc1_b = want(ck, inv, 1, d, 0, "scorer.1.bias");
    w->sc3_w = want(ck, inv, 2, 1, d, "scorer.3.weight");
    w->sc3_b = want(ck, inv, 1, 1, 0, "scorer.3.bias");
    w->act0_w = want(ck, inv, 2, 256, d + 4, "act_head.0.weight");
    w->act0_b = want(ck, inv, 1, 256, 0, "act_head.0.bias");
    w->act2_w = want(ck, inv, 2, c->n_act, 256, "act_head.2.weight");
    w->act2_b = want(ck, inv, 1, c->n_act, 0, "act_head.2.bias");
}

static int check_inventory(laya_checkpoint *ck, layad_error *err)
{
    const laya_config *c = &ck->cfg;
    inventory inv = {0};
    inv.seen = calloc((size_t)ck->st.count + 1, 1);
    if (!inv.seen)
        return layad_fail(err, 500, "out of memory");
    want_encoder(ck, &inv);
    want_head(ck, &inv);
    const st_tensor *temp = st_find(&ck->st, "temperature"); /* training buffer, ignored at inference */
    if (temp)
        inv.seen[temp - ck->st.tensors] = 1;
    for (int i = 0; i < ck->st.count; i++)
        if (!inv.seen[i])
            inv_note(&inv, "unexpected tensor '%s'", ck->st.tensors[i].name);
    if (c->n_act != LAYA_N_ACT)
        inv_note(&inv, "act head width %d (len(act_costs) + 1) is not %d", c->n_act, LAYA_N_ACT);
    int rc = 0;
    if (inv.problems)
        rc = layad_fail(err, 500, "%s/model.safetensors does not match the configs (%d problem%s%s): %s", ck->dir,
                        inv.problems, inv.problems > 1 ? "s" : "", inv.problems > 12 ? ", first 12 shown" : "",
                        inv.msg ? inv.msg : "");
    free(inv.msg);
    free(inv.seen);
    return rc;
}

static int sha256_hex(const uint8_t *p, size_t n, char out[65], layad_error *err, const char *path)
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (!EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
        return layad_fail(err, 500, "%s: sha256 failed", path);
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
    return 0;
}

static void clamp_report(laya_checkpoint *ck)
{
    /* pip's RuntimeWarning text, listing every entry whose applied value differs from the raw one. */
    const laya_config *c = &ck->cfg;
    char list[400] = "";
    size_t w = 0;
    for (int i = 0; i < c->n_temp_buckets; i++) {
        const laya_temp_bucket *b = &c->temp_buckets[i];
        if (isnan(b->raw) || b->raw != b->value)
            w += (size_t)snprintf(list + w, w < sizeof list ? sizeof list - w : 0, "%s%s=%.17g -> %g",
                                  w ? ", " : "", b->key, b->raw, b->value);
    }
    for (int i = 0; i < 3; i++)
        if (isnan(c->temperature_raw[i]) || c->temperature_raw[i] != c->temperature[i])
            w += (size_t)snprintf(list + w, w < sizeof list ? sizeof list - w : 0, "%stemperature[%d]=%.17g -> %g",
                                  w ? ", " : "", i, c->temperature_raw[i], c->temperature[i]);
    if (w)
        snprintf(ck->clamp_warning, sizeof ck->clamp_warning,
                 "this checkpoint ships invalid temperatures or values outside [0.5, 5]; using %s. "
                 "Treat confidence from the affected entries as uncalibrated.", list);
}

int checkpoint_open(laya_checkpoint *ck, const char *model_arg, layad_error *err)
{
    memset(ck, 0, sizeof *ck);
    if (checkpoint_resolve(model_arg, ck->dir, sizeof ck->dir, err))
        return -1;
    char path[PATH_MAX + 64];
    if (parse_file(&ck->cfg, ck->dir, "encoder/config.json", config_parse_encoder, err) ||
        parse_file(&ck->cfg, ck->dir, "rl_agent_config.json", config_parse_agent, err))
        goto fail;
    snprintf(path, sizeof path, "%s/tokenizer/tokenizer.json", ck->dir);
    if (!(ck->tok = tokenizer_load(path, err)) || load_specials(ck, err))
        goto fail;
    if ((size_t)ck->cfg.vocab < tokenizer_vocab_size(ck->tok)) {
        layad_fail(err, 500, "%s: vocab_size %d is smaller than the tokenizer's %zu ids", ck->dir, ck->cfg.vocab,
                   tokenizer_vocab_size(ck->tok));
        goto fail;
    }
    if (ck->cfg.max_len > ck->cfg.max_position) {
        layad_fail(err, 500, "%s: max_len %d exceeds max_position_embeddings %d", ck->dir, ck->cfg.max_len,
                   ck->cfg.max_position);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", ck->dir);
    if (st_open(&ck->st, path, err) || check_inventory(ck, err) ||
        sha256_hex(ck->st.map, ck->st.size, ck->sha256, err, path))
        goto fail;
    for (int i = 0; i < ck->st.count; i++)
        ck->n_params += ck->st.tensors[i].numel;
    clamp_report(ck);
    return 0;
fail:
    checkpoint_close(ck);
    return -1;
}

void checkpoint_close(laya_checkpoint *ck)
{
    if (!ck)
        return;
    st_close(&ck->st);
    tokenizer_free(ck->tok);
    ck->tok = NULL;
}
