/*
 * test_gemm_cache.c - the tuned-GEMM file (kernels/gemm_cache.h): records
 * round-trip bit for bit, a rebuilt file round-trips, every corrupt, truncated,
 * forged or foreign file is ignored with a one-line warning and leaves the
 * cache as it was, a missing file is silent, and a save is atomic (mode 0644,
 * no temporary left, a failed save leaves the old file). CPU only; also runs
 * under ASan+UBSan.
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/gemm_cache.h"
#include "tests/lib/testutil.h"

static const kn_gemm_env ENV_A = {"NVIDIA H200", "GPU-2f3e4d5c-0000-1111-2222-333344445555", 13000, 13000,
                                  130100};

/* A record whose fields all derive from i (distinct keys for distinct i). */
static kn_gemm_rec rec_of(int i)
{
    kn_gemm_rec r;
    memset(&r, 0, sizeof r);
    r.key = (kn_gemm_key){i % 2, i % 3, 1 + i, 768 + 8 * (i % 5), 3072, (i / 7) % 3 == 1 ? 2 : 0, i % 2};
    for (int w = 0; w < KN_GEMM_ALGO_WORDS; w++)
        r.algo[w] = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ ((uint64_t)w << 56) ^ (w == 7 ? ~0ull : 0);
    r.time_ns = 1000u + 37u * (unsigned)i;
    return r;
}

/* A fresh directory and the path of "tuning.txt" in it. */
static void tmp_path(char dir[64], char path[128])
{
    strcpy(dir, "/tmp/layad-gc-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, 128, "%s/tuning.txt", dir);
}

/* Number of entries of dir other than . and .. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void rm_tree(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_bytes(const char *path, const char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Field by field: the structs have padding. */
static void assert_rec_eq(const kn_gemm_rec *a, const kn_gemm_rec *b)
{
    ck_assert_int_eq(a->key.wdt, b->key.wdt);
    ck_assert_int_eq(a->key.ydt, b->key.ydt);
    ck_assert_int_eq(a->key.M, b->key.M);
    ck_assert_int_eq(a->key.N, b->key.N);
    ck_assert_int_eq(a->key.K, b->key.K);
    ck_assert_int_eq(a->key.epi, b->key.epi);
    ck_assert_int_eq(a->key.has_bias, b->key.has_bias);
    ck_assert_mem_eq(a->algo, b->algo, sizeof a->algo);
    ck_assert_uint_eq(a->time_ns, b->time_ns);
}

static void assert_same(const kn_gemm_cache *got, const kn_gemm_cache *want)
{
    ck_assert_int_eq(got->n, want->n);
    for (int i = 0; i < want->n; i++) {
        const kn_gemm_rec *r = kn_gemm_cache_find(got, &want->rec[i].key);
        ck_assert_ptr_nonnull(r);
        assert_rec_eq(r, &want->rec[i]);
    }
}

/* Loading path into a cache holding one sentinel record must warn (the warning
 * naming the file and containing needle when non-NULL) and keep the sentinel. */
static void expect_ignored(const char *path, const char *needle)
{
    kn_gemm_cache c;
    kn_gemm_cache_init(&c, &ENV_A);
    const kn_gemm_rec sentinel = rec_of(999);
    ck_assert_int_eq(kn_gemm_cache_put(&c, &sentinel), 0);
    char warn[1024] = "";
    ck_assert_int_eq(kn_gemm_cache_load(&c, path, warn, sizeof warn), 0);
    ck_assert_msg(strstr(warn, path) != NULL, "warning '%s' does not name the file", warn);
    ck_assert_msg(strstr(warn, "ignored") != NULL, "warning '%s'", warn);
    ck_assert_msg(!needle || strstr(warn, needle), "warning '%s' lacks '%s'", warn, needle);
    ck_assert_ptr_null(strchr(warn, '\n'));
    ck_assert_int_eq(c.n, 1);
    assert_rec_eq(&c.rec[0], &sentinel);
    kn_gemm_cache_free(&c);
}

/* The file's own CRC-32 (IEEE, reflected), to forge files that pass the
 * checksum and must fail on their content. */
static uint32_t crc32_ref(const char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= (unsigned char)p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1u ? (c >> 1) ^ 0xedb88320u : c >> 1;
    }
    return ~c;
}

