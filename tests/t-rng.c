/* Check suite for the random streams and deterministic functions (src/core/rng.c). */
#include <config.h>

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "core/rng.h"
#include "testutil.h"

/*
 * Independent sources of expected values:
 *  - MT19937: the published output of the reference implementation for
 *    init_genrand(5489) (Matsumoto & Nishimura's mt19937ar.out; also the
 *    C++ standard's check that the 10000th output of a default mt19937 is
 *    4123659995).
 *  - splitmix64: Vigna's published outputs from state 1234567; FNV-1a-64:
 *    the published test vectors ("" -> 0xcbf29ce484222325, "a" ->
 *    0xaf63dc4c8601ec8c, "foobar" -> 0x85944171f73967e8).
 *  - exp, log, log1p, sigmoid, logsigmoid: MPFR's correctly rounded
 *    functions at 256 bits; ulp errors measured against the exact value.
 *  - Normals: the polar method recomputed in MPFR from the raw mt19937
 *    words of the same stream; the distributions: sample moments and
 *    Kolmogorov-Smirnov distances against the exact CDFs (libm's erfc and
 *    exp here: a different implementation, only used for the CDF).
 *  - L2 rows: the norm of the output computed exactly in MPFR.
 * Random tests use fixed seeds; RA_CHECK_RANDOMIZE=1 draws one from the
 * clock and prints it.
 */

#define PREC 256

/* |y - exact| / ulp(exact), ulp in double's format (subnormal spacing
   below 2^-1022). */
