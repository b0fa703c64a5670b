/*
 * safetensors.h - a validating, zero-copy reader for .safetensors files.
 *
 * The file is mmapped read-only; tensors are views into the map. Opening
 * validates everything an attacker-controlled file could get wrong (header
 * length past EOF, non-JSON header, unknown dtype, byte ranges outside the
 * data area or overlapping, byte size != dtype size x shape, duplicate names),
 * so that no later access can read out of bounds.
 */
#ifndef LAYAD_SAFETENSORS_H
#define LAYAD_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "model/base/error.h"

typedef enum st_dtype { ST_F16 = 1, ST_BF16 = 2, ST_F32 = 3 } st_dtype;

#define ST_MAX_DIMS 4

typedef struct st_tensor {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    size_t nbytes;
    const uint8_t *data; /* points into the map */
} st_tensor;

typedef struct safetensors {
    char *path;
    uint8_t *map;
    size_t size;
    st_tensor *tensors; /* sorted by name */
    int count;
} safetensors;

int st_open(safetensors *st, const char *path, layad_error *err);
/* Same validation over a caller-owned buffer (tests, fuzzing); buf must outlive st. */
int st_open_mem(safetensors *st, const uint8_t *buf, size_t size, const char *name, layad_error *err);
void st_close(safetensors *st);
const st_tensor *st_find(const safetensors *st, const char *name);
size_t st_dtype_size(st_dtype dt);
const char *st_dtype_name(st_dtype dt);

/* Converts a tensor's elements to float32 (exact for F16/BF16/F32). */
void st_to_f32(const st_tensor *t, float *dst);

/* IEEE half / bfloat16 <-> float, exact where representable, round-to-nearest-even. */
float st_f16_to_f32(uint16_t h);
uint16_t st_f32_to_f16(float f);
float st_bf16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f);

#endif
