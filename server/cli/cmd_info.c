/*
 * cmd_info.c - `layad info --model X [--json]`: what a checkpoint is, after verification.
 */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint/checkpoint.h"
#include "server/cli/commands.h"

static const char *dominant_dtype(const safetensors *st)
{
    long long n[4] = {0};
    for (int i = 0; i < st->count; i++)
        n[st->tensors[i].dtype] += st->tensors[i].numel;
    int best = ST_F16;
    for (int d = ST_F16; d <= ST_F32; d++)
        if (n[d] > n[best])
            best = d;
    return st_dtype_name((st_dtype)best);
}

static json_t *info_json(const laya_checkpoint *ck)
{
    const laya_config *c = &ck->cfg;
    json_t *layers = json_array();
    for (int i = 0; i < c->n_layers; i++)
        json_array_append_new(layers, json_string(c->layer_global[i] ? "full_attention" : "sliding_attention"));
    json_t *temps = json_object(), *raw_changed = json_object();
    static const char *qt[3] = {"choice", "score", "noul"};
    for (int i = 0; i < 3; i++) {
        char key[32];
        snprintf(key, sizeof key, "temperature[%d] (%s)", i, qt[i]);
        json_object_set_new(temps, key, json_real(c->temperature[i]));
        if (c->temperature_raw[i] != c->temperature[i])
            json_object_set_new(raw_changed, key, isnan(c->temperature_raw[i]) ? json_string("not a number")
                                                                                 : json_real(c->temperature_raw[i]));
    }
    for (int i = 0; i < c->n_temp_buckets; i++) {
        const laya_temp_bucket *b = &c->temp_buckets[i];
        json_object_set_new(temps, b->key, json_real(b->value));
        if (b->raw != b->value)
            json_object_set_new(raw_changed, b->key, isnan(b->raw) ? json_string("not a number") : json_real(b->raw));
    }
    return json_pack("{s:s, s:s, s:s, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:o}, "
                     "s:{s:i, s:i, s:i}, s:{s:s, s:i, s:I, s:I}, s:{s:i, s:i, s:i, s:i, s:s}, s:o, s:o}",
                     "dir", ck->dir, "sha256", ck->sha256, "model_name", c->model_name, "encoder", "hidden", c->hidden,
                     "layers", c->n_layers, "heads", c->n_heads, "head_dim", 64, "intermediate", c->intermediate,
                     "vocab", c->vocab, "local_attention", c->local_attention, "global_every", c->global_every,
                     "norm_eps", c->norm_eps, "rope_theta_global", c->rope_theta_global, "rope_theta_local",
                     c->rope_theta_local, "layer_types", layers, "head", "layers", c->head_layers, "heads",
                     c->hidden / 64, "n_act", c->n_act, "weights", "dtype", dominant_dtype(&ck->st), "tensors",
                     ck->st.count, "parameters", (json_int_t)ck->n_params, "bytes", (json_int_t)ck->st.size,
                     "budgets_and_tokens", "max_len", c->max_len, "head_max_len", c->head_max_len, "cls_id", c->cls_id,
                     "sep_id", c->sep_id, "mask_token", c->mask_token, "temperatures_effective", temps,
                     "temperatures_raw_changed", raw_changed);
}

static void print_text(const laya_checkpoint *ck)
{
    const laya_config *c = &ck->cfg;
    printf("checkpoint   %s\n", ck->dir);
    printf("sha256       %s  model.safetensors (%zu bytes)\n", ck->sha256, ck->st.size);
    printf("encoder      %s: hidden %d, %d layers, %d heads x 64, intermediate %d, vocab %d\n",
           c->encoder_name[0] ? c->encoder_name : "?", c->hidden, c->n_layers, c->n_heads, c->intermediate, c->vocab);
    printf("attention    local window |i-j| <= %d, RoPE theta global %g / local %g, norm eps %g\n",
           c->local_attention / 2, c->rope_theta_global, c->rope_theta_local, c->norm_eps);
    printf("layer types ");
    for (int i = 0; i < c->n_layers; i++)
        printf(" %c", c->layer_global[i] ? 'G' : 'l');
    printf("   (G full, l sliding)\n");
    printf("head         %d layers, %d heads, act width %d\n", c->head_layers, c->hidden / 64, c->n_act);
    printf("weights      %d tensors, %lld parameters, %s\n", ck->st.count, ck->n_params, dominant_dtype(&ck->st));
    printf("budgets      max_len %d, head_max_len %d\n", c->max_len, c->head_max_len);
    printf("tokens       [CLS] %d, [SEP] %d, [PAD] %d, mask '%s' %d\n", c->cls_id, c->sep_id, c->pad_id, c->mask_token,
           c->mask_id);
    static const char *qt[3] = {"choice", "score", "noul"};
    printf("temperatures (effective, clamped to [0.5, 5])\n");
    for (int i = 0; i < 3; i++) {
        printf("  %-14s %.17g", qt[i], c->temperature[i]);
        if (c->temperature_raw[i] != c->temperature[i])
            printf("   (raw %.17g)", c->temperature_raw[i]);
        printf("\n");
    }
    for (int i = 0; i < c->n_temp_buckets; i++) {
        const laya_temp_bucket *b = &c->temp_buckets[i];
        printf("  %-14s %.17g", b->key, b->value);
        if (b->raw != b->value)
            printf("   (raw %.17g)", b->raw);
        printf("\n");
    }
    if (ck->clamp_warning[0])
        printf("warning      %s\n", ck->clamp_warning);
}

int cmd_info(int argc, char **argv)
{
    const char *model = NULL;
    int as_json = 0;
    static const struct option opts[] = {{"model", required_argument, 0, 'm'}, {"json", no_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:jh", opts, NULL)) != -1) {
        if (c == 'm')
            model = optarg;
        else if (c == 'j')
            as_json = 1;
        else {
            fprintf(c == 'h' ? stdout : stderr, "usage: layad info --model DIR|org/name[/subfolder] [--json]\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (!model) {
        fprintf(stderr, "usage: layad info --model DIR|org/name[/subfolder] [--json]\n");
        return 2;
    }
    laya_checkpoint ck;
    layad_error err = {0};
    if (checkpoint_open(&ck, model, &err)) {
        fprintf(stderr, "layad info: %s\n", err.msg);
        return 1;
    }
    if (as_json) {
        json_t *j = info_json(&ck);
        char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(j);
    } else {
        print_text(&ck);
    }
    checkpoint_close(&ck);
    return 0;
}
