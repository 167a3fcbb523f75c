/* Check suite for the error metrics (src/core/metrics.c). */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/rng.h"
#include "testutil.h"

/*
 * Expected values are worked by hand in the comments (ulps from the
 * formats' layouts: ulp(1) is 2^-7 in bf16, 2^-10 in f16, 2^-23 in f32;
 * sums of small integer vectors), and the p99 selection is checked
 * against a full sort with qsort and the nearest-rank definition (rank
 * ceil(0.99 n)), a different algorithm.
 */

static ra_tensor *vec(const char *name, ra_dtype dt, int64_t n, const double *v)
{
    ra_tensor *t;
    ck_assert_int_eq(ra_tensor_new(&t, name, dt, 1, &n), RA_OK);
    if (v)
        ra_tensor_from_doubles(t, v);
    return t;
}

static ra_metrics metrics(ra_dtype ulp_dt, ra_dtype y_dt, const double *y, const double *z,
                          int64_t n)
{
    ra_tensor *ty = vec("o", y_dt, n, y), *tz = vec("o_ref", RA_F64, n, z);
    ra_metrics m;
    ck_assert_int_eq(ra_metrics_compute(&m, ty, tz, ulp_dt), RA_OK);
    ra_tensor_free(ty);
    ra_tensor_free(tz);
    return m;
}

/* --- special ------------------------------------------------------------------ */

START_TEST(special_one_ulp)
{
    /* One bf16 ulp above 1 (2^-7) and above 3 (binade [2, 4): 2^-6). */
    double z[2] = {1.0, 3.0}, y[2] = {1.0 + 0x1p-7, 3.0 + 0x1p-6};
    ra_metrics m = metrics(RA_BF16, RA_BF16, y, z, 2);
    ck_assert(m.max_ulp == 1.0 && m.p99_ulp == 1.0);
    ck_assert(m.max_abs == 0x1p-6);
    ck_assert_int_eq(m.worst_index, 0); /* the first of equal errors */
    ck_assert(m.worst_value == 1.0 + 0x1p-7 && m.worst_ref == 1.0);
    ck_assert_int_eq(m.ulp_dtype, RA_BF16);
    /* f16: 2^-10; f32: 2^-23; one below 1 in f32 is half an ulp of 1
       (the ulp is that of the reference's binade). */
    double yf[1] = {1.0 + 0x1p-10};
    m = metrics(RA_F16, RA_F16, yf, z, 1);
    ck_assert(m.max_ulp == 1.0);
    double y32[2] = {1.0 + 0x1p-23, 3.0 - 0x1p-22};
    m = metrics(RA_F32, RA_F32, y32, z, 2);
    ck_assert(m.max_ulp == 1.0); /* 3 - 2^-22: |err| 2^-22, ulp(3) = 2^-22 */
    double ybelow[1] = {1.0 - 0x1p-24};
    m = metrics(RA_F32, RA_F32, ybelow, z, 1);
    ck_assert(m.max_ulp == 0.5);
    /* A correctly rounded result: 1 + 2^-9 rounds to 1 in bf16, error a
       quarter ulp. */
    double z2[1] = {1.0 + 0x1p-9}, y2[1] = {1.0};
    m = metrics(RA_BF16, RA_BF16, y2, z2, 1);
    ck_assert(m.max_ulp == 0.25);
    /* ulps counted in another dtype than the result's: an f32 result one
       f32 ulp off is 2^-16 bf16 ulps. */
    m = metrics(RA_BF16, RA_F32, y32, z, 1);
    ck_assert(m.max_ulp == 0x1p-16);
}
END_TEST

