/* Check suite for dtypes, conversions, shapes and tensors (src/core/tensor.c). */
#include <config.h>

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "testutil.h"

/*
 * Independent sources of expected values:
 *  - bit patterns written out by hand from the layouts (bf16: 1 sign, 8
 *    exponent bits, bias 127, 7 fraction bits; f16: 1, 5, bias 15, 10;
 *    TF32 inside an f32: the low 13 fraction bits zero); the working is
 *    in the comments;
 *  - a decoder written here from the layout formula, (-1)^s 2^(E - bias)
 *    (1 + M 2^-m) (subnormal: 2^(1 - bias) M 2^-m), for all 65536 patterns;
 *  - MPFR's rounding to 8 / 11 bits with the formats' exponent range and
 *    mpfr_subnormalize, for random doubles (near ties included).
 */

/* Decoders from the layout formula. */
static double decode(uint16_t b, int ebits, int mbits)
{
    int bias = (1 << (ebits - 1)) - 1;
    int s = b >> 15, E = (b >> mbits) & ((1 << ebits) - 1), M = b & ((1 << mbits) - 1);
    double v;
    if (E == (1 << ebits) - 1)
        v = M ? NAN : INFINITY;
    else if (E == 0)
        v = ldexp(M, 1 - bias - mbits);
    else
        v = ldexp((1 << mbits) + M, E - bias - mbits);
    return s ? -v : v;
}
static double dec_bf16(uint16_t b) { return decode(b, 8, 7); }
static double dec_f16(uint16_t b) { return decode(b, 5, 10); }

