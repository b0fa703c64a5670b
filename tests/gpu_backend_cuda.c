/*
 * gpu_backend_cuda.c - the GPU forward on the tiny checkpoint (make test-gpu; skips without a GPU).
 *
 * Against the CPU fp32 backend (itself checked against the official package):
 * fp16 max |dp| <= 5e-3 and argmax agreement where the fp32 margin exceeds 1e-2,
 * over rows of every type, 1..40 options, lengths 10..512. bf16 is compared
 * with the CPU fp32 forward of the same weights rounded to bf16 where the GPU
 * holds them in bf16 (tests/tools/ckpt_round.h): rounding the tiny checkpoint's
 * projection weights alone moves fp32 probabilities by 1.1e-2, so only the
 * GPU's own bf16 arithmetic can be bounded here, and its bounds are the fp16
 * ones times 8, the ratio of the unit roundoffs (2^-8 / 2^-11): max |dp| <=
 * 4e-2, argmax agreement where the margin exceeds 8e-2. (Measured on the
 * H200: fp16 3.4e-3, bf16 3.1e-2 against the rounded weights.) layad-dev
 * parity-fast holds fp16 to the absolute gates and bf16 to the official bf16
 * path on the same rows.
 * Beyond parity: graph replay bit-identical to eager launches and run to run;
 * packing changes nothing (a row's outputs are the same bits alone, packed
 * with others at any place, or next to padding; checked with the split branch
 * GEMMs off, which change a short row's last bits when it is packed into a
 * larger bucket); short rows one per forward, through the split branch GEMMs,
 * meet the fp16 gates and replay bit for bit; results come back in the
 * caller's order; the single-option case and K = 40 in one pack; a bucket
 * outside the warm-up set runs eagerly, is captured by ops->idle and then
 * replayed with the same bits; bad rows are refused before anything reaches
 * the device.
 * Under compute-sanitizer (scripts/device/README.md) three variables make the suite fit a call:
 * LAYAD_TEST_NO_TUNE, LAYAD_TEST_LAZY_WARM and LAYAD_TEST_ROW_STEP (each explained below).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda.h"
#include "model/backend/batching.h"
#include "model/backend/cpu.h"
#include "model/backend/cuda.h"
#include "model/checkpoint/checkpoint.h"
#include "tests/tools/ckpt_round.h"
#include "tests/tools/gpu_eval.h"
#include "tests/tools/synth_rows.h"
#include "tests/lib/testutil.h"

static laya_checkpoint g_ck;
static int g_have;

static void setup(void)
{
    layad_error err = {0};
    static int said; /* each case runs this setup; say why it skips once */
    g_have = cuda_device_count() > 0 && !checkpoint_open(&g_ck, tu_tiny(), &err);
    if (!g_have && !said++)
        printf("SKIP gpu_backend_cuda: %s\n", cuda_device_count() ? err.msg : "no CUDA device");
}

static void teardown(void)
{
    if (g_have)
        checkpoint_close(&g_ck);
}

/* The backend of g_ck with options o; creating it must succeed. LAYAD_TEST_NO_TUNE=1 turns
 * cuBLASLt's tuning off (for racecheck, whose host memory the tuner's candidate kernels
 * outgrow). */
static laya_backend *create(const cuda_backend_opts *o)
{
    layad_error err = {0};
    cuda_backend_opts c = *o;
    if (getenv("LAYAD_TEST_NO_TUNE"))
        c.gemm_tune = 0;
    laya_backend *b = cuda_backend_create(&g_ck, &c, &err);
    ck_assert_msg(b != NULL, "create: %s", err.msg);
    return b;
}

/* LAYAD_TEST_LAZY_WARM=1 (for racecheck, under which warming every bucket outlasts a device
 * call): a backend that would warm every bucket warms only the smallest, and a graph forward
 * whose bucket has no graph yet lets ops->idle capture it, as the worker does, then runs
 * again from the graph; so every graph forward still replays a graph. Backends that time
 * their kernel paths do so in one round of one replay. */
static int lazy_warm(void)
{
    return getenv("LAYAD_TEST_LAZY_WARM") != NULL;
}

