/*
 * att_numerics.c - the attention kernel's arithmetic for one head, emulated on the CPU, in four forms,
 * against the exact softmax (double) on the same 16-bit inputs:
 *   tree   key tiles of 64 in one online softmax, l summing the fp32 p (kernels/attention.cu at ede8ba5)
 *   lsum   the same, l summing the P rounded to 16 bits that weighs V
 *   halves two interleaved halves of the tiles combined at the end, l from the fp32 p
 *   both   halves + lsum (the branch's kernel)
 * The GPU's P V product accumulates in fp32 inside the tensor core; here in float, key by key (the order
 * differs, the rounding unit does not). ex2.approx is exp2f. Outputs are rounded to the 16-bit type as the
 * kernel stores them. V's columns have a common offset mu (what an attention output's row mean is in a
 * trained model: not zero) plus unit noise; scores have spread sd. Prints, per (mu, sd, keys): the RMS and
 * the maximum of |out - exact| over all rows and columns, each form. Nothing here runs on a GPU.
 *
 *   cc -O2 -std=c11 -o /tmp/att_numerics att_numerics.c -lm && /tmp/att_numerics [fp16|bf16] [raw]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DH 64
#define TK 64
#define MAXK 512

static int g_bf16, g_raw; /* raw: outputs not rounded at the end (the kernel's own error alone) */

/* Round to the 16-bit type (fp16 by _Float16, bf16 by round-to-nearest-even on the top 16 bits). */
static float r16(float x)
{
    if (!g_bf16)
        return (float)(_Float16)x;
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

static uint64_t g_s = 88172645463325252ull;
static double unif(void)
{
    g_s ^= g_s << 13, g_s ^= g_s >> 7, g_s ^= g_s << 17;
    return (g_s >> 11) * (1.0 / 9007199254740992.0);
}
static double gauss(void) { return sqrt(-2 * log(unif() + 1e-300)) * cos(6.283185307179586 * unif()); }

typedef struct state {
    float m, l, o[DH];
} state;

/* Key tiles t = first, first + step, ... < nt of scores s (already scaled by log2 e / 8) into st. */
static void walk(state *st, const float *s, float (*v)[DH], int n, int first, int step, int lsum)
{
    st->m = -INFINITY, st->l = 0;
    memset(st->o, 0, sizeof st->o);
    const int nt = (n + TK - 1) / TK;
    for (int t = first; t < nt; t += step) {
        const int j0 = t * TK, j1 = j0 + TK < n ? j0 + TK : n;
        float tm = -INFINITY;
        for (int j = j0; j < j1; j++)
            tm = fmaxf(tm, s[j]);
        const float mn = fmaxf(st->m, tm), a = st->m == mn ? 1.0f : exp2f(st->m - mn);
        st->m = mn;
        st->l *= a;
        for (int d = 0; d < DH; d++)
            st->o[d] *= a;
        for (int j = j0; j < j1; j++) {
            const float p = exp2f(s[j] - mn), P = r16(p);
            st->l += lsum ? P : p;
            for (int d = 0; d < DH; d++)
                st->o[d] += P * v[j][d];
        }
    }
}

static void combine(state *x, const state *y)
{
    const float m = fmaxf(x->m, y->m);
    const float ax = x->m == m ? 1.0f : exp2f(x->m - m), ay = y->m == m ? 1.0f : exp2f(y->m - m);
    x->m = m;
    x->l = fmaf(x->l, ax, y->l * ay);
    for (int d = 0; d < DH; d++)
        x->o[d] = fmaf(x->o[d], ax, y->o[d] * ay);
}

/* One query row over n keys: out[f][d] for the four forms. */
static void row(const float *s, float (*v)[DH], int n, float out[4][DH])
{
    for (int f = 0; f < 4; f++) {
        const int lsum = f & 1, halves = f >> 1;
        state x, y;
        if (halves) {
            walk(&x, s, v, n, 0, 2, lsum);
            walk(&y, s, v, n, 1, 2, lsum);
            combine(&x, &y);
        } else
            walk(&x, s, v, n, 0, 1, lsum);
        for (int d = 0; d < DH; d++)
            out[f][d] = g_raw ? (x.l > 0 ? x.o[d] / x.l : 0) : r16(x.l > 0 ? x.o[d] / x.l : 0);
    }
}

int main(int argc, char **argv)
{
    g_bf16 = argc > 1 && !strcmp(argv[1], "bf16");
    g_raw = argc > 2 && !strcmp(argv[2], "raw");
    static float v[MAXK][DH], s[MAXK];
    static const char *names[4] = {"tree", "lsum", "halves", "both"};
    printf("%s%s; per form: RMS and max |out - exact| over 256 rows x 64 columns\n", g_bf16 ? "bf16" : "fp16",
           g_raw ? ", outputs unrounded" : "");
    printf("%4s %4s %4s |", "mu", "sd", "keys");
    for (int f = 0; f < 4; f++)
        printf(" %20s", names[f]);
    printf("\n");
    const double mus[] = {0, 1, 4}, sds[] = {1, 3};
    const int ns[] = {83, 512};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++) {
                double se[4] = {0}, mx[4] = {0};
                long cnt = 0;
                for (int r = 0; r < 256; r++) {
                    const int n = ns[c];
                    for (int j = 0; j < n; j++) {
                        /* a score: a dot of 16-bit q and k over 64 dims, scale 1/8, spread sds[b] */
                        s[j] = (float)(r16((float)(sds[b] * gauss())) * 1.4426950408889634);
                        for (int d = 0; d < DH; d++)
                            v[j][d] = r16((float)(mus[a] + gauss()));
                    }
                    double ex[DH] = {0}, den = 0, mxs = -INFINITY;
                    for (int j = 0; j < n; j++)
                        mxs = fmax(mxs, s[j]);
                    for (int j = 0; j < n; j++) {
                        const double w = exp2((double)s[j] - mxs);
                        den += w;
                        for (int d = 0; d < DH; d++)
                            ex[d] += w * v[j][d];
                    }
                    float out[4][DH];
                    row(s, v, n, out);
                    for (int d = 0; d < DH; d++, cnt++)
                        for (int f = 0; f < 4; f++) {
                            const double e = fabs(out[f][d] - ex[d] / den);
                            se[f] += e * e;
                            mx[f] = fmax(mx[f], e);
                        }
                }
                printf("%4.0f %4.0f %4d |", mus[a], sds[b], ns[c]);
                for (int f = 0; f < 4; f++)
                    printf("   %8.2e %8.2e", sqrt(se[f] / cnt), mx[f]);
                printf("\n");
            }
    return 0;
}
