/*
 * testutil.c - see testutil.h.
 */
#include "tests/lib/testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tu_env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && v[0] ? v : dflt;
}

const char *tu_bin(void)
{
    return tu_env_or("LAYAD_BIN", "build/layad");
}

const char *tu_tiny(void)
{
    return tu_env_or("LAYAD_TINY", "build/tiny");
}

const char *tu_shared(void)
{
    return tu_env_or("LAYAD_SHARED", "../shared");
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap + 1);
    size_t k;
    while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(b, cap + 1);
            if (!nb)
                free(b);
            b = nb;
        }
    }
    fclose(f);
    if (!b)
        return NULL;
    b[n] = 0;
    if (len)
        *len = n;
    return b;
}

char *tu_read_fixture(const char *path, size_t *len)
{
    char *text = tu_read_file(path, len);
    ck_assert_msg(text != NULL, "cannot open %s", path);
    return text;
}

pj_value *tu_load_json(arena *a, const char *path)
{
    size_t n = 0;
    char *buf = tu_read_fixture(path, &n);
    pj_value *root = NULL;
    layad_error err = {0};
    ck_assert_msg(pj_parse(a, buf, n, &root, &err) == 0, "%s", err.msg);
    free(buf);
    return root;
}

static arena g_pycases_arena;
static pj_value *g_pycases;

void tu_pycases_load(void)
{
    g_pycases = tu_load_json(&g_pycases_arena, "tests/fixtures/pycases.json");
}

void tu_pycases_unload(void)
{
    arena_release(&g_pycases_arena);
    g_pycases = NULL;
}

const pj_value *tu_pycases(void)
{
    return g_pycases;
}

float tu_hex_f32(const pj_value *v)
{
    uint32_t u = (uint32_t)strtoul(v->u.str.s, NULL, 16);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double tu_hex_f64(const pj_value *v)
{
    uint64_t u = strtoull(v->u.str.s, NULL, 16);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