static int same_double(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

/* --- special: bf16 ---------------------------------------------------------------- */

START_TEST(special_bf16_rounding)
{
    /* Exact values. 1 = 0x3F80 (E = 127); -2 = 0xC000; 3 = 1.1b 2^1 = 0x4040;
       2^16: E = 143 = 0x8F -> 0 10001111 0000000 = 0x4780. */
    ck_assert_uint_eq(ra_double_to_bf16(1.0), 0x3F80);
    ck_assert_uint_eq(ra_double_to_bf16(-2.0), 0xC000);
    ck_assert_uint_eq(ra_double_to_bf16(3.0), 0x4040);
    ck_assert_uint_eq(ra_double_to_bf16(65536.0), 0x4780);
    /* 0.1 = 0x1.999999999999ap-4: 128 * 1.6 = 204.8 -> 205 = 128 + 77,
       E = 123: 0 01111011 1001101 = 0x3DCD. */
    ck_assert_uint_eq(ra_double_to_bf16(0.1), 0x3DCD);
    /* Ties to even: ulp(1) = 2^-7.  1 + 2^-8 lies halfway between 0x3F80
       (even) and 0x3F81: down.  1 + 3 2^-8 between 0x3F81 and 0x3F82
       (even): up.  Negatives mirror. */
    ck_assert_uint_eq(ra_double_to_bf16(1.0 + 0x1p-8), 0x3F80);
    ck_assert_uint_eq(ra_double_to_bf16(1.0 + 0x3p-8), 0x3F82);
    ck_assert_uint_eq(ra_double_to_bf16(-(1.0 + 0x1p-8)), 0xBF80);
    ck_assert_uint_eq(ra_double_to_bf16(-(1.0 + 0x3p-8)), 0xBF82);
    /* Just above / below a tie. */
    ck_assert_uint_eq(ra_double_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
    ck_assert_uint_eq(ra_double_to_bf16(1.0 + 0x1p-8 - 0x1p-40), 0x3F80);
    ck_assert_uint_eq(ra_double_to_bf16(1.0 + 0x3p-8 - 0x1p-40), 0x3F81);
    /* Largest finite (2 - 2^-7) 2^127 = 1.9921875 2^127 = 0x1.fep127 =
       0x7F7F (fraction 1111111, E = 254); its ulp is 2^120, so the overflow
       threshold is 0x1.fep127 + 2^119 = 0x1.ffp127: exactly there the tie
       goes to the even neighbour 2^128, i.e. Inf; one double below it
       stays finite. */
    ck_assert_uint_eq(ra_double_to_bf16(0x1.fep127), 0x7F7F);
    ck_assert_uint_eq(ra_double_to_bf16(0x1.ffp127), 0x7F80);
    ck_assert_uint_eq(ra_double_to_bf16(nextafter(0x1.ffp127, 0)), 0x7F7F);
    ck_assert_uint_eq(ra_double_to_bf16(-0x1.ffp127), 0xFF80);
    ck_assert_uint_eq(ra_double_to_bf16(-nextafter(0x1.ffp127, 0)), 0xFF7F);
    ck_assert_uint_eq(ra_double_to_bf16(DBL_MAX), 0x7F80);
    ck_assert_uint_eq(ra_double_to_bf16(INFINITY), 0x7F80);
    ck_assert_uint_eq(ra_double_to_bf16(-INFINITY), 0xFF80);
    /* Subnormals: spacing 2^-133 (E = 0: M 2^-126 2^-7).  2^-134 is half of
       the smallest: tie to 0; 3 2^-135 = 0.75 of it: up; the largest
       subnormal 127 2^-133 = 0x007F; 127.5 2^-133 ties to 0x0080 = 2^-126
       (even), 126.5 2^-133 to 0x007E (even). */
    ck_assert_uint_eq(ra_double_to_bf16(0x1p-133), 0x0001);
    ck_assert_uint_eq(ra_double_to_bf16(0x1p-134), 0x0000);
    ck_assert_uint_eq(ra_double_to_bf16(0x1p-134 + 0x1p-160), 0x0001);
    ck_assert_uint_eq(ra_double_to_bf16(0x3p-135), 0x0001);
    ck_assert_uint_eq(ra_double_to_bf16(-0x1p-134), 0x8000);
    ck_assert_uint_eq(ra_double_to_bf16(127 * 0x1p-133), 0x007F);
    ck_assert_uint_eq(ra_double_to_bf16(127.5 * 0x1p-133), 0x0080);
    ck_assert_uint_eq(ra_double_to_bf16(126.5 * 0x1p-133), 0x007E);
    ck_assert_uint_eq(ra_double_to_bf16(0x1p-126), 0x0080);
    ck_assert_uint_eq(ra_double_to_bf16(1e-320), 0x0000); /* double subnormal */
    ck_assert_uint_eq(ra_double_to_bf16(-1e-320), 0x8000);
    /* Signed zeros, NaN. */
    ck_assert_uint_eq(ra_double_to_bf16(0.0), 0x0000);
    ck_assert_uint_eq(ra_double_to_bf16(-0.0), 0x8000);
    uint16_t n = ra_double_to_bf16(NAN);
    ck_assert((n & 0x7F80) == 0x7F80 && (n & 0x7F) != 0);
    n = ra_double_to_bf16(-NAN);
    ck_assert((n & 0x7F80) == 0x7F80 && (n & 0x7F) != 0);
}
END_TEST

START_TEST(special_f16_rounding)
{
    /* 1 = 0x3C00 (E = 15); -2 = 0xC000; 65504 = (2 - 2^-10) 2^15 = 0x7BFF. */
    ck_assert_uint_eq(ra_double_to_f16(1.0), 0x3C00);
    ck_assert_uint_eq(ra_double_to_f16(-2.0), 0xC000);
    ck_assert_uint_eq(ra_double_to_f16(65504.0), 0x7BFF);
    /* 0.1: 1024 * 1.6 = 1638.4 -> 1638 = 1024 + 614 (0x266), E = 11:
       0 01011 1001100110 = 0x2E66. */
    ck_assert_uint_eq(ra_double_to_f16(0.1), 0x2E66);
    /* Ties: 1 + 2^-11 -> 0x3C00 (even); 1 + 3 2^-11 -> 0x3C02; 2049 lies
       between 2048 = 0x6800 (E = 26) and 2050 = 0x6801: even is 2048; 2051
       -> 2052 = 0x6802. */
    ck_assert_uint_eq(ra_double_to_f16(1.0 + 0x1p-11), 0x3C00);
    ck_assert_uint_eq(ra_double_to_f16(1.0 + 0x3p-11), 0x3C02);
    ck_assert_uint_eq(ra_double_to_f16(-(1.0 + 0x1p-11)), 0xBC00);
    ck_assert_uint_eq(ra_double_to_f16(2049.0), 0x6800);
    ck_assert_uint_eq(ra_double_to_f16(2051.0), 0x6802);
    ck_assert_uint_eq(ra_double_to_f16(2049.0 + 0x1p-30), 0x6801);
    ck_assert_uint_eq(ra_double_to_f16(2049.0 - 0x1p-30), 0x6800);
    /* Overflow: ulp(65504) = 32, threshold 65504 + 16 = 65520 ties to
       2^16 (even), i.e. Inf. */
    ck_assert_uint_eq(ra_double_to_f16(65520.0), 0x7C00);
    ck_assert_uint_eq(ra_double_to_f16(nextafter(65520.0, 0)), 0x7BFF);
    ck_assert_uint_eq(ra_double_to_f16(-65520.0), 0xFC00);
    ck_assert_uint_eq(ra_double_to_f16(1e10), 0x7C00);
    ck_assert_uint_eq(ra_double_to_f16(INFINITY), 0x7C00);
    ck_assert_uint_eq(ra_double_to_f16(-INFINITY), 0xFC00);
    /* Subnormals: 2^-24 = 0x0001; 2^-25 ties to 0; 3 2^-26 up to 0x0001;
       the largest subnormal 1023 2^-24 = 0x03FF; 1023.5 2^-24 ties to
       0x0400 = 2^-14 (even); 1022.5 2^-24 to 0x03FE. */
    ck_assert_uint_eq(ra_double_to_f16(0x1p-24), 0x0001);
    ck_assert_uint_eq(ra_double_to_f16(0x1p-25), 0x0000);
    ck_assert_uint_eq(ra_double_to_f16(-0x1p-25), 0x8000);
    ck_assert_uint_eq(ra_double_to_f16(0x3p-26), 0x0001);
    ck_assert_uint_eq(ra_double_to_f16(1023 * 0x1p-24), 0x03FF);
    ck_assert_uint_eq(ra_double_to_f16(1023.5 * 0x1p-24), 0x0400);
    ck_assert_uint_eq(ra_double_to_f16(1022.5 * 0x1p-24), 0x03FE);
    ck_assert_uint_eq(ra_double_to_f16(0x1p-14), 0x0400);
    ck_assert_uint_eq(ra_double_to_f16(0.0), 0x0000);
    ck_assert_uint_eq(ra_double_to_f16(-0.0), 0x8000);
    uint16_t n = ra_double_to_f16(NAN);
    ck_assert((n & 0x7C00) == 0x7C00 && (n & 0x3FF) != 0);
}
END_TEST

/* One rounding, directly from the double.  x = 1 + 2^-8 + 2^-30 is above
   the bf16 tie 1 + 2^-8, so it rounds up to 1 + 2^-7 (0x3F81); rounding to
   float first loses 2^-30 (below half a float ulp, 2^-24) and leaves the
   exact tie, which goes to even 1.0 (0x3F80).  Same for f16 with 1 + 2^-11
   + 2^-30 (0x3C01 vs 0x3C00), and in f16's subnormal range with 2^-25 +
   2^-60 (0x0001 vs 0). */
START_TEST(special_single_rounding)
{
    double x = 1.0 + 0x1p-8 + 0x1p-30;
    ck_assert((double)(float)x == 1.0 + 0x1p-8); /* the double rounding trap */
    ck_assert_uint_eq(ra_double_to_bf16(x), 0x3F81);
    ck_assert(ra_round_to_dtype(x, RA_BF16) == 1.0 + 0x1p-7);
    ck_assert_uint_eq(ra_double_to_bf16(-x), 0xBF81);
    double y = 1.0 + 0x1p-11 + 0x1p-30;
    ck_assert((double)(float)y == 1.0 + 0x1p-11);
    ck_assert_uint_eq(ra_double_to_f16(y), 0x3C01);
    double z = 0x1p-25 + 0x1p-60;
    ck_assert((double)(float)z == 0x1p-25);
    ck_assert_uint_eq(ra_double_to_f16(z), 0x0001);
    /* The tensor path rounds the same way. */
    int64_t shape[1] = {3};
    ra_tensor *t;
    ck_assert_int_eq(ra_tensor_new(&t, "x", RA_BF16, 1, shape), RA_OK);
    ra_tensor_set(t, 0, x);
    ck_assert_uint_eq(((uint16_t *)t->data)[0], 0x3F81);
    ck_assert(ra_tensor_get(t, 0) == 1.0 + 0x1p-7);
    ra_tensor_free(t);
    ck_assert_int_eq(ra_tensor_new(&t, "y", RA_F16, 1, shape), RA_OK);
    ra_tensor_set(t, 1, y);
    ck_assert_uint_eq(((uint16_t *)t->data)[1], 0x3C01);
    ra_tensor_free(t);
}
END_TEST

START_TEST(special_f32_set)
{
    /* f32 storage: ulp(1) = 2^-23; 1 + 2^-24 ties to 1 (even), 1 + 3 2^-24
       to 1 + 2^-22; above FLT_MAX + half ulp (2^103) it is Inf. */
    int64_t shape[1] = {4};
    ra_tensor *t;
    ck_assert_int_eq(ra_tensor_new(&t, "f", RA_F32, 1, shape), RA_OK);
    ra_tensor_set(t, 0, 1.0 + 0x1p-24);
    ra_tensor_set(t, 1, 1.0 + 0x3p-24);
    ra_tensor_set(t, 2, 0x1.fffffep127 + 0x1p103);
    ra_tensor_set(t, 3, -0.0);
    ck_assert(ra_tensor_get(t, 0) == 1.0);
    ck_assert(ra_tensor_get(t, 1) == 1.0 + 0x1p-22);
    ck_assert(isinf(ra_tensor_get(t, 2)));
    ck_assert(ra_tensor_get(t, 3) == 0.0 && signbit(ra_tensor_get(t, 3)));
    ra_tensor_free(t);
}
END_TEST

START_TEST(special_tf32)
{
    /* TF32: 10 fraction bits, so the low 13 bits of an f32 go; half a TF32
       ulp is bit 12 (0x1000).  1 + 2^-11 = 0x3F801000 is a tie between 1
       (even) and 1 + 2^-10 = 0x3F802000: away from zero gives the latter
       (RNE would give 1).  Signs mirror. */
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x3F801000))), 0x3F802000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0xBF801000))), 0xBF802000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x3F800FFF))), 0x3F800000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x3F801001))), 0x3F802000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x3F803000))), 0x3F804000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x3F802000))), 0x3F802000);
    /* Carry into the exponent: 2 - 2^-11 = 0x3FFFF000 -> 2 = 0x40000000. */
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x3FFFF000))), 0x40000000);
    /* Overflow: the largest TF32 is 0x7F7FE000; 0x7F7FF000 is the tie above
       it, away from zero = Inf; FLT_MAX too. */
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x7F7FEFFF))), 0x7F7FE000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x7F7FF000))), 0x7F800000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(FLT_MAX)), 0x7F800000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(-FLT_MAX)), 0xFF800000);
    /* Subnormals keep the same bit positions; zeros, Inf, NaN unchanged. */
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x00001000))), 0x00002000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(tu_bitsf(0x00000FFF))), 0x00000000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(-0.0f)), 0x80000000);
    ck_assert_uint_eq(tu_fbits(ra_round_tf32_rna(INFINITY)), 0x7F800000);
    ck_assert(isnan(ra_round_tf32_rna(NAN)));
    /* bf16 rounding of a float, RNE: 1 + 2^-8 -> 1; 1 + 3 2^-8 -> 1 + 2^-6;
       FLT_MAX is above the bf16 threshold 0x1.ffp127 -> Inf. */
    ck_assert(ra_round_bf16_f(1.0f + 0x1p-8f) == 1.0f);
    ck_assert(ra_round_bf16_f(1.0f + 0x3p-8f) == 1.0f + 0x1p-6f);
    ck_assert(isinf(ra_round_bf16_f(FLT_MAX)));
    /* f16 rounding of a float, RNE (values from the half format: ulp 2^-10
       at 1, 32 at 65504, subnormals multiples of 2^-24): 1 + 2^-11 ties to
       even 1, 1 + 3 2^-11 -> 1 + 2^-9; 65504 stays; 65519 (below the tie
       65520) -> 65504; 65520 ties to 2^16 = overflow: inf, likewise 65536
       (the "state value of 65536 becomes inf"), -70000 -> -inf;
       2^-25 ties to 0, 3 2^-25 -> 2^-23 (even of 1 and 2 2^-24), 2^-24 stays. */
    ck_assert(ra_round_f16_f(1.0f + 0x1p-11f) == 1.0f);
    ck_assert(ra_round_f16_f(1.0f + 0x3p-11f) == 1.0f + 0x1p-9f);
    ck_assert(ra_round_f16_f(-(1.0f + 0x3p-11f)) == -(1.0f + 0x1p-9f));
    ck_assert(ra_round_f16_f(65504.0f) == 65504.0f);
    ck_assert(ra_round_f16_f(65519.0f) == 65504.0f);
    ck_assert(isinf(ra_round_f16_f(65520.0f)) && ra_round_f16_f(65520.0f) > 0);
    ck_assert(isinf(ra_round_f16_f(65536.0f)));
    ck_assert(isinf(ra_round_f16_f(-70000.0f)) && ra_round_f16_f(-70000.0f) < 0);
    ck_assert(ra_round_f16_f(0x1p-25f) == 0.0f);
    ck_assert(ra_round_f16_f(0x3p-25f) == 0x1p-23f);
    ck_assert(ra_round_f16_f(0x1p-24f) == 0x1p-24f);
    ck_assert(ra_round_f16_f(0.1f) == 1638.0f / 16384.0f);
    ck_assert(isinf(ra_round_f16_f(INFINITY)) && isnan(ra_round_f16_f(NAN)));
}
END_TEST

