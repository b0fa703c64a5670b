/*
 * test_batching.c - the one batching policy (model/backend/batching.h): the
 * bucket set, capacities and costs, the scheduler's cut (budgets, cost,
 * oversized jobs split, rows too long refused) and the packed layout both
 * backends run (offsets, positions, slot types, gathered slots, tiles,
 * padding), on fresh random rows.
 */
#include <check.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu.h"
#include "model/backend/batching.h"
#include "tests/lib/testutil.h"

/* The policy the daemon runs by default: 32768 tokens a pack, 64 rows. */
static void default_policy(batch_policy *p)
{
    layad_error err = {0};
    ck_assert_int_eq(batch_policy_init(p, 32768, 64, 0, &err), 0);
}

START_TEST(bucket_set)
{
    batch_policy p;
    default_policy(&p);
    ck_assert_int_eq(p.n_buckets, 64); /* a few dozen graphs */
    ck_assert_int_eq(p.bucket[0], 16);
    ck_assert_int_ge(p.bucket[p.n_buckets - 1], 32768);
    for (int i = 1; i < p.n_buckets; i++) {
        const int step = p.bucket[i] - p.bucket[i - 1];
        ck_assert_int_gt(step, 0);
        /* from 512 tokens on a bucket is at most 12.5% above what it holds */
        if (p.bucket[i - 1] >= 512)
            ck_assert_msg(step <= p.bucket[i - 1] / 8, "step %d after %d", step, p.bucket[i - 1]);
    }
}
END_TEST

/* The smallest bucket that holds a pack's tokens, and its cost. */
START_TEST(bucket_capacity)
{
    batch_policy p;
    default_policy(&p);
    ck_assert_int_eq(batch_capacity(&p, 1, 1), 16);
    ck_assert_int_eq(batch_capacity(&p, 40, 1), 48);
    ck_assert_int_eq(batch_capacity(&p, 83, 1), 96);
    ck_assert_int_eq(batch_capacity(&p, 129, 1), 160);
    ck_assert_int_eq(batch_capacity(&p, 257, 1), 320);
    ck_assert_int_eq(batch_capacity(&p, 1024, 1), 1024);
    ck_assert_int_eq(batch_capacity(&p, 1025, 1), 1152);
    ck_assert_int_eq(batch_capacity(&p, 2049, 1), 2304);
    ck_assert_int_eq(batch_capacity(&p, 4096, 1), 4096);
    ck_assert_int_eq(batch_capacity(&p, 4097, 1), 4608);
    ck_assert_int_eq(batch_capacity(&p, 32768, 1), 32768);
    ck_assert_int_eq(batch_capacity(&p, 32769, 1), -1);
    for (long t = 1; t <= 32768; t += 97) { /* the smallest bucket that holds t */
        const int c = batch_capacity(&p, t, 1);
        ck_assert_int_ge(c, t);
        for (int i = 0; i < p.n_buckets; i++)
            ck_assert(!(p.bucket[i] >= t && p.bucket[i] < c));
    }
    ck_assert_int_eq(batch_cost(&p, 83, 1), 96 + BATCH_OVERHEAD_TOKENS);
}
END_TEST

START_TEST(bucket_rows)
{
    batch_policy p;
    default_policy(&p);
    /* row slots: a sixteenth of the bucket, 8 to max_rows; more rows take a larger bucket */
    ck_assert_int_eq(batch_rows_cap(&p, 128), 8);
    ck_assert_int_eq(batch_rows_cap(&p, 512), 32);
    ck_assert_int_eq(batch_rows_cap(&p, 4096), 64);
    ck_assert_int_eq(batch_capacity(&p, 83, 8), 96);
    ck_assert_int_eq(batch_capacity(&p, 83, 9), 160);
    ck_assert_int_eq(batch_capacity(&p, 1000, 64), 1024);
    ck_assert_int_eq(batch_capacity(&p, 1000, 65), -1);
}
END_TEST

