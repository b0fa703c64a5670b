/*
 * checkpoint.h - a Laya checkpoint directory, loaded and verified.
 *
 * Layout (laya-model.md §1): model.safetensors, rl_agent_config.json,
 * encoder/config.json, tokenizer/tokenizer.json, tokenizer/tokenizer_config.json.
 * checkpoint_open resolves the --model argument (a directory, or an
 * org/name[/subfolder] in the offline Hugging Face cache), parses both configs
 * (flat and transformers-5 nested RoPE keys), loads the tokenizer, mmaps the
 * weights and checks the tensor inventory against the geometry, reporting every
 * mismatch at once. Weights stay as views into the map (F16/BF16/F32); each
 * backend converts them once at start-up.
 */
#ifndef LAYAD_CHECKPOINT_H
#define LAYAD_CHECKPOINT_H

#include <limits.h>

#include "model/base/error.h"
#include "model/checkpoint/safetensors.h"
#include "model/tokenizer/tokenizer.h"

#define LAYA_MAX_LAYERS 64
#define LAYA_MAX_HEAD_LAYERS 8
#define LAYA_MAX_TEMP_BUCKETS 32

typedef struct laya_temp_bucket {
    char key[32];  /* "choice:3-5", "noul:2", ... */
    double value;  /* clamped to [0.5, 5] */
    double raw;    /* as written in rl_agent_config.json (NaN if not a number) */
} laya_temp_bucket;

typedef struct laya_config {
    /* encoder (encoder/config.json) */
    int hidden, n_layers, n_heads, intermediate, vocab, max_position;
    int local_attention;             /* window = local_attention / 2 each side */
    int global_every;
    double norm_eps;
    double rope_theta_global, rope_theta_local;
    unsigned char layer_global[LAYA_MAX_LAYERS]; /* 1 = full attention */
    /* decision head / runtime (rl_agent_config.json) */
    int head_layers, max_len, head_max_len, n_act;
    double temperature[3], temperature_raw[3]; /* choice, score, noul; clamped / raw */
    laya_temp_bucket temp_buckets[LAYA_MAX_TEMP_BUCKETS];
    int n_temp_buckets;
    char model_name[128];   /* response "model" (pip: "laya-rl-agent") */
    char encoder_name[256]; /* HF id the encoder came from */
    /* special tokens (tokenizer_config.json, ids from the tokenizer) */
    char mask_token[64];
    int cls_id, sep_id, pad_id, mask_id;
} laya_config;

typedef struct laya_enc_layer {
    const st_tensor *attn_norm; /* NULL on layer 0 */
    const st_tensor *wqkv, *wo, *mlp_norm, *wi, *mlp_wo;
} laya_enc_layer;

typedef struct laya_head_layer {
    const st_tensor *in_w, *in_b, *out_w, *out_b;
    const st_tensor *l1_w, *l1_b, *l2_w, *l2_b;
    const st_tensor *n1_w, *n1_b, *n2_w, *n2_b;
} laya_head_layer;

typedef struct laya_weights {
    const st_tensor *tok_emb, *emb_norm, *final_norm;
    laya_enc_layer enc[LAYA_MAX_LAYERS];
    const st_tensor *type_emb;
    laya_head_layer head[LAYA_MAX_HEAD_LAYERS];
    const st_tensor *sc0_w, *sc0_b, *sc1_w, *sc1_b, *sc3_w, *sc3_b;
    const st_tensor *act0_w, *act0_b, *act2_w, *act2_b;
} laya_weights;

typedef struct laya_checkpoint {
    char dir[PATH_MAX];       /* resolved checkpoint directory */
    laya_config cfg;
    safetensors st;
    laya_weights w;
    tokenizer *tok;
    char sha256[65];          /* of model.safetensors, hex */
    long long n_params;       /* elements over all tensors */
    char clamp_warning[1024];  /* non-empty when temperatures were clamped (pip's warning text) */
} laya_checkpoint;

/* Resolves a --model argument to a directory (offline; never touches the network). */
int checkpoint_resolve(const char *arg, char *dir, size_t dirlen, layad_error *err);

/* Opens, parses and verifies a checkpoint; on failure everything is released. */
int checkpoint_open(laya_checkpoint *ck, const char *model_arg, layad_error *err);
void checkpoint_close(laya_checkpoint *ck);

/* Temperature for a question row: bucket "<type>:<2|3-5|6-10|11+>" else per-type fallback. */
double checkpoint_temperature(const laya_config *cfg, int qtype, int n_options);

/* Parses config JSON text (exposed for tests). */
int config_parse_encoder(laya_config *cfg, const char *json, size_t len, const char *path, layad_error *err);
int config_parse_agent(laya_config *cfg, const char *json, size_t len, const char *path, layad_error *err);

#endif