START_TEST(special_ulp)
{
    ck_assert(ra_dtype_ulp(1.0, RA_BF16) == 0x1p-7);
    ck_assert(ra_dtype_ulp(1.0, RA_F16) == 0x1p-10);
    ck_assert(ra_dtype_ulp(1.0, RA_F32) == 0x1p-23);
    ck_assert(ra_dtype_ulp(1.0, RA_F64) == 0x1p-52);
    ck_assert(ra_dtype_ulp(-1.0, RA_BF16) == 0x1p-7);
    ck_assert(ra_dtype_ulp(3.0, RA_BF16) == 0x1p-6);
    ck_assert(ra_dtype_ulp(0.99, RA_BF16) == 0x1p-8);
    ck_assert(ra_dtype_ulp(65504.0, RA_F16) == 32.0);
    ck_assert(ra_dtype_ulp(1e6, RA_F16) == 32.0);         /* beyond the range: emax's */
    ck_assert(ra_dtype_ulp(0x1p200, RA_BF16) == 0x1p120); /* likewise */
    /* Zero and the subnormal range: the smallest subnormal. */
    ck_assert(ra_dtype_ulp(0.0, RA_BF16) == 0x1p-133);
    ck_assert(ra_dtype_ulp(-0.0, RA_F16) == 0x1p-24);
    ck_assert(ra_dtype_ulp(0.0, RA_F32) == 0x1p-149);
    ck_assert(ra_dtype_ulp(0.0, RA_F64) == 0x1p-1074);
    ck_assert(ra_dtype_ulp(0x1p-20, RA_F16) == 0x1p-24);
    ck_assert(ra_dtype_ulp(0x1p-14, RA_F16) == 0x1p-24);
    ck_assert(ra_dtype_ulp(0x1p-13, RA_F16) == 0x1p-23);
    ck_assert(ra_dtype_ulp(1e-310, RA_F64) == 0x1p-1074);
    ck_assert(isnan(ra_dtype_ulp(NAN, RA_F32)));
    ck_assert(isnan(ra_dtype_ulp(INFINITY, RA_F32)));
}
END_TEST

