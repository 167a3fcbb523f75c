/* Error metrics of a result tensor against an f64 reference. */
#include "core/metrics.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The result is read exactly (ra_tensor_get) and compared element by
 * element with the reference; err_i = y_i - z_i is formed in long double.
 * ulp_i = |err_i| / ulp(z_i) is |err_i| scaled by a power of two (ulp is
 * 2^(e - p + 1), e the binade of z_i clamped to the dtype's [emin, emax],
 * as ra_dtype_ulp), so it adds no rounding to the long double difference
 * (exact whenever y and z are within a factor 2, x86's 64-bit significand
 * or wider) beyond the final conversion to double.
 *
 * Which elements have ulps (metrics.h says why): a first pass over the
 * reference finds max|z| and rms(z) (sum of squares of z 2^-E, 2^E the
 * largest magnitude, as below); elements with |z_i| < 2^-10 rms(z) are
 * left out of max_ulp, p99_ulp and the worst element, and nothing else.
 * max_ulp_rms is max|err| over ulp(rms(z)), a power of two, so it is as
 * exact as max_abs.
 *
 * p99 is the nearest-rank percentile: the value of rank ceil(0.99 n) in
 * ascending order, n the number of conditioned elements.  ulp errors are non-negative doubles,
 * whose bit patterns order like unsigned integers, so the element of that rank is found by a radix
 * selection on the 64-bit pattern, 16 bits per pass (4 passes, 2^16 counters): O(n) time and no
 * copy of the data, which matters at 10^8 elements.  Each pass recomputes ulp_i with the same code,
 * so all passes see the same values.
 *
 * The first pass also finds NaN/Inf in the result, the maxima and the worst
 * element; the second accumulates the sums (long double, flat order) of
 * squares and products of y 2^-E and z 2^-E, with 2^E the largest
 * magnitude, so that no square overflows or underflows to nothing even
 * where long double is no wider than double.
 *
 * Edge cases.  A reference with NaN or Inf is refused (RA_EINVAL naming the
 * tensor and element): there is no error to measure against it.  NaN in the
 * result makes every metric NaN; Inf (without NaN) makes every error
 * metric +Inf and cos NaN, so neither passes any gate.  With an all-zero
 * reference, max_rel and rel_rms are 0 when the result is all zero too and
 * +Inf otherwise; cos is 1 when both are zero and 0 when exactly one is.
 * An empty tensor has every error 0, cos 1 and no worst element (-1).
 */

static const char *const metric_names[] = {"max_abs", "max_rel", "rel_rms",     "cos",
                                           "max_ulp", "p99_ulp", "max_ulp_rms", NULL};

const char *const *ra_metric_names(void) { return metric_names; }

int ra_metric_higher_is_better(const char *name) { return name && strcmp(name, "cos") == 0; }

ra_status ra_metrics_get(double *out, const ra_metrics *m, const char *name)
{
    const double vals[] = {m->max_abs, m->max_rel, m->rel_rms,    m->cos,
                           m->max_ulp, m->p99_ulp, m->max_ulp_rms};
    for (size_t i = 0; name && metric_names[i]; i++)
        if (strcmp(name, metric_names[i]) == 0) {
            *out = vals[i];
            return RA_OK;
        }
    RA_ERRORF(RA_ENOTFOUND,
              "unknown metric '%s' (expected max_abs, max_rel, rel_rms, cos, max_ulp, p99_ulp or "
              "max_ulp_rms)",
              name ? name : "(null)");
}

void ra_index_format(char *buf, size_t len, int64_t flat, int ndim, const int64_t *shape)
{
    if (len == 0)
        return;
    int64_t idx[RA_MAX_DIMS] = {0};
    int ok = flat >= 0 && ndim >= 0 && ndim <= RA_MAX_DIMS;
    for (int d = 0; ok && d < ndim; d++)
        ok = shape[d] > 0;
    if (!ok) { /* no multi-index exists: say what was asked */
        snprintf(buf, len, "[flat %lld]", (long long)flat);
        return;
    }
    /* Innermost first; the outermost index keeps the remainder, so an
       out-of-range flat index shows as an out-of-range first coordinate. */
    int64_t rest = flat;
    for (int d = ndim - 1; d > 0; d--) {
        idx[d] = rest % shape[d];
        rest /= shape[d];
    }
    if (ndim > 0)
        idx[0] = rest;
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < ndim && used < len; d++)
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%lld", d ? ", " : "", (long long)idx[d]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

