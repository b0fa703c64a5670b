/*
 * test_backend_cuda.c - the host-side parts of the GPU forward, in CI (no GPU).
 *
 * The shape-list parser (bucket arithmetic is tests/test_batching.c), the choice of a
 * bucket's kernel paths (fixed and timed), the parity sweep generator (288 rows over 60 states,
 * every type, lengths 10..max_len, deterministic, markers valid), the
 * comparison helpers the parity gates rest on (NaN fails, margins gate
 * argmax), the reference cache (round trip, stale keys rejected), the FLOP
 * and weight-byte counts against bench/README.md, and that creating the CUDA
 * backend without a device fails with a clear error instead of crashing.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/backend/cuda.h"
#include "model/checkpoint/checkpoint.h"
#include "tests/tools/gpu_eval.h"
#include "tests/tools/synth_rows.h"
#include "tests/lib/testutil.h"

START_TEST(warm_list)
{
    cuda_bucket w[4];
    layad_error err = {0};
    ck_assert_int_eq(cuda_bucket_list_parse("1x96, 8x512,64X512", w, 4, &err), 3);
    ck_assert(w[0].rows == 1 && w[0].tokens == 96 && w[2].rows == 64 && w[2].tokens == 512);
    ck_assert_int_eq(cuda_bucket_list_parse("", w, 4, &err), 0);
    ck_assert_int_eq(cuda_bucket_list_parse("8x", w, 4, &err), -1);
    ck_assert_int_eq(cuda_bucket_list_parse("8*512", w, 4, &err), -1);
    ck_assert_int_eq(cuda_bucket_list_parse("0x16", w, 4, &err), -1);
    ck_assert_int_eq(cuda_bucket_list_parse("1x16,1x32,1x48,1x64,1x80", w, 4, &err), -1);
    ck_assert_int_eq(cuda_bucket_list_parse("1x16y", w, 4, &err), -1);
    int dt = -1;
    ck_assert_int_eq(cuda_dtype_parse("bf16", &dt), 0);
    ck_assert_int_eq(dt, CUDA_DT_BF16);
    ck_assert_int_eq(cuda_dtype_parse("fp16", &dt), 0);
    ck_assert_int_eq(dt, CUDA_DT_FP16);
    ck_assert_int_eq(cuda_dtype_parse("fp8", &dt), -1);
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    ck_assert(o.dtype == CUDA_DT_FP16 && o.use_graphs == 1 && o.pdl == 1 && o.warm == NULL);
}
END_TEST

static laya_config fake_cfg(int vocab)
{
    laya_config c;
    memset(&c, 0, sizeof c);
    c.vocab = vocab;
    c.cls_id = vocab - 4;
    c.sep_id = vocab - 3;
    c.pad_id = vocab - 2;
    c.mask_id = vocab - 1;
    c.max_len = 512;
    return c;
}

/* The paths the thresholds give a bucket, and the choice among timed ones: the thresholds'
 * path stays within the margin, a path faster by more wins, ties keep the first, and the
 * fastest wins where the thresholds' path was not timed. */
START_TEST(path_choice)
{
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    ck_assert_int_eq(cuda_path_fixed(&o, 16), CUDA_PATH_SMALL | CUDA_PATH_FUSED);
    ck_assert_int_eq(cuda_path_fixed(&o, 32), CUDA_PATH_SMALL | CUDA_PATH_FUSED);
    ck_assert_int_eq(cuda_path_fixed(&o, 48), CUDA_PATH_SMALL | CUDA_PATH_FUSED);
    ck_assert_int_eq(cuda_path_fixed(&o, 64), CUDA_PATH_SMALL);
    ck_assert_int_eq(cuda_path_fixed(&o, 80), 0);
    o.small_gemm_tokens = 0;
    ck_assert_int_eq(cuda_path_fixed(&o, 16), CUDA_PATH_FUSED);
    ck_assert_str_eq(cuda_path_name(0), "cublaslt");
    ck_assert_str_eq(cuda_path_name(CUDA_PATH_SMALL | CUDA_PATH_FUSED), "small-split+fused-proj");
    ck_assert_str_eq(cuda_path_name(CUDA_PATHS), "?");
    const int path[4] = {0, 1, 2, 3};
    const double ms[4] = {1.000, 0.995, 0.986, 0.990};
    ck_assert_int_eq(cuda_path_pick(path, ms, 4, 1, 0.01), 1); /* 0.986 is within 1% of 0.995 */
    ck_assert_int_eq(cuda_path_pick(path, ms, 4, 0, 0.01), 2); /* 1.4% faster than 1.000 */
    ck_assert_int_eq(cuda_path_pick(path, ms, 4, 0, 0.03), 0);
    ck_assert_int_eq(cuda_path_pick(path, ms, 4, 2, 0.01), 2);
    ck_assert_int_eq(cuda_path_pick(path, ms, 3, 3, 0.01), 2); /* 3 not timed: the fastest */
    const double tie[3] = {0.9, 0.8, 0.8};
    ck_assert_int_eq(cuda_path_pick(path, tie, 3, 3, 0.01), 1);
    const int some[2] = {3, 1};
    const double two[2] = {0.50, 0.49};
    ck_assert_int_eq(cuda_path_pick(some, two, 2, 3, 0.01), 1); /* 0.49 is 2% below 0.50: index 1 */
    ck_assert_int_eq(cuda_path_pick(some, two, 2, 3, 0.05), 0);
}
END_TEST

