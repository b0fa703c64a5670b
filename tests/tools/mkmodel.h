/*
 * mkmodel.h - deterministic random checkpoints in the exact real layout.
 *
 * Presets: "tiny" (the embedded default model: every structural feature of
 * ModernBERT-large + the Laya head at a size CPU tests run in milliseconds),
 * "english-large" (ModernBERT-large geometry, 421 M parameters) and
 * "mmbert-tiny" (the mmBERT geometry's features at tiny's size: Metaspace
 * tokenizer, 1,024-token rows; its tokenizer embedded too) and "mmbert-base"
 * (mmBERT-base geometry). Weights are F16, drawn from an integer
 * generator (splitmix64, Irwin-Hall sums) and converted with exact IEEE
 * arithmetic only, so the same preset and seed give the same bytes on every
 * machine; no libm function is involved.
 */
#ifndef LAYAD_MKMODEL_H
#define LAYAD_MKMODEL_H

#include <stdint.h>

#include "model/base/error.h"

/* tokenizer_json: path of the tokenizer.json to ship (NULL: the embedded tokenizer of tiny or mmbert-tiny). */
int mkmodel_write(const char *preset, const char *out_dir, const char *tokenizer_json, uint64_t seed,
                  layad_error *err);

#endif