/* A backend warming every bucket (warm NULL; lazily, see above) or only those of the given
 * shapes; split_tokens / fused_tokens / wo_tokens < 0: the defaults (cuda_backend_opts.split_tokens,
 * .fused_proj_tokens, .att_wo_tokens). */
static laya_backend *make_opts(int dtype, const cuda_bucket *warm, int n_warm, int split_tokens, int fused_tokens,
                               int wo_tokens)
{
    static const cuda_bucket smallest[1] = {{1, 8, 0}};
    if (!warm && lazy_warm()) {
        warm = smallest;
        n_warm = 1;
    }
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    if (split_tokens >= 0)
        o.split_tokens = split_tokens;
    if (fused_tokens >= 0)
        o.fused_proj_tokens = fused_tokens;
    if (wo_tokens >= 0)
        o.att_wo_tokens = wo_tokens;
    o.dtype = dtype;
    o.warm = warm;
    o.n_warm = n_warm;
    return create(&o);
}

static laya_backend *make(int dtype, const cuda_bucket *warm, int n_warm)
{
    return make_opts(dtype, warm, n_warm, -1, -1, -1);
}

static void fwd_once(laya_backend *b, const laya_row *rows, int n, fwd_out *o, int graph)
{
    layad_error err = {0};
    int rc = cuda_backend_forward_mode(b, rows, n, o->K, o->logits, o->act, graph, &err);
    ck_assert_msg(rc == 0, "forward: %s", err.msg);
}

static void fwd(laya_backend *b, const laya_row *rows, int n, fwd_out *o, int graph)
{
    cuda_backend_stats before, after;
    cuda_backend_stats_get(b, &before);
    fwd_once(b, rows, n, o, graph);
    if (!graph || !lazy_warm())
        return;
    cuda_backend_stats_get(b, &after);
    if (after.graph_misses == before.graph_misses)
        return;
    while (b->ops->idle(b))
        ;
    fwd_once(b, rows, n, o, graph);
    cuda_backend_stats replayed;
    cuda_backend_stats_get(b, &replayed);
    ck_assert_msg(replayed.graph_misses == after.graph_misses, "a graph forward ran eagerly after its late capture");
}

/* LAYAD_TEST_ROW_STEP=N (for racecheck, under which 288 rows of three forwards each outrun a
 * device call): the cases that run rows one by one take every Nth row only. */
static int row_step(void)
{
    const char *e = getenv("LAYAD_TEST_ROW_STEP");
    const int step = e ? atoi(e) : 1;
    return step > 1 ? step : 1;
}

/* Every row_step()th row of s only, kept in place. */
static void thin_rows(synth_set *s)
{
    const int step = row_step();
    if (step == 1)
        return;
    int n = 0;
    for (int i = 0; i < s->n; i += step, n++) {
        s->rows[n] = s->rows[i];
        s->state[n] = s->state[i];
        s->json_state[n] = s->json_state[i];
    }
    printf("LAYAD_TEST_ROW_STEP %d: %d of %d rows\n", step, n, s->n);
    s->n = n;
}