START_TEST(parity_rows)
{
    laya_config c = fake_cfg(1280);
    synth_set s, t;
    layad_error err = {0};
    ck_assert_int_eq(synth_parity(&s, &c, 512, 42, &err), 0);
    ck_assert_int_eq(synth_parity(&t, &c, 512, 42, &err), 0);
    ck_assert_int_eq(s.n, 288);
    ck_assert(synth_hash(&s) == synth_hash(&t));
    int types[3] = {0}, minlen = 1 << 30, maxlen = 0, single = 0, json = 0, states[60] = {0};
    for (int i = 0; i < s.n; i++) {
        const laya_row *r = &s.rows[i];
        types[r->qtype]++;
        minlen = r->len < minlen ? r->len : minlen;
        maxlen = r->len > maxlen ? r->len : maxlen;
        single += r->n_markers == 1;
        json += s.json_state[i];
        states[s.state[i]]++;
        ck_assert_int_eq(r->ids[0], c.cls_id);
        ck_assert_int_eq(r->ids[r->len - 1], c.sep_id);
        for (int k = 0; k < r->n_markers; k++) {
            ck_assert(r->markers[k] > 0 && r->markers[k] < r->len);
            ck_assert_int_eq(r->ids[r->markers[k]], c.mask_id);
            if (k)
                ck_assert(r->markers[k] > r->markers[k - 1]);
        }
        for (int p = 0; p < r->len; p++)
            ck_assert(r->ids[p] >= 0 && r->ids[p] < c.vocab);
    }
    ck_assert(types[0] > 0 && types[1] > 0 && types[2] > 0);
    ck_assert_int_eq(minlen, 10);
    ck_assert_int_eq(maxlen, 512);
    ck_assert(single > 0 && json > 0 && json < s.n);
    ck_assert_int_eq(s.max_markers, 40);
    for (int i = 0; i < 60; i++)
        ck_assert(states[i] == 4 || states[i] == 5);
    synth_set u;
    ck_assert_int_eq(synth_parity(&u, &c, 512, 43, &err), 0);
    ck_assert(synth_hash(&u) != synth_hash(&s));
    synth_free(&s);
    synth_free(&t);
    synth_free(&u);

    ck_assert_int_eq(synth_uniform(&s, &c, 8, 83, 3, 1, &err), 0);
    ck_assert_int_eq(s.n, 8);
    for (int i = 0; i < 8; i++)
        ck_assert(s.rows[i].len == 83 && s.rows[i].n_markers == 3);
    synth_free(&s);
    ck_assert_int_eq(synth_uniform(&s, &c, 1, 10, 3, 1, &err), 0);
    ck_assert(s.rows[0].len == 10 && s.rows[0].n_markers >= 1);
    synth_free(&s);
    ck_assert_int_eq(synth_uniform(&s, &c, 1, 5, 3, 1, &err), -1);
}
END_TEST

