/* Test helpers for the reference suites: gdn case values, reference options, MPFR comparisons. */
#ifndef RA_TESTS_REF_TESTUTIL_H
#define RA_TESTS_REF_TESTUTIL_H

/*
 * Cases are built with testutil.h's tu_gdn_case in f64 (so every value set
 * is stored exactly) and filled from a splitmix64 stream with fixed seeds,
 * so the tests need no generator of the suite.  Errors are recorded by
 * testutil.h's handler (tu_capture) so a test can check the message.
 */

#include <math.h>
#include <stdint.h>

#include <check.h>
#include <mpfr.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/tensor.h"
#include "ref/ref.h"
#include "testutil.h"

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

static inline void tu_fill(ra_tensor *t, uint64_t *s, double lo, double hi)
{
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, tu_uniform(s, lo, hi));
}

/* Reference options for a test: no cache, no progress bar. */
static inline ra_ref_opts tu_ref_opts(void)
{
    ra_ref_opts o;
    ra_ref_opts_init(&o);
    o.use_cache = 0;
    o.progress = 0;
    return o;
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

/* A gdn case of shape s in f64 (h0, do, dht as `with` asks) with
   default-regime-like values from seed. */
static inline void tu_ref_case(ra_case *c, const ra_gdn_shape *s, unsigned with, uint64_t seed)
{
    tu_gdn_case(c, s, RA_F64, with);
    tu_fill_default(c, seed);
}

#endif
