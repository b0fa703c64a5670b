/*
 * gemm_cache.c - the tuned-GEMM file: a set of records in memory, and its
 * text file (format in kernels/gemm_cache.h).
 *
 * A load reads the whole file (bounded: KN_GEMM_CACHE_MAX records of at most
 * GC_LINE_MAX bytes), checks it from the outside in (format line, CRC-32,
 * environment, record count, each record, nothing after the last record) and
 * only then replaces the set, so a bad file can never leave half of itself
 * behind. CRC-32 rather than a hash: it catches every single-byte change and
 * every burst up to 32 bits, and a truncated file loses its final line anyway.
 * A save formats into memory, appends the CRC, and renames a fsync'ed
 * temporary over the old file: a crash or a full disk leaves either the old
 * file or the new one, never a mix.
 */
#include "kernels/gemm_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GC_MAGIC "layad-gemm-tuning"
#define GC_VERSION 1
#define GC_LINE_MAX 256 /* bytes of one record line, generously (about 232 at most) */
#define GC_FILE_MAX (1024 + (size_t)(KN_GEMM_CACHE_MAX + 2) * GC_LINE_MAX)

/* ---- small helpers ---------------------------------------------------------- */

/* Formats a one-line message into buf (newlines become '?'). */
static void gc_msg(char *buf, size_t len, const char *fmt, ...)
{
    if (!buf || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = '?';
}

static uint32_t gc_crc32(const char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= (unsigned char)p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Printable ASCII copy of src into dst[n]; with nospace, spaces become '_';
 * "" becomes "-". */
static void gc_sanitize(char *dst, size_t n, const char *src, int nospace)
{
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++) {
        const unsigned char ch = (unsigned char)src[i];
        dst[i] = ch < 0x20 || ch > 0x7e ? '?' : nospace && ch == ' ' ? '_' : (char)ch;
    }
    dst[i] = '\0';
    if (i == 0 && n >= 2) /* the file cannot hold an empty field */
        dst[0] = '-', dst[1] = '\0';
}

static int gc_key_cmp(const kn_gemm_key *a, const kn_gemm_key *b)
{
    const int32_t x[7] = {a->wdt, a->ydt, a->M, a->N, a->K, a->epi, a->has_bias};
    const int32_t y[7] = {b->wdt, b->ydt, b->M, b->N, b->K, b->epi, b->has_bias};
    for (int i = 0; i < 7; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

static int gc_rec_cmp(const void *a, const void *b)
{
    return gc_key_cmp(&((const kn_gemm_rec *)a)->key, &((const kn_gemm_rec *)b)->key);
}

static int gc_env_eq(const kn_gemm_env *a, const kn_gemm_env *b)
{
    return strcmp(a->gpu, b->gpu) == 0 && strcmp(a->id, b->id) == 0 && a->driver == b->driver &&
           a->runtime == b->runtime && a->cublaslt == b->cublaslt;
}

/* ---- the set ------------------------------------------------------------------ */

void kn_gemm_cache_init(kn_gemm_cache *c, const kn_gemm_env *env)
{
    memset(c, 0, sizeof *c);
    gc_sanitize(c->env.gpu, sizeof c->env.gpu, env->gpu, 0);
    gc_sanitize(c->env.id, sizeof c->env.id, env->id, 1);
    c->env.driver = env->driver;
    c->env.runtime = env->runtime;
    c->env.cublaslt = env->cublaslt;
}

void kn_gemm_cache_free(kn_gemm_cache *c)
{
    free(c->rec);
    c->rec = NULL;
    c->n = c->cap = 0;
}

static int gc_index(const kn_gemm_cache *c, const kn_gemm_key *k)
{
    for (int i = 0; i < c->n; i++)
        if (gc_key_cmp(&c->rec[i].key, k) == 0)
            return i;
    return -1;
}

const kn_gemm_rec *kn_gemm_cache_find(const kn_gemm_cache *c, const kn_gemm_key *k)
{
    const int i = gc_index(c, k);
    return i < 0 ? NULL : &c->rec[i];
}

/* Whether the file can hold k (the ranges gc_parse_rec accepts). */
static int gc_key_ok(const kn_gemm_key *k)
{
    return k->wdt >= 0 && k->wdt <= 255 && k->ydt >= 0 && k->ydt <= 255 && k->M >= 1 && k->N >= 1 &&
           k->K >= 1 && k->epi >= 0 && k->epi <= KN_GEMM_EPI_MAX && (k->has_bias == 0 || k->has_bias == 1);
}

int kn_gemm_cache_put(kn_gemm_cache *c, const kn_gemm_rec *r)
{
    if (!gc_key_ok(&r->key))
        return -1;
    const int i = gc_index(c, &r->key);
    if (i >= 0) {
        c->rec[i] = *r;
        return 0;
    }
    if (c->n >= KN_GEMM_CACHE_MAX)
        return -1;
    if (c->n == c->cap) {
        const int cap = c->cap ? 2 * c->cap : 16;
        kn_gemm_rec *rec = realloc(c->rec, (size_t)cap * sizeof *rec);
        if (!rec)
            return -1;
        c->rec = rec;
        c->cap = cap;
    }
    c->rec[c->n++] = *r;
    return 0;
}

void kn_gemm_cache_remove(kn_gemm_cache *c, const kn_gemm_key *k)
{
    const int i = gc_index(c, k);
    if (i >= 0)
        c->rec[i] = c->rec[--c->n]; /* order is free: save sorts */
}

/* ---- parsing ------------------------------------------------------------------ */

typedef struct gc_cursor {
    const char *p, *end;
} gc_cursor;

static int gc_lit(gc_cursor *c, const char *lit)
{
    const size_t n = strlen(lit);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
        return -1;
    c->p += n;
    return 0;
}

/* A decimal number of 1 to 20 digits, <= max. */
static int gc_u64(gc_cursor *c, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;
    int digits = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++, digits++) {
        const uint64_t d = (uint64_t)(*c->p - '0');
        if (digits >= 20 || x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    if (digits == 0 || x > max)
        return -1;
    *v = x;
    return 0;
}

static int gc_i32(gc_cursor *c, int32_t lo, int32_t hi, int32_t *v)
{
    uint64_t x;
    if (gc_u64(c, (uint64_t)hi, &x) || (int64_t)x < lo)
        return -1;
    *v = (int32_t)x;
    return 0;
}

/* Exactly 16 lower- or upper-case hex digits. */
static int gc_hex64(gc_cursor *c, uint64_t *v)
{
    uint64_t x = 0;
    if (c->end - c->p < 16)
        return -1;
    for (int i = 0; i < 16; i++, c->p++) {
        const char ch = *c->p;
        const int d = ch >= '0' && ch <= '9' ? ch - '0'
                      : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                      : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return 0;
}

/* Characters up to (not including) stop or the end of the line, into dst[n]
 * (NUL-terminated); -1 when empty or too long. */
static int gc_word(gc_cursor *c, char stop, char *dst, size_t n)
{
    size_t i = 0;
    for (; c->p < c->end && *c->p != stop && *c->p != '\n'; c->p++, i++) {
        if (i + 1 >= n)
            return -1;
        dst[i] = *c->p;
    }
    dst[i] = '\0';
    return i > 0 ? 0 : -1;
}

/* The environment part of the first line (after the version). */
static int gc_parse_env(gc_cursor *c, kn_gemm_env *e)
{
    uint64_t d, r;
    if (gc_lit(c, " driver=") || gc_u64(c, INT32_MAX, &d) || gc_lit(c, " runtime=") ||
        gc_u64(c, INT32_MAX, &r) || gc_lit(c, " cublaslt=") || gc_u64(c, UINT64_MAX, &e->cublaslt) ||
        gc_lit(c, " id=") || gc_word(c, ' ', e->id, sizeof e->id) || gc_lit(c, " gpu=") ||
        gc_word(c, '\n', e->gpu, sizeof e->gpu) || gc_lit(c, "\n"))
        return -1;
    e->driver = (int)d;
    e->runtime = (int)r;
    return 0;
}

static int gc_parse_rec(gc_cursor *c, kn_gemm_rec *r)
{
    kn_gemm_key *k = &r->key;
    if (gc_lit(c, "rec ") || gc_i32(c, 0, 255, &k->wdt) || gc_lit(c, " ") || gc_i32(c, 0, 255, &k->ydt) ||
        gc_lit(c, " ") || gc_i32(c, 1, INT32_MAX, &k->M) || gc_lit(c, " ") || gc_i32(c, 1, INT32_MAX, &k->N) ||
        gc_lit(c, " ") || gc_i32(c, 1, INT32_MAX, &k->K) || gc_lit(c, " ") || gc_i32(c, 0, KN_GEMM_EPI_MAX, &k->epi) ||
        gc_lit(c, " ") || gc_i32(c, 0, 1, &k->has_bias) || gc_lit(c, " ") ||
        gc_u64(c, UINT64_MAX, &r->time_ns))
        return -1;
    for (int i = 0; i < KN_GEMM_ALGO_WORDS; i++)
        if (gc_lit(c, " ") || gc_hex64(c, &r->algo[i]))
            return -1;
    return gc_lit(c, "\n");
}

/* ---- load --------------------------------------------------------------------- */

/* Reads path into *buf (malloc'ed, *len bytes). 1: no such file; 0: read; -1:
 * unreadable or too large (warn set). */
static int gc_read(const char *path, char **buf, size_t *len, char *warn, size_t wl)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return 1;
        gc_msg(warn, wl, "GEMM tuning file %s: cannot open: %s; ignored", path, strerror(errno));
        return -1;
    }
    char *b = malloc(GC_FILE_MAX + 1);
    size_t n = b ? fread(b, 1, GC_FILE_MAX + 1, f) : 0;
    const int bad = !b ? ENOMEM : ferror(f) ? EIO : 0;
    fclose(f);
    if (bad || n > GC_FILE_MAX) {
        free(b);
        gc_msg(warn, wl, "GEMM tuning file %s: %s; ignored", path,
               bad ? strerror(bad) : "larger than any valid file");
        return -1;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* Checks the final "crc32 XXXXXXXX\n" line against the bytes before it; on
 * success *body_end is where that line starts. NULL or the problem. */
static const char *gc_check_crc(const char *b, size_t len, size_t *body_end)
{
    static const char tag[] = "crc32 ";
    const size_t line = sizeof tag - 1 + 8 + 1;
    if (len < line || b[len - 1] != '\n' || (len > line && b[len - line - 1] != '\n') ||
        memcmp(b + len - line, tag, sizeof tag - 1) != 0)
        return "truncated (no checksum line)";
    uint32_t want = 0;
    for (const char *p = b + len - line + sizeof tag - 1; p < b + len - 1; p++) {
        const char ch = *p;
        const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0)
            return "malformed checksum line";
        want = want << 4 | (uint32_t)d;
    }
    if (gc_crc32(b, len - line) != want)
        return "checksum mismatch (corrupt)";
    *body_end = len - line;
    return NULL;
}

/* Parses records count and records of the body [c->p, c->end) into *out
 * (malloc'ed, sorted, *n). NULL or the problem. */
static const char *gc_parse_records(gc_cursor *c, kn_gemm_rec **out, int *n)
{
    uint64_t count;
    if (gc_lit(c, "records ") || gc_u64(c, UINT64_MAX, &count) || gc_lit(c, "\n"))
        return "malformed record count";
    if (count > KN_GEMM_CACHE_MAX)
        return "too many records";
    kn_gemm_rec *r = malloc((count ? count : 1) * sizeof *r);
    if (!r)
        return "out of memory";
    for (uint64_t i = 0; i < count; i++)
        if (gc_parse_rec(c, &r[i])) {
            free(r);
            return "malformed or missing record";
        }
    if (c->p != c->end) {
        free(r);
        return "unexpected data after the records";
    }
    qsort(r, count, sizeof *r, gc_rec_cmp);
    for (uint64_t i = 1; i < count; i++)
        if (gc_key_cmp(&r[i - 1].key, &r[i].key) == 0) {
            free(r);
            return "duplicate record";
        }
    *out = r;
    *n = (int)count;
    return NULL;
}

/* "written for another environment: <field> <file's> (here <ours>), ..." over
 * the fields that differ, into buf. */
static void gc_env_diff(const kn_gemm_env *f, const kn_gemm_env *h, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "written for another environment:");
    if (strcmp(f->gpu, h->gpu) != 0 && n < len)
        n += (size_t)snprintf(buf + n, len - n, " gpu '%s' (here '%s')", f->gpu, h->gpu);
    if (strcmp(f->id, h->id) != 0 && n < len)
        n += (size_t)snprintf(buf + n, len - n, " id %s (here %s)", f->id, h->id);
    if (f->driver != h->driver && n < len)
        n += (size_t)snprintf(buf + n, len - n, " driver %d (here %d)", f->driver, h->driver);
    if (f->runtime != h->runtime && n < len)
        n += (size_t)snprintf(buf + n, len - n, " runtime %d (here %d)", f->runtime, h->runtime);
    if (f->cublaslt != h->cublaslt && n < len)
        snprintf(buf + n, len - n, " cuBLASLt %" PRIu64 " (here %" PRIu64 ")", f->cublaslt, h->cublaslt);
}

/* Validates a whole file image against env; fills *out / *n. NULL or the problem
 * (foreign environments are described in fbuf). */
static const char *gc_parse(const char *b, size_t len, const kn_gemm_env *env, kn_gemm_rec **out, int *n,
                            char *fbuf, size_t flen)
{
    gc_cursor c = {b, b + len};
    uint64_t version;
    size_t body_end = 0;
    if (gc_lit(&c, GC_MAGIC " ") || gc_u64(&c, UINT32_MAX, &version))
        return len == 0 ? "empty" : "not a layad GEMM tuning file";
    if (version != GC_VERSION)
        return "unsupported format version";
    const char *bad = gc_check_crc(b, len, &body_end);
    if (bad)
        return bad;
    c.end = b + body_end;
    kn_gemm_env fe;
    memset(&fe, 0, sizeof fe);
    if (gc_parse_env(&c, &fe))
        return "malformed environment line";
    if (!gc_env_eq(&fe, env)) {
        gc_env_diff(&fe, env, fbuf, flen);
        return fbuf;
    }
    return gc_parse_records(&c, out, n);
}

int kn_gemm_cache_load(kn_gemm_cache *c, const char *path, char *warn, size_t warn_len)
{
    gc_msg(warn, warn_len, "%s", "");
    char *buf = NULL;
    size_t len = 0;
    if (gc_read(path, &buf, &len, warn, warn_len) != 0)
        return 0; /* missing (silent) or unreadable (warned) */
    kn_gemm_rec *rec = NULL;
    int n = 0;
    char foreign[1024];
    const char *bad = gc_parse(buf, len, &c->env, &rec, &n, foreign, sizeof foreign);
    free(buf);
    if (bad) {
        gc_msg(warn, warn_len, "GEMM tuning file %s: %s; ignored", path, bad);
        return 0;
    }
    free(c->rec);
    c->rec = rec;
    c->n = c->cap = n;
    return n;
}

/* ---- save --------------------------------------------------------------------- */

/* The file image of c (malloc'ed, *len bytes), records sorted; NULL when
 * memory runs out. */
static char *gc_format(const kn_gemm_cache *c, size_t *len)
{
    const size_t cap = GC_FILE_MAX;
    char *b = malloc(cap);
    kn_gemm_rec *r = malloc((size_t)(c->n ? c->n : 1) * sizeof *r);
    if (!b || !r) {
        free(b);
        free(r);
        return NULL;
    }
    if (c->n)
        memcpy(r, c->rec, (size_t)c->n * sizeof *r);
    qsort(r, (size_t)c->n, sizeof *r, gc_rec_cmp);
    const kn_gemm_env *e = &c->env;
    size_t n = (size_t)snprintf(b, cap, GC_MAGIC " %d driver=%d runtime=%d cublaslt=%" PRIu64 " id=%s gpu=%s\n"
                                        "records %d\n", GC_VERSION, e->driver, e->runtime, e->cublaslt,
                                e->id, e->gpu, c->n);
    for (int i = 0; i < c->n; i++) {
        const kn_gemm_key *k = &r[i].key;
        n += (size_t)snprintf(b + n, cap - n, "rec %d %d %d %d %d %d %d %" PRIu64, (int)k->wdt, (int)k->ydt,
                              (int)k->M, (int)k->N, (int)k->K, (int)k->epi, (int)k->has_bias, r[i].time_ns);
        for (int w = 0; w < KN_GEMM_ALGO_WORDS; w++)
            n += (size_t)snprintf(b + n, cap - n, " %016" PRIx64, r[i].algo[w]);
        n += (size_t)snprintf(b + n, cap - n, "\n");
    }
    n += (size_t)snprintf(b + n, cap - n, "crc32 %08" PRIx32 "\n", gc_crc32(b, n));
    free(r);
    *len = n;
    return b;
}

static int gc_write_all(int fd, const char *b, size_t len)
{
    while (len > 0) {
        const ssize_t w = write(fd, b, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        len -= (size_t)w;
    }
    return 0;
}

/* fsync of the directory holding path, so that the rename itself is durable. */
static void gc_sync_dir(const char *path)
{
    char d[PATH_MAX];
    gc_msg(d, sizeof d, "%s", path);
    const int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd); /* best effort: some file systems refuse a directory fsync */
        close(fd);
    }
}

/* Writes img to a fresh temporary next to path and renames it over path.
 * NULL or the failing step (errno describes it). */
static const char *gc_replace(const char *path, const char *img, size_t len)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return "temporary file name";
    }
    const int fd = mkstemp(tmp);
    if (fd < 0)
        return "cannot create a temporary file";
    const char *what = fchmod(fd, 0644) ? "chmod" : gc_write_all(fd, img, len) ? "write" : fsync(fd) ? "fsync" : NULL;
    int e = errno;
    if (close(fd) != 0 && !what)
        what = "close", e = errno;
    if (!what && rename(tmp, path) != 0)
        what = "rename", e = errno;
    if (what)
        unlink(tmp);
    errno = e;
    return what;
}

int kn_gemm_cache_save(const kn_gemm_cache *c, const char *path, char *err, size_t err_len)
{
    gc_msg(err, err_len, "%s", "");
    size_t len = 0;
    char *img = gc_format(c, &len);
    if (!img) {
        gc_msg(err, err_len, "GEMM tuning file %s: out of memory", path);
        return -1;
    }
    const char *what = gc_replace(path, img, len);
    const int e = errno;
    free(img);
    if (what) {
        gc_msg(err, err_len, "GEMM tuning file %s: %s: %s", path, what, strerror(e));
        return -1;
    }
    gc_sync_dir(path);
    return c->n;
}
