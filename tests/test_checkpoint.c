/*
 * test_checkpoint.c - configs (both dialects), temperature clamping and buckets,
 * offline HF cache resolution, the tiny checkpoint (inventory, sha256, determinism),
 * and inventory errors reported all at once.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/checkpoint/checkpoint.h"
#include "tests/tools/mkmodel.h"
#include "tests/lib/testutil.h"

/* sha256 of the tiny preset's model.safetensors with the default seed (1234). A change here
 * means mkmodel's output changed: regenerate fixtures that depend on the tiny model. */
#define TINY_SHA256 "475740fff1203cea67d3971a5a496c6eb4741c445f32168ba3605ee525b9a4a0"

static void run(const char *cmd)
{
    ck_assert_msg(system(cmd) == 0, "command failed: %s", cmd);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(encoder_dialects)
{
    laya_config c = {0};
    layad_error err = {0};
    const char *flat = "{\"model_type\":\"modernbert\",\"hidden_size\":768,\"num_hidden_layers\":22,"
                       "\"num_attention_heads\":12,\"intermediate_size\":1152,\"vocab_size\":256000,"
                       "\"global_rope_theta\":160000.0,\"local_rope_theta\":160000.0,\"local_attention\":128,"
                       "\"global_attn_every_n_layers\":3}";
    ck_assert_int_eq(config_parse_encoder(&c, flat, strlen(flat), "flat.json", &err), 0);
    ck_assert(c.rope_theta_local == 160000.0 && c.rope_theta_global == 160000.0);
    ck_assert_int_eq(c.layer_global[0], 1);
    ck_assert_int_eq(c.layer_global[1], 0);
    ck_assert_int_eq(c.layer_global[21], 1);
    ck_assert(c.norm_eps == 1e-5);
    /* transformers 5: nested rope_parameters win over (absent) flat keys; mmBERT's local theta is 160000 */
    const char *nested = "{\"hidden_size\":768,\"num_hidden_layers\":3,\"num_attention_heads\":12,"
                         "\"intermediate_size\":1152,\"vocab_size\":256000,\"layer_types\":[\"full_attention\","
                         "\"sliding_attention\",\"full_attention\"],\"rope_parameters\":{\"full_attention\":"
                         "{\"rope_theta\":160000.0,\"rope_type\":\"default\"},\"sliding_attention\":{\"rope_theta\":"
                         "160000.0,\"rope_type\":\"default\"}}}";
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(config_parse_encoder(&c, nested, strlen(nested), "nested.json", &err), 0);
    ck_assert(c.rope_theta_local == 160000.0);
    ck_assert_int_eq(c.layer_global[2], 1); /* explicit layer_types, not i % 3 */
    /* defaults when neither dialect names the thetas: ModernBERT's 160000 / 10000 */
    const char *bare = "{\"hidden_size\":128,\"num_hidden_layers\":4,\"num_attention_heads\":2,"
                       "\"intermediate_size\":192,\"vocab_size\":1280}";
    ck_assert_int_eq(config_parse_encoder(&c, bare, strlen(bare), "bare.json", &err), 0);
    ck_assert(c.rope_theta_global == 160000.0 && c.rope_theta_local == 10000.0);
    /* refusals name the file and the key */
    const char *bad[] = {
        "{\"hidden_size\":100,\"num_hidden_layers\":4,\"num_attention_heads\":2,\"intermediate_size\":192,\"vocab_size\":1}",
        "{\"hidden_size\":128,\"num_hidden_layers\":4,\"num_attention_heads\":2,\"intermediate_size\":192,\"vocab_size\":1,"
        "\"hidden_activation\":\"gelu_pytorch_tanh\"}",
        "{\"hidden_size\":128,\"num_hidden_layers\":4,\"num_attention_heads\":2,\"intermediate_size\":192,\"vocab_size\":1,"
        "\"norm_bias\":true}",
        "{\"hidden_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":2,\"intermediate_size\":192,\"vocab_size\":1,"
        "\"layer_types\":[\"full_attention\"]}",
        "{\"hidden_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":2,\"intermediate_size\":192,\"vocab_size\":1,"
        "\"rope_parameters\":{\"full_attention\":{\"rope_theta\":1e4,\"rope_type\":\"yarn\"}}}",
        "{\"num_hidden_layers\":2}",
        "not json",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(config_parse_encoder(&c, bad[i], strlen(bad[i]), "bad.json", &err), -1);
        ck_assert_msg(strstr(err.msg, "bad.json") != NULL, "%s", err.msg);
    }
}
END_TEST

START_TEST(agent_config_and_temperatures)
{
    laya_config c = {0};
    layad_error err = {0};
    const char *js = "{\"head_layers\":2,\"max_len\":512,\"head_max_len\":192,\"act_costs\":{\"escalate\":0.5},"
                     "\"temperature\":[1.6369030475616455,true,\"7.5\"],\"temperature_by_options\":{\"choice:11+\":"
                     "0.10058280825614929,\"choice:2\":1.9063563346862793,\"noul:2\":\"abc\",\"score:3-5\":99}}";
    ck_assert_int_eq(config_parse_agent(&c, js, strlen(js), "rl.json", &err), 0);
    ck_assert_int_eq(c.n_act, 2);
    ck_assert(c.temperature[0] == 1.6369030475616455);
    ck_assert(c.temperature[1] == 1.0); /* a bool is not a number: neutral 1.0 */
    ck_assert(c.temperature[2] == 5.0); /* Python float("7.5") then clamp */
    ck_assert(checkpoint_temperature(&c, 0, 11) == 0.5);
    ck_assert(checkpoint_temperature(&c, 0, 300) == 0.5);
    ck_assert(checkpoint_temperature(&c, 0, 2) == 1.9063563346862793);
    ck_assert(checkpoint_temperature(&c, 0, 1) == 1.9063563346862793); /* k <= 2 */
    ck_assert(checkpoint_temperature(&c, 0, 4) == 1.6369030475616455); /* no choice:3-5 -> fallback */
    ck_assert(checkpoint_temperature(&c, 2, 2) == 1.0);                /* "abc" -> 1.0 */
    ck_assert(checkpoint_temperature(&c, 1, 3) == 5.0);
    ck_assert(checkpoint_temperature(&c, 1, 7) == 1.0); /* score:6-10 absent -> temperature[1] */
    const char *bad = "{\"temperature\":[1,2]}";
    ck_assert_int_eq(config_parse_agent(&c, bad, strlen(bad), "rl.json", &err), -1);
    const char *layout = "{\"option_layout\":\"parallel\"}";
    ck_assert_int_eq(config_parse_agent(&c, layout, strlen(layout), "rl.json", &err), -1);
    ck_assert(strstr(err.msg, "option_layout") != NULL);
}
END_TEST

START_TEST(hf_cache_resolution)
{
    char root[] = "/tmp/layad-hf-XXXXXX", cmd[1024], dir[PATH_MAX];
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/hub/models--convaiinnovations--laya/refs %s/hub/models--convaiinnovations--laya/snapshots/"
             "abc123/typed-decisions && printf 'abc123\\n' > %s/hub/models--convaiinnovations--laya/refs/main",
             root, root, root);
    run(cmd);
    layad_error err = {0};
    char *old_cache = getenv("HF_HUB_CACHE") ? strdup(getenv("HF_HUB_CACHE")) : NULL;
    unsetenv("HF_HUB_CACHE");
    setenv("HF_HOME", root, 1);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya/typed-decisions", dir, sizeof dir, &err), 0);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "%s/hub/models--convaiinnovations--laya/snapshots/abc123/typed-decisions", root);
    ck_assert_str_eq(dir, want);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya", dir, sizeof dir, &err), 0);
    ck_assert(strstr(dir, "snapshots/abc123") != NULL);
    /* @rev: a branch or tag through refs/<rev>, a 40-hex commit directly, after the
     * subfolder or before it; a revision not cached is refused, never fetched */
    snprintf(cmd, sizeof cmd,
             "cd %s/hub/models--convaiinnovations--laya && mkdir -p snapshots/def456/typed-decisions "
             "snapshots/0123456789abcdef0123456789abcdef01234567 && printf 'def456' > refs/v1",
             root);
    run(cmd);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya/typed-decisions@v1", dir, sizeof dir, &err), 0);
    snprintf(want, sizeof want, "%s/hub/models--convaiinnovations--laya/snapshots/def456/typed-decisions", root);
    ck_assert_str_eq(dir, want);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya@v1/typed-decisions", dir, sizeof dir, &err), 0);
    ck_assert_str_eq(dir, want);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya@main", dir, sizeof dir, &err), 0);
    ck_assert(strstr(dir, "snapshots/abc123") != NULL);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya@0123456789abcdef0123456789abcdef01234567", dir,
                                        sizeof dir, &err), 0);
    ck_assert(strstr(dir, "snapshots/0123456789abcdef0123456789abcdef01234567") != NULL);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya@v2", dir, sizeof dir, &err), -1);
    ck_assert(strstr(err.msg, "revision 'v2'") != NULL);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya@../main", dir, sizeof dir, &err), -1);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya@", dir, sizeof dir, &err), -1);
    /* HF_HUB_CACHE wins over HF_HOME */
    snprintf(want, sizeof want, "%s/hub", root);
    setenv("HF_HUB_CACHE", want, 1);
    setenv("HF_HOME", "/nonexistent", 1);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya/typed-decisions", dir, sizeof dir, &err), 0);
    /* not cached: a clear error that says layad never downloads */
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya-multilingual", dir, sizeof dir, &err), -1);
    ck_assert(strstr(err.msg, "never downloads") != NULL);
    ck_assert_int_eq(checkpoint_resolve("convaiinnovations/laya/missing-sub", dir, sizeof dir, &err), -1);
    ck_assert_int_eq(checkpoint_resolve("../escape/x", dir, sizeof dir, &err), -1);
    ck_assert_int_eq(checkpoint_resolve("plainname", dir, sizeof dir, &err), -1);
    /* a directory is taken as is */
    ck_assert_int_eq(checkpoint_resolve(root, dir, sizeof dir, &err), 0);
    if (old_cache)
        setenv("HF_HUB_CACHE", old_cache, 1);
    else
        unsetenv("HF_HUB_CACHE");
    free(old_cache);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    run(cmd);
}
END_TEST

