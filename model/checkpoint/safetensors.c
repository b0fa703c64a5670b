/*
 * safetensors.c - validating mmap reader (see safetensors.h).
 *
 * Format: u64 little-endian header length N, N bytes of JSON, then the data
 * area. The JSON maps tensor names to {dtype, shape, data_offsets: [begin, end]}
 * (offsets relative to the data area) plus an optional "__metadata__" object.
 * We accept the rules of the reference implementation: offsets in range, byte
 * size equal to dtype size x shape, tensors contiguous and covering the whole
 * data area without overlap, unique names. Everything is checked before any
 * tensor pointer is handed out, so later code can trust every view.
 */
#include "model/checkpoint/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER (100u << 20) /* the reference reader's limit: 100 MB of JSON */

size_t st_dtype_size(st_dtype dt)
{
    return dt == ST_F32 ? 4 : 2;
}

const char *st_dtype_name(st_dtype dt)
{
    switch (dt) {
    case ST_F16: return "F16";
    case ST_BF16: return "BF16";
    case ST_F32: return "F32";
    }
    return "?";
}

static int parse_dtype(const char *s, st_dtype *dt)
{
    if (!strcmp(s, "F16")) *dt = ST_F16;
    else if (!strcmp(s, "BF16")) *dt = ST_BF16;
    else if (!strcmp(s, "F32")) *dt = ST_F32;
    else return -1;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

/* Orders tensor indices by begin offset, for the overlap/coverage check. */
static int cmp_begin(const void *a, const void *b, void *base)
{
    const st_tensor *t = base;
    const uint8_t *pa = t[*(const int *)a].data, *pb = t[*(const int *)b].data;
    return pa < pb ? -1 : pa > pb;
}

static int parse_tensor(st_tensor *t, const char *name, json_t *v, const uint8_t *data,
                        size_t data_size, const char *file, layad_error *err)
{
    t->name = strdup(name);
    if (!t->name)
        return layad_fail(err, 500, "%s: out of memory", file);
    if (!json_is_object(v))
        return layad_fail(err, 500, "%s: tensor '%s': entry is not an object", file, name);
    json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt))
        return layad_fail(err, 500, "%s: tensor '%s': missing dtype", file, name);
    if (parse_dtype(json_string_value(dt), &t->dtype))
        return layad_fail(err, 500, "%s: tensor '%s': unsupported dtype '%s' (F16, BF16, F32 only)",
                          file, name, json_string_value(dt));
    if (!json_is_array(shape) || json_array_size(shape) > ST_MAX_DIMS)
        return layad_fail(err, 500, "%s: tensor '%s': shape must be an array of at most %d dims",
                          file, name, ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    uint64_t numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        json_t *d = json_array_get(shape, (size_t)i);
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > (1LL << 40))
            return layad_fail(err, 500, "%s: tensor '%s': bad shape dimension %d", file, name, i);
        t->shape[i] = json_integer_value(d);
        if (t->shape[i] && numel > (UINT64_MAX >> 8) / (uint64_t)t->shape[i])
            return layad_fail(err, 500, "%s: tensor '%s': shape overflows", file, name);
        numel *= (uint64_t)t->shape[i];
    }
    t->numel = (int64_t)numel;
    if (!json_is_array(off) || json_array_size(off) != 2 || !json_is_integer(json_array_get(off, 0)) ||
        !json_is_integer(json_array_get(off, 1)))
        return layad_fail(err, 500, "%s: tensor '%s': data_offsets must be [begin, end]", file, name);
    json_int_t b = json_integer_value(json_array_get(off, 0)), e = json_integer_value(json_array_get(off, 1));
    if (b < 0 || e < b || (uint64_t)e > data_size)
        return layad_fail(err, 500, "%s: tensor '%s': data_offsets [%lld, %lld] outside the data area (%zu bytes)",
                          file, name, (long long)b, (long long)e, data_size);
    t->nbytes = (size_t)(e - b);
    if (numel * st_dtype_size(t->dtype) != t->nbytes)
        return layad_fail(err, 500, "%s: tensor '%s': %zu bytes but %s x %llu elements needs %llu",
                          file, name, t->nbytes, st_dtype_name(t->dtype), (unsigned long long)numel,
                          (unsigned long long)(numel * st_dtype_size(t->dtype)));
    t->data = data + b;
    return 0;
}

/* The tensors, in order of their offsets, cover the data area exactly: no overlap, no gap,
 * nothing after the last. */
