/*
 * testutil.h - helpers every Check suite repeated: where the binary, the tiny
 * checkpoint and ../shared are (environment with defaults), reading a whole
 * fixture file, parsing a JSON fixture, and running one suite as main()'s
 * exit status. Linked into every test binary (every .c in tests/lib).
 */
#ifndef LAYAD_TESTS_TESTUTIL_H
#define LAYAD_TESTS_TESTUTIL_H

#include <check.h>
#include <stddef.h>

#include "model/pyexact/pyjson.h"

/* The value of environment variable name when set and non-empty, else dflt. */
const char *tu_env_or(const char *name, const char *dflt);

const char *tu_bin(void);    /* $LAYAD_BIN or build/layad */
const char *tu_tiny(void);   /* $LAYAD_TINY or build/tiny */
const char *tu_shared(void); /* $LAYAD_SHARED or ../shared */

/* Whole file into a malloc'ed NUL-terminated buffer (length in *len when len is
 * non-NULL), or NULL when it cannot be opened or memory runs out. */
char *tu_read_file(const char *path, size_t *len);

/* Like tu_read_file, but fails the running test ("cannot open PATH") instead
 * of returning NULL. */
char *tu_read_fixture(const char *path, size_t *len);

/* Reads and parses the JSON file at path into arena a (pj_parse); fails the
 * running test when it cannot be read or parsed. Returns the root value. */
pj_value *tu_load_json(arena *a, const char *path);

/* tests/fixtures/pycases.json (written by scripts/gen-test-cases.py), the
 * cases several suites check against Python: tu_pycases_load (an unchecked
 * fixture: fails the test when unreadable) parses it once, tu_pycases() is
 * its root (NULL before load and after unload), tu_pycases_unload frees it. */
void tu_pycases_load(void);
void tu_pycases_unload(void);
const pj_value *tu_pycases(void);

/* The float / double whose IEEE-754 bits are the hex string v (a JSON string
 * such as "3f800000", as scripts/gen-test-cases.py writes them). */
float tu_hex_f32(const pj_value *v);
double tu_hex_f64(const pj_value *v);

/* Runs every test of s (CK_NORMAL output, Check's default fork mode), frees
 * the runner; returns main()'s exit status: 1 when a test failed, else 0. */
int tu_run(Suite *s);

#endif
