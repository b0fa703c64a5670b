/*
 * gpu_eval.c - comparison, timing and reference-cache helpers of the GPU
 * commands (contract in gpu_eval.h).
 */
#include "tests/tools/gpu_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fwd_out_alloc(fwd_out *o, int n, int K, layad_error *err)
{
    o->n = n;
    o->K = K;
    o->logits = malloc((size_t)n * K * sizeof *o->logits);
    o->act = malloc((size_t)n * LAYA_N_ACT * sizeof *o->act);
    if (!o->logits || !o->act) {
        fwd_out_free(o);
        return layad_fail(err, 500, "out of memory");
    }
    /* poison: a forward that skips a row shows as NaN, never as a plausible value */
    for (size_t i = 0; i < (size_t)n * K; i++)
        o->logits[i] = NAN;
    for (size_t i = 0; i < (size_t)n * LAYA_N_ACT; i++)
        o->act[i] = NAN;
    return 0;
}

void fwd_out_free(fwd_out *o)
{
    free(o->logits);
    free(o->act);
    o->logits = o->act = NULL;
}

void row_probs(const laya_config *cfg, const laya_row *row, const float *logits, double *p)
{
    const int nm = row->n_markers;
    const double T = checkpoint_temperature(cfg, row->qtype, nm);
    double mx = -INFINITY, sum = 0;
    for (int k = 0; k < nm; k++)
        mx = fmax(mx, logits[k] / T);
    for (int k = 0; k < nm; k++)
        sum += (p[k] = exp(logits[k] / T - mx));
    for (int k = 0; k < nm; k++)
        p[k] /= sum;
}

static double act_prob(const float *a)
{
    double m = fmax(a[0], a[1]);
    double e0 = exp(a[0] - m), e1 = exp(a[1] - m);
    return e0 / (e0 + e1);
}

static void stat_add(delta_stats *d, double dl, double dp, double dal, double dap, int agree,
                     int gated)
{
    /* NaN anywhere must fail the gates: fmax would drop it */
    d->max_dlogit = isnan(dl) || isnan(d->max_dlogit) ? NAN : fmax(d->max_dlogit, dl);
    d->max_dp = isnan(dp) || isnan(d->max_dp) ? NAN : fmax(d->max_dp, dp);
    d->max_dact_logit = isnan(dal) || isnan(d->max_dact_logit) ? NAN : fmax(d->max_dact_logit, dal);
    d->max_dact_p = isnan(dap) || isnan(d->max_dact_p) ? NAN : fmax(d->max_dact_p, dap);
    d->sum_dp += dp; /* NaN stays NaN */
    d->n_dp_over_1e2 += !(dp <= 0.01);
    d->n++;
    d->n_agree += agree;
    d->n_gated += gated;
    d->n_gated_agree += gated && agree;
}

static int argmax(const double *p, int n)
{
    int best = 0;
    for (int k = 1; k < n; k++)
        if (p[k] > p[best])
            best = k;
    return best;
}

void delta_accum(delta_stats st[3], delta_stats *all, const laya_config *cfg,
                 const laya_row *rows, const fwd_out *x, const fwd_out *y, double margin)
{
    enum { MAX_OPTS = 1024 }; /* more than any row can carry */
    double px[MAX_OPTS], py[MAX_OPTS];
    for (int i = 0; i < x->n; i++) {
        const laya_row *r = &rows[i];
        if (r->n_markers > MAX_OPTS)
            continue;
        const int nm = r->n_markers;
        const float *lx = x->logits + (size_t)i * x->K, *ly = y->logits + (size_t)i * y->K;
        row_probs(cfg, r, lx, px);
        row_probs(cfg, r, ly, py);
        double dl = 0, dp = 0;
        for (int k = 0; k < nm; k++) {
            double a = fabs((double)lx[k] - ly[k]), b = fabs(px[k] - py[k]);
            dl = isnan(a) || isnan(dl) ? NAN : fmax(dl, a);
            dp = isnan(b) || isnan(dp) ? NAN : fmax(dp, b);
        }
        const float *ax = x->act + (size_t)i * LAYA_N_ACT, *ay = y->act + (size_t)i * LAYA_N_ACT;
        double dal = fmax(fabs((double)ax[0] - ay[0]), fabs((double)ax[1] - ay[1]));
        if (isnan(ax[0] - ay[0]) || isnan(ax[1] - ay[1]))
            dal = NAN;
        double dap = fabs(act_prob(ax) - act_prob(ay));
        int ax_best = argmax(px, nm), ay_best = argmax(py, nm);
        double top1 = px[ax_best], top2 = 0;
        for (int k = 0; k < nm; k++)
            if (k != ax_best && px[k] > top2)
                top2 = px[k];
        int gated = nm == 1 || top1 - top2 > margin;
        int agree = ax_best == ay_best && !isnan(dp);
        stat_add(&st[r->qtype], dl, dp, dal, isnan(dap) ? NAN : dap, agree, gated);
        if (all)
            stat_add(all, dl, dp, dal, isnan(dap) ? NAN : dap, agree, gated);
    }
}

static json_t *num(double v)
{
    return isnan(v) ? json_string("NaN") : json_real(v);
}