START_TEST(special_dtype_table)
{
    ck_assert(ra_dtype_max(RA_BF16) == 0x1.fep127);
    ck_assert(ra_dtype_max(RA_F16) == 65504.0);
    ck_assert(ra_dtype_max(RA_F32) == FLT_MAX);
    ck_assert(ra_dtype_max(RA_F64) == DBL_MAX);
    ck_assert(ra_dtype_min_subnormal(RA_BF16) == 0x1p-133);
    ck_assert(ra_dtype_min_subnormal(RA_F16) == 0x1p-24);
    ck_assert(ra_dtype_min_subnormal(RA_F32) == 0x1p-149);
    ck_assert(ra_dtype_min_subnormal(RA_F64) == 0x1p-1074);
    ck_assert_uint_eq(ra_dtype_size(RA_BF16), 2);
    ck_assert_uint_eq(ra_dtype_size(RA_F64), 8);
    ck_assert_int_eq(ra_dtype_precision(RA_F16), 11);
    ck_assert_str_eq(ra_dtype_st_name(RA_BF16), "BF16");
    static const struct {
        const char *text;
        ra_dtype dt;
    } names[] = {{"BF16", RA_BF16}, {"half", RA_F16}, {"float64", RA_F64}};
    ra_dtype d;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ck_assert_int_eq(ra_dtype_parse(&d, names[i].text), RA_OK);
        ck_assert_int_eq(d, names[i].dt);
    }
    ck_assert_int_eq(ra_dtype_parse(&d, "f8"), RA_EINVAL);
    ck_assert_int_eq(tu_nerr, 1);
    ck_assert(strstr(ra_last_error(), "'f8'") != NULL);
    ck_assert_int_eq(ra_dtype_parse(&d, NULL), RA_EINVAL);
}
END_TEST

