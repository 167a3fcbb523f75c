/* Seeded random streams (GSL mt19937) and machine-independent distributions. */
#include "core/rng.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_rng.h>

/*
 * Streams.  A stream for (seed, name) is GSL's mt19937 seeded with
 * ra_rng_stream_seed(seed, name): the high 32 bits of one splitmix64 step
 * from the state seed XOR FNV-1a-64(name).  FNV-1a spreads the name over 64
 * bits, splitmix64's finaliser mixes every input bit into the high half, so
 * neighbouring seeds and similar names give unrelated mt19937 seeds.  All of
 * this is integer arithmetic modulo 2^64, identical everywhere.  (GSL maps
 * an mt19937 seed of 0 to its default 4357; that is part of the stream
 * definition and equally machine independent.)
 *
 * Uniforms.  ra_rng_uniform_open takes a = u32 >> 5 (27 bits) and b = u32 >>
 * 6 (26 bits) from two successive outputs and returns (a 2^26 + b) 2^-53,
 * redrawing the pair when that is 0: every value is a multiple of 2^-53 in
 * [2^-53, 1 - 2^-53], so log(U) is finite and U is never 1.
 *
 * Elementary functions.  A platform libm may differ in the last bit between
 * versions, so the transforms use ra_det_exp/log/log1p, built here from
 * + - * / on doubles, frexp/ldexp (exact power-of-two scaling; ldexp rounds
 * once, correctly, into the subnormal range) and floor; the build has
 * -ffp-contract=off, so the compiler adds no FMA and the bits are the same
 * on every IEEE-754 machine.
 *   exp: k = round(x / ln2), r + rlo = (x - k ln2_hi) - k ln2_lo with
 *     ln2_hi holding 42 significant bits (k ln2_hi is exact for |k| < 2^11,
 *     and the first subtraction is exact by Sterbenz), |r| <= 0.35 and rlo
 *     the rounding error of the second subtraction; exp(r + rlo) by the
 *     Taylor series to degree 13 (truncation < 4e-18 relative), evaluated
 *     as 1 + (r + (r^2 q(r) + rlo)) so the large terms carry the small
 *     ones' error; then scaled by 2^k.  Overflow gives +Inf, underflow
 *     rounds gradually to 0.
 *   log and log1p share one kernel: x = 2^e (1 + f) with 1 + f in
 *     [sqrt(1/2), sqrt(2)), s = f / (2 + f), log(1 + f) = 2 atanh(s)
 *     = f - (f^2/2 - s (f^2/2 + R)), R = sum_{n=1..10} 2 s^{2n} / (2n + 1)
 *     (|s| < 0.1716, truncation below 1e-17 relative).  The leading f is
 *     exact, so the rounding of s only touches terms of relative size f/2.
 *     e ln2 is added as e ln2_hi (exact) and e ln2_lo.  log1p(x) uses f = x
 *     directly when 1 + x lies in the kernel's range; otherwise 1 + x = u + c
 *     exactly (Knuth's TwoSum) and log1p(x) = log(u) + c/u, the correction
 *     entering beside e ln2_lo.  Special values follow C99 Annex F (log(0) =
 *     -Inf, log(x < 0) = NaN, log1p(-0) = -0, ...).
 *   All three stay below 1 ulp (worst seen against MPFR over 2e6 points
 *   each across the whole range: exp 0.86, log 0.82, log1p 0.81 ulp;
 *   t-rng asserts < 1 ulp).  Identical bits need double expressions
 *   evaluated in double (FLT_EVAL_METHOD 0, as on x86-64 SSE2 and
 *   AArch64); a build with x87 extended evaluation is refused below.
 *
 * Distributions use only these and sqrt: normals by Marsaglia's polar
 * method (pairs; the second of a pair is kept in the stream, so filling n
 * values in pieces gives the same numbers as one call), exponentials as
 * -mean log(U), logsigmoid(z) = min(z, 0) - log1p(exp(-|z|)), sigmoid(z) =
 * 1/(1 + exp(-z)) for z >= 0 and exp(z)/(1 + exp(z)) below (neither form
 * overflows nor cancels).
 */

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "rng.c needs double expressions evaluated in double (FLT_EVAL_METHOD 0)"
#endif

struct ra_rng {
    gsl_rng *g;
    int has_spare;
    double spare;
};

/* --- stream seeds ------------------------------------------------------------ */

