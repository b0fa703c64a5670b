/*
 * jev_confidence.c - see jev_confidence.h. Every step is a Python float
 * operation in the same order as laya.confidence.jev_confidence.
 */
#include "server/api/jev_confidence.h"

#include <math.h>
#include <stdlib.h>

#include "model/backend/rows.h"
#include "model/pyexact/pyfloat.h"

double jev_confidence(const answer_numbers *a)
{
    int n = a->k;
    if (a->qtype == QTYPE_NOUL || n < 1)
        return NAN;
    if (n == 1)
        return 1.0;
    double p[ANSWERS_MAX_K], total = 0.0;
    for (int i = 0; i < n; i++)
        total += a->p[i];
    for (int i = 0; i < n; i++)
        p[i] = total != 0.0 ? a->p[i] / total : 1.0 / n;
    if (a->qtype == QTYPE_CHOICE) {
        double top = p[0];
        for (int i = 1; i < n; i++)
            if (p[i] > top)
                top = p[i];
        return (top - 1.0 / n) / (1.0 - 1.0 / n);
    }
    int mode = 0;
    for (int i = 1; i < n; i++)
        if (p[i] > p[mode])
            mode = i;
    double spread = 0.0, uniform = 0.0, center = (n - 1) / 2.0;
    for (int i = 0; i < n; i++)
        spread += p[i] * (double)abs(i - mode);
    for (int i = 0; i < n; i++)
        uniform += fabs(i - center);
    uniform /= n;
    double c = 1.0 - spread / uniform;
    return c > 0.0 ? c : 0.0;
}

void jev_confidence_format(pj_buf *b, const answer_numbers *a)
{
    double c = jev_confidence(a);
    if (isnan(c))
        return;
    pj_buf_puts(b, ", \"x_jev_confidence\": ");
    pj_buf_float(b, py_round(c, 4));
}