/* Above the format's range the ulp stays that of its top binade (the
   binade of z clamped to emax): f32 emax 127, p 24, so ulp = 2^104 for
   every z >= 2^127.  FLT_MAX = 2^128 - 2^104 against z = 2^128 (a
   reference past the f32 range, binade 128) is 2^104 / 2^104 = 1 ulp
   (0.5 if ulp(z) were 2^105); against z = 3 2^127 the error is
   2^127 + 2^104, i.e. 2^23 + 1 ulps.  bf16 (emax 127, p 8): its largest
   value 2^128 - 2^120 against 2^128 is 2^120 / 2^(127 - 7) = 1 ulp; f16
   (emax 15, p 11): 65504 = 2^16 - 2^5 against 2^16 is 2^5 / 2^5 = 1. */
START_TEST(special_ulp_ceiling)
{
    double y[2] = {0x1p128 - 0x1p104, 0x1p128 - 0x1p104}, z[2] = {0x1p128, 0x3p127};
    ra_metrics m = metrics(RA_F32, RA_F32, y, z, 1);
    ck_assert_msg(m.max_ulp == 1.0, "f32 at 2^128: %a ulps", m.max_ulp);
    m = metrics(RA_F32, RA_F32, y + 1, z + 1, 1);
    ck_assert_msg(m.max_ulp == 0x1p23 + 1, "f32 at 3 2^127: %a ulps", m.max_ulp);
    double yb[1] = {0x1p128 - 0x1p120}, zb[1] = {0x1p128};
    m = metrics(RA_BF16, RA_BF16, yb, zb, 1);
    ck_assert_msg(m.max_ulp == 1.0, "bf16 at 2^128: %a ulps", m.max_ulp);
    ck_assert(m.worst_value == 0x1p128 - 0x1p120); /* held exactly by bf16 */
    double yh[1] = {65504.0}, zh[1] = {65536.0};
    m = metrics(RA_F16, RA_F16, yh, zh, 1);
    ck_assert_msg(m.max_ulp == 1.0, "f16 at 2^16: %a ulps", m.max_ulp);
    /* inside the top binade nothing is clamped: 2^127 + 2^104 vs 2^127 */
    double yt[1] = {0x1p127 + 0x1p104}, zt[1] = {0x1p127};
    m = metrics(RA_F32, RA_F32, yt, zt, 1);
    ck_assert(m.max_ulp == 1.0);
}
END_TEST

START_TEST(special_ulp_floor)
{
    /* ulp(0) is the smallest subnormal: bf16 2^-133; a result of 2^-133 is
       1 ulp, one of 2^-126 is 2^7 = 128 ulps. */
    double z[2] = {0.0, 0.0}, y[2] = {0x1p-133, 0x1p-126};
    ra_metrics m = metrics(RA_BF16, RA_BF16, y, z, 2);
    ck_assert(m.max_ulp == 128.0);
    ck_assert_int_eq(m.worst_index, 1);
    /* Below f16's normal range the spacing is 2^-24: ref 2^-20, result
       2^-20 + 2^-24 is 1 ulp; ref 2^-15 (subnormal), result 2^-15 + 2^-23
       is 2 ulps. */
    double zs[2] = {0x1p-20, 0x1p-15}, ys[2] = {0x1p-20 + 0x1p-24, 0x1p-15 + 0x1p-23};
    m = metrics(RA_F16, RA_F16, ys, zs, 2);
    ck_assert(m.max_ulp == 2.0);
    ck_assert_int_eq(m.worst_index, 1);
}
END_TEST

