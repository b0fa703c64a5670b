/*
 * pyfloat.c - Python float repr and round(), see pyfloat.h.
 *
 * Shortest round-trip digits: the smallest precision p for which "%.*e"
 * reads back to the same double. glibc's printf is correctly rounded, so the
 * (p+1)-digit string it prints is the decimal closest to x among those of
 * that length; if any string of that length round-trips, the closest one
 * does, so this is the same digit string as CPython's dtoa mode 0. The
 * layout then follows CPython's format_float_short for repr: exponent form
 * when the decimal point position decpt <= -4 or decpt > 16.
 *
 * Most floats a response prints are round(x, 4) results, for which that
 * search costs up to five printf / strtod pairs. They take a shortcut first:
 * when "%.4f" reads back to x and 1e-4 <= |x| < 1e9, that string without its
 * trailing zeros is the repr. It round-trips, and no other decimal of as few
 * or fewer digits can: such a decimal would also be a multiple of 1e-4
 * (fewer significant digits at the same magnitude means fewer decimal
 * places), hence at least 1e-4 away from it, while two decimals that read
 * back to the same x are less than an ulp of x apart (< 1.2e-7 below 1e9).
 * In that range CPython prints fixed notation, as the string already is.
 *
 * round(x, n): CPython rounds through dtoa mode 3 (correctly rounded to n
 * decimals, half-even on the exact binary value) and reads the string back;
 * glibc "%.*f" rounds the exact binary value the same way. Up to 15 decimals
 * and results below 2^53, round_units does the same in integer arithmetic
 * (tests/test_pyjson.c checks it against the printf / strtod pair), which also
 * serves the shortcut above without printf.
 */
#include "model/pyexact/pyfloat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double pow10_exact[16] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                       1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* *n = ax 10^nd rounded half to even, in exact integer arithmetic, for ax > 0 finite,
 * 0 <= nd <= 15 and *n < 2^53: ax = m 2^-s with m < 2^53, so ax 10^nd = m 10^nd / 2^s
 * exactly (m 10^nd < 2^103 fits 128 bits). That is the integer of glibc's "%.*f" digits,
 * which round the exact binary value half to even too; and n / 10^nd, one correctly
 * rounded division of two exact doubles, is the double strtod makes of that string. 0, or
 * -1 outside the domain. Why: the printf / strtod pair cost ~2,000 instructions a value,
 * and a response rounds and prints several. */
static int round_units(double ax, int nd, unsigned long long *n)
{
    if (nd < 0 || nd > 15)
        return -1;
    int e;
    const double f = frexp(ax, &e); /* ax = f 2^e, 0.5 <= f < 1 */
    const int s = 53 - e;           /* ax = m 2^-s */
    if (s <= 0)
        return -1;
    if (s > 120) { /* m 10^nd < 2^103: below half a unit */
        *n = 0;
        return 0;
    }
    const unsigned long long m = (unsigned long long)ldexp(f, 53);
    const unsigned __int128 P = (unsigned __int128)m * (unsigned long long)pow10_exact[nd]; /* 10^nd: exact */
    const unsigned __int128 half = (unsigned __int128)1 << (s - 1);
    unsigned __int128 q = P >> s;
    const unsigned __int128 rem = P - (q << s);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    if (q >= ((unsigned __int128)1 << 53))
        return -1;
    *n = (unsigned long long)q;
    return 0;
}

/* repr(x) when x is a decimal of at most 4 places in [1e-4, 1e9) (see the
 * header); 0 when it is not, out then unspecified. */
