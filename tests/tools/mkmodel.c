/*
 * mkmodel.c - write a deterministic random Laya checkpoint (see mkmodel.h).
 *
 * Output layout is the real one: model.safetensors (F16 weights + the F32
 * `temperature` buffer), rl_agent_config.json, encoder/config.json
 * (transformers-5 dialect: layer_types + nested rope_parameters),
 * tokenizer/tokenizer.json and tokenizer/tokenizer_config.json.
 *
 * Scales are chosen so the outputs are far from degenerate: linear weights
 * have std gain/sqrt(fan_in), norms have weights near 1 with noise and small
 * biases, and the scorer and act head end with gains of 8 and 2 so that
 * decision logits spread over a few units and probabilities vary strongly
 * across inputs (parity tests on flat outputs would prove nothing).
 */
#include "tests/tools/mkmodel.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/checkpoint/safetensors.h"

extern const char layad_tiny_tokenizer_json[], layad_tiny_tokenizer_json_end[];
extern const char layad_tiny_mmbert_tokenizer_json[], layad_tiny_mmbert_tokenizer_json_end[];

typedef struct preset {
    const char *name;
    int D, layers, heads, F, vocab, local_attention, max_position;
    double theta_global, theta_local;
    int max_len, head_max_len;
    int gemma;            /* tokenizer family: 0 ModernBERT, 1 mmBERT/Gemma */
    const char *encoder;  /* rl_agent_config "encoder" */
    const double *temps;  /* [3] */
    const char *const *bucket_keys;
    const double *bucket_vals;
    int n_buckets;
} preset;

/* English checkpoint's published calibration (laya-model.md §1.2), clamped entry included. */
static const double english_t[3] = {1.6369030475616455, 1.2514300346374512, 1.983399510383606};
static const char *const english_bk[] = {"choice:3-5", "choice:6-10", "score:3-5", "noul:2", "choice:11+", "choice:2"};
static const double english_bv[] = {1.7601518630981445, 1.0000158548355103, 1.2514300346374512,
                                    1.983399510383606, 0.10058280825614929, 1.9063563346862793};
static const double ones_t[3] = {1.0, 1.0, 1.0};

static const preset presets[] = {
    {"tiny", 128, 4, 2, 192, 1280, 32, 8192, 160000.0, 10000.0, 512, 128, 0, "layad/tiny-modernbert",
     english_t, english_bk, english_bv, 6},
    {"english-large", 1024, 28, 16, 2624, 50368, 128, 8192, 160000.0, 10000.0, 512, 192, 0,
     "answerdotai/ModernBERT-large", english_t, english_bk, english_bv, 6},
    /* mmBERT geometry at tiny size: Metaspace tokenizer (embedded), 1,024-token rows, one RoPE
     * theta for both layer types, uncalibrated temperatures, as mmbert-base */
    {"mmbert-tiny", 128, 4, 2, 192, 4480, 32, 8192, 160000.0, 160000.0, 1024, 256, 1, "layad/tiny-mmbert",
     ones_t, NULL, NULL, 0},
    {"mmbert-base", 768, 22, 12, 1152, 256000, 128, 8192, 160000.0, 160000.0, 1024, 256, 1, "jhu-clsp/mmBERT-base",
     ones_t, NULL, NULL, 0},
};

/* ---- integer-only randomness ---- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Approximately N(0,1): Irwin-Hall sum of four 16-bit uniforms, centered and scaled. Exact IEEE ops only. */
static double gauss(uint64_t *s)
{
    uint64_t r = splitmix64(s);
    int64_t sum = (int64_t)(r & 0xffff) + (int64_t)((r >> 16) & 0xffff) + (int64_t)((r >> 32) & 0xffff) +
                  (int64_t)(r >> 48);
    return (double)(sum - 131070) / 37837.0; /* std of the sum is 65536/sqrt(3) = 37837.2 */
}

/* ---- tensor plan ---- */

enum init { INIT_LINEAR, INIT_NORM_W, INIT_BIAS, INIT_EMB, INIT_ONES_F32 };

typedef struct tplan {
    char name[96];
    int ndim;
    int64_t shape[2];
    enum init init;
    double gain;
    st_dtype dtype;
    uint64_t offset, nbytes;
} tplan;