START_TEST(special_small_vectors)
{
    /* y = [1, 2, 3, 4], z = [1, 2, 3, 5]: err = [0, 0, 0, -1].
       max_abs 1; max_rel 1/5; rel_rms sqrt(1 / (1 + 4 + 9 + 25)) =
       sqrt(1/39); cos (1 + 4 + 9 + 20) / sqrt(30 * 39) = 34 / sqrt(1170);
       ulp(5) in f32 = 2^(2 - 23) = 2^-21, so max_ulp = 2^21, and p99 of 4
       values is rank ceil(3.96) = 4, the largest. */
    double y[4] = {1, 2, 3, 4}, z[4] = {1, 2, 3, 5};
    ra_metrics m = metrics(RA_F32, RA_F32, y, z, 4);
    ck_assert_int_eq(m.n, 4);
    ck_assert(m.max_abs == 1.0);
    ck_assert(m.max_rel == 0.2);
    ck_assert(fabs(m.rel_rms - sqrt(1.0 / 39.0)) <= 0x1p-52 * sqrt(1.0 / 39.0));
    ck_assert(fabs(m.cos - 34.0 / sqrt(1170.0)) <= 0x1p-52);
    ck_assert(m.max_ulp == 0x1p21 && m.p99_ulp == 0x1p21);
    /* rms(z) = sqrt(39/4) = 3.12 in [2, 4): its f32 ulp 2^-22, bf16 2^-6. */
    ck_assert(m.max_ulp_rms == 0x1p22);
    ck_assert_int_eq(m.ulp_n, 4);
    ck_assert_int_eq(m.worst_index, 3);
    ck_assert(metrics(RA_BF16, RA_F32, y, z, 4).max_ulp_rms == 64.0);
    ck_assert(m.worst_value == 4.0 && m.worst_ref == 5.0);
    ck_assert_int_eq(m.nan_count, 0);
    ck_assert_int_eq(m.inf_count, 0);
    /* y = -z: cos = -1, rel_rms = 2, max_rel = 2. */
    double yn[4] = {-1, -2, -3, -5};
    m = metrics(RA_F64, RA_F64, yn, z, 4);
    ck_assert(m.cos == -1.0 && m.rel_rms == 2.0 && m.max_rel == 2.0);
}
END_TEST

START_TEST(special_zeros)
{
    double zero[3] = {0, 0, 0}, one[3] = {0, 1, 0}, two[3] = {2, -2, 1};
    /* Both zero: nothing wrong. */
    ra_metrics m = metrics(RA_BF16, RA_BF16, zero, zero, 3);
    ck_assert(m.max_abs == 0 && m.max_rel == 0 && m.rel_rms == 0 && m.cos == 1.0 &&
              m.max_ulp == 0 && m.p99_ulp == 0);
    /* Zero reference, non-zero result: relative errors infinite, cos 0. */
    m = metrics(RA_BF16, RA_BF16, one, zero, 3);
    ck_assert(isinf(m.max_rel) && isinf(m.rel_rms) && m.cos == 0.0);
    ck_assert(m.max_ulp == 0x1p133); /* 1 / 2^-133 */
    ck_assert_int_eq(m.worst_index, 1);
    /* Zero result: err = -z, rel_rms = max_rel = 1, cos 0. */
    m = metrics(RA_BF16, RA_BF16, zero, two, 3);
    ck_assert(m.rel_rms == 1.0 && m.max_rel == 1.0 && m.cos == 0.0);
    ck_assert(m.max_abs == 2.0);
}
END_TEST

START_TEST(special_nonfinite)
{
    double z[4] = {1, 2, 3, 4};
    double yi[4] = {1, INFINITY, 3, -INFINITY};
    ra_metrics m = metrics(RA_F32, RA_F32, yi, z, 4);
    ck_assert_int_eq(m.inf_count, 2);
    ck_assert_int_eq(m.nan_count, 0);
    ck_assert(isinf(m.max_abs) && isinf(m.max_rel) && isinf(m.rel_rms) && isinf(m.max_ulp) &&
              isinf(m.p99_ulp));
    ck_assert(isnan(m.cos)); /* must not pass a cos >= x gate */
    ck_assert_int_eq(m.worst_index, 1);
    ck_assert(isinf(m.worst_value) && m.worst_ref == 2.0);
    /* NaN wins the worst element even after an Inf. */
    double yn[4] = {1, INFINITY, NAN, 4};
    m = metrics(RA_F32, RA_F32, yn, z, 4);
    ck_assert_int_eq(m.nan_count, 1);
    ck_assert_int_eq(m.inf_count, 1);
    ck_assert(isnan(m.max_abs) && isnan(m.max_rel) && isnan(m.rel_rms) && isnan(m.cos) &&
              isnan(m.max_ulp) && isnan(m.p99_ulp));
    ck_assert_int_eq(m.worst_index, 2);
    ck_assert(m.worst_ref == 3.0);
    /* A non-finite reference is refused, naming it and the element. */
    ra_tensor *ty = vec("o", RA_F32, 4, z);
    double zb[4] = {1, 2, NAN, 4};
    ra_tensor *tz = vec("o_ref", RA_F64, 4, zb);
    ck_assert_int_eq(ra_metrics_compute(&m, ty, tz, RA_F32), RA_EINVAL);
    ck_assert(strstr(ra_last_error(), "'o_ref'") && strstr(ra_last_error(), "[2]"));
    ra_tensor_free(ty);
    ra_tensor_free(tz);
}
END_TEST