static void parity_dtype(int dtype, double dp_limit, double margin)
{
    if (!g_have)
        return;
    synth_set s;
    layad_error err = {0};
    ck_assert_int_eq(synth_parity(&s, &g_ck.cfg, g_ck.cfg.max_len, 99, &err), 0);
    thin_rows(&s);
    fwd_out ref, eager, graph, again;
    ck_assert(!fwd_out_alloc(&ref, s.n, s.max_markers, &err) &&
              !fwd_out_alloc(&eager, s.n, s.max_markers, &err) &&
              !fwd_out_alloc(&graph, s.n, s.max_markers, &err) &&
              !fwd_out_alloc(&again, s.n, s.max_markers, &err));
    /* the reference: CPU fp32 on the served weights (bf16: rounded copy) */
    laya_checkpoint rck, *refck = &g_ck;
    char dir[] = "/tmp/layad-test-bf16w-XXXXXX";
    if (dtype == CUDA_DT_BF16) {
        ck_assert(mkdtemp(dir) != NULL);
        ck_assert_msg(!checkpoint_write_bf16_rounded(&g_ck, dir, &err), "%s", err.msg);
        ck_assert_msg(!checkpoint_open(&rck, dir, &err), "%s", err.msg);
        refck = &rck;
    }
    laya_backend *cpu = cpu_backend_create(refck, 8, 0, &err);
    ck_assert_msg(cpu != NULL, "%s", err.msg);
    ck_assert(!cpu->ops->forward(cpu, s.rows, s.n, ref.K, ref.logits, ref.act, &err));
    cpu->ops->destroy(cpu);
    if (refck == &rck) {
        checkpoint_close(&rck);
        static const char *files[] = {"model.safetensors", "rl_agent_config.json",
                                      "encoder/config.json", "tokenizer/tokenizer.json",
                                      "tokenizer/tokenizer_config.json", "encoder", "tokenizer", ""};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            char p[128];
            snprintf(p, sizeof p, "%s/%s", dir, files[i]);
            remove(p);
        }
    }
    laya_backend *b = make(dtype, NULL, 0);
    fwd(b, s.rows, s.n, &eager, 0);
    fwd(b, s.rows, s.n, &graph, 1);
    fwd(b, s.rows, s.n, &again, 1);
    ck_assert_msg(fwd_out_identical(&eager, &graph), "graph replay != eager");
    ck_assert_msg(fwd_out_identical(&graph, &again), "graph replay not reproducible");
    delta_stats st[3] = {{0}}, all = {0};
    delta_accum(st, &all, &g_ck.cfg, s.rows, &ref, &graph, margin);
    printf("%s vs cpu fp32%s: max|dp| %.3e (rows' mean %.3e) max|dlogit| %.3e max|dact| %.3e argmax %d/%d "
           "gated %d/%d\n",
           cuda_dtype_name(dtype), dtype == CUDA_DT_BF16 ? " (bf16-rounded weights)" : "", all.max_dp,
           all.n ? all.sum_dp / all.n : 0, all.max_dlogit, all.max_dact_logit, all.n_agree, all.n,
           all.n_gated_agree, all.n_gated);
    ck_assert_msg(all.max_dp <= dp_limit, "max |dp| %g > %g", all.max_dp, dp_limit);
    ck_assert_int_eq(all.n_gated_agree, all.n_gated);
    /* unused slots: exactly -1e4 */
    for (int i = 0; i < s.n; i++)
        for (int k = s.rows[i].n_markers; k < graph.K; k++)
            ck_assert(graph.logits[(size_t)i * graph.K + k] == LAYA_MASK_FILL);
    b->ops->destroy(b);
    fwd_out_free(&ref);
    fwd_out_free(&eager);
    fwd_out_free(&graph);
    fwd_out_free(&again);
    synth_free(&s);
}

START_TEST(parity_fp16)
{
    parity_dtype(CUDA_DT_FP16, 5e-3, 1e-2);
}
END_TEST

START_TEST(parity_bf16)
{
    parity_dtype(CUDA_DT_BF16, 4e-2, 8e-2);
}
END_TEST

/* Row i of x equals row j of y, bit for bit. */
static int same_row(const fwd_out *x, int i, const fwd_out *y, int j, int nm)
{
    return !memcmp(x->logits + (size_t)i * x->K, y->logits + (size_t)j * y->K, nm * sizeof(float)) &&
           !memcmp(x->act + (size_t)i * 2, y->act + (size_t)j * 2, 2 * sizeof(float));
}