uint64_t ra_rng_fnv1a64(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

uint64_t ra_rng_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint32_t ra_rng_stream_seed(uint64_t seed, const char *name)
{
    uint64_t st = seed ^ ra_rng_fnv1a64(name ? name : "");
    return (uint32_t)(ra_rng_splitmix64(&st) >> 32);
}

ra_status ra_rng_new_mt(ra_rng **out, uint32_t mt_seed)
{
    *out = NULL;
    ra_rng *r = calloc(1, sizeof *r);
    if (!r)
        RA_ERROR("out of memory (random stream)", RA_ENOMEM);
    /* GSL's default handler aborts on allocation failure; library code must
       report instead, so the handler is off around the call (GSL's handler
       is process-wide: streams are made on one thread, before any
       parallel work). */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    r->g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_set_error_handler(old);
    if (!r->g) {
        free(r);
        RA_ERROR("out of memory (random stream)", RA_ENOMEM);
    }
    gsl_rng_set(r->g, mt_seed);
    *out = r;
    return RA_OK;
}

ra_status ra_rng_new(ra_rng **out, uint64_t seed, const char *name)
{
    return ra_rng_new_mt(out, ra_rng_stream_seed(seed, name));
}

void ra_rng_free(ra_rng *r)
{
    if (!r)
        return;
    gsl_rng_free(r->g);
    free(r);
}

uint32_t ra_rng_u32(ra_rng *r) { return (uint32_t)gsl_rng_get(r->g); }

double ra_rng_uniform_open(ra_rng *r)
{
    for (;;) {
        uint32_t a = ra_rng_u32(r) >> 5, b = ra_rng_u32(r) >> 6;
        double m = (double)a * 67108864.0 + (double)b; /* a 2^26 + b < 2^53: exact */
        if (m != 0.0)
            return m * 0x1p-53;
    }
}

/* --- deterministic elementary functions ---------------------------------------- */

static const double LN2_HI = 0x1.62e42fefa38p-1;   /* ln 2 to 42 bits */
static const double LN2_LO = 0x1.ef35793c7673p-45; /* ln 2 - LN2_HI, rounded */
static const double INV_LN2 = 0x1.71547652b82fep+0;
static const double SQRT_HALF = 0x1.6a09e667f3bcdp-1;

double ra_det_exp(double x)
{
    if (isnan(x))
        return x + x;
    if (x > 709.8) /* above log(DBL_MAX) = 709.78... */
        return INFINITY;
    if (x < -745.2) /* below log(2^-1075): rounds to 0 */
        return 0.0;
    double k = floor(x * INV_LN2 + 0.5);
    double hi = x - k * LN2_HI, lo = k * LN2_LO;
    double r = hi - lo;
    double rlo = (hi - r) - lo; /* the rounding error of r (|hi| >> |lo|) */
    /* q(r) = sum_{n=2..13} r^(n-2) / n!, Horner from the small end. */
    double q = 1.0 / 6227020800.0;
    static const double inv_fact[] = {
        1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
        1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
        1.0 / 24.0,        1.0 / 6.0,        1.0 / 2.0,
    };
    for (size_t i = 0; i < sizeof inv_fact / sizeof inv_fact[0]; i++)
        q = inv_fact[i] + r * q;
    double p = 1.0 + (r + ((r * r) * q + rlo));
    return ldexp(p, (int)k);
}

/* e ln2 + log(1 + f) + corr for 1 + f in [sqrt(1/2), sqrt(2)), corr tiny. */
static double log_kernel(double f, int e, double corr)
{
    double s = f / (2.0 + f);
    double z = s * s;
    double R = 2.0 / 21.0;
    static const double coef[] = {2.0 / 19.0, 2.0 / 17.0, 2.0 / 15.0, 2.0 / 13.0, 2.0 / 11.0,
                                  2.0 / 9.0,  2.0 / 7.0,  2.0 / 5.0,  2.0 / 3.0};
    for (size_t i = 0; i < sizeof coef / sizeof coef[0]; i++)
        R = coef[i] + z * R;
    R = z * R;
    double hfsq = 0.5 * (f * f);
    if (e == 0 && corr == 0.0) /* keeps log1p(-0) = -0 */
        return f - (hfsq - s * (hfsq + R));
    double de = (double)e;
    return de * LN2_HI - ((hfsq - (s * (hfsq + R) + (de * LN2_LO + corr))) - f);
}

/* u > 0 finite: u = 2^e m with m in [sqrt(1/2), sqrt(2)). */
static double split_log(double u, int *e)
{
    int ex, adj = 0;
    if (u < 0x1p-1022) { /* subnormal: make it normal first (exact) */
        u *= 0x1p54;
        adj = -54;
    }
    double m = frexp(u, &ex); /* m in [1/2, 1) */
    if (m < SQRT_HALF) {
        m *= 2.0;
        ex -= 1;
    }
    *e = ex + adj;
    return m - 1.0; /* exact (Sterbenz) */
}

double ra_det_log(double x)
{
    if (isnan(x))
        return x + x;
    if (x < 0.0)
        return NAN;
    if (x == 0.0)
        return -INFINITY;
    if (isinf(x))
        return x;
    int e;
    double f = split_log(x, &e);
    return log_kernel(f, e, 0.0);
}

double ra_det_log1p(double x)
{
    if (isnan(x))
        return x + x;
    if (x < -1.0)
        return NAN;
    if (x == -1.0)
        return -INFINITY;
    if (isinf(x))
        return x;
    if (x >= SQRT_HALF - 1.0 && x < 0x1.6a09e667f3bcdp+0 - 1.0)
        return log_kernel(x, 0, 0.0);
    /* TwoSum: u + c == 1 + x exactly. */
    double u = 1.0 + x;
    double xv = u - 1.0, ov = u - xv;
    double c = (x - xv) + (1.0 - ov);
    int e;
    double f = split_log(u, &e);
    return log_kernel(f, e, c / u);
}

/* --- distributions ---------------------------------------------------------------- */

/* One N(0,1) draw (polar method; pairs, the spare kept in the stream). */
static double std_normal(ra_rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    for (;;) {
        double x = 2.0 * ra_rng_uniform_open(r) - 1.0;
        double y = 2.0 * ra_rng_uniform_open(r) - 1.0;
        double s = x * x + y * y;
        if (s >= 1.0 || s == 0.0)
            continue;
        double m = sqrt(-2.0 * ra_det_log(s) / s);
        r->spare = y * m;
        r->has_spare = 1;
        return x * m;
    }
}

void ra_gen_normal(double *x, size_t n, ra_rng *r, double mean, double sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = mean + sd * std_normal(r);
}

void ra_gen_uniform(double *x, size_t n, ra_rng *r, double lo, double hi)
{
    double w = hi - lo;
    for (size_t i = 0; i < n; i++)
        x[i] = lo + w * ra_rng_uniform_open(r);
}

void ra_gen_exponential(double *x, size_t n, ra_rng *r, double mean)
{
    for (size_t i = 0; i < n; i++)
        x[i] = -mean * ra_det_log(ra_rng_uniform_open(r));
}

double ra_det_logsigmoid(double z)
{
    double m = z < 0.0 ? z : 0.0;
    return m - ra_det_log1p(ra_det_exp(-fabs(z)));
}

double ra_det_sigmoid(double z)
{
    if (z >= 0.0)
        return 1.0 / (1.0 + ra_det_exp(-z));
    double e = ra_det_exp(z);
    return e / (1.0 + e);
}

void ra_gen_logsigmoid_normal(double *x, size_t n, ra_rng *r, double mean, double sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = ra_det_logsigmoid(mean + sd * std_normal(r));
}

void ra_gen_sigmoid_normal(double *x, size_t n, ra_rng *r, double mean, double sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = ra_det_sigmoid(mean + sd * std_normal(r));
}

/* Euclidean norm of x 2^-e, summing the squares with Neumaier's
   compensation: they are all >= 0, so the sum is within about one rounding
   of the exact sum of the rounded squares, whatever the row length. */
static double scaled_norm(const double *x, size_t n, int e)
{
    double s = 0.0, c = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = ldexp(x[i], -e), a = v * v, t = s + a;
        c += (s >= a) ? (s - t) + a : (a - t) + s;
        s = t;
    }
    return sqrt(s + c);
}

void ra_gen_l2_normalize_rows(double *x, size_t rows, size_t cols)
{
    for (size_t i = 0; i < rows; i++) {
        double *row = x + i * cols;
        double amax = 0.0;
        int finite = 1;
        for (size_t j = 0; j < cols; j++) {
            if (!isfinite(row[j]))
                finite = 0;
            else if (fabs(row[j]) > amax)
                amax = fabs(row[j]);
        }
        if (!finite) { /* no unit vector points along Inf or NaN */
            for (size_t j = 0; j < cols; j++)
                row[j] = NAN;
            continue;
        }
        if (amax == 0.0)
            continue;
        /* The norm is taken of x 2^-e with the largest magnitude in [1, 2):
           the squares neither overflow nor lose the row to underflow.
           Scaling up (e <= 0) is exact, so x_j 2^-e / n is one correctly
           rounded division; scaling down, the division comes first and the
           (exact unless subnormal) 2^-e after, for the same reason. */
        int e = ilogb(amax);
        double nrm = scaled_norm(row, cols, e);
        for (size_t j = 0; j < cols; j++)
            row[j] = e <= 0 ? ldexp(row[j], -e) / nrm : ldexp(row[j] / nrm, -e);
    }
}
