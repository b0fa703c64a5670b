/*
 * config.c - encoder/config.json and rl_agent_config.json -> laya_config.
 *
 * encoder/config.json comes in two dialects: transformers 4 (flat
 * global_rope_theta / local_rope_theta, layer kinds derived from
 * global_attn_every_n_layers) and transformers 5 (nested rope_parameters per
 * layer kind, explicit layer_types). Like laya.common._apply_rope_config, the
 * nested values win over the flat ones; reading only the flat keys silently
 * gives mmBERT the wrong local theta (it is 160000, not 10000).
 *
 * Temperatures are clamped exactly like laya.common.clamp_temperature:
 * non-numbers (bools included) become 1.0, numbers are confined to [0.5, 5].
 */
#include "model/checkpoint/checkpoint.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEMP_MIN 0.5
#define TEMP_MAX 5.0

static int get_int(json_t *o, const char *key, int dflt, int *out, const char *path, layad_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (dflt < 0)
            return layad_fail(err, 500, "%s: missing integer '%s'", path, key);
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 30))
        return layad_fail(err, 500, "%s: '%s' must be a non-negative integer", path, key);
    *out = (int)json_integer_value(v);
    return 0;
}

static int get_num(json_t *o, const char *key, double dflt, double *out, const char *path, layad_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_number(v))
        return layad_fail(err, 500, "%s: '%s' must be a number", path, key);
    *out = json_number_value(v);
    return 0;
}

static int require_false(json_t *o, const char *key, const char *path, layad_error *err)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_false(v) && !json_is_null(v))
        return layad_fail(err, 500, "%s: '%s' must be false (Laya encoders have no biases)", path, key);
    return 0;
}

static json_t *load_object(const char *json, size_t len, const char *path, layad_error *err)
{
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root) {
        layad_fail(err, 500, "%s: invalid JSON (%s, line %d)", path, je.text, je.line);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        layad_fail(err, 500, "%s: not a JSON object", path);
        return NULL;
    }
    return root;
}

/* Reads the sizes and flags of config.json into cfg and checks them: no biases, model_type
 * modernbert, exact-erf gelu, head_dim 64, layers/intermediate/vocab/attention in range. */
static int encoder_geometry(json_t *root, laya_config *cfg, const char *path, layad_error *err)
{
    if (get_int(root, "hidden_size", -1, &cfg->hidden, path, err) ||
        get_int(root, "num_hidden_layers", -1, &cfg->n_layers, path, err) ||
        get_int(root, "num_attention_heads", -1, &cfg->n_heads, path, err) ||
        get_int(root, "intermediate_size", -1, &cfg->intermediate, path, err) ||
        get_int(root, "vocab_size", -1, &cfg->vocab, path, err) ||
        get_int(root, "max_position_embeddings", 8192, &cfg->max_position, path, err) ||
        get_int(root, "local_attention", 128, &cfg->local_attention, path, err) ||
        get_int(root, "global_attn_every_n_layers", 3, &cfg->global_every, path, err) ||
        get_num(root, "norm_eps", 1e-5, &cfg->norm_eps, path, err) ||
        require_false(root, "norm_bias", path, err) || require_false(root, "attention_bias", path, err) ||
        require_false(root, "mlp_bias", path, err))
        return -1;
    json_t *mt = json_object_get(root, "model_type");
    if (mt && (!json_is_string(mt) || strcmp(json_string_value(mt), "modernbert")))
        return layad_fail(err, 500, "%s: model_type '%s' is not modernbert", path,
                          json_is_string(mt) ? json_string_value(mt) : "?");
    json_t *act = json_object_get(root, "hidden_activation");
    if (act && (!json_is_string(act) || strcmp(json_string_value(act), "gelu")))
        return layad_fail(err, 500,
                          "%s: hidden_activation '%s' is not supported (Laya uses exact erf \"gelu\")", path,
                          json_is_string(act) ? json_string_value(act) : "?");
    if (cfg->n_heads <= 0 || cfg->hidden != cfg->n_heads * 64)
        return layad_fail(err, 500, "%s: hidden_size %d / num_attention_heads %d is not a head_dim of 64", path,
                          cfg->hidden, cfg->n_heads);
    if (cfg->n_layers <= 0 || cfg->n_layers > LAYA_MAX_LAYERS || cfg->intermediate <= 0 || cfg->vocab <= 0 ||
        cfg->global_every <= 0 || cfg->local_attention < 2)
        return layad_fail(err, 500,
                          "%s: geometry out of range (layers %d, intermediate %d, vocab %d, global every %d, "
                          "local_attention %d)", path, cfg->n_layers, cfg->intermediate, cfg->vocab,
                          cfg->global_every, cfg->local_attention);
    return 0;
}