/* --- data: every 16-bit pattern ----------------------------------------------------- */

START_TEST(data_widen_all_patterns)
{
    for (uint32_t b = 0; b < 65536; b++) {
        double vb = ra_bf16_to_double((uint16_t)b), vf = ra_f16_to_double((uint16_t)b);
        ck_assert_msg(same_double(vb, dec_bf16((uint16_t)b)), "bf16 0x%04x: %a", b, vb);
        ck_assert_msg(same_double(vf, dec_f16((uint16_t)b)), "f16 0x%04x: %a", b, vf);
        /* Narrowing an exact value gives the pattern back (NaN: any NaN). */
        if (!isnan(vb))
            ck_assert_msg(ra_double_to_bf16(vb) == b, "bf16 round trip 0x%04x", b);
        if (!isnan(vf))
            ck_assert_msg(ra_double_to_f16(vf) == b, "f16 round trip 0x%04x", b);
        /* Exactness of the widening as MPFR sees it: 8 / 11 bits suffice. */
        if (isfinite(vb) && vb != 0) {
            mpfr_t m;
            mpfr_init2(m, 8);
            ck_assert_int_eq(mpfr_set_d(m, vb, MPFR_RNDN), 0);
            mpfr_clear(m);
        }
    }
}
END_TEST

/* --- random: against MPFR --------------------------------------------------------- */

