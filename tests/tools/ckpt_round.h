/*
 * ckpt_round.h - a copy of a checkpoint with its 16-bit weights rounded to bfloat16.
 *
 * Why: serving in bf16 rounds the F16 projection weights (the encoder's and
 * the head layers', and two of the head's biases: the tensors the CUDA backend
 * holds in bf16) to 8 mantissa bits, which changes the model itself, not only
 * the arithmetic. Embeddings, norms and the scorer keep their values, as
 * they do on the GPU. Running the exact CPU fp32
 * forward on such a copy separates the two effects in the parity sweep:
 *   CPU fp32 (rounded weights) vs CPU fp32        = what bf16 weights alone cost;
 *   GPU bf16 vs CPU fp32 (rounded weights)        = what the GPU arithmetic costs.
 * The copy keeps the file layout byte for byte (same header, same dtypes:
 * rounded values are stored back as F16, exact for every bf16 value in F16's
 * normal range; smaller magnitudes round as F16 subnormals), so it opens with
 * checkpoint_open like any checkpoint.
 */
#ifndef LAYAD_CKPT_ROUND_H
#define LAYAD_CKPT_ROUND_H

#include "model/checkpoint/checkpoint.h"
#include "model/base/error.h"

/* Writes out_dir (created if missing) with model.safetensors rounded and the
 * configs and tokenizer files copied. 0 or -1 with err set. */
int checkpoint_write_bf16_rounded(const laya_checkpoint *ck, const char *out_dir,
                                  layad_error *err);

#endif