static double ulp_err(double y, mpfr_srcptr exact)
{
    mpfr_t d;
    mpfr_init2(d, PREC + 64);
    mpfr_sub_d(d, exact, y, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    long ex = mpfr_zero_p(exact) ? -1022 : mpfr_get_exp(exact) - 1; /* binade of |exact| */
    if (ex < -1022)
        ex = -1022;
    mpfr_mul_2si(d, d, -(ex - 52), MPFR_RNDN);
    double r = mpfr_get_d(d, MPFR_RNDU);
    mpfr_clear(d);
    return r;
}

typedef int (*mpfr_fn)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

static double err_vs_mpfr(double (*f)(double), mpfr_fn g, double x)
{
    mpfr_t mx, my;
    mpfr_init2(mx, 53);
    mpfr_init2(my, PREC);
    mpfr_set_d(mx, x, MPFR_RNDN);
    g(my, mx, MPFR_RNDN);
    double e = ulp_err(f(x), my);
    mpfr_clears(mx, my, (mpfr_ptr)0);
    return e;
}

/* logsigmoid and sigmoid in MPFR: -log1p(exp(-z)) and 1/(1+exp(-z)), with
   exp(-z) at PREC + 64 bits. */
static void init_exp_neg(mpfr_ptr t, mpfr_srcptr z)
{
    mpfr_init2(t, PREC + 64);
    mpfr_neg(t, z, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
}

static int mpfr_logsigmoid(mpfr_ptr y, mpfr_srcptr z, mpfr_rnd_t rnd)
{
    mpfr_t t;
    init_exp_neg(t, z);
    mpfr_log1p(t, t, MPFR_RNDN);
    int r = mpfr_neg(y, t, rnd);
    mpfr_clear(t);
    return r;
}

static int mpfr_sigmoid(mpfr_ptr y, mpfr_srcptr z, mpfr_rnd_t rnd)
{
    mpfr_t t;
    init_exp_neg(t, z);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    int r = mpfr_ui_div(y, 1, t, rnd);
    mpfr_clear(t);
    return r;
}

/* --- special ------------------------------------------------------------------ */

START_TEST(special_exp)
{
    ck_assert(ra_det_exp(0.0) == 1.0);
    ck_assert(ra_det_exp(-0.0) == 1.0);
    ck_assert(ra_det_exp(1e-300) == 1.0);  /* 1 + 1e-300 rounds to 1 */
    ck_assert(ra_det_exp(-1e-300) == 1.0); /* 1 - 1e-300 rounds to 1 */
    ck_assert(isinf(ra_det_exp(INFINITY)) && ra_det_exp(INFINITY) > 0);
    ck_assert(ra_det_exp(-INFINITY) == 0.0 && !signbit(ra_det_exp(-INFINITY)));
    ck_assert(isnan(ra_det_exp(NAN)));
    /* log(DBL_MAX) = 709.782712893383996...: below it finite, above Inf. */
    ck_assert(isfinite(ra_det_exp(709.78)));
    ck_assert(isinf(ra_det_exp(709.79)));
    ck_assert(isinf(ra_det_exp(1000.0)));
    /* exp(x) < 2^-1075 (x < -745.1332...) rounds to 0; just above, the
       smallest subnormal 2^-1074. */
    ck_assert(ra_det_exp(-746.0) == 0.0);
    ck_assert(ra_det_exp(-745.0) == 0x1p-1074);
    ck_assert(ra_det_exp(-1e10) == 0.0);
    /* Near the ends of the range, within one ulp of the exact value. */
    const double xs[] = {1.0, -1.0, 709.78, -708.0, -720.0, -740.0, 0.5 * M_LN2, -0.5 * M_LN2};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        ck_assert_msg(err_vs_mpfr(ra_det_exp, mpfr_exp, xs[i]) < 1.0, "exp(%a)", xs[i]);
}
END_TEST

START_TEST(special_log)
{
    ck_assert(ra_det_log(1.0) == 0.0 && !signbit(ra_det_log(1.0)));
    ck_assert(isinf(ra_det_log(0.0)) && ra_det_log(0.0) < 0);
    ck_assert(isinf(ra_det_log(-0.0)) && ra_det_log(-0.0) < 0);
    ck_assert(isnan(ra_det_log(-1.0)));
    ck_assert(isnan(ra_det_log(-INFINITY)));
    ck_assert(isnan(ra_det_log(-0x1p-1074)));
    ck_assert(isinf(ra_det_log(INFINITY)) && ra_det_log(INFINITY) > 0);
    ck_assert(isnan(ra_det_log(NAN)));
    /* log 2 is assembled from ln2_hi + ln2_lo: the correctly rounded value
       0x1.62e42fefa39efp-1 (MPFR's, written out). */
    ck_assert(ra_det_log(2.0) == 0x1.62e42fefa39efp-1);
    const double xs[] = {0x1p-1074,
                         0x1p-1022,
                         0x1.fffffffffffffp-1023,
                         DBL_MAX,
                         0x1p1023,
                         0.5,
                         0x1.6a09e667f3bccp-1,
                         0x1.6a09e667f3bcdp-1,
                         0x1.6a09e667f3bcdp+0,
                         1.0 + 0x1p-52,
                         1.0 - 0x1p-53,
                         10.0,
                         0.1};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        ck_assert_msg(err_vs_mpfr(ra_det_log, mpfr_log, xs[i]) < 1.0, "log(%a)", xs[i]);
}
END_TEST

START_TEST(special_log1p)
{
    ck_assert(ra_det_log1p(0.0) == 0.0 && !signbit(ra_det_log1p(0.0)));
    ck_assert(ra_det_log1p(-0.0) == 0.0 && signbit(ra_det_log1p(-0.0)));
    ck_assert(isinf(ra_det_log1p(-1.0)) && ra_det_log1p(-1.0) < 0);
    ck_assert(isnan(ra_det_log1p(-1.5)));
    ck_assert(isnan(ra_det_log1p(-INFINITY)));
    ck_assert(isinf(ra_det_log1p(INFINITY)) && ra_det_log1p(INFINITY) > 0);
    ck_assert(isnan(ra_det_log1p(NAN)));
    /* log1p(x) = x - x^2/2 + ...: for |x| < 2^-54 the correctly rounded
       value is x itself. */
    ck_assert(ra_det_log1p(1e-300) == 1e-300);
    ck_assert(ra_det_log1p(-1e-300) == -1e-300);
    ck_assert(ra_det_log1p(0x1p-1074) == 0x1p-1074);
    ck_assert(ra_det_log1p(0x1p-60) == 0x1p-60);
    /* log1p(1) = log 2, correctly rounded 0x1.62e42fefa39efp-1. */
    ck_assert(ra_det_log1p(1.0) == 0x1.62e42fefa39efp-1);
    /* Across the kernel's edges and where 1 + x rounds. */
    const double xs[] = {0x1.2bec333018866p-2,
                         0x1.a827999fcef32p-2,
                         -0x1.2bec333018867p-2,
                         -0x1.2bec333018866p-2,
                         0.5,
                         -0.5,
                         -1.0 + 0x1p-53,
                         1e16,
                         3.0 + 0x1p-51,
                         0x1p52 + 1.0,
                         DBL_MAX,
                         1e-10,
                         -1e-10};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        ck_assert_msg(err_vs_mpfr(ra_det_log1p, mpfr_log1p, xs[i]) < 1.0, "log1p(%a)", xs[i]);
}
END_TEST

START_TEST(special_sigmoid)
{
    ck_assert(ra_det_sigmoid(0.0) == 0.5);
    ck_assert(ra_det_sigmoid(800.0) == 1.0);
    ck_assert(ra_det_sigmoid(-800.0) == 0.0);
    ck_assert(ra_det_sigmoid(INFINITY) == 1.0);
    ck_assert(ra_det_sigmoid(-INFINITY) == 0.0);
    /* logsigmoid(0) = -log 2, correctly rounded -0x1.62e42fefa39efp-1. */
    ck_assert(ra_det_logsigmoid(0.0) == -0x1.62e42fefa39efp-1);
    ck_assert(ra_det_logsigmoid(-800.0) == -800.0); /* -800 - log1p(e^-800): e^-800 -> 0 */
    ck_assert(ra_det_logsigmoid(800.0) == 0.0);
    ck_assert(ra_det_logsigmoid(-INFINITY) == -INFINITY);
    const double zs[] = {40.0, -40.0, 1e-20, -1e-20, 36.7, -36.7, 700.0, -700.0, 2.5, -2.5};
    for (size_t i = 0; i < sizeof zs / sizeof zs[0]; i++) {
        ck_assert_msg(err_vs_mpfr(ra_det_sigmoid, mpfr_sigmoid, zs[i]) <= 4.0, "sigmoid(%a)",
                      zs[i]);
        ck_assert_msg(err_vs_mpfr(ra_det_logsigmoid, mpfr_logsigmoid, zs[i]) <= 4.0,
                      "logsigmoid(%a)", zs[i]);
    }
}
END_TEST

START_TEST(special_uniform_open)
{
    ra_rng *r;
    ck_assert_int_eq(ra_rng_new(&r, 7, "u"), RA_OK);
    for (int i = 0; i < 100000; i++) {
        double u = ra_rng_uniform_open(r);
        ck_assert(u > 0.0 && u < 1.0);
        double m = u * 0x1p53; /* exact: u is a multiple of 2^-53 */
        ck_assert(m == floor(m));
    }
    ra_rng_free(r);
}
END_TEST

/* --- data --------------------------------------------------------------------------- */

START_TEST(data_mt19937_reference)
{
    /* mt19937ar.c, init_genrand(5489): the first ten outputs, and the
       10000th (C++ [rand.predef]: 4123659995). */
    static const uint32_t want[] = {3499211612u, 581869302u,  3890346734u, 3586334585u,
                                    545404204u,  4161255391u, 3922919429u, 949333985u,
                                    2715962298u, 1323567403u};
    ra_rng *r;
    ck_assert_int_eq(ra_rng_new_mt(&r, 5489), RA_OK);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(ra_rng_u32(r), want[i]);
    uint32_t v = 0;
    for (int i = 10; i < 10000; i++)
        v = ra_rng_u32(r);
    ck_assert_uint_eq(v, 4123659995u);
    ra_rng_free(r);
}
END_TEST

START_TEST(data_seed_mixing)
{
    ck_assert_uint_eq(ra_rng_fnv1a64(""), UINT64_C(0xcbf29ce484222325));
    ck_assert_uint_eq(ra_rng_fnv1a64("a"), UINT64_C(0xaf63dc4c8601ec8c));
    ck_assert_uint_eq(ra_rng_fnv1a64("foobar"), UINT64_C(0x85944171f73967e8));
    static const uint64_t want[] = {UINT64_C(6457827717110365317), UINT64_C(3203168211198807973),
                                    UINT64_C(9817491932198370423), UINT64_C(4593380528125082431),
                                    UINT64_C(16408922859458223821)};
    uint64_t st = 1234567;
    for (int i = 0; i < 5; i++)
        ck_assert_uint_eq(ra_rng_splitmix64(&st), want[i]);
    /* The stream seed is the high half of one splitmix64 step from
       seed ^ fnv1a64(name): choose seeds that make that state 1234567. */
    const uint32_t hi = (uint32_t)(UINT64_C(6457827717110365317) >> 32);
    ck_assert_uint_eq(ra_rng_stream_seed(UINT64_C(1234567) ^ UINT64_C(0xcbf29ce484222325), ""), hi);
    ck_assert_uint_eq(ra_rng_stream_seed(UINT64_C(1234567) ^ UINT64_C(0xcbf29ce484222325), NULL),
                      hi);
    ck_assert_uint_eq(ra_rng_stream_seed(UINT64_C(1234567) ^ UINT64_C(0xaf63dc4c8601ec8c), "a"),
                      hi);
    /* ra_rng_new(seed, name) is ra_rng_new_mt(stream seed). */
    ra_rng *a, *b;
    ck_assert_int_eq(ra_rng_new(&a, 42, "q"), RA_OK);
    ck_assert_int_eq(ra_rng_new_mt(&b, ra_rng_stream_seed(42, "q")), RA_OK);
    for (int i = 0; i < 100; i++)
        ck_assert_uint_eq(ra_rng_u32(a), ra_rng_u32(b));
    ra_rng_free(a);
    ra_rng_free(b);
}
END_TEST

START_TEST(data_uniform_construction)
{
    /* (a 2^26 + b) 2^-53 from a = w0 >> 5, b = w1 >> 6 of two words. */
    ra_rng *a, *b;
    ck_assert_int_eq(ra_rng_new(&a, 3, "x"), RA_OK);
    ck_assert_int_eq(ra_rng_new(&b, 3, "x"), RA_OK);
    for (int i = 0; i < 1000; i++) {
        uint64_t w0 = ra_rng_u32(a) >> 5, w1 = ra_rng_u32(a) >> 6;
        uint64_t m = (w0 << 26) | w1;
        ck_assert(m != 0);
        ck_assert(ra_rng_uniform_open(b) == ldexp((double)m, -53));
    }
    ra_rng_free(a);
    ra_rng_free(b);
}
END_TEST

/* The polar method redone from raw words: x, y and s = RN(RN(x^2) + RN(y^2))
   as the documented algorithm forms them in double (its accept/reject
   decision and its s are part of the definition), then m = sqrt(-2 log(s) /
   s) and x m, y m in MPFR.  The library's log, division, sqrt and products
   add at most a few roundings: relative error <= 4 2^-53. */
START_TEST(data_polar_method)
{
    ra_rng *raw, *gen;
    ck_assert_int_eq(ra_rng_new(&raw, 11, "n"), RA_OK);
    ck_assert_int_eq(ra_rng_new(&gen, 11, "n"), RA_OK);
    enum { N = 2000 };
    double *z = malloc(N * sizeof *z);
    ra_gen_normal(z, N, gen, 0.0, 1.0);
    mpfr_t s, m, t;
    mpfr_inits2(PREC, s, m, t, (mpfr_ptr)0);
    for (int i = 0; i < N;) {
        double x = 2.0 * ra_rng_uniform_open(raw) - 1.0;
        double y = 2.0 * ra_rng_uniform_open(raw) - 1.0;
        double sd = x * x + y * y;
        if (sd >= 1.0 || sd == 0.0)
            continue;
        mpfr_set_d(s, sd, MPFR_RNDN);
        mpfr_log(m, s, MPFR_RNDN);
        mpfr_mul_si(m, m, -2, MPFR_RNDN);
        mpfr_div(m, m, s, MPFR_RNDN);
        mpfr_sqrt(m, m, MPFR_RNDN);
        for (int j = 0; j < 2 && i < N; j++, i++) {
            mpfr_mul_d(t, m, j ? y : x, MPFR_RNDN);
            double want = mpfr_get_d(t, MPFR_RNDN);
            ck_assert_msg(fabs(z[i] - want) <= 4 * 0x1p-53 * fabs(want), "normal %d: %a vs %a", i,
                          z[i], want);
        }
    }
    mpfr_clears(s, m, t, (mpfr_ptr)0);
    free(z);
    ra_rng_free(raw);
    ra_rng_free(gen);
}
END_TEST

START_TEST(data_l2_rows)
{
    /* Row [3, 4] -> [0.6, 0.8] correctly rounded; zero row stays zero;
       NaN/Inf rows become NaN; one-element rows become +-1. */
    double x[] = {3, 4, 0, 0, -0.0, 0, INFINITY, 1, NAN, 2, -5e-320, 0};
    ra_gen_l2_normalize_rows(x, 6, 2);
    ck_assert(x[0] == 0.6 && x[1] == 0.8);
    ck_assert(x[2] == 0 && x[3] == 0 && x[4] == 0);
    ck_assert(isnan(x[6]) && isnan(x[7]) && isnan(x[8]) && isnan(x[9]));
    ck_assert(x[10] == -1.0 && x[11] == 0.0);
    double big[] = {0x3p996, 0x4p996, 0x3p-1040, 0x4p-1040}; /* 3:4 exactly */
    ra_gen_l2_normalize_rows(big, 2, 2);
    ck_assert(big[0] == 0.6 && big[1] == 0.8);
    ck_assert(big[2] == 0.6 && big[3] == 0.8);
}
END_TEST

/* --- random ----------------------------------------------------------------------- */

/* 100000 points, uniform on [lo, hi) or, with log_scale, (0.5 + u/2) 2^e
   with e uniform in [lo, hi) and a random sign when signed_. */
static void check_accuracy(double (*f)(double), mpfr_fn g, double lo, double hi, int log_scale,
                           int signed_, const char *what)
{
    ra_rng *r;
    ck_assert_int_eq(ra_rng_new(&r, tu_seed(2024), what), RA_OK);
    double worst = 0, at = 0;
    for (int i = 0; i < 100000; i++) {
        double u = ra_rng_uniform_open(r);
        double x = log_scale
                       ? ldexp(0.5 + 0.5 * u, (int)floor(lo + (hi - lo) * ra_rng_uniform_open(r)))
                       : lo + (hi - lo) * u;
        if (signed_ && ra_rng_u32(r) & 1)
            x = -x;
        double e = err_vs_mpfr(f, g, x);
        if (e > worst)
            worst = e, at = x;
    }
    ra_rng_free(r);
    ck_assert_msg(worst < 1.0, "%s: %.3f ulp at %a (bound: below 1 ulp)", what, worst, at);
}

START_TEST(random_exp)
{
    check_accuracy(ra_det_exp, mpfr_exp, -745.0, 709.78, 0, 0, "exp");
    check_accuracy(ra_det_exp, mpfr_exp, -1.0, 1.0, 0, 0, "exp near 0");
    check_accuracy(ra_det_exp, mpfr_exp, -60, 2, 1, 1, "exp tiny");
}
END_TEST

START_TEST(random_log)
{
    check_accuracy(ra_det_log, mpfr_log, -1073, 1024, 1, 0, "log all binades");
    check_accuracy(ra_det_log, mpfr_log, 0.5, 2.0, 0, 0, "log near 1");
}
END_TEST

START_TEST(random_log1p)
{
    check_accuracy(ra_det_log1p, mpfr_log1p, -1.0, 1.0, 0, 0, "log1p (-1, 1)");
    check_accuracy(ra_det_log1p, mpfr_log1p, -80, 0, 1, 1, "log1p tiny");
    check_accuracy(ra_det_log1p, mpfr_log1p, 0, 1024, 1, 0, "log1p large");
}
END_TEST

/* Kolmogorov-Smirnov distance of sample x (sorted here) against cdf. */
static double ks_distance(double *x, size_t n, double (*cdf)(double))
{
    qsort(x, n, sizeof *x, tu_cmp_double);
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        double c = cdf(x[i]);
        double a = fabs(c - (double)i / n), b = fabs((double)(i + 1) / n - c);
        d = fmax(d, fmax(a, b));
    }
    return d;
}

/* The CDFs of the standardised distributions: N(0,1), Exponential(1),
   Uniform(0,1). */
static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double exp_cdf(double x) { return x <= 0 ? 0 : -expm1(-x); }
static double unif_cdf(double x) { return x <= 0 ? 0 : (x >= 1 ? 1 : x); }

/* KS critical value at false-failure probability 1e-6: sqrt(-ln(5e-7)/2)
   = 2.6907 over sqrt(n). */
#define KS_CRIT(n) (2.6907 / sqrt((double)(n)))

enum { NSTATS = 100000 };

/* A generator's distribution as the stats tests check it. */
typedef struct dist {
    const char *name; /* the stream's name */
    uint64_t seed;    /* fixed seed (RA_CHECK_RANDOMIZE replaces it) */
    void (*draw)(double *x, size_t n, ra_rng *r);
    double lo, hi;       /* every draw lies in (lo, hi) */
    double mean;         /* population mean; the sample mean is within 5 */
    double spread, per;  /* standard errors, spread / sqrt(per N) */
    double normal_var;   /* a normal's variance: the sample variance is within 5
                            standard errors, var sqrt(2 / (N - 1)); 0: not checked */
    double shift, scale; /* (x - shift) / scale has the CDF cdf */
    double (*cdf)(double x);
} dist;

static void draw_normal(double *x, size_t n, ra_rng *r) { ra_gen_normal(x, n, r, 2.0, 3.0); }
static void draw_exp(double *x, size_t n, ra_rng *r) { ra_gen_exponential(x, n, r, 1.8); }
static void draw_uniform(double *x, size_t n, ra_rng *r) { ra_gen_uniform(x, n, r, -3.0, 5.0); }

enum { NORMAL, EXPONENTIAL, UNIFORM };
static const dist dists[] = {
    /* N(2, 9): the mean's sd is 3 / sqrt(N) */
    [NORMAL] = {"normal", 5, draw_normal, -INFINITY, INFINITY, 2.0, 3.0, 1.0, 9.0, 2.0, 3.0,
                normal_cdf},
    /* mean 1.8, sd = mean; positive and finite */
    [EXPONENTIAL] = {"exp", 6, draw_exp, 0, INFINITY, 1.8, 1.8, 1.0, 0, 0, 1.8, exp_cdf},
    /* (-3, 5): sd 8 / sqrt(12) */
    [UNIFORM] = {"uni", 8, draw_uniform, -3.0, 5.0, 1.0, 8.0, 12.0, 0, -3.0, 8.0, unif_cdf},
};

/* NSTATS draws: each inside the support, the moments, and the KS distance
   of the standardised sample. */
static void check_dist(const dist *d)
{
    double *x = malloc(NSTATS * sizeof *x);
    ra_rng *r;
    ck_assert_int_eq(ra_rng_new(&r, tu_seed(d->seed), d->name), RA_OK);
    d->draw(x, NSTATS, r);
    long double s = 0, s2 = 0;
    for (int i = 0; i < NSTATS; i++) {
        ck_assert_msg(x[i] > d->lo && x[i] < d->hi, "%s: draw %d = %g", d->name, i, x[i]);
        s += x[i];
    }
    double mean = (double)(s / NSTATS);
    ck_assert_msg(fabs(mean - d->mean) < 5 * d->spread / sqrt(d->per * NSTATS), "%s: mean %g",
                  d->name, mean);
    if (d->normal_var > 0) {
        for (int i = 0; i < NSTATS; i++)
            s2 += (x[i] - mean) * (x[i] - mean);
        double var = (double)(s2 / (NSTATS - 1));
        ck_assert_msg(fabs(var - d->normal_var) < 5 * d->normal_var * sqrt(2.0 / (NSTATS - 1)),
                      "%s: variance %g", d->name, var);
    }
    for (int i = 0; i < NSTATS; i++)
        x[i] = (x[i] - d->shift) / d->scale;
    double ks = ks_distance(x, NSTATS, d->cdf);
    ck_assert_msg(ks < KS_CRIT(NSTATS), "%s: KS distance %g", d->name, ks);
    ra_rng_free(r);
    free(x);
}

START_TEST(random_normal_stats) { check_dist(&dists[NORMAL]); }
END_TEST

START_TEST(random_exponential_stats) { check_dist(&dists[EXPONENTIAL]); }
END_TEST

START_TEST(random_uniform_stats) { check_dist(&dists[UNIFORM]); }
END_TEST

/* The gate transforms are f(z) of the stream's normals: the same stream
   drawn as plain normals gives the z, MPFR gives f(z). */
static void check_transform(void (*gen)(double *, size_t, ra_rng *, double, double), mpfr_fn g,
                            double sd, const char *name)
{
    enum { N = 20000 };
    double *z = malloc(N * sizeof *z), *y = malloc(N * sizeof *y);
    ra_rng *a, *b;
    uint64_t seed = tu_seed(9);
    ck_assert_int_eq(ra_rng_new(&a, seed, name), RA_OK);
    ck_assert_int_eq(ra_rng_new(&b, seed, name), RA_OK);
    ra_gen_normal(z, N, a, 0.0, sd);
    gen(y, N, b, 0.0, sd);
    mpfr_t mz, my;
    mpfr_init2(mz, 53);
    mpfr_init2(my, PREC);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        mpfr_set_d(mz, z[i], MPFR_RNDN);
        g(my, mz, MPFR_RNDN);
        worst = fmax(worst, ulp_err(y[i], my));
    }
    mpfr_clears(mz, my, (mpfr_ptr)0);
    ck_assert_msg(worst <= 4.0, "%s sd %g: %.3f ulp", name, sd, worst);
    ra_rng_free(a);
    ra_rng_free(b);
    free(z);
    free(y);
}