/* x rounded by MPFR to prec bits with the format's exponent range:
   smallest subnormal = 2^(emin_m - 1), largest finite < 2^emax_m. */
static double round_by_mpfr(double x, int prec, long emin_m, long emax_m)
{
    mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
    mpfr_set_emin(emin_m);
    mpfr_set_emax(emax_m);
    mpfr_t r;
    mpfr_init2(r, prec);
    int i = mpfr_set_d(r, x, MPFR_RNDN);
    i = mpfr_check_range(r, i, MPFR_RNDN);
    mpfr_subnormalize(r, i, MPFR_RNDN);
    mpfr_set_emin(old_min);
    mpfr_set_emax(old_max);
    double v = mpfr_get_d(r, MPFR_RNDN);
    mpfr_clear(r);
    return v;
}

START_TEST(random_rounding_vs_mpfr)
{
    ra_rng *r;
    ck_assert_int_eq(ra_rng_new(&r, tu_seed(17), "round"), RA_OK);
    for (int it = 0; it < 200000; it++) {
        int which = it % 2; /* 0: bf16, 1: f16 */
        int prec = which ? 11 : 8, emin = which ? -14 : -126, emax = which ? 15 : 127;
        double x;
        if (it % 4 < 2) { /* random significand over the range and beyond */
            double m = 1.0 + ldexp((double)(((uint64_t)ra_rng_u32(r) << 20) ^ ra_rng_u32(r)), -52);
            int e = emin - prec - 3 + (int)(ra_rng_u32(r) % (unsigned)(emax - emin + prec + 6));
            x = ldexp(m, e);
        } else { /* a format value +- half its ulp +- a little */
            uint16_t b = (uint16_t)(ra_rng_u32(r) & 0x7FFF);
            double v = which ? dec_f16(b) : dec_bf16(b);
            if (!isfinite(v))
                continue;
            double half = 0.5 * ra_dtype_ulp(v, which ? RA_F16 : RA_BF16);
            int k = (int)(ra_rng_u32(r) % 5) - 2; /* -2..2 */
            x = v + half * (k == 0 ? 0 : (k > 0 ? 1 : -1)) + (abs(k) == 2 ? ldexp(half, -30) : 0);
        }
        if (ra_rng_u32(r) & 1)
            x = -x;
        double want = round_by_mpfr(x, prec, emin - prec + 2, emax + 1);
        double got = which ? dec_f16(ra_double_to_f16(x)) : dec_bf16(ra_double_to_bf16(x));
        ck_assert_msg(same_double(got, want), "%s(%a): got %a, MPFR %a", which ? "f16" : "bf16", x,
                      got, want);
        ck_assert(same_double(ra_round_to_dtype(x, which ? RA_F16 : RA_BF16), want));
        if (!which) { /* the float path (bit arithmetic) on x rounded to a float first */
            const float xf = (float)x;
            const double wf = round_by_mpfr((double)xf, prec, emin - prec + 2, emax + 1);
            ck_assert_msg(same_double((double)ra_round_bf16_f(xf), wf),
                          "ra_round_bf16_f(%a): got %a, MPFR %a", (double)xf,
                          (double)ra_round_bf16_f(xf), wf);
        }
    }
    ra_rng_free(r);
}
END_TEST

/* --- shapes and tensors ------------------------------------------------------------- */