START_TEST(gathered_classes)
{
    batch_policy p;
    default_policy(&p);
    /* gathered classes: 16 (up to 1280 tokens), a sixteenth of the bucket (at least 80), or
     * one per token and row */
    ck_assert_int_eq(batch_gcap(&p, 128, 0), 16);
    ck_assert_int_eq(batch_gcap(&p, 128, 1), 80);
    ck_assert_int_eq(batch_gcap(&p, 128, 2), 128 + 8);
    ck_assert_int_eq(batch_gcap(&p, 1280, 0), 16);
    ck_assert_int_eq(batch_gcap(&p, 4096, 0), 256);
    ck_assert_int_eq(batch_gcap(&p, 4096, 1), 256);
    ck_assert_int_eq(batch_gcap(&p, 4096, 2), 4096 + 64);
    ck_assert_int_eq(batch_gcap(&p, 32, 1), 32 + 8); /* never above the full class */
    ck_assert_int_eq(batch_gclass(&p, 128, 5), 0);   /* 1x83, one 4-option question */
    ck_assert_int_eq(batch_gclass(&p, 128, 17), 1);  /* three 4-option questions */
    ck_assert_int_eq(batch_gclass(&p, 4096, 72), 0); /* 8 rows x 8 markers: tiny folds into few */
    ck_assert_int_eq(batch_gclass(&p, 128, 100), 2); /* 99 options in a short row */
    int shapes = 0;
    for (int i = 0; i < p.n_buckets; i++) { /* any pack fits the last class of its bucket */
        const int cap = p.bucket[i], full = batch_gcap(&p, cap, BATCH_GCLASSES - 1);
        ck_assert_int_ge(full, cap + batch_rows_cap(&p, cap));
        const int few = cap / 16 > 80 ? cap / 16 : 80;
        ck_assert_int_eq(batch_gcap(&p, cap, 1), full < few ? full : few);
        ck_assert_int_eq(batch_gcap(&p, cap, 0), few > 80 ? few : full < 16 ? full : 16);
        for (int c = 0; c < BATCH_GCLASSES; c++) {
            const int g = batch_gcap(&p, cap, c);
            const int folds = c > 0 && g == batch_gcap(&p, cap, c - 1);
            ck_assert_int_eq(batch_gclass(&p, cap, g), folds ? c - 1 : c);
            ck_assert_int_eq(batch_gclass_own(&p, cap, c), !folds);
            shapes += batch_gclass_own(&p, cap, c);
        }
    }
    ck_assert_int_eq(shapes, 150); /* batching.h: graph shapes for 32768 tokens */
}
END_TEST

START_TEST(small_and_exact_sets)
{
    batch_policy p;
    layad_error err = {0};
    /* a small max_tokens gets a small set; exact policies have none */
    ck_assert_int_eq(batch_policy_init(&p, 100, 4, 0, &err), 0);
    ck_assert_int_eq(p.n_buckets, 7); /* 16, 32, ..., 112 */
    ck_assert_int_eq(batch_policy_init(&p, 100, 4, 1, &err), 0);
    ck_assert_int_eq(batch_capacity(&p, 77, 1), 77);
    ck_assert_int_eq(batch_policy_init(&p, 0, 4, 0, &err), -1);
}
END_TEST

enum { MAXN = 600 };
static int32_t g_ids[MAXN][600], g_mk[MAXN][64];

/* n random rows: lengths 8..maxlen, 1..min(40, len/2 - 1) markers after the CLS. */
static void rand_rows(laya_row *rows, int n, int maxlen)
{
    for (int i = 0; i < n; i++) {
        const int len = 8 + rand() % (maxlen - 7);
        int nm = 1 + rand() % (len / 2 - 1 < 40 ? len / 2 - 1 : 40);
        for (int t = 0; t < len; t++)
            g_ids[i][t] = rand() % 1000;
        for (int k = 0; k < nm; k++)
            g_mk[i][k] = 1 + 2 * k + (rand() % 2);
        rows[i] = (laya_row){g_ids[i], len, g_mk[i], nm, rand() % 3};
    }
}

START_TEST(cut_budgets_and_oversized_jobs)
{
    batch_policy p;
    layad_error err = {0};
    ck_assert_int_eq(batch_policy_init(&p, 4096, 16, 0, &err), 0);
    static laya_row rows[MAXN];
    int start[MAXN + 1], from[MAXN + 1];
    long cost[MAXN + 1];
    for (int round = 0; round < 20; round++) {
        const int n = 1 + rand() % MAXN;
        rand_rows(rows, n, 512);
        const int k = batch_cut(&p, rows, n, start, cost, from, &err);
        ck_assert_int_ge(k, 1);
        ck_assert_int_eq(start[0], 0);
        ck_assert_int_eq(start[k], n);
        long total = 0, sum = 0;
        for (int q = 0; q < k; q++) {
            long t = 0;
            ck_assert_int_gt(start[q + 1], start[q]);
            ck_assert_int_le(start[q + 1] - start[q], 16);
            for (int r = start[q]; r < start[q + 1]; r++)
                t += rows[r].len;
            ck_assert_int_le(t, 4096);
            total += batch_cost(&p, t, start[q + 1] - start[q]);
            sum += t;
        }
        ck_assert_int_eq(total, cost[n]); /* the DP's optimum is what the cut charges */
        /* greedy packing never beats the DP */
        long greedy = 0;
        for (int s = 0; s < n;) {
            const int c = batch_take(&p, rows + s, n - s);
            ck_assert_int_gt(c, 0);
            long t = 0;
            for (int r = s; r < s + c; r++)
                t += rows[r].len;
            greedy += batch_cost(&p, t, c);
            s += c;
        }
        ck_assert_int_le(cost[n], greedy);
        ck_assert_int_ge(k, (int)((sum + 4095) / 4096));
    }
    /* a row longer than a pack is refused (413), never cut */
    laya_row big = {g_ids[0], 5000, g_mk[0], 1, 0};
    ck_assert_int_eq(batch_cut(&p, &big, 1, start, cost, from, &err), -1);
    ck_assert_int_eq(err.status, 413);
    ck_assert_int_eq(batch_take(&p, &big, 1), 0);
    ck_assert_int_eq(batch_cut(&p, rows, 0, start, cost, from, &err), 0);
}
END_TEST