START_TEST(special_shapes_and_empty)
{
    int64_t s1[2] = {2, 3}, s2[2] = {3, 2};
    ra_tensor *a, *b;
    ck_assert_int_eq(ra_tensor_new(&a, "dq", RA_BF16, 2, s1), RA_OK);
    ck_assert_int_eq(ra_tensor_new(&b, "dq_ref", RA_F64, 2, s2), RA_OK);
    ra_metrics m;
    ck_assert_int_eq(ra_metrics_compute(&m, a, b, RA_BF16), RA_EINVAL);
    ck_assert_int_eq(tu_nerr, 1);
    const char *msg = ra_last_error();
    ck_assert(strstr(msg, "'dq'") && strstr(msg, "'dq_ref'") && strstr(msg, "[2, 3]") &&
              strstr(msg, "[3, 2]"));
    ra_tensor_free(a);
    ra_tensor_free(b);
    /* Empty tensors: no error, cos 1, no worst element. */
    int64_t s0[1] = {0};
    ck_assert_int_eq(ra_tensor_new(&a, "e", RA_F32, 1, s0), RA_OK);
    ck_assert_int_eq(ra_tensor_new(&b, "e_ref", RA_F64, 1, s0), RA_OK);
    ck_assert_int_eq(ra_metrics_compute(&m, a, b, RA_F32), RA_OK);
    ck_assert(m.n == 0 && m.max_ulp == 0 && m.p99_ulp == 0 && m.cos == 1.0 && m.worst_index == -1);
    ra_tensor_free(a);
    ra_tensor_free(b);
}
END_TEST

START_TEST(special_extreme_scales)
{
    /* Squares of 1e300 overflow and of 1e-300 underflow in double; the
       metrics scale first.  y = s [1, 2], z = s [1, 2.5] (s a power of 2
       so the data are exact): rel_rms = sqrt(0.25 / 7.25), cos =
       (1 + 5) / sqrt(5 * 7.25). */
    const int exps[2] = {990, -1000};
    for (int k = 0; k < 2; k++) {
        double y[2] = {ldexp(1, exps[k]), ldexp(2, exps[k])};
        double z[2] = {ldexp(1, exps[k]), ldexp(2.5, exps[k])};
        ra_metrics m = metrics(RA_F64, RA_F64, y, z, 2);
        ck_assert_msg(fabs(m.rel_rms - sqrt(0.25 / 7.25)) <= 0x1p-50, "2^%d: rel_rms %a", exps[k],
                      m.rel_rms);
        ck_assert_msg(fabs(m.cos - 6.0 / sqrt(36.25)) <= 0x1p-50, "2^%d: cos %a", exps[k], m.cos);
        ck_assert(m.max_rel == 0.2);
    }
}
END_TEST