START_TEST(random_gate_transforms)
{
    check_transform(ra_gen_logsigmoid_normal, mpfr_logsigmoid, 1.0, "logsigmoid");
    check_transform(ra_gen_logsigmoid_normal, mpfr_logsigmoid, 60.0, "logsigmoid");
    check_transform(ra_gen_sigmoid_normal, mpfr_sigmoid, 1.0, "sigmoid");
    check_transform(ra_gen_sigmoid_normal, mpfr_sigmoid, 60.0, "sigmoid");
}
END_TEST

/* Rows of random length and scale (2^-1000 .. 2^1000, some with subnormal
   or zero entries): the exact norm of the output is 1 within 4 2^-53. */
START_TEST(random_l2_rows)
{
    ra_rng *r;
    ck_assert_int_eq(ra_rng_new(&r, tu_seed(10), "l2"), RA_OK);
    mpfr_t acc, t;
    mpfr_init2(acc, 4096);
    mpfr_init2(t, 4096);
    for (int it = 0; it < 300; it++) {
        size_t cols = 1 + ra_rng_u32(r) % 300;
        double *x = malloc(cols * sizeof *x);
        ra_gen_normal(x, cols, r, 0.0, 1.0);
        int e = (int)(ra_rng_u32(r) % 2001) - 1000;
        for (size_t j = 0; j < cols; j++) {
            x[j] = ldexp(x[j], e);
            if (ra_rng_u32(r) % 10 == 0)
                x[j] = 0.0;
        }
        x[ra_rng_u32(r) % cols] = ldexp(1.5, e); /* at least one non-zero */
        ra_gen_l2_normalize_rows(x, 1, cols);
        mpfr_set_zero(acc, 1);
        for (size_t j = 0; j < cols; j++) {
            mpfr_set_d(t, x[j], MPFR_RNDN);
            mpfr_sqr(t, t, MPFR_RNDN);
            mpfr_add(acc, acc, t, MPFR_RNDN);
        }
        mpfr_sqrt(acc, acc, MPFR_RNDN);
        mpfr_sub_ui(acc, acc, 1, MPFR_RNDN);
        double dev = fabs(mpfr_get_d(acc, MPFR_RNDN));
        ck_assert_msg(dev <= 4 * 0x1p-53, "row of %zu at 2^%d: |norm - 1| = %g", cols, e, dev);
        free(x);
    }
    mpfr_clears(acc, t, (mpfr_ptr)0);
    ra_rng_free(r);
}
END_TEST