/* l's arrays carved out of one allocation for cap tokens and rcap rows (l's caps already set);
 * *gm gets the gathered mask's. Returns the allocation. */
static int32_t *layout_bufs(batch_layout *l, int cap, int rcap, uint8_t **gm)
{
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)(2 * (rcap + 1) + 3 * cap + 2 * l->tiles_cap + 2 * l->gcap));
    *gm = malloc((size_t)l->gcap);
    ck_assert(buf && *gm);
    int32_t *p = buf;
    l->cu = p, p += rcap + 1;
    l->goff = p, p += rcap + 1;
    l->ids = p, p += cap;
    l->pos = p, p += cap;
    l->ttype = p, p += cap;
    l->tiles = p, p += 2 * l->tiles_cap;
    l->gpos = p, p += l->gcap;
    l->grow = p;
    l->gmask = *gm;
    return buf;
}

/* The n rows as packed in l: each row's tokens, positions, types and gathered slots in order,
 * then padding (pad id 7) past the last row up to cap tokens and rcap rows. */
static void check_packed(const batch_layout *l, const laya_row *rows, int n, int cap, int rcap)
{
    int t = 0, g = 0, tiles = 0;
    for (int r = 0; r < n; r++) {
        ck_assert_int_eq(l->cu[r], t);
        ck_assert_int_eq(l->goff[r], g);
        ck_assert(memcmp(l->ids + t, rows[r].ids, sizeof(int32_t) * (size_t)rows[r].len) == 0);
        for (int i = 0; i < rows[r].len; i++) {
            ck_assert_int_eq(l->pos[t + i], i);
            ck_assert_int_eq(l->ttype[t + i], rows[r].qtype);
        }
        ck_assert_int_eq(l->gpos[g], t); /* the CLS */
        ck_assert_int_eq(l->gmask[g], 0);
        for (int k = 0; k < rows[r].n_markers; k++) {
            ck_assert_int_eq(l->gpos[g + 1 + k], t + rows[r].markers[k]);
            ck_assert_int_eq(l->grow[g + 1 + k], r);
            ck_assert_int_eq(l->gmask[g + 1 + k], 1);
        }
        t += rows[r].len;
        g += 1 + rows[r].n_markers;
        tiles += (rows[r].len + KN_ATT_TQ - 1) / KN_ATT_TQ;
    }
    ck_assert_int_eq(l->gathered, g);
    ck_assert_int_eq(l->n_tiles, tiles);
    for (int r = n; r <= rcap; r++) /* padding rows are empty */
        ck_assert(l->cu[r] == t && l->goff[r] == g);
    for (int i = t; i < cap; i++)
        ck_assert(l->ids[i] == 7 && l->pos[i] == 0 && l->ttype[i] == 0);
    for (int i = g; i < l->gcap; i++)
        ck_assert(l->grow[i] == -1 && l->gmask[i] == 0);
    for (int i = tiles; i < l->tiles_cap; i++)
        ck_assert_int_eq(l->tiles[2 * i], -1);
}

START_TEST(pack_layout)
{
    static laya_row rows[40];
    for (int round = 0; round < 50; round++) {
        const int n = 1 + rand() % 40;
        rand_rows(rows, n, 300);
        long tokens = 0;
        for (int i = 0; i < n; i++)
            tokens += rows[i].len;
        batch_layout l;
        const int cap = (int)tokens + rand() % 200, rcap = n + rand() % 8;
        batch_layout_caps(&l, cap, rcap, cap + rcap);
        ck_assert_int_eq(l.gcap, cap + rcap);
        ck_assert_int_eq(l.tiles_cap, cap / KN_ATT_TQ + rcap);
        uint8_t *gm;
        int32_t *buf = layout_bufs(&l, cap, rcap, &gm);
        layad_error err = {0};
        ck_assert_int_eq(batch_pack(rows, n, 7, &l, &err), 0);
        ck_assert_int_eq(l.tokens, tokens);
        check_packed(&l, rows, n, cap, rcap);
        /* too many rows or tokens for the caps: refused */
        batch_layout_caps(&l, (int)tokens - 1, rcap, cap + rcap);
        ck_assert_int_eq(batch_pack(rows, n, 7, &l, &err), -1);
        free(buf);
        free(gm);
    }
}
END_TEST

int main(void)
{
    const char *env = getenv("BATCH_TEST_SEED");
    const unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
    printf("test_batching: seed %u (replay: BATCH_TEST_SEED=%u)\n", seed, seed);
    srand(seed);
    Suite *s = suite_create("batching");
    TCase *t = tcase_create("policy");
    tcase_add_test(t, bucket_set);
    tcase_add_test(t, bucket_capacity);
    tcase_add_test(t, bucket_rows);
    tcase_add_test(t, gathered_classes);
    tcase_add_test(t, small_and_exact_sets);
    tcase_add_test(t, cut_budgets_and_oversized_jobs);
    tcase_add_test(t, pack_layout);
    suite_add_tcase(s, t);
    return tu_run(s);
}