/* Reads the global and local RoPE thetas into cfg: flat keys first, nested rope_parameters
 * override (transformers 5); only the "default" rope_type; both must be positive. */
static int encoder_rope(json_t *root, laya_config *cfg, const char *path, layad_error *err)
{
    if (get_num(root, "global_rope_theta", 160000.0, &cfg->rope_theta_global, path, err) ||
        get_num(root, "local_rope_theta", 10000.0, &cfg->rope_theta_local, path, err))
        return -1;
    json_t *rp = json_object_get(root, "rope_parameters");
    if (rp && json_is_object(rp)) {
        json_t *flat = json_object_get(rp, "rope_theta");
        struct { const char *kind; double *dst; } kinds[] = {
            {"full_attention", &cfg->rope_theta_global}, {"sliding_attention", &cfg->rope_theta_local}};
        for (int k = 0; k < 2; k++) {
            json_t *p = json_object_get(rp, kinds[k].kind);
            json_t *th = json_is_object(p) ? json_object_get(p, "rope_theta") : flat;
            if (th && json_is_number(th))
                *kinds[k].dst = json_number_value(th);
            else if (th && !json_is_null(th))
                return layad_fail(err, 500, "%s: rope_parameters.%s.rope_theta must be a number", path,
                                  kinds[k].kind);
            json_t *rt = json_is_object(p) ? json_object_get(p, "rope_type") : NULL;
            if (rt && (!json_is_string(rt) || strcmp(json_string_value(rt), "default")))
                return layad_fail(err, 500,
                                  "%s: rope_parameters.%s.rope_type '%s' is not supported (only \"default\")",
                                  path, kinds[k].kind, json_is_string(rt) ? json_string_value(rt) : "?");
        }
    }
    if (!(cfg->rope_theta_global > 0) || !(cfg->rope_theta_local > 0))
        return layad_fail(err, 500, "%s: RoPE theta must be positive", path);
    return 0;
}

/* Sets cfg->layer_global for the n_layers layers: every global_every-th layer from the first,
 * unless layer_types lists each one as full_attention or sliding_attention. */
static int encoder_layer_types(json_t *root, laya_config *cfg, const char *path, layad_error *err)
{
    json_t *lt = json_object_get(root, "layer_types");
    for (int i = 0; i < cfg->n_layers; i++)
        cfg->layer_global[i] = (i % cfg->global_every) == 0;
    if (!lt || json_is_null(lt))
        return 0;
    if (!json_is_array(lt) || (int)json_array_size(lt) != cfg->n_layers)
        return layad_fail(err, 500, "%s: layer_types must list %d layers", path, cfg->n_layers);
    for (int i = 0; i < cfg->n_layers; i++) {
        const char *s = json_string_value(json_array_get(lt, (size_t)i));
        if (s && !strcmp(s, "full_attention"))
            cfg->layer_global[i] = 1;
        else if (s && !strcmp(s, "sliding_attention"))
            cfg->layer_global[i] = 0;
        else
            return layad_fail(err, 500, "%s: layer_types[%d] '%s' is not full_attention or sliding_attention",
                              path, i, s ? s : "?");
    }
    return 0;
}

int config_parse_encoder(laya_config *cfg, const char *json, size_t len, const char *path, layad_error *err)
{
    json_t *root = load_object(json, len, path, err);
    if (!root)
        return -1;
    int rc = -1;
    if (encoder_geometry(root, cfg, path, err) == 0 && encoder_rope(root, cfg, path, err) == 0 &&
        encoder_layer_types(root, cfg, path, err) == 0)
        rc = 0;
    json_decref(root);
    return rc;
}

/* Python float(t) for a JSON value; returns 0 if it is a number in Python's sense. */
static int py_float(json_t *v, double *out)
{
    if (json_is_boolean(v))
        return -1; /* clamp_temperature refuses bools */
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        double d = strtod(s, &end);
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (end != s && *end == '\0') {
            *out = d;
            return 0;
        }
    }
    return -1;
}

