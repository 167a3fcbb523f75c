/* Test helpers for the reference suites: hand-built gdn cases, MPFR comparisons. */
#ifndef RA_TESTS_REF_TESTUTIL_H
#define RA_TESTS_REF_TESTUTIL_H

/*
 * Cases are built by hand (f64 tensors, so every value set is stored
 * exactly) from a splitmix64 stream with fixed seeds, so the tests need no
 * generator of the suite.  Errors reported by the library are captured so
 * a test can check the message.
 */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <mpfr.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/status.h"
#include "core/tensor.h"

static char tu_msg[2048];
static int tu_nerr;

static inline void tu_handler(const char *reason, const char *file, int line, ra_status code)
{
    (void)file, (void)line, (void)code;
    snprintf(tu_msg, sizeof tu_msg, "%s", reason);
    tu_nerr++;
}

static inline void tu_capture(void)
{
    tu_msg[0] = '\0';
    tu_nerr = 0;
    ra_set_error_handler(tu_handler);
}

static inline uint64_t tu_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi), a double with 53 random bits. */
static inline double tu_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(tu_next(s) >> 11) * 0x1p-53);
}

static inline ra_tensor *tu_new(ra_case *c, const char *name, int ndim, int64_t d0, int64_t d1,
                                int64_t d2, int64_t d3)
{
    const int64_t shape[4] = {d0, d1, d2, d3};
    ra_tensor *t;
    ck_assert_int_eq(ra_tensors_new(&c->tensors, &t, name, RA_F64, ndim, shape), RA_OK);
    return t;
}

static inline void tu_fill(ra_tensor *t, uint64_t *s, double lo, double hi)
{
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, tu_uniform(s, lo, hi));
}

/* A gdn case of shape sh with every tensor zero; h0 / dht / do on request. */
static inline void tu_gdn_case(ra_case *c, const ra_gdn_shape *sh, int h0, int dht, int do_)
{
    ra_case_init(c);
    ck_assert_int_eq(ra_case_set_op(c, "gdn"), RA_OK);
    tu_new(c, "q", 4, sh->B, sh->T, sh->Hk, sh->K);
    tu_new(c, "k", 4, sh->B, sh->T, sh->Hk, sh->K);
    tu_new(c, "v", 4, sh->B, sh->T, sh->Hv, sh->V);
    tu_new(c, "g", 3, sh->B, sh->T, sh->Hv, 0);
    tu_new(c, "beta", 3, sh->B, sh->T, sh->Hv, 0);
    if (h0)
        tu_new(c, "h0", 4, sh->B, sh->Hv, sh->K, sh->V);
    if (do_)
        tu_new(c, "do", 4, sh->B, sh->T, sh->Hv, sh->V);
    if (dht)
        tu_new(c, "dht", 4, sh->B, sh->Hv, sh->K, sh->V);
}

static inline ra_tensor *tu_t(const ra_case *c, const char *name)
{
    ra_tensor *t = ra_tensors_find(&c->tensors, name);
    ck_assert_msg(t != NULL, "tensor %s missing", name);
    return t;
}

/* Default-regime-like values: q, k rows of norm about 1, logsigmoid-like
   gates in [-1, -0.05), beta in [0.1, 0.9), the rest in [-1, 1). */
static inline void tu_fill_default(ra_case *c, uint64_t seed)
{
    uint64_t s = seed;
    const ra_tensor *q = tu_t(c, "q");
    const double r = 1.7320508075688772 / sqrt((double)q->shape[3]); /* uniform: E x^2 = r^2/3 */
    tu_fill(tu_t(c, "q"), &s, -r, r);
    tu_fill(tu_t(c, "k"), &s, -r, r);
    tu_fill(tu_t(c, "v"), &s, -1, 1);
    tu_fill(tu_t(c, "g"), &s, -1, -0.05);
    tu_fill(tu_t(c, "beta"), &s, 0.1, 0.9);
    const char *rest[] = {"h0", "do", "dht"};
    for (int i = 0; i < 3; i++) {
        ra_tensor *t = ra_tensors_find(&c->tensors, rest[i]);
        if (t)
            tu_fill(t, &s, -1, 1);
    }
}

/* log2 of max_i |a_i - b_i| / max_i |b_i| (normwise relative error), or
   -100000 when they are identical; MPFR arithmetic at 64 bits. */
static inline double tu_normwise_log2(mpfr_srcptr a, mpfr_srcptr b, size_t n)
{
    mpfr_t d, err, scale;
    mpfr_inits2(64, d, err, scale, (mpfr_ptr)0);
    mpfr_set_zero(err, 1);
    mpfr_set_zero(scale, 1);
    for (size_t i = 0; i < n; i++) {
        mpfr_sub(d, a + i, b + i, MPFR_RNDN);
        if (mpfr_cmpabs(d, err) > 0)
            mpfr_abs(err, d, MPFR_RNDN);
        if (mpfr_cmpabs(b + i, scale) > 0)
            mpfr_abs(scale, b + i, MPFR_RNDN);
    }
    double r = -100000;
    if (!mpfr_zero_p(err)) {
        if (!mpfr_zero_p(scale))
            mpfr_div(d, err, scale, MPFR_RNDN);
        else
            mpfr_set(d, err, MPFR_RNDN);
        mpfr_log2(d, d, MPFR_RNDN);
        r = mpfr_get_d(d, MPFR_RNDN);
    }
    mpfr_clears(d, err, scale, (mpfr_ptr)0);
    return r;
}

#endif