START_TEST(special_shapes)
{
    int64_t n;
    const int64_t ok[] = {1LL << 31, 1LL << 31}; /* 2^62 fits */
    ck_assert_int_eq(ra_shape_numel(&n, 2, ok), RA_OK);
    ck_assert(n == (int64_t)1 << 62);
    const int64_t big[] = {1LL << 32, 1LL << 31}; /* 2^63 does not */
    ck_assert_int_eq(ra_shape_numel(&n, 2, big), RA_EOVERFLOW);
    const int64_t big2[] = {INT64_MAX / 2 + 1, 2};
    ck_assert_int_eq(ra_shape_numel(&n, 2, big2), RA_EOVERFLOW);
    const int64_t big3[] = {3, INT64_MAX / 3 + 1};
    ck_assert_int_eq(ra_shape_numel(&n, 2, big3), RA_EOVERFLOW);
    const int64_t edge[] = {INT64_MAX};
    ck_assert_int_eq(ra_shape_numel(&n, 1, edge), RA_OK);
    ck_assert(n == INT64_MAX);
    const int64_t neg[] = {2, -1};
    ck_assert_int_eq(ra_shape_numel(&n, 2, neg), RA_EINVAL);
    ck_assert_int_eq(ra_shape_numel(&n, 0, NULL), RA_OK);
    ck_assert(n == 1);
    ck_assert_int_eq(ra_shape_numel(&n, RA_MAX_DIMS + 1, ok), RA_EINVAL);
    /* Bytes overflow although the count fits: 2^62 f64 elements. */
    ra_tensor *t;
    const int64_t huge[] = {1LL << 62};
    ck_assert_int_eq(ra_tensor_new(&t, "huge", RA_F64, 1, huge), RA_EOVERFLOW);
    ck_assert(t == NULL);
    ck_assert(strstr(ra_last_error(), "huge") != NULL);
    char buf[64];
    const int64_t s3[] = {2, 3, 4};
    ra_shape_format(buf, sizeof buf, 3, s3);
    ck_assert_str_eq(buf, "[2, 3, 4]");
    ra_shape_format(buf, sizeof buf, 0, s3);
    ck_assert_str_eq(buf, "[]");
    ra_shape_format(buf, 5, 3, s3); /* truncated, still terminated */
    ck_assert_str_eq(buf, "[2, ");
    ck_assert(ra_shape_equal(3, s3, 3, s3));
    ck_assert(!ra_shape_equal(3, s3, 2, s3));
    ck_assert(!ra_shape_equal(2, s3, 2, s3 + 1));
}
END_TEST

START_TEST(special_tensor_values)
{
    const int64_t shape[] = {2, 3};
    ra_tensor *t, *c;
    ck_assert_int_eq(ra_tensor_new(&t, "a", RA_BF16, 2, shape), RA_OK);
    ck_assert(t->numel == 6 && t->nbytes == 12);
    for (int i = 0; i < 6; i++)
        ck_assert(ra_tensor_get(t, i) == 0.0);
    const double in[6] = {1.0, -2.5, 1.0 + 0x1p-8, INFINITY, NAN, 1e-40};
    ra_tensor_from_doubles(t, in);
    double out[6];
    ra_tensor_to_doubles(out, t);
    ck_assert(out[0] == 1.0 && out[1] == -2.5 && out[2] == 1.0 && isinf(out[3]) && isnan(out[4]));
    /* 1e-40 = 0x1.16c262777579cp-133 (1.09 times the smallest subnormal). */
    ck_assert(out[5] == 0x1p-133);
    int64_t nn, ni;
    ra_tensor_count_nonfinite(t, &nn, &ni);
    ck_assert(nn == 1 && ni == 1);
    ck_assert(ra_tensor_find_nonfinite(t) == 3);
    ck_assert_int_eq(ra_tensor_clone(&c, t, "b"), RA_OK);
    ck_assert_str_eq(c->name, "b");
    ck_assert(memcmp(c->data, t->data, t->nbytes) == 0);
    ra_tensor_free(c);
    ck_assert_int_eq(ra_tensor_clone(&c, t, NULL), RA_OK);
    ck_assert_str_eq(c->name, "a");
    ra_tensor_free(c);
    /* MPFR widening: exact at >= 53 bits; refused when it would round. */
    mpfr_t m;
    mpfr_init2(m, 53);
    ck_assert_int_eq(ra_tensor_get_mpfr(m, t, 1), RA_OK);
    ck_assert(mpfr_cmp_d(m, -2.5) == 0);
    ra_tensor_free(t);
    const int64_t one[] = {1};
    ck_assert_int_eq(ra_tensor_new(&t, "f64", RA_F64, 1, one), RA_OK);
    ra_tensor_set(t, 0, 1.0 + 0x1p-52);
    mpfr_set_prec(m, 24);
    ck_assert_int_eq(ra_tensor_get_mpfr(m, t, 0), RA_EINVAL);
    ck_assert(strstr(ra_last_error(), "f64") != NULL);
    mpfr_clear(m);
    ra_tensor_free(t);
}
END_TEST