typedef struct plan {
    tplan *t;
    int n, cap;
} plan;

static int add(plan *p, enum init init, double gain, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int add(plan *p, enum init init, double gain, int64_t d0, int64_t d1, const char *fmt, ...)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 256;
        tplan *t = realloc(p->t, sizeof *t * (size_t)cap);
        if (!t)
            return -1;
        p->t = t;
        p->cap = cap;
    }
    tplan *t = &p->t[p->n++];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->init = init;
    t->gain = gain;
    t->dtype = init == INIT_ONES_F32 ? ST_F32 : ST_F16;
    t->nbytes = (uint64_t)d0 * (uint64_t)(d1 ? d1 : 1) * st_dtype_size(t->dtype);
    return 0;
}

static int cmp_plan(const void *a, const void *b)
{
    return strcmp(((const tplan *)a)->name, ((const tplan *)b)->name);
}

static int build_plan(const preset *ps, plan *p)
{
    int64_t D = ps->D, F = ps->F, d = ps->D;
    int rc = 0;
    rc |= add(p, INIT_EMB, 1.0, ps->vocab, D, "encoder.embeddings.tok_embeddings.weight");
    rc |= add(p, INIT_NORM_W, 1.0, D, 0, "encoder.embeddings.norm.weight");
    for (int i = 0; i < ps->layers; i++) {
        if (i)
            rc |= add(p, INIT_NORM_W, 1.0, D, 0, "encoder.layers.%d.attn_norm.weight", i);
        rc |= add(p, INIT_LINEAR, 1.0, 3 * D, D, "encoder.layers.%d.attn.Wqkv.weight", i);
        rc |= add(p, INIT_LINEAR, 1.0, D, D, "encoder.layers.%d.attn.Wo.weight", i);
        rc |= add(p, INIT_NORM_W, 1.0, D, 0, "encoder.layers.%d.mlp_norm.weight", i);
        rc |= add(p, INIT_LINEAR, 1.0, 2 * F, D, "encoder.layers.%d.mlp.Wi.weight", i);
        rc |= add(p, INIT_LINEAR, 1.0, D, F, "encoder.layers.%d.mlp.Wo.weight", i);
    }
    rc |= add(p, INIT_NORM_W, 1.0, D, 0, "encoder.final_norm.weight");
    rc |= add(p, INIT_EMB, 0.5, 3, d, "type_emb.weight");
    for (int j = 0; j < 2; j++) {
        const char *h = "head.layers";
        rc |= add(p, INIT_LINEAR, 1.0, 3 * d, d, "%s.%d.self_attn.in_proj_weight", h, j);
        rc |= add(p, INIT_BIAS, 1.0, 3 * d, 0, "%s.%d.self_attn.in_proj_bias", h, j);
        rc |= add(p, INIT_LINEAR, 1.0, d, d, "%s.%d.self_attn.out_proj.weight", h, j);
        rc |= add(p, INIT_BIAS, 1.0, d, 0, "%s.%d.self_attn.out_proj.bias", h, j);
        rc |= add(p, INIT_LINEAR, 1.0, 4 * d, d, "%s.%d.linear1.weight", h, j);
        rc |= add(p, INIT_BIAS, 1.0, 4 * d, 0, "%s.%d.linear1.bias", h, j);
        rc |= add(p, INIT_LINEAR, 1.0, d, 4 * d, "%s.%d.linear2.weight", h, j);
        rc |= add(p, INIT_BIAS, 1.0, d, 0, "%s.%d.linear2.bias", h, j);
        rc |= add(p, INIT_NORM_W, 1.0, d, 0, "%s.%d.norm1.weight", h, j);
        rc |= add(p, INIT_BIAS, 1.0, d, 0, "%s.%d.norm1.bias", h, j);
        rc |= add(p, INIT_NORM_W, 1.0, d, 0, "%s.%d.norm2.weight", h, j);
        rc |= add(p, INIT_BIAS, 1.0, d, 0, "%s.%d.norm2.bias", h, j);
    }
    rc |= add(p, INIT_NORM_W, 1.0, d, 0, "scorer.0.weight");
    rc |= add(p, INIT_BIAS, 1.0, d, 0, "scorer.0.bias");
    rc |= add(p, INIT_LINEAR, 1.0, d, d, "scorer.1.weight");
    rc |= add(p, INIT_BIAS, 1.0, d, 0, "scorer.1.bias");
    rc |= add(p, INIT_LINEAR, 8.0, 1, d, "scorer.3.weight");
    rc |= add(p, INIT_BIAS, 1.0, 1, 0, "scorer.3.bias");
    rc |= add(p, INIT_LINEAR, 1.0, 256, d + 4, "act_head.0.weight");
    rc |= add(p, INIT_BIAS, 1.0, 256, 0, "act_head.0.bias");
    rc |= add(p, INIT_LINEAR, 2.0, 2, 256, "act_head.2.weight");
    rc |= add(p, INIT_BIAS, 1.0, 2, 0, "act_head.2.bias");
    rc |= add(p, INIT_ONES_F32, 1.0, 3, 0, "temperature");
    if (rc)
        return -1;
    qsort(p->t, (size_t)p->n, sizeof *p->t, cmp_plan);
    uint64_t off = 0;
    for (int i = 0; i < p->n; i++) {
        p->t[i].offset = off;
        off += p->t[i].nbytes;
    }
    return 0;
}