START_TEST(packing_order_and_k)
{
    if (!g_have)
        return;
    layad_error err = {0};
    /* Without the split branch GEMMs, the fused projections and the fused attention
     * out-projection: with them a pack of at most 128 (48, 48) tokens sums its products in another
     * order, so a short row alone and the same row in a larger pack differ in the last bits
     * (split_branch_rows, fused_proj_rows, att_wo_rows bound that). */
    laya_backend *b = make_opts(CUDA_DT_FP16, NULL, 0, 0, 0, 0);
    /* each row alone equals the same row packed with the others, in two orders */
    synth_set p;
    ck_assert_int_eq(synth_parity(&p, &g_ck.cfg, 300, 7, &err), 0);
    laya_row fw[24], rv[24];
    for (int i = 0; i < 24; i++)
        fw[i] = p.rows[p.n - 1 - 10 * i];
    for (int i = 0; i < 24; i++)
        rv[i] = fw[23 - i];
    fwd_out fo, ro, one;
    ck_assert(!fwd_out_alloc(&fo, 24, 40, &err) && !fwd_out_alloc(&ro, 24, 40, &err) &&
              !fwd_out_alloc(&one, 1, 40, &err));
    fwd(b, fw, 24, &fo, 1);
    fwd(b, rv, 24, &ro, 1);
    const int step = row_step();
    for (int i = 0; i < 24; i++) {
        ck_assert_msg(same_row(&fo, i, &ro, 23 - i, fw[i].n_markers), "row %d moved in its pack", i);
        if (i % step)
            continue;
        fwd(b, &fw[i], 1, &one, 1);
        ck_assert_msg(same_row(&fo, i, &one, 0, fw[i].n_markers), "row %d alone != packed", i);
    }
    fwd_out_free(&fo);
    fwd_out_free(&ro);
    fwd_out_free(&one);

    /* single option alone (K 1) and a 40-option row next to it */
    laya_row single = p.rows[0], many = {0};
    for (int i = 0; i < p.n; i++)
        if (p.rows[i].n_markers == 40)
            many = p.rows[i];
    ck_assert_int_eq(single.n_markers, 1);
    ck_assert_int_eq(many.n_markers, 40);
    fwd_out a, c;
    ck_assert(!fwd_out_alloc(&a, 1, 1, &err) && !fwd_out_alloc(&c, 2, 40, &err));
    fwd(b, &single, 1, &a, 1);
    laya_row pair[2] = {single, many};
    fwd(b, pair, 2, &c, 1);
    ck_assert(isfinite(a.logits[0]) && isfinite(a.act[0]) && isfinite(a.act[1]));
    ck_assert(a.logits[0] == c.logits[0]);
    for (int k = 0; k < 40; k++)
        ck_assert(isfinite(c.logits[40 + k]) && c.logits[40 + k] != LAYA_MASK_FILL);
    for (int k = 1; k < 40; k++)
        ck_assert(c.logits[k] == LAYA_MASK_FILL);
    fwd_out_free(&a);
    fwd_out_free(&c);
    synth_free(&p);
    cuda_backend_stats st;
    cuda_backend_stats_get(b, &st);
    /* every bucket was warmed, or (lazily) captured after its first miss */
    ck_assert_int_eq(st.graph_misses, lazy_warm() ? st.late_captures : 0);
    b->ops->destroy(b);
}
END_TEST

/* Rows of at most max_tokens, one per forward, through b (an option on) and off (the same
 * without it), both destroyed here: graph replay equals eager launches bit for bit, the
 * answers meet the fp16 gates against the CPU fp32 forward, and some row's bits differ from
 * off's, or the option did not run. what names the option in messages. */