static int repr_4dp(double x, char out[32])
{
    const double ax = fabs(x);
    unsigned long long u;
    /* "%.4f" of x is the digits of u, and it reads back to x when u / 1e4 does */
    if (!(ax >= 1e-4 && ax < 1e9) || round_units(ax, 4, &u) || (double)u / 1e4 != ax)
        return 0;
    char ip[16];
    int k = 0;
    for (unsigned long long q = u / 10000; k == 0 || q; q /= 10)
        ip[k++] = (char)('0' + q % 10);
    char *o = out;
    if (signbit(x))
        *o++ = '-';
    while (k)
        *o++ = ip[--k];
    *o++ = '.';
    unsigned frac = (unsigned)(u % 10000);
    for (int d = 1000; d; d /= 10) {
        *o++ = (char)('0' + frac / (unsigned)d);
        frac %= (unsigned)d;
    }
    while (o[-1] == '0' && o[-2] != '.') /* no trailing zero past the first decimal */
        o--;
    *o = 0;
    return (int)(o - out);
}

/* The shortest decimal digits that read back to x (finite, nonzero), as C's "%.*e" gives them
 * at the least precision that round-trips: digits[] without the point (NUL-terminated, at most
 * 17), the sign in *neg, and the decimal point's place: x = 0.d1d2... * 10^return value. */
static int shortest_digits(double x, char digits[24], int *nd, int *neg)
{
    char buf[40];
    for (int p = 0; p < 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    /* buf = [-]d[.ddd]e[+-]XX */
    const char *s = buf;
    *neg = *s == '-';
    s += *neg;
    int n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0') /* cannot happen at minimal p, kept for safety */
        n--;
    digits[n] = 0;
    *nd = n;
    return atoi(s + 1) + 1;
}

/* Python's placement of nd digits with the point at decpt: exponent form outside
 * [1e-4, 1e16), else positional with at least one decimal. Returns the end written. */
static char *place_digits(char *o, const char *digits, int nd, int decpt)
{
    if (decpt <= -4 || decpt > 16) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(nd - 1));
            o += nd - 1;
        }
        int e = decpt - 1;
        o += sprintf(o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (decpt <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -decpt; i++)
            *o++ = '0';
        memcpy(o, digits, (size_t)nd);
        o += nd;
    } else if (decpt >= nd) {
        memcpy(o, digits, (size_t)nd);
        o += nd;
        for (int i = nd; i < decpt; i++)
            *o++ = '0';
        *o++ = '.';
        *o++ = '0';
    } else {
        memcpy(o, digits, (size_t)decpt);
        o += decpt;
        *o++ = '.';
        memcpy(o, digits + decpt, (size_t)(nd - decpt));
        o += nd - decpt;
    }
    return o;
}

int py_float_repr(double x, char out[32])
{
    if (isnan(x))
        return snprintf(out, 32, "nan");
    if (isinf(x))
        return snprintf(out, 32, x > 0 ? "inf" : "-inf");
    if (x == 0.0)
        return snprintf(out, 32, signbit(x) ? "-0.0" : "0.0");
    const int n4 = repr_4dp(x, out);
    if (n4 > 0)
        return n4;
    char digits[24];
    int nd, neg;
    const int decpt = shortest_digits(x, digits, &nd, &neg);
    char *o = out;
    if (neg)
        *o++ = '-';
    o = place_digits(o, digits, nd, decpt);
    *o = 0;
    return (int)(o - out);
}

int py_float_json(double x, char out[32])
{
    if (isnan(x))
        return snprintf(out, 32, "NaN");
    if (isinf(x))
        return snprintf(out, 32, x > 0 ? "Infinity" : "-Infinity");
    return py_float_repr(x, out);
}

double py_round(double x, int ndigits)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    unsigned long long u;
    if (!round_units(fabs(x), ndigits, &u)) /* CPython keeps the sign of a result that rounds to zero */
        return copysign((double)u / pow10_exact[ndigits], x);
    char buf[400];
    snprintf(buf, sizeof buf, "%.*f", ndigits, x);
    double r = strtod(buf, NULL);
    /* CPython keeps the sign of a result that rounds to zero: round(-0.00001, 4) == -0.0 */
    if (r == 0.0)
        r = copysign(0.0, x);
    return r;
}