/* One element of a tensor, from its own stream (values depend only on seed and name). */
static double draw(const tplan *t, uint64_t *s)
{
    double g = gauss(s);
    switch (t->init) {
    case INIT_LINEAR: return g * t->gain / sqrt((double)t->shape[1]); /* sqrt is correctly rounded (IEEE) */
    case INIT_NORM_W: return 1.0 + 0.1 * g;
    case INIT_BIAS: return 0.05 * g;
    case INIT_EMB: return g * t->gain;
    case INIT_ONES_F32: return 1.0;
    }
    return 0.0;
}

static int write_tensor(FILE *f, const tplan *t, uint64_t seed)
{
    uint64_t s = seed ^ fnv1a(t->name);
    uint64_t n = t->nbytes / st_dtype_size(t->dtype);
    uint8_t buf[1 << 15];
    size_t fill = 0;
    for (uint64_t i = 0; i < n; i++) {
        float v = (float)draw(t, &s);
        if (t->dtype == ST_F32) {
            memcpy(buf + fill, &v, 4);
            fill += 4;
        } else {
            uint16_t h = st_f32_to_f16(v);
            buf[fill++] = (uint8_t)(h & 0xff);
            buf[fill++] = (uint8_t)(h >> 8);
        }
        if (fill + 4 > sizeof buf) {
            if (fwrite(buf, 1, fill, f) != fill)
                return -1;
            fill = 0;
        }
    }
    return fill && fwrite(buf, 1, fill, f) != fill ? -1 : 0;
}