START_TEST(compare_and_ref)
{
    laya_config c = fake_cfg(100);
    c.temperature[0] = c.temperature[1] = c.temperature[2] = 1.0;
    int32_t ids[4] = {96, 99, 99, 97}, mk[2] = {1, 2};
    laya_row rows[2] = {{ids, 4, mk, 2, 0}, {ids, 4, mk, 2, 2}};
    fwd_out x, y;
    layad_error err = {0};
    ck_assert_int_eq(fwd_out_alloc(&x, 2, 2, &err), 0);
    ck_assert_int_eq(fwd_out_alloc(&y, 2, 2, &err), 0);
    ck_assert(isnan(x.logits[0]) && isnan(x.act[3])); /* poisoned */
    float lx[4] = {1.0f, 0.0f, 0.5f, 0.5f}, ax[4] = {2, 1, 3, 3};
    memcpy(x.logits, lx, sizeof lx);
    memcpy(x.act, ax, sizeof ax);
    memcpy(y.logits, lx, sizeof lx);
    memcpy(y.act, ax, sizeof ax);
    ck_assert(fwd_out_identical(&x, &y));
    y.logits[2] = 0.4f; /* the tie in row 1 flips: not gated */
    y.logits[3] = 0.6f;
    delta_stats st[3] = {{0}}, all = {0};
    delta_accum(st, &all, &c, rows, &x, &y, 1e-2);
    ck_assert(!fwd_out_identical(&x, &y));
    ck_assert_int_eq(all.n, 2);
    ck_assert_int_eq(all.n_gated, 1);
    ck_assert_int_eq(all.n_gated_agree, 1);
    ck_assert(fabs(all.max_dlogit - 0.1) < 1e-6);
    ck_assert(st[0].max_dp == 0 && st[2].max_dp > 0.04);
    y.act[0] = NAN; /* NaN must fail every gate */
    delta_stats st2[3] = {{0}}, all2 = {0};
    delta_accum(st2, &all2, &c, rows, &x, &y, 1e-2);
    ck_assert(isnan(all2.max_dact_logit) && !(all2.max_dact_logit <= 1.0));
    json_t *j = delta_json(st, &all);
    ck_assert(json_object_get(j, "noul") && json_object_get(j, "all"));
    json_decref(j);

    char path[] = "/tmp/layad-ref-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    ck_assert_int_eq(ref_save(path, "abc", 77, &x, &err), 0);
    fwd_out z;
    ck_assert_int_eq(fwd_out_alloc(&z, 2, 2, &err), 0);
    ck_assert_int_eq(ref_load(path, "abc", 77, &z, &err), 1);
    ck_assert(fwd_out_identical(&x, &z));
    ck_assert_int_eq(ref_load(path, "abd", 77, &z, &err), 0);
    ck_assert_int_eq(ref_load(path, "abc", 78, &z, &err), 0);
    ck_assert_int_eq(ref_load("/nonexistent/ref", "abc", 77, &z, &err), 0);
    unlink(path);
    fwd_out_free(&x);
    fwd_out_free(&y);
    fwd_out_free(&z);
    double v[5] = {5, 1, 4, 2, 3};
    ck_assert(median(v, 5) == 3 && median(v, 4) == 3.0);
}
END_TEST

START_TEST(work_counts)
{
    /* bench/README.md: English geometry, 736.6 MFLOP per token in the linear
     * layers, ~737 MB of 16-bit weights per forward */
    laya_config c;
    memset(&c, 0, sizeof c);
    c.hidden = 1024;
    c.intermediate = 2624;
    c.n_layers = 28;
    c.head_layers = 2;
    c.local_attention = 128;
    for (int i = 0; i < 28; i++)
        c.layer_global[i] = i % 3 == 0;
    int one = 1;
    double f1 = forward_flops(&c, &one, 1);
    ck_assert(fabs(f1 / 1e6 - 736.6) < 0.1 + 30 * 4 * 1024 / 1e6);
    double wb = forward_weight_bytes(&c);
    ck_assert(fabs(wb / 1e6 - 737) < 5);
    int l83 = 83;
    double f83 = forward_flops(&c, &l83, 1);
    ck_assert(f83 / 83 > 0.736e9 && f83 / 83 < 0.78e9);
}
END_TEST

START_TEST(create_without_device)
{
    if (cuda_device_count() > 0) {
        printf("SKIP create_without_device: a CUDA device is present\n");
        return;
    }
    laya_checkpoint ck;
    layad_error err = {0};
    if (checkpoint_open(&ck, tu_tiny(), &err)) {
        printf("SKIP create_without_device: %s\n", err.msg);
        return;
    }
    cuda_backend_opts o;
    cuda_backend_opts_default(&o);
    laya_backend *b = cuda_backend_create(&ck, &o, &err);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(err.status, 500);
    ck_assert_msg(strstr(err.msg, "CUDA") != NULL, "unclear error: %s", err.msg);
    checkpoint_close(&ck);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("backend_cuda_host");
    TCase *t = tcase_create("host");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, warm_list);
    tcase_add_test(t, path_choice);
    tcase_add_test(t, parity_rows);
    tcase_add_test(t, compare_and_ref);
    tcase_add_test(t, work_counts);
    tcase_add_test(t, create_without_device);
    suite_add_tcase(s, t);
    return tu_run(s);
}