static void one_row_forwards(laya_backend *b, laya_backend *off, int max_tokens, const char *what)
{
    layad_error err = {0};
    synth_set s;
    ck_assert_int_eq(synth_parity(&s, &g_ck.cfg, max_tokens, 5, &err), 0);
    thin_rows(&s);
    fwd_out ref, e, g, one_e, one_g, one_u;
    ck_assert(!fwd_out_alloc(&ref, s.n, s.max_markers, &err) && !fwd_out_alloc(&e, s.n, s.max_markers, &err) &&
              !fwd_out_alloc(&g, s.n, s.max_markers, &err) && !fwd_out_alloc(&one_e, 1, s.max_markers, &err) &&
              !fwd_out_alloc(&one_g, 1, s.max_markers, &err) && !fwd_out_alloc(&one_u, 1, s.max_markers, &err));
    laya_backend *cpu = cpu_backend_create(&g_ck, 8, 0, &err);
    ck_assert_msg(cpu != NULL, "%s", err.msg);
    ck_assert(!cpu->ops->forward(cpu, s.rows, s.n, ref.K, ref.logits, ref.act, &err));
    cpu->ops->destroy(cpu);
    const size_t K = (size_t)s.max_markers;
    int differs = 0;
    for (int i = 0; i < s.n; i++) {
        fwd(b, &s.rows[i], 1, &one_e, 0);
        fwd(b, &s.rows[i], 1, &one_g, 1);
        fwd(off, &s.rows[i], 1, &one_u, 1);
        differs |= !fwd_out_identical(&one_g, &one_u);
        memcpy(e.logits + i * K, one_e.logits, K * sizeof(float));
        memcpy(g.logits + i * K, one_g.logits, K * sizeof(float));
        memcpy(e.act + 2 * i, one_e.act, 2 * sizeof(float));
        memcpy(g.act + 2 * i, one_g.act, 2 * sizeof(float));
    }
    ck_assert_msg(fwd_out_identical(&e, &g), "%s: graph replay != eager", what);
    ck_assert_msg(differs, "%s: no row differs from the backend without it: it did not run", what);
    delta_stats st[3] = {{0}}, all = {0};
    delta_accum(st, &all, &g_ck.cfg, s.rows, &ref, &g, 1e-2);
    printf("%s, %d rows of <= %d tokens one per forward, vs cpu fp32: max|dp| %.3e max|dlogit| %.3e gated %d/%d\n",
           what, s.n, max_tokens, all.max_dp, all.max_dlogit, all.n_gated_agree, all.n_gated);
    ck_assert_msg(all.max_dp <= 5e-3, "%s: max |dp| %g > 5e-3", what, all.max_dp);
    ck_assert_int_eq(all.n_gated_agree, all.n_gated);
    fwd_out *outs[] = {&ref, &e, &g, &one_e, &one_g, &one_u};
    for (int i = 0; i < 6; i++)
        fwd_out_free(outs[i]);
    synth_free(&s);
    b->ops->destroy(b);
    off->ops->destroy(off);
}

/* Short rows, one per forward, so every pack is small enough for the split branch GEMMs
 * (kn_gemm_split + kn_layernorm_parts; parity_fp16's one pack is not): graph replay equals
 * eager launches bit for bit, and the answers meet the fp16 gates against the CPU fp32
 * forward. Against the same backend without the split some row must differ, or the split
 * did not run (they differ by as much as two fp16 forwards do: 2.6e-3 in max |dp| on the
 * H200, a 16-bit rounding of the normalized activations flipping now and then). */
START_TEST(split_branch_rows)
{
    if (!g_have)
        return;
    one_row_forwards(make(CUDA_DT_FP16, NULL, 0), make_opts(CUDA_DT_FP16, NULL, 0, 0, -1, -1), 100,
                     "split branch GEMMs");
}
END_TEST

/* Wqkv + RoPE and Wi + GeGLU in one kernel each (fused_proj_tokens) on short rows, one per
 * forward, as one_row_forwards checks them (the fused products sum in another order than
 * cuBLASLt's, so some row differs from the backend without them). */
START_TEST(fused_proj_rows)
{
    if (!g_have || !kn_proj_small_ok(KN_F16, 16, g_ck.cfg.hidden))
        return;
    one_row_forwards(make_opts(CUDA_DT_FP16, NULL, 0, -1, KN_PROJ_SMALL_MAXM, -1),
                     make_opts(CUDA_DT_FP16, NULL, 0, -1, 0, -1),
                     60, "fused projections");
}
END_TEST

/* The attention and its out-projection in one launch (att_wo_tokens) on rows of up to 120
 * tokens, one per forward (a pack of at most two query tiles), as one_row_forwards checks
 * them (the per-head parts sum in another order than cuBLASLt's split product). */
START_TEST(att_wo_rows)
{
    if (!g_have)
        return;
    one_row_forwards(make_opts(CUDA_DT_FP16, NULL, 0, -1, -1, 128), make_opts(CUDA_DT_FP16, NULL, 0, -1, -1, 0), 120,
                     "attention + out-projection");
}
END_TEST

/* A backend warming the buckets of warm, with cuBLASLt's heuristic algorithms (untimed: the
 * same in every backend) and path_tune_tokens tune; T > 0: the own-kernel paths of buckets
 * up to T fixed by the thresholds as paths says, else the default thresholds. */