static double clamp_temperature(json_t *v, double *raw)
{
    double t;
    if (py_float(v, &t)) {
        *raw = NAN;
        return 1.0;
    }
    *raw = t;
    if (isnan(t) || isinf(t))
        return 1.0;
    return t < TEMP_MIN ? TEMP_MIN : t > TEMP_MAX ? TEMP_MAX : t;
}

int config_parse_agent(laya_config *cfg, const char *json, size_t len, const char *path, layad_error *err)
{
    json_t *root = load_object(json, len, path, err);
    if (!root)
        return -1;
    int rc = -1;
    if (get_int(root, "head_layers", 2, &cfg->head_layers, path, err) ||
        get_int(root, "max_len", 512, &cfg->max_len, path, err) ||
        get_int(root, "head_max_len", 192, &cfg->head_max_len, path, err))
        goto out;
    if (cfg->head_layers < 1 || cfg->head_layers > LAYA_MAX_HEAD_LAYERS || cfg->max_len < 8 || cfg->head_max_len < 8) {
        layad_fail(err, 500, "%s: head_layers %d / max_len %d / head_max_len %d out of range", path,
                   cfg->head_layers, cfg->max_len, cfg->head_max_len);
        goto out;
    }
    json_t *costs = json_object_get(root, "act_costs");
    cfg->n_act = (costs && json_is_object(costs) ? (int)json_object_size(costs) : 0) + 1;
    json_t *temps = json_object_get(root, "temperature");
    for (int i = 0; i < 3; i++)
        cfg->temperature[i] = 1.0, cfg->temperature_raw[i] = 1.0;
    if (temps && !json_is_null(temps)) {
        if (!json_is_array(temps) || json_array_size(temps) != 3) {
            layad_fail(err, 500, "%s: temperature must be a list of 3 floats", path);
            goto out;
        }
        for (int i = 0; i < 3; i++)
            cfg->temperature[i] = clamp_temperature(json_array_get(temps, (size_t)i), &cfg->temperature_raw[i]);
    }
    json_t *tbo = json_object_get(root, "temperature_by_options");
    cfg->n_temp_buckets = 0;
    if (tbo && json_is_object(tbo)) {
        const char *key;
        json_t *v;
        json_object_foreach(tbo, key, v) {
            if (cfg->n_temp_buckets == LAYA_MAX_TEMP_BUCKETS || strlen(key) >= sizeof cfg->temp_buckets[0].key) {
                layad_fail(err, 500, "%s: too many or too long temperature_by_options keys", path);
                goto out;
            }
            laya_temp_bucket *b = &cfg->temp_buckets[cfg->n_temp_buckets++];
            snprintf(b->key, sizeof b->key, "%s", key);
            b->value = clamp_temperature(v, &b->raw);
        }
    }
    json_t *mn = json_object_get(root, "model_name"), *enc = json_object_get(root, "encoder");
    snprintf(cfg->model_name, sizeof cfg->model_name, "%s", json_is_string(mn) ? json_string_value(mn) : "");
    snprintf(cfg->encoder_name, sizeof cfg->encoder_name, "%s", json_is_string(enc) ? json_string_value(enc) : "");
    json_t *layout = json_object_get(root, "option_layout");
    if (layout && !json_is_null(layout) &&
        (!json_is_string(layout) || strcmp(json_string_value(layout), "sequential"))) {
        layad_fail(err, 500, "%s: option_layout '%s' is not supported (only \"sequential\")", path,
                   json_is_string(layout) ? json_string_value(layout) : "?");
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    return rc;
}

double checkpoint_temperature(const laya_config *cfg, int qtype, int k)
{
    static const char *types[3] = {"choice", "score", "noul"};
    if (qtype < 0 || qtype > 2)
        return 1.0;
    char key[32];
    snprintf(key, sizeof key, "%s:%s", types[qtype], k <= 2 ? "2" : k <= 5 ? "3-5" : k <= 10 ? "6-10" : "11+");
    for (int i = 0; i < cfg->n_temp_buckets; i++)
        if (!strcmp(cfg->temp_buckets[i].key, key))
            return cfg->temp_buckets[i].value;
    return cfg->temperature[qtype];
}
