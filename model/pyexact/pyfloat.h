/*
 * pyfloat.h - Python's float formatting and rounding, exactly.
 *
 * Responses must compare byte-for-byte with the official package, which
 * prints numbers with Python's float repr (shortest round-trip digits,
 * fixed notation for 1e-4 <= |x| < 1e16, else "1e-05" / "1.5e+16") and
 * rounds with round(x, n) (correctly rounded, ties to even on the exact
 * binary value). json.dumps spells non-finite floats NaN / Infinity /
 * -Infinity.
 */
#ifndef LAYAD_PYFLOAT_H
#define LAYAD_PYFLOAT_H

#include <stddef.h>

/* Writes repr(x) (Python's float.__repr__) into out (NUL-terminated, at most
 * 32 bytes needed). Non-finite values give "nan", "inf", "-inf". Returns the length. */
int py_float_repr(double x, char out[32]);

/* Writes what json.dumps prints for float x: repr, or NaN / Infinity / -Infinity. */
int py_float_json(double x, char out[32]);

/* Python round(x, ndigits) for 0 <= ndigits <= 15 and finite x. */
double py_round(double x, int ndigits);

#endif
