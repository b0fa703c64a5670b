/*
 * ckpt_round.c - a checkpoint copy with bf16-rounded weights (contract in ckpt_round.h).
 */
#include "tests/tools/ckpt_round.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int copy_file(const char *from, const char *to, layad_error *err)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return layad_fail(err, 500, "cannot read %s: %s", from, strerror(errno));
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return layad_fail(err, 500, "cannot write %s: %s", to, strerror(errno));
    }
    char buf[1 << 16];
    size_t n;
    int ok = 1;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ok &= fwrite(buf, 1, n, out) == n;
    ok &= !ferror(in);
    fclose(in);
    if (fclose(out) || !ok)
        return layad_fail(err, 500, "copying %s to %s failed", from, to);
    return 0;
}

static int make_dir(const char *d, layad_error *err)
{
    if (mkdir(d, 0755) && errno != EEXIST)
        return layad_fail(err, 500, "cannot create %s: %s", d, strerror(errno));
    return 0;
}

/* Whether the CUDA backend serving bf16 holds t in bf16 (model/backend/cuda_weights.c):
 * the encoder's and head layers' projections and the head's in_proj / linear1 biases.
 * Embeddings, norms, the other biases and the scorer / act head keep their own values. */
static int served_in_bf16(const laya_checkpoint *ck, const st_tensor *t)
{
    const laya_weights *w = &ck->w;
    for (int i = 0; i < ck->cfg.n_layers; i++) {
        const laya_enc_layer *l = &w->enc[i];
        if (t == l->wqkv || t == l->wo || t == l->wi || t == l->mlp_wo)
            return 1;
    }
    for (int j = 0; j < ck->cfg.head_layers; j++) {
        const laya_head_layer *l = &w->head[j];
        if (t == l->in_w || t == l->in_b || t == l->out_w || t == l->l1_w || t == l->l1_b || t == l->l2_w)
            return 1;
    }
    return 0;
}

int checkpoint_write_bf16_rounded(const laya_checkpoint *ck, const char *out_dir,
                                  layad_error *err)
{
    static const char *files[] = {"rl_agent_config.json", "encoder/config.json",
                                  "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"};
    char from[PATH_MAX + 64], to[PATH_MAX + 64];
    if (make_dir(out_dir, err))
        return -1;
    snprintf(to, sizeof to, "%s/encoder", out_dir);
    if (make_dir(to, err))
        return -1;
    snprintf(to, sizeof to, "%s/tokenizer", out_dir);
    if (make_dir(to, err))
        return -1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(from, sizeof from, "%s/%s", ck->dir, files[i]);
        snprintf(to, sizeof to, "%s/%s", out_dir, files[i]);
        if (copy_file(from, to, err))
            return -1;
    }
    /* the whole file, then every F16 tensor served in bf16 rounded in place in the copy */
    uint8_t *buf = malloc(ck->st.size);
    if (!buf)
        return layad_fail(err, 500, "out of memory (%zu bytes)", ck->st.size);
    memcpy(buf, ck->st.map, ck->st.size);
    for (int i = 0; i < ck->st.count; i++) {
        const st_tensor *t = &ck->st.tensors[i];
        if (t->dtype != ST_F16 || !served_in_bf16(ck, t))
            continue;
        uint8_t *p = buf + (t->data - ck->st.map);
        for (int64_t e = 0; e < t->numel; e++) {
            uint16_t h;
            memcpy(&h, p + 2 * e, 2);
            h = st_f32_to_f16(st_bf16_to_f32(st_f32_to_bf16(st_f16_to_f32(h))));
            memcpy(p + 2 * e, &h, 2);
        }
    }
    snprintf(to, sizeof to, "%s/model.safetensors", out_dir);
    FILE *f = fopen(to, "wb");
    int ok = f && fwrite(buf, 1, ck->st.size, f) == ck->st.size;
    if (f && fclose(f))
        ok = 0;
    free(buf);
    if (!ok)
        return layad_fail(err, 500, "cannot write %s", to);
    return 0;
}