/* 2^k for |k| <= 2046 as a long double: with an exponent range of at
   least 2^+-16381 (x87 extended, IEEE quad), the product of two double
   powers of two built from their bits is exact, and so is every scaling
   below by it (|k| <= 1100 on doubles: no overflow, no subnormal), so
   x * pow2l(k) is the value ldexpl(x, k) returns, at a multiply's cost
   instead of a libm call per element (measured 20% of validate's time
   with the references cached).  A narrower long double keeps ldexpl. */
#if LDBL_MAX_EXP >= 16384
static inline double pow2d(int k) /* 2^k, -1022 <= k <= 1023 */
{
    uint64_t b = (uint64_t)(k + 1023) << 52;
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}
static inline long double pow2l(int k)
{
    const int k1 = k / 2;
    return (long double)pow2d(k1) * (long double)pow2d(k - k1);
}
#define SCALEL(x, k) ((long double)(x) * pow2l(k))
#else
#define SCALEL(x, k) ldexpl((x), (k))
#endif

/* Per-dtype constants of the ulp computation. */
typedef struct ulp_ctx {
    int prec, emin, emax;
} ulp_ctx;

/* |y - z| / ulp(z) for finite y, z (an exact power-of-two scaling). */
static double ulp_error(const ulp_ctx *u, double y, double z, long double *err)
{
    long double d = (long double)y - (long double)z;
    int e = z == 0.0 ? u->emin : ilogb(z);
    if (e < u->emin)
        e = u->emin;
    if (e > u->emax)
        e = u->emax;
    *err = d;
    return (double)SCALEL(fabsl(d), -(e - u->prec + 1));
}

static uint64_t dbits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* One radix pass: histogram of the 16-bit digit at `shift` among the
   conditioned elements (|z| >= floor) whose bits above it equal `prefix`
   (bits below shift + 16 masked). */
static void radix_pass(uint64_t *hist, const ra_tensor *y, const ra_tensor *z, const ulp_ctx *u,
                       double floor, int shift, uint64_t prefix)
{
    memset(hist, 0, 65536 * sizeof *hist);
    uint64_t high_mask = shift + 16 >= 64 ? 0 : ~UINT64_C(0) << (shift + 16);
    for (int64_t i = 0; i < y->numel; i++) {
        double zi = ra_tensor_get(z, i);
        if (!(fabs(zi) >= floor))
            continue;
        long double err;
        uint64_t b = dbits(ulp_error(u, ra_tensor_get(y, i), zi, &err));
        if ((b & high_mask) == prefix)
            hist[(b >> shift) & 0xFFFF]++;
    }
}

/* Finds the digit holding 0-based rank *k in hist; *k becomes the rank
   within that digit's bucket. */
static unsigned radix_pick(const uint64_t *hist, uint64_t *k)
{
    unsigned d = 0;
    while (hist[d] <= *k) {
        *k -= hist[d];
        d++;
    }
    return d;
}