static laya_backend *make_paths(const cuda_bucket *warm, int n_warm, int T, int paths, int tune)
{
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    o.warm = warm;
    o.n_warm = n_warm;
    o.gemm_tune = 0;
    if (T > 0) {
        o.small_gemm_tokens = paths & CUDA_PATH_SMALL ? T : 0;
        o.fused_proj_tokens = paths & CUDA_PATH_FUSED ? T : 0;
    }
    o.path_tune_tokens = tune;
    if (lazy_warm()) /* that paths are timed is checked here, not how precisely */
        o.path_rounds = o.path_replays = 1;
    return create(&o);
}

/* The n rows of s on a eagerly and from its graph, then on b from its graph: the three bit for
 * bit equal (what: the second comparison, for the message). */
static void expect_three_same(laya_backend *a, laya_backend *b, const synth_set *s, int n, const char *what)
{
    layad_error err = {0};
    fwd_out e, g, f;
    ck_assert(!fwd_out_alloc(&e, n, 3, &err) && !fwd_out_alloc(&g, n, 3, &err) && !fwd_out_alloc(&f, n, 3, &err));
    fwd(a, s->rows, n, &e, 0);
    fwd(a, s->rows, n, &g, 1);
    fwd(b, s->rows, n, &f, 1);
    ck_assert_msg(fwd_out_identical(&e, &g), "%s: graph replay != eager", what);
    ck_assert_msg(fwd_out_identical(&g, &f), "%s", what);
    fwd_out_free(&e);
    fwd_out_free(&g);
    fwd_out_free(&f);
}

/* Paths chosen by timing at warm-up (path_tune_tokens): each of the buckets of 16, 32 and
 * 48 tokens timed two or more paths and kept a timed one; a row in it then gives, graph
 * and eager alike, bit for bit what a backend whose thresholds fix the same paths gives. */
START_TEST(timed_paths)
{
    if (!g_have)
        return;
    layad_error err = {0};
    const cuda_bucket warm[3] = {{1, 16, 0}, {1, 32, 0}, {1, 48, 0}};
    laya_backend *b = make_paths(warm, 3, 0, 0, 48);
    cuda_backend_info info;
    ck_assert_int_eq(cuda_backend_info_get(b, &info, &err), 0);
    ck_assert_int_eq(info.n_warm, 3);
    for (int i = 0; i < 3; i++) {
        const int T = info.warm_tokens[i], kept = info.warm_path[i];
        int timed = 0;
        for (int p = 0; p < CUDA_PATHS; p++)
            timed += info.warm_path_ms[i][p] > 0;
        printf("timed paths, %d tokens: %d timed (ms %.4f / %.4f / %.4f / %.4f), kept %d\n", T, timed,
               info.warm_path_ms[i][0], info.warm_path_ms[i][1], info.warm_path_ms[i][2], info.warm_path_ms[i][3],
               kept);
        ck_assert_msg(timed >= 2, "%d tokens: %d paths timed", T, timed);
        ck_assert_msg(kept >= 0 && kept < CUDA_PATHS && info.warm_path_ms[i][kept] > 0, "%d tokens: kept %d", T,
                      kept);
        synth_set s;
        ck_assert_int_eq(synth_uniform(&s, &g_ck.cfg, 1, T - 3, 3, 17 + i, &err), 0);
        laya_backend *fixed = make_paths(&warm[i], 1, T, kept, 0);
        char what[64];
        snprintf(what, sizeof what, "%d tokens: timed paths != the same paths fixed", T);
        expect_three_same(b, fixed, &s, 1, what);
        fixed->ops->destroy(fixed);
        synth_free(&s);
    }
    b->ops->destroy(b);
}
END_TEST

/* A backend warming only the bucket of shape sh, with att_pack_tokens as given. */
static laya_backend *make_att(const cuda_bucket *sh, int att_pack_tokens)
{
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    o.warm = sh;
    o.n_warm = 1;
    o.att_pack_tokens = att_pack_tokens;
    return create(&o);
}