START_TEST(special_names)
{
    const char *const *names = ra_metric_names();
    const char *want[] = {"max_abs", "max_rel", "rel_rms",    "cos",
                          "max_ulp", "p99_ulp", "max_ulp_rms"};
    for (int i = 0; i < 7; i++)
        ck_assert_str_eq(names[i], want[i]);
    ck_assert(names[7] == NULL);
    ra_metrics m = {.max_abs = 1,
                    .max_rel = 2,
                    .rel_rms = 3,
                    .cos = 4,
                    .max_ulp = 5,
                    .p99_ulp = 6,
                    .max_ulp_rms = 7};
    for (int i = 0; i < 7; i++) {
        double v = 0;
        ck_assert_int_eq(ra_metrics_get(&v, &m, want[i]), RA_OK);
        ck_assert(v == i + 1);
    }
    double v;
    ck_assert_int_eq(ra_metrics_get(&v, &m, "rms"), RA_ENOTFOUND);
    ck_assert(strstr(ra_last_error(), "'rms'") != NULL);
    ck_assert(ra_metric_higher_is_better("cos"));
    ck_assert(!ra_metric_higher_is_better("max_ulp"));
    ck_assert(!ra_metric_higher_is_better("rel_rms"));
}
END_TEST

START_TEST(special_index_format)
{
    char buf[64];
    const int64_t shape[4] = {2, 4, 3, 8};
    /* [0, 3, 1, 7] is ((0 * 4 + 3) * 3 + 1) * 8 + 7 = 87. */
    ra_index_format(buf, sizeof buf, 87, 4, shape);
    ck_assert_str_eq(buf, "[0, 3, 1, 7]");
    /* the last element: 2*4*3*8 - 1 = 191 = [1, 3, 2, 7] */
    ra_index_format(buf, sizeof buf, 191, 4, shape);
    ck_assert_str_eq(buf, "[1, 3, 2, 7]");
    ra_index_format(buf, sizeof buf, 0, 4, shape);
    ck_assert_str_eq(buf, "[0, 0, 0, 0]");
    ra_index_format(buf, sizeof buf, 5, 1, shape + 3);
    ck_assert_str_eq(buf, "[5]");
    ra_index_format(buf, sizeof buf, 0, 0, shape);
    ck_assert_str_eq(buf, "[]");
    ra_index_format(buf, sizeof buf, -1, 4, shape);
    ck_assert_str_eq(buf, "[flat -1]");
    ra_index_format(buf, 6, 87, 4, shape); /* truncated but terminated */
    ck_assert_str_eq(buf, "[0, 3");
}
END_TEST

/* --- regress: ulps only where the reference element is conditioned ----------------- */

START_TEST(regress_ulp_zero_reference)
{
    /* dg at t = 0 without h0 is exactly 0 and a correct chunked kernel
       leaves a rounding residue there: max_ulp was 2^-30 / 2^-149 = 2^119.
       z = [0, 1, -1, 1]: rms = sqrt(3)/2 = 0.87, floor 2^-10 rms, so the
       zero is left out of the ulps (the three others are exact: max_ulp
       0); at the tensor's scale the residue is 2^-30 / ulp_f32(0.87) =
       2^-30 / 2^-24 = 2^-6 ulps. */
    double z[4] = {0, 1, -1, 1}, y[4] = {0x1p-30, 1, -1, 1};
    ra_metrics m = metrics(RA_F32, RA_F32, y, z, 4);
    ck_assert_msg(m.max_ulp == 0 && m.p99_ulp == 0, "max_ulp %g p99 %g", m.max_ulp, m.p99_ulp);
    ck_assert_int_eq(m.ulp_n, 3);
    ck_assert(m.max_ulp_rms == 0x1p-6);
    ck_assert(m.max_abs == 0x1p-30);
    ck_assert(isfinite(m.max_rel) && isfinite(m.rel_rms));
}
END_TEST