static int check_cover(const safetensors *st, const uint8_t *data, size_t data_size, const char *file,
                       layad_error *err)
{
    int *order = malloc(sizeof(int) * (size_t)(st->count ? st->count : 1));
    if (!order)
        return layad_fail(err, 500, "%s: out of memory", file);
    for (int i = 0; i < st->count; i++)
        order[i] = i;
    qsort_r(order, (size_t)st->count, sizeof *order, cmp_begin, st->tensors);
    int rc = -1;
    const uint8_t *pos = data;
    for (int i = 0; i < st->count; i++) {
        const st_tensor *t = &st->tensors[order[i]];
        if (t->data < pos) {
            layad_fail(err, 500, "%s: tensor '%s' overlaps the previous tensor", file, t->name);
            goto out;
        }
        if (t->data > pos) {
            layad_fail(err, 500, "%s: tensor '%s' leaves a gap of %zu bytes before it", file, t->name,
                       (size_t)(t->data - pos));
            goto out;
        }
        pos = t->data + t->nbytes;
    }
    if (pos != data + data_size) {
        layad_fail(err, 500, "%s: %zu trailing bytes after the last tensor", file, (size_t)(data + data_size - pos));
        goto out;
    }
    rc = 0;
out:
    free(order);
    return rc;
}

/* The header's tensors (all but __metadata__) into st->tensors, sorted by name. */
static int parse_tensors(safetensors *st, json_t *root, const uint8_t *data, size_t data_size, const char *file,
                         layad_error *err)
{
    size_t count = json_object_size(root) - (json_object_get(root, "__metadata__") ? 1 : 0);
    st->tensors = calloc(count ? count : 1, sizeof *st->tensors);
    if (!st->tensors)
        return layad_fail(err, 500, "%s: out of memory", file);
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        if (!strcmp(key, "__metadata__"))
            continue;
        st_tensor *t = &st->tensors[st->count++];
        if (parse_tensor(t, key, val, data, data_size, file, err))
            return -1;
    }
    qsort(st->tensors, (size_t)st->count, sizeof *st->tensors, cmp_name);
    return 0;
}

static int parse_header(safetensors *st, const char *file, layad_error *err)
{
    if (st->size < 8)
        return layad_fail(err, 500, "%s: file too short for a safetensors header (%zu bytes)", file, st->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | st->map[i];
    if (n > ST_MAX_HEADER || n > st->size - 8)
        return layad_fail(err, 500, "%s: header length %llu exceeds the file (%zu bytes) or the 100 MB limit",
                          file, (unsigned long long)n, st->size);
    json_error_t je;
    json_t *root = json_loadb((const char *)st->map + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return layad_fail(err, 500, "%s: header is not valid JSON (%s at byte %d)", file, je.text, je.position);
    const uint8_t *data = st->map + 8 + n;
    const size_t data_size = st->size - 8 - (size_t)n;
    int rc = -1;
    if (!json_is_object(root))
        layad_fail(err, 500, "%s: header is not a JSON object", file);
    else if (!parse_tensors(st, root, data, data_size, file, err))
        rc = check_cover(st, data, data_size, file, err);
    json_decref(root);
    return rc;
}

static void st_free_parsed(safetensors *st)
{
    for (int i = 0; i < st->count; i++)
        free(st->tensors[i].name);
    free(st->tensors);
    st->tensors = NULL;
    st->count = 0;
}

int st_open_mem(safetensors *st, const uint8_t *buf, size_t size, const char *name, layad_error *err)
{
    memset(st, 0, sizeof *st);
    st->map = (uint8_t *)buf;
    st->size = size;
    st->path = strdup(name ? name : "<memory>");
    if (!st->path)
        return layad_fail(err, 500, "out of memory");
    if (parse_header(st, st->path, err)) {
        st_free_parsed(st);
        free(st->path);
        memset(st, 0, sizeof *st);
        return -1;
    }
    st->size = 0; /* not ours to unmap */
    return 0;
}

int st_open(safetensors *st, const char *path, layad_error *err)
{
    memset(st, 0, sizeof *st);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return layad_fail(err, 500, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return layad_fail(err, 500, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (size && map == MAP_FAILED)
        return layad_fail(err, 500, "%s: mmap: %s", path, strerror(errno));
    st->map = map;
    st->size = size;
    st->path = strdup(path);
    if (!st->path || parse_header(st, path, err)) {
        if (!st->path)
            layad_fail(err, 500, "out of memory");
        st_close(st);
        return -1;
    }
    return 0;
}

void st_close(safetensors *st)
{
    if (!st)
        return;
    st_free_parsed(st);
    if (st->map && st->size)
        munmap(st->map, st->size);
    free(st->path);
    memset(st, 0, sizeof *st);
}

const st_tensor *st_find(const safetensors *st, const char *name)
{
    st_tensor key = {.name = (char *)name};
    return bsearch(&key, st->tensors, (size_t)st->count, sizeof key, cmp_name);
}

/* ---- 16-bit float conversions (bit-exact, no libm) ---- */

float st_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man) { /* subnormal: normalize */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    } else {
        bits = sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t st_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
    if (ax >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000u) { /* result is subnormal or zero */
        if (ax < 0x33000000u)
            return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax >> 13) - (112u << 10)), rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
        r++;
    return (uint16_t)(sign | r);
}

float st_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t st_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

void st_to_f32(const st_tensor *t, float *dst)
{
    const uint8_t *p = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == ST_F32) {
            memcpy(&dst[i], p + 4 * i, 4);
        } else {
            uint16_t h = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
            dst[i] = t->dtype == ST_F16 ? st_f16_to_f32(h) : st_bf16_to_f32(h);
        }
    }
}