/* --- regress ----------------------------------------------------------------------- */

START_TEST(regress_streams)
{
    /* Filling in pieces (odd sizes, so a pair's second normal waits in the
       stream) gives the same numbers as one call. */
    double one[101], parts[101];
    ra_rng *a, *b, *c;
    ck_assert_int_eq(ra_rng_new(&a, 99, "w"), RA_OK);
    ck_assert_int_eq(ra_rng_new(&b, 99, "w"), RA_OK);
    ck_assert_int_eq(ra_rng_new(&c, 99, "w2"), RA_OK);
    ra_gen_normal(one, 101, a, 0.0, 1.0);
    ra_gen_normal(parts, 33, b, 0.0, 1.0);
    ra_gen_normal(parts + 33, 1, b, 0.0, 1.0);
    ra_gen_normal(parts + 34, 67, b, 0.0, 1.0);
    ck_assert(memcmp(one, parts, sizeof one) == 0);
    /* Another name, another stream. */
    ra_gen_normal(parts, 101, c, 0.0, 1.0);
    int same = 0;
    for (int i = 0; i < 101; i++)
        same += one[i] == parts[i];
    ck_assert_int_lt(same, 3);
    /* Neighbouring seeds give unrelated stream seeds. */
    ck_assert_uint_ne(ra_rng_stream_seed(1, "q"), ra_rng_stream_seed(2, "q"));
    ck_assert_uint_ne(ra_rng_stream_seed(1, "q"), ra_rng_stream_seed(1, "k"));
    ra_rng_free(a);
    ra_rng_free(b);
    ra_rng_free(c);
}
END_TEST

static Suite *rng_suite(void)
{
    Suite *s = suite_create("rng");
    tu_tcase(s, "special", NULL, NULL, special_exp, special_log, special_log1p, special_sigmoid,
             special_uniform_open);
    tu_tcase(s, "data", NULL, NULL, data_mt19937_reference, data_seed_mixing,
             data_uniform_construction, data_polar_method, data_l2_rows);
    tcase_set_timeout(tu_tcase(s, "random", NULL, NULL, random_exp, random_log, random_log1p,
                               random_normal_stats, random_exponential_stats, random_uniform_stats,
                               random_gate_transforms, random_l2_rows),
                      120);
    tu_tcase(s, "regress", NULL, NULL, regress_streams);
    return s;
}

int main(void) { return tu_run(rng_suite()); }