START_TEST(regress_ulp_conditioned_rule)
{
    /* z = [3, 4, 3, 4, 0, f(1 + 2^-8), f(1 - 2^-8), -f(1 + 2^-8)] with
       f = 2.5 2^-10: the big four give rms^2 = 50/8 = 6.25, the small ones
       move rms by a relative 2^-21 or less, so the floor 2^-10 rms is f to
       far better than the 2^-8 margins.  Counted: 0..3, 5 and 7 (|z| above
       f, the sign does not matter); left out: 4 (zero) and 6 (just
       below).  Errors (f64 results, f32 ulps): element 1 (4, ulp 2^-21)
       2^-22 = 0.5 ulp; element 5 (in [2^-9, 2^-8): ulp 2^-32) 2^-32 = 1
       ulp; element 6 (same binade) 2^-30 = 4 ulps and element 4 2^-40 =
       2^109 ulps of 2^-149, both left out.  So max_ulp = p99 (rank 6 of 6)
       = 1 at element 5; max_abs 2^-22 (element 1), over ulp_f32(2.5) =
       2^-22: max_ulp_rms 1. */
    const double f = 2.5 * 0x1p-10;
    double z[8] = {3, 4, 3, 4, 0, f * (1 + 0x1p-8), f * (1 - 0x1p-8), -f * (1 + 0x1p-8)};
    double y[8];
    memcpy(y, z, sizeof y);
    y[1] += 0x1p-22, y[4] += 0x1p-40, y[5] += 0x1p-32, y[6] += 0x1p-30;
    ra_metrics m = metrics(RA_F32, RA_F64, y, z, 8);
    ck_assert_int_eq(m.ulp_n, 6);
    ck_assert_msg(fabs(m.ulp_floor - f) <= 0x1p-20 * f, "floor %a", m.ulp_floor);
    ck_assert_msg(m.max_ulp == 1.0 && m.p99_ulp == 1.0, "max_ulp %a p99 %a", m.max_ulp, m.p99_ulp);
    ck_assert_int_eq(m.worst_index, 5);
    ck_assert(m.max_abs == 0x1p-22);
    ck_assert(m.max_ulp_rms == 1.0);
    /* Moving element 6 above the floor brings its 4 ulps in. */
    z[6] = y[6] = f * (1 + 0x1p-7);
    y[6] += 0x1p-30;
    m = metrics(RA_F32, RA_F64, y, z, 8);
    ck_assert_int_eq(m.ulp_n, 7);
    ck_assert(m.max_ulp == 4.0);
    ck_assert_int_eq(m.worst_index, 6);
}
END_TEST

/* --- data: p99 by nearest rank ------------------------------------------------------ */

/* ulp errors exactly v[i] (f64 results 1 + v 2^-23 against 1, counted in
   f32 ulps), placed in a scrambled order. */
static double p99_of(const double *v, int64_t n)
{
    double *y = malloc((size_t)n * sizeof *y), *z = malloc((size_t)n * sizeof *z);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = (i * 7919) % n; /* a permutation when n is not a multiple of 7919 */
        y[j] = 1.0 + v[i] * 0x1p-23;
        z[j] = 1.0;
    }
    ra_metrics m = metrics(RA_F32, RA_F64, y, z, n);
    free(y);
    free(z);
    return m.p99_ulp;
}

START_TEST(data_p99_rank)
{
    double v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = i;
    /* Sorted values 0..n-1: rank ceil(0.99 n) holds ceil(0.99 n) - 1. */
    ck_assert(p99_of(v, 1) == 0);      /* rank 1 */
    ck_assert(p99_of(v, 100) == 98);   /* rank 99 */
    ck_assert(p99_of(v, 101) == 99);   /* rank ceil(99.99) = 100 */
    ck_assert(p99_of(v, 200) == 197);  /* rank 198 */
    ck_assert(p99_of(v, 1000) == 989); /* rank 990 */
    /* Ties and fractions: 0.25 x 990, then 991..1000 -> value 0.25 at
       rank 990. */
    for (int i = 0; i < 1000; i++)
        v[i] = i < 990 ? 0.25 : i;
    ck_assert(p99_of(v, 1000) == 0.25);
    v[989] = 0.5; /* now rank 990 is 0.5 */
    ck_assert(p99_of(v, 1000) == 0.5);
}
END_TEST