static int write_safetensors(const char *path, const plan *p, uint64_t seed, layad_error *err)
{
    json_t *hdr = json_object();
    json_t *meta = json_object();
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(hdr, "__metadata__", meta);
    for (int i = 0; i < p->n; i++) {
        const tplan *t = &p->t[i];
        json_t *shape = json_array();
        for (int k = 0; k < t->ndim; k++)
            json_array_append_new(shape, json_integer(t->shape[k]));
        json_t *e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", st_dtype_name(t->dtype), "shape", shape,
                              "data_offsets", (json_int_t)t->offset, (json_int_t)(t->offset + t->nbytes));
        json_object_set_new(hdr, t->name, e);
    }
    char *js = json_dumps(hdr, JSON_COMPACT);
    json_decref(hdr);
    if (!js)
        return layad_fail(err, 500, "%s: cannot encode the header", path);
    size_t jl = strlen(js), padded = (jl + 7) & ~(size_t)7; /* data area 8-byte aligned, like safetensors */
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(js);
        return layad_fail(err, 500, "%s: %s", path, strerror(errno));
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    int bad = fwrite(len8, 1, 8, f) != 8 || fwrite(js, 1, jl, f) != jl;
    for (size_t i = jl; i < padded && !bad; i++)
        bad = fputc(' ', f) == EOF;
    free(js);
    for (int i = 0; i < p->n && !bad; i++)
        bad = write_tensor(f, &p->t[i], seed);
    if (fclose(f) || bad)
        return layad_fail(err, 500, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

static int dump_json(json_t *j, const char *path, layad_error *err)
{
    int rc = json_dump_file(j, path, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(j);
    return rc ? layad_fail(err, 500, "%s: cannot write", path) : 0;
}

static int write_configs(const preset *ps, const char *dir, uint64_t seed, layad_error *err)
{
    char path[4096];
    /* encoder/config.json, transformers-5 dialect */
    json_t *lt = json_array();
    for (int i = 0; i < ps->layers; i++)
        json_array_append_new(lt, json_string(i % 3 ? "sliding_attention" : "full_attention"));
    int pad = ps->gemma ? 0 : 50283, bos = ps->gemma ? 2 : 50281, eos = ps->gemma ? 1 : 50282;
    if (!strcmp(ps->name, "tiny"))
        pad = 1237, bos = 1235, eos = 1236; /* [PAD] [CLS] [SEP] ids of config/tiny-tokenizer.json (informational: ids come from the tokenizer) */
    json_t *enc = json_pack(
        "{s:[s], s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:i, s:f, s:f, s:b, s:i, s:i, s:i, s:i, s:i, s:b, s:f,"
        " s:o, s:i, s:i, s:f, s:b, s:f, s:b, s:s, s:b, s:b, s:b, s:{s:{s:f, s:s}, s:{s:f, s:s}}}",
        "architectures", "ModernBertModel", "model_type", "modernbert", "transformers_version", "5.24.0",
        "vocab_size", ps->vocab, "hidden_size", ps->D, "intermediate_size", ps->F, "num_hidden_layers", ps->layers,
        "num_attention_heads", ps->heads, "hidden_activation", "gelu", "max_position_embeddings", ps->max_position,
        "initializer_range", 0.02, "norm_eps", 1e-5, "norm_bias", 0, "pad_token_id", pad, "eos_token_id", eos,
        "bos_token_id", bos, "cls_token_id", bos, "sep_token_id", eos, "attention_bias", 0, "attention_dropout", 0.0,
        "layer_types", lt, "local_attention", ps->local_attention, "global_attn_every_n_layers", 3,
        "embedding_dropout", 0.0, "mlp_bias", 0, "mlp_dropout", 0.0, "decoder_bias", 1, "classifier_pooling", "cls",
        "tie_word_embeddings", 1, "deterministic_flash_attn", 0, "sparse_prediction", 0, "rope_parameters",
        "full_attention", "rope_theta", ps->theta_global, "rope_type", "default", "sliding_attention", "rope_theta",
        ps->theta_local, "rope_type", "default");
    if (!enc)
        return layad_fail(err, 500, "cannot build encoder config");
    snprintf(path, sizeof path, "%s/encoder/config.json", dir);
    if (dump_json(enc, path, err))
        return -1;
    /* rl_agent_config.json */
    json_t *tbo = json_object();
    for (int i = 0; i < ps->n_buckets; i++)
        json_object_set_new(tbo, ps->bucket_keys[i], json_real(ps->bucket_vals[i]));
    json_t *agent = json_pack("{s:s, s:i, s:i, s:i, s:i, s:{s:f}, s:f, s:s, s:s, s:[f, f, f], s:o, s:{s:s, s:I}}",
                              "encoder", ps->encoder, "head_layers", 2, "max_len", ps->max_len, "head_max_len",
                              ps->head_max_len, "max_prefixes", 6, "act_costs", "escalate", 0.5, "cost_wrong_act",
                              3.0, "amp_dtype", "bf16", "model_name", "rl-agent", "temperature", ps->temps[0],
                              ps->temps[1], ps->temps[2], "temperature_by_options", tbo, "training", "generator",
                              "layad mkmodel", "seed", (json_int_t)(seed & 0x7fffffffffffffffull));
    if (!agent)
        return layad_fail(err, 500, "cannot build rl_agent_config");
    snprintf(path, sizeof path, "%s/rl_agent_config.json", dir);
    if (dump_json(agent, path, err))
        return -1;
    /* tokenizer/tokenizer_config.json */
    json_t *tc = ps->gemma
        ? json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "bos_token", "<bos>", "eos_token", "<eos>",
                    "cls_token", "<bos>", "sep_token", "<eos>", "mask_token", "<mask>", "pad_token", "<pad>",
                    "unk_token", "<unk>", "model_max_length", 8192, "tokenizer_class", "PreTrainedTokenizerFast")
        : json_pack("{s:b, s:s, s:s, s:[s, s], s:i, s:s, s:s, s:s, s:s}", "clean_up_tokenization_spaces", 1,
                    "cls_token", "[CLS]", "mask_token", "[MASK]", "model_input_names", "input_ids", "attention_mask",
                    "model_max_length", 8192, "pad_token", "[PAD]", "sep_token", "[SEP]", "tokenizer_class",
                    "PreTrainedTokenizerFast", "unk_token", "[UNK]");
    snprintf(path, sizeof path, "%s/tokenizer/tokenizer_config.json", dir);
    return dump_json(tc, path, err);
}

/* Writes dst from the file src, or without one from embedded tokenizer `embedded`
 * (0: config/tiny-tokenizer.json, 1: the Metaspace test tokenizer). */
static int copy_tokenizer(const char *src, int embedded, const char *dst, layad_error *err)
{
    FILE *out = fopen(dst, "wb");
    if (!out)
        return layad_fail(err, 500, "%s: %s", dst, strerror(errno));
    int bad = 0;
    if (!src) {
        const int mm = embedded == 1;
        const char *b = mm ? layad_tiny_mmbert_tokenizer_json : layad_tiny_tokenizer_json;
        const char *e = mm ? layad_tiny_mmbert_tokenizer_json_end : layad_tiny_tokenizer_json_end;
        size_t n = (size_t)(e - b);
        bad = fwrite(b, 1, n, out) != n;
    } else {
        FILE *in = fopen(src, "rb");
        if (!in) {
            fclose(out);
            return layad_fail(err, 500, "%s: %s", src, strerror(errno));
        }
        char buf[1 << 16];
        size_t n;
        while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0)
            bad = fwrite(buf, 1, n, out) != n;
        bad |= ferror(in);
        fclose(in);
    }
    if (fclose(out) || bad)
        return layad_fail(err, 500, "%s: write failed", dst);
    return 0;
}

