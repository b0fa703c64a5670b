/*
 * tiny_assets.c - files embedded in the binary for the default tiny model.
 *
 * The tiny checkpoint's tokenizer (config/tiny-tokenizer.json, trained once by
 * scripts/mk-tiny-tokenizer) is linked in with .incbin so that `layad-dev mkmodel
 * --preset tiny` works offline from the binary alone; so is the Metaspace
 * (Gemma-style, as mmBERT's) test tokenizer of tests/fixtures/tokenizer/gemma-like.json
 * for `--preset mmbert-tiny`: 4,456 ids, byte fallback, <bos>/<eos>/<mask> at the
 * ids mmBERT uses (2, 1, 4), so the multilingual geometry runs in CI without the
 * 256k-token original.
 */
#include <stddef.h>

#include "model/base/embed.h"

LAYAD_EMBED(layad_tiny_tokenizer_json, "config/tiny-tokenizer.json");
LAYAD_EMBED(layad_tiny_mmbert_tokenizer_json, "tests/fixtures/tokenizer/gemma-like.json");