/* --- random: p99 against a full sort ------------------------------------------------- */

/* ulp(z) in bf16 from the format's layout (8-bit significand, emin -126,
   ulp(0) the smallest subnormal 2^-133), written here so that the
   expected ulps do not come from tensor.c (ra_dtype_ulp). */
static double bf16_ulp(double z)
{
    if (z == 0)
        return 0x1p-133;
    int e = ilogb(z);
    return ldexp(1.0, (e < -126 ? -126 : e) - 7);
}

START_TEST(random_p99_vs_sort)
{
    ra_rng *r;
    ck_assert_int_eq(ra_rng_new(&r, tu_seed(31), "p99"), RA_OK);
    const int64_t sizes[] = {1, 2, 3, 99, 100, 101, 4097, 300001};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int64_t n = sizes[k];
        ra_tensor *ty = vec("y", RA_BF16, n, NULL), *tz = vec("z", RA_F64, n, NULL);
        double *u = malloc((size_t)n * sizeof *u), *zs = malloc((size_t)n * sizeof *zs);
        double ss = 0; /* sum of z^2: |z| < 2^20, no overflow in double */
        for (int64_t i = 0; i < n; i++) {
            double z = ldexp(2 * ra_rng_uniform_open(r) - 1, (int)(ra_rng_u32(r) % 40) - 20);
            if (ra_rng_u32(r) % 50 == 0)
                z = 0;
            ra_tensor_set(tz, i, z);
            zs[i] = z;
            ss += z * z;
            /* The result: z truncated to a multiple of its bf16 ulp (at most
               2^8 of them: a bf16 number), then moved a few ulps now and
               then; what the tensor holds is read back.  |y - z| is exact
               (Sterbenz, or z = 0) and the ulp a power of two, so u is the
               exact ulp error. */
            const double uz = bf16_ulp(z);
            double y = floor(z / uz) * uz;
            if (ra_rng_u32(r) % 3 == 0)
                y += uz * (double)(ra_rng_u32(r) % 7);
            ra_tensor_set(ty, i, y);
            y = ra_tensor_get(ty, i);
            u[i] = fabs(y - z) / uz;
        }
        /* Only |z| >= 2^-10 rms(z) have ulps (z spans 2^40, so most do not). */
        const double floor_z = ldexp(sqrt(ss / (double)n), -10);
        int64_t nc = 0;
        for (int64_t i = 0; i < n; i++)
            if (fabs(zs[i]) >= floor_z)
                u[nc++] = u[i];
        ra_metrics m;
        ck_assert_int_eq(ra_metrics_compute(&m, ty, tz, RA_BF16), RA_OK);
        ck_assert_int_eq(m.ulp_n, nc);
        qsort(u, (size_t)nc, sizeof *u, tu_cmp_double);
        int64_t rank = (int64_t)ceil(0.99 * (double)nc);
        ck_assert_msg(m.p99_ulp == u[rank - 1], "n %lld: p99 %a, sort %a", (long long)n, m.p99_ulp,
                      u[rank - 1]);
        ck_assert(m.max_ulp == u[nc - 1]);
        free(u);
        free(zs);
        ra_tensor_free(ty);
        ra_tensor_free(tz);
    }
    ra_rng_free(r);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    tu_tcase(s, "special", tu_capture, NULL, special_one_ulp, special_ulp_floor,
             special_ulp_ceiling, special_small_vectors, special_zeros, special_nonfinite,
             special_shapes_and_empty, special_extreme_scales, special_names, special_index_format);
    tu_tcase(s, "regress", tu_capture, NULL, regress_ulp_zero_reference,
             regress_ulp_conditioned_rule);
    tu_tcase(s, "data", tu_capture, NULL, data_p99_rank);
    tu_tcase(s, "random", tu_capture, NULL, random_p99_vs_sort);
    return s;
}

int main(void) { return tu_run(metrics_suite()); }