ra_status ra_metrics_compute(ra_metrics *m, const ra_tensor *result, const ra_tensor *ref,
                             ra_dtype ulp_dtype)
{
    memset(m, 0, sizeof *m);
    if (!ra_shape_equal(result->ndim, result->shape, ref->ndim, ref->shape)) {
        char a[160], b[160];
        ra_shape_format(a, sizeof a, result->ndim, result->shape);
        ra_shape_format(b, sizeof b, ref->ndim, ref->shape);
        RA_ERRORF(RA_EINVAL, "metrics: result '%s' has shape %s but reference '%s' has shape %s",
                  result->name, a, ref->name, b);
    }
    if ((unsigned)ulp_dtype >= RA_NDTYPES)
        RA_ERRORF(RA_EINVAL, "metrics: invalid ulp dtype code %d", (int)ulp_dtype);
    int64_t bad = ra_tensor_find_nonfinite(ref);
    if (bad >= 0) {
        char idx[160];
        ra_index_format(idx, sizeof idx, bad, ref->ndim, ref->shape);
        RA_ERRORF(RA_EINVAL, "metrics: reference '%s' element %s is %s (result '%s')", ref->name,
                  idx, isnan(ra_tensor_get(ref, bad)) ? "NaN" : "infinite", result->name);
    }
    const ulp_ctx u = {ra_dtype_precision(ulp_dtype), ra_dtype_emin(ulp_dtype),
                       ra_dtype_emax(ulp_dtype)};
    const int64_t n = result->numel;
    m->n = n;
    m->ulp_dtype = ulp_dtype;
    m->worst_index = -1;

    /* Pass 0: max|z| and rms(z), hence the floor of the conditioned
       elements. */
    double zmax = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(ra_tensor_get(ref, i)) > zmax)
            zmax = fabs(ra_tensor_get(ref, i));
    int zsc = zmax > 0.0 ? -ilogb(zmax) : 0;
    long double zss = 0;
    for (int64_t i = 0; i < n; i++) {
        long double z = SCALEL(ra_tensor_get(ref, i), zsc);
        zss += z * z;
    }
    const double zrms = n > 0 ? ldexp((double)sqrtl(zss / n), -zsc) : 0.0;
    const double floor = ldexp(zrms, -10);
    m->ref_rms = zrms;
    m->ulp_floor = floor;

    /* Pass 1: non-finite results, maxima, worst element, top radix digit. */
    uint64_t *hist = calloc(65536, sizeof *hist);
    if (!hist)
        RA_ERROR("metrics: out of memory", RA_ENOMEM);
    int64_t first_nan = -1, first_inf = -1;
    double max_abs = 0.0, max_ulp = 0.0, ymax = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double y = ra_tensor_get(result, i), z = ra_tensor_get(ref, i);
        if (!isfinite(y)) {
            if (isnan(y)) {
                m->nan_count++;
                if (first_nan < 0)
                    first_nan = i;
            } else {
                m->inf_count++;
                if (first_inf < 0)
                    first_inf = i;
            }
            continue;
        }
        if (fabs(y) > ymax)
            ymax = fabs(y);
        long double err;
        double ue = ulp_error(&u, y, z, &err);
        double ae = (double)fabsl(err);
        if (ae > max_abs)
            max_abs = ae;
        if (!(fabs(z) >= floor))
            continue;
        m->ulp_n++;
        if (m->worst_index < 0 || ue > max_ulp) {
            max_ulp = ue;
            m->worst_index = i;
        }
        hist[dbits(ue) >> 48]++;
    }
    if (first_nan >= 0 || first_inf >= 0) {
        int64_t w = first_nan >= 0 ? first_nan : first_inf;
        double v = first_nan >= 0 ? NAN : INFINITY;
        m->max_abs = m->max_rel = m->rel_rms = m->max_ulp = m->p99_ulp = m->max_ulp_rms = v;
        m->cos = NAN;
        m->worst_index = w;
        m->worst_value = ra_tensor_get(result, w);
        m->worst_ref = ra_tensor_get(ref, w);
        free(hist);
        return RA_OK;
    }
    if (n == 0) {
        m->cos = 1.0;
        free(hist);
        return RA_OK;
    }
    m->max_abs = max_abs;
    m->max_ulp = max_ulp;
    m->max_ulp_rms = max_abs / ra_dtype_ulp(zrms, ulp_dtype); /* a power of two */
    m->worst_value = ra_tensor_get(result, m->worst_index);
    m->worst_ref = ra_tensor_get(ref, m->worst_index);
    m->max_rel = zmax > 0.0 ? max_abs / zmax : (max_abs > 0.0 ? INFINITY : 0.0);

    /* Pass 2: sums of the scaled values. */
    double big = ymax > zmax ? ymax : zmax;
    int sc = big > 0.0 ? -ilogb(big) : 0;
    long double syy = 0, szz = 0, syz = 0, see = 0;
    for (int64_t i = 0; i < n; i++) {
        long double y = SCALEL(ra_tensor_get(result, i), sc);
        long double z = SCALEL(ra_tensor_get(ref, i), sc);
        long double e = y - z;
        syy += y * y;
        szz += z * z;
        syz += y * z;
        see += e * e;
    }
    m->rel_rms = szz > 0 ? (double)sqrtl(see / szz) : (see > 0 ? INFINITY : 0.0);
    if (syy == 0 && szz == 0)
        m->cos = 1.0;
    else if (syy == 0 || szz == 0)
        m->cos = 0.0;
    else
        m->cos = (double)(syz / (sqrtl(syy) * sqrtl(szz)));

    /* Passes 2..4 of the radix selection for rank ceil(0.99 ulp_n); ulp_n
       >= 1 here (some |z_i| >= rms(z) >= floor, or floor = 0). */
    const int64_t nc = m->ulp_n;
    uint64_t k = (uint64_t)((99 * nc + 99) / 100) - 1; /* ceil(0.99 nc) - 1 */
    uint64_t prefix = (uint64_t)radix_pick(hist, &k) << 48;
    for (int shift = 32; shift >= 0; shift -= 16) {
        radix_pass(hist, result, ref, &u, floor, shift, prefix);
        prefix |= (uint64_t)radix_pick(hist, &k) << shift;
    }
    memcpy(&m->p99_ulp, &prefix, sizeof prefix);
    free(hist);
    return RA_OK;
}