static void write_signed(const char *path, const char *body)
{
    const size_t n = strlen(body);
    char *b = malloc(n + 32);
    memcpy(b, body, n);
    const int k = snprintf(b + n, 32, "crc32 %08" PRIx32 "\n", crc32_ref(body, n));
    write_bytes(path, b, n + (size_t)k);
    free(b);
}

/* A small valid file of three records at path (the corruption tests' input). */
static char *small_file(const char *path, size_t *len)
{
    kn_gemm_cache c;
    kn_gemm_cache_init(&c, &ENV_A);
    for (int i = 0; i < 3; i++) {
        const kn_gemm_rec r = rec_of(i);
        ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    }
    char err[512] = "";
    ck_assert_int_eq(kn_gemm_cache_save(&c, path, err, sizeof err), 3);
    kn_gemm_cache_free(&c);
    return tu_read_fixture(path, len);
}

START_TEST(round_trip)
{
    char dir[64], path[128], err[512] = "", warn[512] = "x";
    tmp_path(dir, path);
    kn_gemm_cache c, d;
    kn_gemm_cache_init(&c, &ENV_A);
    for (int i = 0; i < 20; i++) {
        const kn_gemm_rec r = rec_of(i);
        ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    }
    kn_gemm_rec big = rec_of(100); /* the widest fields */
    big.key = (kn_gemm_key){255, 255, INT32_MAX, INT32_MAX, INT32_MAX, KN_GEMM_EPI_MAX, 1};
    big.time_ns = UINT64_MAX;
    ck_assert_int_eq(kn_gemm_cache_put(&c, &big), 0);
    ck_assert_int_eq(kn_gemm_cache_save(&c, path, err, sizeof err), 21);
    ck_assert_str_eq(err, "");
    kn_gemm_cache_init(&d, &ENV_A);
    ck_assert_int_eq(kn_gemm_cache_load(&d, path, warn, sizeof warn), 21);
    ck_assert_str_eq(warn, "");
    assert_same(&d, &c);

    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    ck_assert_int_eq(dir_entries(dir), 1); /* no temporary left */
    kn_gemm_cache_free(&c);
    kn_gemm_cache_free(&d);
    rm_tree(dir);
}
END_TEST

/* save, load, add, save: the second file holds the old and the new records,
 * and equal sets give equal files whatever the order of insertion. */