START_TEST(tiny_checkpoint)
{
    laya_checkpoint ck;
    layad_error err = {0};
    ck_assert_msg(checkpoint_open(&ck, tu_tiny(), &err) == 0, "%s", err.msg);
    const laya_config *c = &ck.cfg;
    ck_assert_int_eq(c->hidden, 128);
    ck_assert_int_eq(c->n_heads, 2);
    ck_assert_int_ge(c->n_layers, 4);
    ck_assert_int_eq(c->layer_global[0], 1);
    ck_assert_int_eq(c->layer_global[1], 0);
    ck_assert_int_lt(c->local_attention / 2, 64);
    ck_assert_int_eq(c->head_layers, 2);
    ck_assert_int_eq(c->n_act, 2);
    ck_assert_ptr_null(ck.w.enc[0].attn_norm);
    ck_assert_ptr_nonnull(ck.w.enc[1].attn_norm);
    ck_assert_int_eq(ck.w.tok_emb->dtype, ST_F16);
    ck_assert_str_eq(c->mask_token, "[MASK]");
    ck_assert_int_eq(c->mask_id, tokenizer_token_id(ck.tok, "[MASK]"));
    ck_assert(ck.clamp_warning[0] != '\0'); /* choice:11+ ships 0.1006, clamped to 0.5 */
    ck_assert(checkpoint_temperature(c, 0, 12) == 0.5);
    ck_assert_str_eq(ck.sha256, TINY_SHA256);
    checkpoint_close(&ck);
}
END_TEST