START_TEST(special_collection)
{
    ra_tensors ts;
    ra_tensors_init(&ts);
    const int64_t shape[] = {2};
    ra_tensor *a, *b, *c, *b2, *found;
    ck_assert_int_eq(ra_tensors_new(&ts, &a, "a", RA_F32, 1, shape), RA_OK);
    ck_assert_int_eq(ra_tensors_new(&ts, &b, "b", RA_F32, 1, shape), RA_OK);
    ck_assert_int_eq(ra_tensors_new(&ts, &c, "c", RA_F32, 1, shape), RA_OK);
    ck_assert_uint_eq(ts.n, 3);
    /* Same name: replaced in place, order kept. */
    ck_assert_int_eq(ra_tensor_new(&b2, "b", RA_F64, 1, shape), RA_OK);
    ck_assert_int_eq(ra_tensors_add(&ts, b2), RA_OK);
    ck_assert_uint_eq(ts.n, 3);
    ck_assert(ts.items[1] == b2 && ra_tensors_find(&ts, "b") == b2);
    ck_assert_int_eq(ra_tensors_require(&found, &ts, "c", "f.safetensors"), RA_OK);
    ck_assert(found == c);
    ck_assert_int_eq(ra_tensors_require(&found, &ts, "zz", "f.safetensors"), RA_ENOTFOUND);
    ck_assert(strstr(ra_last_error(), "f.safetensors") && strstr(ra_last_error(), "'zz'"));
    /* Take: removed, caller owns, order of the rest kept. */
    ra_tensor *took = ra_tensors_take(&ts, "a");
    ck_assert(took == a);
    ck_assert_uint_eq(ts.n, 2);
    ck_assert(ts.items[0] == b2 && ts.items[1] == c);
    ck_assert(ra_tensors_take(&ts, "a") == NULL);
    ra_tensor_free(took);
    ck_assert(ra_tensors_find(&ts, "a") == NULL);
    /* Many adds grow the array. */
    for (int i = 0; i < 40; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "t%d", i);
        ck_assert_int_eq(ra_tensors_new(&ts, NULL, nm, RA_F16, 1, shape), RA_OK);
    }
    ck_assert_uint_eq(ts.n, 42);
    ck_assert_str_eq(ts.items[41]->name, "t39");
    ra_tensors_clear(&ts);
    ck_assert_uint_eq(ts.n, 0);
}
END_TEST

/* --- regress ------------------------------------------------------------------------ */

/* ra_shape_numel refused {INT64_MAX, 2, 0} as an overflow: the running
   product overflowed before the zero was reached, although the product,
   0, fits.  Zero-sized tensors with large other dims are valid
   (safetensors allows them). */
START_TEST(regress_zero_dim_after_large)
{
    int64_t n = -1;
    const int64_t s[] = {INT64_MAX, 2, 0};
    ck_assert_int_eq(ra_shape_numel(&n, 3, s), RA_OK);
    ck_assert(n == 0);
    const int64_t s2[] = {0, INT64_MAX, INT64_MAX};
    ck_assert_int_eq(ra_shape_numel(&n, 3, s2), RA_OK);
    ck_assert(n == 0);
    /* A negative dimension is still refused wherever it is. */
    const int64_t s3[] = {INT64_MAX, 2, 0, -1};
    ck_assert_int_eq(ra_shape_numel(&n, 4, s3), RA_EINVAL);
}
END_TEST

/* Adding a tensor that is already in the collection (same pointer) freed
   it while replacing it with itself, leaving a dangling pointer. */
START_TEST(regress_add_same_tensor)
{
    ra_tensors ts;
    ra_tensors_init(&ts);
    const int64_t shape[] = {2};
    ra_tensor *a;
    ck_assert_int_eq(ra_tensors_new(&ts, &a, "a", RA_F32, 1, shape), RA_OK);
    ck_assert_int_eq(ra_tensors_add(&ts, a), RA_OK);
    ck_assert_uint_eq(ts.n, 1);
    ck_assert(ts.items[0] == a);
    ck_assert_str_eq(ts.items[0]->name, "a");
    ra_tensors_clear(&ts);
}
END_TEST

static Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");
    tu_tcase(s, "special", tu_capture, NULL, special_bf16_rounding, special_f16_rounding,
             special_single_rounding, special_f32_set, special_tf32, special_ulp,
             special_dtype_table, special_shapes, special_tensor_values, special_collection);
    tu_tcase(s, "data", NULL, NULL, data_widen_all_patterns);
    tu_tcase(s, "random", tu_capture, NULL, random_rounding_vs_mpfr);
    tu_tcase(s, "regress", tu_capture, NULL, regress_zero_dim_after_large, regress_add_same_tensor);
    return s;
}

int main(void) { return tu_run(tensor_suite()); }