static json_t *one_json(const delta_stats *d)
{
    return json_pack("{s:i, s:o, s:o, s:o, s:i, s:o, s:o, s:i, s:i, s:i}", "rows", d->n, "max_abs_dlogit",
                     num(d->max_dlogit), "max_abs_dp", num(d->max_dp), "mean_row_max_abs_dp",
                     num(d->n ? d->sum_dp / d->n : 0), "rows_max_abs_dp_over_0.01", d->n_dp_over_1e2,
                     "max_abs_dact_logit", num(d->max_dact_logit), "max_abs_dact_p", num(d->max_dact_p),
                     "argmax_agree", d->n_agree, "gated_rows", d->n_gated, "gated_agree", d->n_gated_agree);
}

json_t *delta_json(const delta_stats st[3], const delta_stats *all)
{
    json_t *o = json_object();
    static const char *names[3] = {"choice", "score", "noul"};
    for (int t = 0; t < 3; t++)
        json_object_set_new(o, names[t], one_json(&st[t]));
    if (all)
        json_object_set_new(o, "all", one_json(all));
    return o;
}

int fwd_out_identical(const fwd_out *x, const fwd_out *y)
{
    if (x->n != y->n || x->K != y->K)
        return 0;
    return !memcmp(x->logits, y->logits, (size_t)x->n * x->K * sizeof *x->logits) &&
           !memcmp(x->act, y->act, (size_t)x->n * LAYA_N_ACT * sizeof *x->act);
}

/* ---- reference cache ---------------------------------------------------------- */

#define REF_MAGIC "LAYAREF1"

typedef struct ref_header {
    char magic[8];
    char sha256[65];
    char pad[7];
    uint64_t set_hash;
    int32_t n, K;
} ref_header;

int ref_save(const char *path, const char *sha256, uint64_t set_hash, const fwd_out *o,
             layad_error *err)
{
    ref_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, REF_MAGIC, 8);
    snprintf(h.sha256, sizeof h.sha256, "%s", sha256);
    h.set_hash = set_hash;
    h.n = o->n;
    h.K = o->K;
    FILE *f = fopen(path, "wb");
    if (!f)
        return layad_fail(err, 500, "cannot write %s", path);
    int ok = fwrite(&h, sizeof h, 1, f) == 1 &&
             fwrite(o->logits, sizeof(float), (size_t)o->n * o->K, f) == (size_t)o->n * o->K &&
             fwrite(o->act, sizeof(float), (size_t)o->n * LAYA_N_ACT, f) ==
                 (size_t)o->n * LAYA_N_ACT;
    if (fclose(f) || !ok)
        return layad_fail(err, 500, "writing %s failed", path);
    return 0;
}

int ref_load(const char *path, const char *sha256, uint64_t set_hash, fwd_out *o,
             layad_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    ref_header h;
    int rc = 0;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, REF_MAGIC, 8) ||
        strncmp(h.sha256, sha256, 64) || h.set_hash != set_hash || h.n != o->n || h.K != o->K)
        goto out; /* stale: recompute */
    if (fread(o->logits, sizeof(float), (size_t)o->n * o->K, f) != (size_t)o->n * o->K ||
        fread(o->act, sizeof(float), (size_t)o->n * LAYA_N_ACT, f) != (size_t)o->n * LAYA_N_ACT) {
        rc = layad_fail(err, 500, "%s is truncated", path);
        goto out;
    }
    rc = 1;
out:
    fclose(f);
    return rc;
}

/* ---- timing -------------------------------------------------------------------- */

double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int time_groups(fwd_fn fn, void *ctx, int warm, int groups, int per_group, double *ms,
                layad_error *err)
{
    int it = 0;
    for (int i = 0; i < warm; i++)
        if (fn(ctx, it++, err))
            return -1;
    for (int g = 0; g < groups; g++) {
        double t0 = wall_ms();
        for (int i = 0; i < per_group; i++)
            if (fn(ctx, it++, err))
                return -1;
        ms[g] = (wall_ms() - t0) / per_group;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c)
        return NAN;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

/* ---- work counts ----------------------------------------------------------------- */

/* Keys visible to all queries of a row of length L: sum over i of the window. */
static double visible_keys(int L, int window)
{
    if (window < 0 || window >= L)
        return (double)L * L;
    double s = 0;
    for (int i = 0; i < L; i++) {
        int lo = i - window < 0 ? 0 : i - window, hi = i + window > L - 1 ? L - 1 : i + window;
        s += hi - lo + 1;
    }
    return s;
}

double forward_flops(const laya_config *c, const int *lens, int n)
{
    const double D = c->hidden, F = c->intermediate;
    double f = 0;
    for (int r = 0; r < n; r++) {
        const double L = lens[r];
        f += L * c->n_layers * 2 * (4 * D * D + 3 * F * D);
        f += L * c->head_layers * 2 * (12 * D * D);
        for (int i = 0; i < c->n_layers; i++)
            f += 4 * D * visible_keys(lens[r], c->layer_global[i] ? -1 : c->local_attention / 2);
        f += c->head_layers * 4 * D * visible_keys(lens[r], -1);
    }
    return f;
}

double forward_weight_bytes(const laya_config *c)
{
    const double D = c->hidden, F = c->intermediate;
    return 2 * (c->n_layers * (4 * D * D + 3 * F * D) + c->head_layers * 12 * D * D + D * D);
}