static int files_equal(const char *a, const char *b)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cmp -s '%.2000s' '%.2000s'", a, b);
    return system(cmd) == 0;
}

START_TEST(mkmodel_determinism)
{
    char d1[] = "/tmp/layad-mk1-XXXXXX", d2[] = "/tmp/layad-mk2-XXXXXX", cmd[512];
    ck_assert_ptr_nonnull(mkdtemp(d1));
    ck_assert_ptr_nonnull(mkdtemp(d2));
    layad_error err = {0};
    ck_assert_int_eq(mkmodel_write("tiny", d1, NULL, 1234, &err), 0);
    ck_assert_int_eq(mkmodel_write("tiny", d2, NULL, 1234, &err), 0);
    const char *files[] = {"model.safetensors", "rl_agent_config.json", "encoder/config.json",
                           "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char a[1024], b[1024];
        snprintf(a, sizeof a, "%s/%s", d1, files[i]);
        snprintf(b, sizeof b, "%s/%s", d2, files[i]);
        ck_assert_msg(files_equal(a, b), "%s differs between two runs", files[i]);
    }
    /* a different seed gives different weights */
    ck_assert_int_eq(mkmodel_write("tiny", d2, NULL, 99, &err), 0);
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/model.safetensors", d1);
    snprintf(b, sizeof b, "%s/model.safetensors", d2);
    ck_assert(!files_equal(a, b));
    ck_assert_int_eq(mkmodel_write("nope", d2, NULL, 1, &err), -1);
    ck_assert_int_eq(mkmodel_write("english-large", d2, NULL, 1, &err), -1); /* needs --tokenizer */
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", d1, d2);
    run(cmd);
}
END_TEST

/* Rewrites dir/model.safetensors with an edited header (same data area). */
static void edit_header(const char *dir, void (*edit)(json_t *))
{
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size);
    ck_assert_int_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = (hl << 8) | buf[i];
    json_t *h = json_loadb((const char *)buf + 8, hl, 0, NULL);
    ck_assert_ptr_nonnull(h);
    edit(h);
    char *js = json_dumps(h, JSON_COMPACT);
    size_t nl = strlen(js);
    f = fopen(path, "wb");
    for (int i = 0; i < 8; i++)
        fputc((int)((nl >> (8 * i)) & 0xff), f);
    fwrite(js, 1, nl, f);
    fwrite(buf + 8 + hl, 1, (size_t)size - 8 - hl, f);
    fclose(f);
    free(js);
    free(buf);
    json_decref(h);
}