static int mkdirs(const char *dir, layad_error *err)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0755) && errno != EEXIST)
                return layad_fail(err, 500, "%s: %s", p, strerror(errno));
            *s = '/';
        }
    if (mkdir(p, 0755) && errno != EEXIST)
        return layad_fail(err, 500, "%s: %s", p, strerror(errno));
    return 0;
}

int mkmodel_write(const char *name, const char *out, const char *tokenizer_json, uint64_t seed, layad_error *err)
{
    const preset *ps = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, name))
            ps = &presets[i];
    if (!ps)
        return layad_fail(err, 400, "unknown preset '%s' (tiny, mmbert-tiny, english-large, mmbert-base)", name);
    const int embedded = !strcmp(name, "tiny") ? 0 : !strcmp(name, "mmbert-tiny") ? 1 : -1;
    if (!tokenizer_json && embedded < 0)
        return layad_fail(err, 400, "preset '%s' needs --tokenizer FILE (e.g. ../shared/data/modernbert-tokenizer.json)",
                          name);
    char sub[4096 + 32];
    snprintf(sub, sizeof sub, "%s/encoder", out);
    if (mkdirs(sub, err))
        return -1;
    snprintf(sub, sizeof sub, "%s/tokenizer", out);
    if (mkdirs(sub, err))
        return -1;
    snprintf(sub, sizeof sub, "%s/tokenizer/tokenizer.json", out);
    if (copy_tokenizer(tokenizer_json, embedded, sub, err) || write_configs(ps, out, seed, err))
        return -1;
    plan p = {0};
    if (build_plan(ps, &p)) {
        free(p.t);
        return layad_fail(err, 500, "out of memory");
    }
    snprintf(sub, sizeof sub, "%s/model.safetensors", out);
    int rc = write_safetensors(sub, &p, seed ^ fnv1a(ps->name), err);
    free(p.t);
    return rc;
}