/* A pack of few query tiles in a bucket whose capacity takes one group of warps a block runs
 * its attention in two groups over kn_attention_pack_tiles tiles (att_pack_tokens): graph and
 * eager alike, bit for bit what the same pack gives with one group. The pack is n rows of 480
 * tokens (8 tiles each), n the fewest whose bucket's capacity exceeds those tiles. */
START_TEST(att_pack_forms)
{
    if (!g_have)
        return;
    layad_error err = {0};
    const int p = kn_attention_pack_tiles(g_ck.cfg.hidden), len = 480;
    ck_assert_int_gt(p, 0);
    cuda_backend_opts d;
    cuda_backend_opts_default(&d);
    batch_policy pol;
    ck_assert_int_eq(batch_policy_init(&pol, d.max_batch_rows * g_ck.cfg.max_len, d.max_batch_rows, 0, &err), 0);
    int n = 1;
    for (; n <= d.max_batch_rows; n++) {
        const int T = batch_capacity(&pol, (long)n * len, n);
        if (T > 0 && T / KN_ATT_TQ + batch_rows_cap(&pol, T) > p)
            break;
    }
    if (n > d.max_batch_rows || n * 8 > p) {
        printf("SKIP att_pack_forms: no bucket of %d-token rows between %d tiles and its capacity\n", len, p);
        return;
    }
    const cuda_bucket sh[1] = {{n, len, 0}};
    laya_backend *on = make_att(sh, 1 << 20), *off = make_att(sh, 0);
    synth_set s;
    ck_assert_int_eq(synth_uniform(&s, &g_ck.cfg, n, len, 3, 23, &err), 0);
    expect_three_same(on, off, &s, n, "two groups != one group");
    cuda_backend_stats son, soff;
    cuda_backend_stats_get(on, &son);
    cuda_backend_stats_get(off, &soff);
    printf("attention forms: %d rows of %d tokens (%d tiles of at most %d), two-group runs %lld / %lld\n", n, len,
           n * 8, p, son.att_pack_runs, soff.att_pack_runs);
    ck_assert_int_eq(son.att_pack_runs, 2);
    ck_assert_int_eq(son.graph_hits, 1);
    ck_assert_int_eq(soff.att_pack_runs, 0);
    on->ops->destroy(on);
    off->ops->destroy(off);
    synth_free(&s);
}
END_TEST

START_TEST(late_capture)
{
    if (!g_have)
        return;
    layad_error err = {0};
    const cuda_bucket warm[1] = {{1, 40, 0}};
    laya_backend *b = make(CUDA_DT_FP16, warm, 1);
    synth_set s;
    ck_assert_int_eq(synth_uniform(&s, &g_ck.cfg, 3, 300, 3, 11, &err), 0);
    fwd_out e, g1, g2;
    ck_assert(!fwd_out_alloc(&e, 3, 3, &err) && !fwd_out_alloc(&g1, 3, 3, &err) &&
              !fwd_out_alloc(&g2, 3, 3, &err));
    fwd(b, s.rows, 3, &e, 0);
    fwd_once(b, s.rows, 3, &g1, 1); /* not warmed: eager, marked for capture (never lazily captured) */
    cuda_backend_stats st;
    cuda_backend_stats_get(b, &st);
    ck_assert_int_eq(st.graph_misses, 1);
    ck_assert_int_eq(b->ops->idle(b), 1); /* captures it */
    ck_assert_int_eq(b->ops->idle(b), 0); /* nothing left */
    fwd(b, s.rows, 3, &g2, 1);
    cuda_backend_stats_get(b, &st);
    ck_assert_int_eq(st.late_captures, 1);
    ck_assert_int_eq(st.graph_hits, 1);
    ck_assert_msg(fwd_out_identical(&g1, &e) && fwd_out_identical(&g2, &e), "graph != eager");
    cuda_backend_info info;
    ck_assert_int_eq(cuda_backend_info_get(b, &info, &err), 0);
    ck_assert(info.name[0] && info.weight_bytes > 0 && info.act_bytes > 0 && info.mem_total > 0);
    ck_assert_int_eq(info.n_warm, 1);
    fwd_out_free(&e);
    fwd_out_free(&g1);
    fwd_out_free(&g2);
    synth_free(&s);
    b->ops->destroy(b);
}
END_TEST