static void break_inventory(json_t *h)
{
    /* rename one tensor (missing + unexpected) and reshape another (same bytes, wrong shape) */
    json_t *t = json_object_get(h, "scorer.1.bias");
    json_incref(t);
    json_object_del(h, "scorer.1.bias");
    json_object_set_new(h, "scorer.1.bias_renamed", t);
    json_t *n = json_object_get(h, "encoder.final_norm.weight");
    json_object_set_new(n, "shape", json_pack("[i, i]", 2, 64));
    json_t *extra = json_object_get(h, "encoder.layers.1.attn_norm.weight");
    json_incref(extra);
    json_object_del(h, "encoder.layers.1.attn_norm.weight");
    json_object_set_new(h, "encoder.layers.0.attn_norm.weight", extra);
}

START_TEST(inventory_errors)
{
    char d[] = "/tmp/layad-inv-XXXXXX", cmd[512];
    ck_assert_ptr_nonnull(mkdtemp(d));
    layad_error err = {0};
    ck_assert_int_eq(mkmodel_write("tiny", d, NULL, 1234, &err), 0);
    edit_header(d, break_inventory);
    laya_checkpoint ck;
    ck_assert_int_eq(checkpoint_open(&ck, d, &err), -1);
    const char *needles[] = {"missing tensor 'scorer.1.bias'", "unexpected tensor 'scorer.1.bias_renamed'",
                             "'encoder.final_norm.weight' has shape [2, 64], expected [128]",
                             "missing tensor 'encoder.layers.1.attn_norm.weight'",
                             "layer 0 has no attn_norm", "model.safetensors"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        ck_assert_msg(strstr(err.msg, needles[i]) != NULL, "'%s' not in: %s", needles[i], err.msg);
    /* a missing config file is named */
    snprintf(cmd, sizeof cmd, "rm %s/rl_agent_config.json", d);
    run(cmd);
    ck_assert_int_eq(checkpoint_open(&ck, d, &err), -1);
    ck_assert(strstr(err.msg, "rl_agent_config.json") != NULL);
    /* a wrong tokenizer_config special token is named */
    ck_assert_int_eq(mkmodel_write("tiny", d, NULL, 1234, &err), 0);
    char p[600];
    snprintf(p, sizeof p, "%s/tokenizer/tokenizer_config.json", d);
    write_file(p, "{\"cls_token\":\"[CLS]\",\"sep_token\":\"[SEP]\",\"mask_token\":\"<nope>\",\"pad_token\":\"[PAD]\"}");
    ck_assert_int_eq(checkpoint_open(&ck, d, &err), -1);
    ck_assert(strstr(err.msg, "<nope>") != NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", d);
    run(cmd);
}
END_TEST

/* `layad info --json` reports the verified geometry, sha256 and effective temperatures. */
START_TEST(info_command)
{
    const char *bin = tu_bin();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s info --json --model %s", bin, tu_tiny());
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    json_error_t je;
    json_t *j = json_loadf(p, 0, &je);
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(j != NULL, "info output is not JSON: %s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "sha256")), TINY_SHA256);
    json_t *enc = json_object_get(j, "encoder");
    ck_assert_int_eq(json_integer_value(json_object_get(enc, "hidden")), 128);
    ck_assert_int_eq(json_array_size(json_object_get(enc, "layer_types")), 4);
    json_t *w = json_object_get(j, "weights");
    ck_assert_str_eq(json_string_value(json_object_get(w, "dtype")), "F16");
    ck_assert_int_eq(json_integer_value(json_object_get(w, "tensors")), 62);
    json_t *t = json_object_get(j, "temperatures_effective");
    ck_assert(json_real_value(json_object_get(t, "choice:11+")) == 0.5);
    ck_assert(json_real_value(json_object_get(json_object_get(j, "temperatures_raw_changed"), "choice:11+")) ==
              0.10058280825614929);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "%s info --model /nonexistent/dir >/dev/null 2>&1", bin);
    ck_assert_int_ne(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, encoder_dialects);
    tcase_add_test(tc, agent_config_and_temperatures);
    tcase_add_test(tc, hf_cache_resolution);
    tcase_add_test(tc, tiny_checkpoint);
    tcase_add_test(tc, mkmodel_determinism);
    tcase_add_test(tc, inventory_errors);
    tcase_add_test(tc, info_command);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