START_TEST(rebuilt_cache)
{
    char dir[64], path[128], p2[160], err[512], warn[512];
    tmp_path(dir, path);
    snprintf(p2, sizeof p2, "%s/other.txt", dir);
    kn_gemm_cache c, d, e;
    kn_gemm_cache_init(&c, &ENV_A);
    for (int i = 0; i < 5; i++) {
        const kn_gemm_rec r = rec_of(i);
        ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    }
    ck_assert_int_eq(kn_gemm_cache_save(&c, path, err, sizeof err), 5);
    kn_gemm_cache_init(&d, &ENV_A);
    ck_assert_int_eq(kn_gemm_cache_load(&d, path, warn, sizeof warn), 5);
    const kn_gemm_rec r5 = rec_of(5);
    kn_gemm_rec r2 = rec_of(2);
    r2.time_ns = 7; /* a re-tuned shape replaces its record */
    r2.algo[3] ^= 1;
    ck_assert_int_eq(kn_gemm_cache_put(&d, &r5), 0);
    ck_assert_int_eq(kn_gemm_cache_put(&d, &r2), 0);
    ck_assert_int_eq(d.n, 6);
    ck_assert_int_eq(kn_gemm_cache_save(&d, path, err, sizeof err), 6);
    kn_gemm_cache_init(&e, &ENV_A);
    ck_assert_int_eq(kn_gemm_cache_load(&e, path, warn, sizeof warn), 6);
    assert_same(&e, &d);
    assert_rec_eq(kn_gemm_cache_find(&e, &r2.key), &r2);

    kn_gemm_cache_free(&c); /* the same six records in reverse order */
    kn_gemm_cache_init(&c, &ENV_A);
    for (int i = 5; i >= 0; i--) {
        const kn_gemm_rec r = i == 2 ? r2 : rec_of(i);
        ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    }
    ck_assert_int_eq(kn_gemm_cache_save(&c, p2, err, sizeof err), 6);
    size_t n1, n2;
    char *f1 = tu_read_fixture(path, &n1), *f2 = tu_read_fixture(p2, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_mem_eq(f1, f2, n1);
    free(f1);
    free(f2);
    kn_gemm_cache_free(&c);
    kn_gemm_cache_free(&d);
    kn_gemm_cache_free(&e);
    rm_tree(dir);
}
END_TEST

START_TEST(set_operations)
{
    kn_gemm_cache c;
    kn_gemm_cache_init(&c, &ENV_A);
    const kn_gemm_rec a = rec_of(1), b = rec_of(2);
    ck_assert_ptr_null(kn_gemm_cache_find(&c, &a.key));
    ck_assert_int_eq(kn_gemm_cache_put(&c, &a), 0);
    ck_assert_int_eq(kn_gemm_cache_put(&c, &b), 0);
    ck_assert_int_eq(kn_gemm_cache_put(&c, &a), 0);
    ck_assert_int_eq(c.n, 2);
    kn_gemm_cache_remove(&c, &a.key);
    kn_gemm_cache_remove(&c, &a.key);
    ck_assert_int_eq(c.n, 1);
    ck_assert_ptr_null(kn_gemm_cache_find(&c, &a.key));
    assert_rec_eq(kn_gemm_cache_find(&c, &b.key), &b);
    kn_gemm_rec bad = rec_of(3);
    bad.key.M = 0;
    ck_assert_int_eq(kn_gemm_cache_put(&c, &bad), -1);
    bad = rec_of(3), bad.key.has_bias = 2;
    ck_assert_int_eq(kn_gemm_cache_put(&c, &bad), -1);
    bad = rec_of(3), bad.key.wdt = -1;
    ck_assert_int_eq(kn_gemm_cache_put(&c, &bad), -1);
    bad = rec_of(3), bad.key.epi = KN_GEMM_EPI_MAX + 1;
    ck_assert_int_eq(kn_gemm_cache_put(&c, &bad), -1);
    bad = rec_of(3), bad.key.epi = 0x400; /* a split plan's key: 4 parts in the high byte */
    ck_assert_int_eq(kn_gemm_cache_put(&c, &bad), 0);
    kn_gemm_cache_remove(&c, &bad.key);
    ck_assert_int_eq(c.n, 1);
    kn_gemm_cache_free(&c);
    ck_assert_int_eq(c.n, 0);
}
END_TEST

/* KN_GEMM_CACHE_MAX records of the widest form save and load; one more is refused. */
START_TEST(bounded_size)
{
    char dir[64], path[128], err[512], warn[512];
    tmp_path(dir, path);
    kn_gemm_cache c, d;
    kn_gemm_cache_init(&c, &ENV_A);
    for (int i = 0; i < KN_GEMM_CACHE_MAX; i++) {
        kn_gemm_rec r = rec_of(i);
        r.key = (kn_gemm_key){255, 255, INT32_MAX - i, INT32_MAX, INT32_MAX, KN_GEMM_EPI_MAX, 1};
        r.time_ns = UINT64_MAX;
        ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    }
    const kn_gemm_rec extra = rec_of(0);
    ck_assert_int_eq(kn_gemm_cache_put(&c, &extra), -1);
    ck_assert_int_eq(c.n, KN_GEMM_CACHE_MAX);
    ck_assert_int_eq(kn_gemm_cache_save(&c, path, err, sizeof err), KN_GEMM_CACHE_MAX);
    kn_gemm_cache_init(&d, &ENV_A);
    ck_assert_int_eq(kn_gemm_cache_load(&d, path, warn, sizeof warn), KN_GEMM_CACHE_MAX);
    ck_assert_str_eq(warn, "");
    assert_same(&d, &c);
    kn_gemm_cache_free(&c);
    kn_gemm_cache_free(&d);

    /* a forged file that claims one record too many */
    char *body = malloc((size_t)(KN_GEMM_CACHE_MAX + 2) * 200);
    int n = sprintf(body, "layad-gemm-tuning 1 driver=13000 runtime=13000 cublaslt=130100 id=%s gpu=%s\nrecords %d\n",
                    ENV_A.id, ENV_A.gpu, KN_GEMM_CACHE_MAX + 1);
    for (int i = 0; i <= KN_GEMM_CACHE_MAX; i++)
        n += sprintf(body + n, "rec 0 0 %d 8 8 0 0 1%s\n", i + 1,
                     " 0000000000000001 0000000000000002 0000000000000003 0000000000000004"
                     " 0000000000000005 0000000000000006 0000000000000007 0000000000000008");
    write_signed(path, body);
    expect_ignored(path, "too many records");
    free(body);
    rm_tree(dir);
}
END_TEST

START_TEST(corrupt_byte_flips)
{
    char dir[64], path[128];
    tmp_path(dir, path);
    size_t len;
    char *good = small_file(path, &len);
    char *b = malloc(len);
    for (size_t i = 0; i < len; i++)
        for (int f = 0; f < 2; f++) {
            memcpy(b, good, len);
            b[i] ^= f ? (char)0x01 : (char)0xff;
            write_bytes(path, b, len);
            expect_ignored(path, NULL);
        }
    free(b);
    free(good);
    rm_tree(dir);
}
END_TEST

START_TEST(truncated_at_every_length)
{
    char dir[64], path[128];
    tmp_path(dir, path);
    size_t len;
    char *good = small_file(path, &len);
    for (size_t n = 0; n < len; n++) {
        write_bytes(path, good, n);
        expect_ignored(path, NULL);
    }
    free(good);
    rm_tree(dir);
}
END_TEST

START_TEST(garbage_and_forgeries)
{
    char dir[64], path[128];
    tmp_path(dir, path);
    size_t len;
    char *good = small_file(path, &len);
    char *b = malloc(len + 64);
    memcpy(b, good, len); /* trailing data after the checksum line */
    memcpy(b + len, "rec 1\n", 6);
    write_bytes(path, b, len + 6);
    expect_ignored(path, "checksum");
    uint64_t s = 88172645463325252ull; /* xorshift64: random bytes, fixed seed */
    for (int t = 0; t < 200; t++) {
        const size_t n = (size_t)(t * 7 % 300);
        for (size_t i = 0; i < n; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            b[i] = (char)(t % 2 ? s : (s % 96) + 32);
        }
        if (t % 4 == 3 && n > 18)
            memcpy(b, "layad-gemm-tuning ", 18);
        write_bytes(path, b, n);
        expect_ignored(path, NULL);
    }
    free(b);
    free(good);

    const char *head = "layad-gemm-tuning 1 driver=13000 runtime=13000 cublaslt=130100 "
                       "id=GPU-2f3e4d5c-0000-1111-2222-333344445555 gpu=NVIDIA H200\n";
    const char *rec = "rec 0 0 5 8 8 0 0 1 0000000000000001 0000000000000000 0000000000000000 "
                      "0000000000000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000\n";
    char body[2048];
    snprintf(body, sizeof body, "%srecords 2\n%s%s", head, rec, rec);
    write_signed(path, body);
    expect_ignored(path, "duplicate");
    snprintf(body, sizeof body, "%srecords 2\n%s", head, rec);
    write_signed(path, body);
    expect_ignored(path, "record");
    snprintf(body, sizeof body, "%srecords 0\n%s", head, rec);
    write_signed(path, body);
    expect_ignored(path, "after the records");
    snprintf(body, sizeof body, "%srecords 1\nrec 0 0 0 8 8 0 0 1 %s", head, rec + 20); /* M = 0 */
    write_signed(path, body);
    expect_ignored(path, "record");
    snprintf(body, sizeof body, "%srecords 1\nrec 0 0 2147483648 8 8 0 0 1 %s", head, rec + 20);
    write_signed(path, body);
    expect_ignored(path, "record");
    snprintf(body, sizeof body, "layad-gemm-tuning 2%srecords 0\n", head + 19);
    write_signed(path, body);
    expect_ignored(path, "version");

    /* a valid empty file loads: 0 records, no warning */
    snprintf(body, sizeof body, "%srecords 0\n", head);
    write_signed(path, body);
    kn_gemm_cache c;
    kn_gemm_cache_init(&c, &ENV_A);
    char warn[512] = "x";
    ck_assert_int_eq(kn_gemm_cache_load(&c, path, warn, sizeof warn), 0);
    ck_assert_str_eq(warn, "");
    kn_gemm_cache_free(&c);
    rm_tree(dir);
}
END_TEST

START_TEST(foreign_environment)
{
    char dir[64], path[128];
    tmp_path(dir, path);
    size_t len;
    free(small_file(path, &len));
    const char *field[5] = {"gpu 'NVIDIA H200' (here 'NVIDIA H100 80GB HBM3')",
                            "id GPU-2f3e4d5c-0000-1111-2222-333344445555 (here GPU-ffffffff",
                            "driver 13000 (here 12080)", "runtime 13000 (here 12060)",
                            "cuBLASLt 130100 (here 120805)"};
    for (int f = 0; f < 5; f++) {
        kn_gemm_env e = ENV_A;
        if (f == 0)
            strcpy(e.gpu, "NVIDIA H100 80GB HBM3");
        else if (f == 1)
            strcpy(e.id, "GPU-ffffffff-0000-1111-2222-333344445555");
        else if (f == 2)
            e.driver = 12080;
        else if (f == 3)
            e.runtime = 12060;
        else
            e.cublaslt = 120805;
        kn_gemm_cache c;
        kn_gemm_cache_init(&c, &e);
        char warn[1024] = "";
        ck_assert_int_eq(kn_gemm_cache_load(&c, path, warn, sizeof warn), 0);
        ck_assert_msg(strstr(warn, "another environment") && strstr(warn, path) && strstr(warn, field[f]),
                      "warning '%s' lacks '%s'", warn, field[f]);
        ck_assert_uint_lt(strlen(warn), 200); /* only what differs: fits a log line */
        ck_assert_int_eq(c.n, 0);
        kn_gemm_cache_free(&c);
    }
    rm_tree(dir);
}
END_TEST

/* Names with spaces, newlines and non-ASCII bytes are kept printable and one
 * line, and the same environment still matches its own file. */
START_TEST(environment_sanitized)
{
    char dir[64], path[128], err[512], warn[512] = "x";
    tmp_path(dir, path);
    kn_gemm_env e = {"GPU\nwith \xc3\xa9 name ", "PCI 0000:19:00.0", 1, 2, 3};
    kn_gemm_cache c, d;
    kn_gemm_cache_init(&c, &e);
    ck_assert_str_eq(c.env.gpu, "GPU?with ?? name ");
    ck_assert_str_eq(c.env.id, "PCI_0000:19:00.0");
    const kn_gemm_rec r = rec_of(3);
    ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    ck_assert_int_eq(kn_gemm_cache_save(&c, path, err, sizeof err), 1);
    kn_gemm_cache_init(&d, &e);
    ck_assert_int_eq(kn_gemm_cache_load(&d, path, warn, sizeof warn), 1);
    ck_assert_str_eq(warn, "");
    kn_gemm_env empty;
    memset(&empty, 0, sizeof empty);
    kn_gemm_cache_free(&c);
    kn_gemm_cache_init(&c, &empty); /* empty names are written as "-" and still match */
    ck_assert_int_eq(kn_gemm_cache_save(&c, path, err, sizeof err), 0);
    ck_assert_int_eq(kn_gemm_cache_load(&c, path, warn, sizeof warn), 0);
    ck_assert_str_eq(warn, "");
    kn_gemm_cache_free(&c);
    kn_gemm_cache_free(&d);
    rm_tree(dir);
}
END_TEST

START_TEST(missing_file_is_silent)
{
    char dir[64], path[128], warn[512] = "x";
    tmp_path(dir, path);
    kn_gemm_cache c;
    kn_gemm_cache_init(&c, &ENV_A);
    const kn_gemm_rec r = rec_of(4);
    ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    ck_assert_int_eq(kn_gemm_cache_load(&c, path, warn, sizeof warn), 0);
    ck_assert_str_eq(warn, "");
    ck_assert_int_eq(c.n, 1);
    ck_assert_int_eq(kn_gemm_cache_load(&c, "/nonexistent-dir/x", NULL, 0), 0);
    ck_assert_int_eq(c.n, 1);
    expect_ignored(dir, NULL); /* a directory: unreadable */
    kn_gemm_cache_free(&c);
    rm_tree(dir);
}
END_TEST

/* A save replaces the file whole; a failed save reports why, leaves what was
 * there and no temporary. */
START_TEST(atomic_save)
{
    char dir[64], path[128], err[512], warn[512], sub[160];
    tmp_path(dir, path);
    size_t len;
    free(small_file(path, &len));
    kn_gemm_cache c;
    kn_gemm_cache_init(&c, &ENV_A);
    const kn_gemm_rec r = rec_of(9);
    ck_assert_int_eq(kn_gemm_cache_put(&c, &r), 0);
    ck_assert_int_eq(kn_gemm_cache_save(&c, path, err, sizeof err), 1);
    ck_assert_int_eq(dir_entries(dir), 1);
    ck_assert_int_eq(kn_gemm_cache_load(&c, path, warn, sizeof warn), 1);

    snprintf(sub, sizeof sub, "%s/occupied", dir); /* rename onto a non-empty directory fails */
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof sub, "%s/occupied/x", dir);
    write_bytes(sub, "x", 1);
    snprintf(sub, sizeof sub, "%s/occupied", dir);
    err[0] = '\0';
    ck_assert_int_eq(kn_gemm_cache_save(&c, sub, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "rename") && strstr(err, sub), "error '%s'", err);
    ck_assert_int_eq(dir_entries(dir), 2);

    snprintf(sub, sizeof sub, "%s/no-such-dir/t.txt", dir);
    ck_assert_int_eq(kn_gemm_cache_save(&c, sub, err, sizeof err), -1);
    ck_assert_msg(strstr(err, sub) != NULL, "error '%s'", err);
    ck_assert_int_eq(dir_entries(dir), 2);
    kn_gemm_cache_free(&c);
    rm_tree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm_cache");
    TCase *tc = tcase_create("file");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, rebuilt_cache);
    tcase_add_test(tc, set_operations);
    tcase_add_test(tc, bounded_size);
    tcase_add_test(tc, corrupt_byte_flips);
    tcase_add_test(tc, truncated_at_every_length);
    tcase_add_test(tc, garbage_and_forgeries);
    tcase_add_test(tc, foreign_environment);
    tcase_add_test(tc, environment_sanitized);
    tcase_add_test(tc, missing_file_is_silent);
    tcase_add_test(tc, atomic_save);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