START_TEST(bad_rows)
{
    if (!g_have)
        return;
    layad_error err = {0};
    const cuda_bucket warm[1] = {{1, 8, 0}};
    laya_backend *b = make(CUDA_DT_FP16, warm, 1);
    int32_t ids[12] = {g_ck.cfg.cls_id, 5, 6, g_ck.cfg.mask_id, 7, g_ck.cfg.sep_id};
    int32_t mk[1] = {3};
    laya_row r = {ids, 6, mk, 1, 0};
    float lg[1], act[2];
    ck_assert_int_eq(b->ops->forward(b, &r, 1, 1, lg, act, &err), 0);
    ids[2] = g_ck.cfg.vocab; /* out of the vocabulary */
    ck_assert_int_eq(b->ops->forward(b, &r, 1, 1, lg, act, &err), -1);
    ids[2] = 6;
    mk[0] = 6; /* marker past the row */
    ck_assert_int_eq(b->ops->forward(b, &r, 1, 1, lg, act, &err), -1);
    mk[0] = 3;
    r.len = g_ck.cfg.max_len + 1; /* longer than max_len */
    ck_assert_int_eq(b->ops->forward(b, &r, 1, 1, lg, act, &err), -1);
    r.len = 6;
    ck_assert_int_eq(b->ops->forward(b, &r, 1, 1, lg, act, &err), 0); /* still serving */
    b->ops->destroy(b);
}
END_TEST

/* Every forward reports its stages, the copies timed by events inside the
 * captured graph as well as in an eager run. */
START_TEST(forward_timing)
{
    if (!g_have)
        return;
    const cuda_bucket warm[1] = {{1, 8, 0}};
    laya_backend *b = make(CUDA_DT_FP16, warm, 1);
    int32_t ids[6] = {g_ck.cfg.cls_id, 5, 6, g_ck.cfg.mask_id, 7, g_ck.cfg.sep_id};
    int32_t mk[1] = {3};
    laya_row r = {ids, 6, mk, 1, 0};
    float lg[1], act[2];
    for (int graph = 1; graph >= 0; graph--) {
        layad_error err = {0};
        b->last = (laya_fwd_timing){-1, -1, -1, -1, -1, -1, -1};
        ck_assert_int_eq(cuda_backend_forward_mode(b, &r, 1, 1, lg, act, graph, &err), 0);
        const laya_fwd_timing t = b->last;
        ck_assert_msg(t.stage_s > 0 && t.run_s > 0 && t.unpack_s >= 0 && t.h2d_s > 0 && t.d2h_s > 0,
                      "graph %d: stage %g run %g h2d %g d2h %g unpack %g", graph, t.stage_s, t.run_s, t.h2d_s,
                      t.d2h_s, t.unpack_s);
        ck_assert_msg(t.launch_s > 0 && t.launch_s < t.run_s && t.gpu_s < t.run_s, "graph %d: launch %g gpu %g run %g",
                      graph, t.launch_s, t.gpu_s, t.run_s);
        ck_assert_msg(t.h2d_s + t.d2h_s < t.gpu_s, "graph %d: copies %g + %g outside the span %g", graph, t.h2d_s,
                      t.d2h_s, t.gpu_s);
    }
    b->ops->destroy(b);
}
END_TEST

int main(void)
{
    /* a case a test, named as the test, so that CK_RUN_CASE runs one alone (under
     * compute-sanitizer's racecheck the whole suite outruns a device call's time limit) */
    const TTest *tests[] = {parity_fp16,    parity_bf16,    packing_order_and_k, split_branch_rows,
                            fused_proj_rows, att_wo_rows,   att_pack_forms,      timed_paths,
                            late_capture,   bad_rows,       forward_timing};
    Suite *s = suite_create("gpu_backend_cuda");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        TCase *t = tcase_create(tests[i]->name);
        tcase_add_unchecked_fixture(t, setup, teardown);
        tcase_set_timeout(t, 300);
        tcase_add_test(t, tests[i]);
        suite_add_tcase(s, t);
    }
    SRunner *r = srunner_create(s);
    srunner_set_fork_status(r, CK_NOFORK);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed != 0;
}
