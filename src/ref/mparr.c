/* Contiguous arrays of MPFR numbers (custom interface) and MPFR helpers. */
#include "ref/mparr.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/tensor.h"

/*
 * Allocation sizes are checked against SIZE_MAX before multiplying, so a
 * huge request fails with RA_EOVERFLOW / RA_ENOMEM instead of wrapping.
 *
 * Agreement bits: with |b| = mb 2^eb and |a - b| = md 2^ed (mb, md in
 * [1/2, 1), as mpfr_get_d_2exp returns them), log2(|b| / |a - b|) =
 * eb - ed + log2(mb / md), and log2(mb / md) lies in (-1, 1): the floor is
 * eb - ed when mb >= md, else eb - ed - 1.  The difference a - b is formed
 * at 64 bits (its leading bits are all the formula needs); mb and md are
 * 53-bit roundings, which can move a ratio lying within 2^-52 of a power of
 * two across it: the count is exact except in that case, where it may be
 * one bit generous or stingy.
 */

ra_status ra_mparr_init(ra_mparr *a, size_t n, mpfr_prec_t prec)
{
    a->x = NULL;
    a->limbs = NULL;
    a->n = 0;
    a->prec = prec;
    if (prec < MPFR_PREC_MIN || prec > MPFR_PREC_MAX)
        RA_ERRORF(RA_EINVAL, "MPFR precision %ld out of range", (long)prec);
    if (n == 0)
        return RA_OK;
    size_t sz = mpfr_custom_get_size(prec);
    if (n > SIZE_MAX / sz || n > SIZE_MAX / sizeof(__mpfr_struct))
        RA_ERRORF(RA_EOVERFLOW, "array of %zu MPFR numbers of %ld bits: size overflows", n,
                  (long)prec);
    if (!ra_alloc_plausible(n, sz + sizeof(__mpfr_struct)))
        RA_ERRORF(RA_ENOMEM,
                  "%zu MPFR numbers of %ld bits (%.1f MiB) exceed this machine's memory or limits",
                  n, (long)prec, (double)n * (double)(sz + sizeof(__mpfr_struct)) / 1048576.0);
    a->x = malloc(n * sizeof(__mpfr_struct));
    a->limbs = malloc(n * sz);
    if (!a->x || !a->limbs) {
        free(a->x);
        free(a->limbs);
        a->x = NULL;
        a->limbs = NULL;
        RA_ERRORF(RA_ENOMEM, "cannot allocate %zu MPFR numbers of %ld bits (%.1f MiB)", n,
                  (long)prec, (double)n * (double)(sz + sizeof(__mpfr_struct)) / 1048576.0);
    }
    char *base = a->limbs;
    /* large arrays (outputs of production shapes: 10^8 numbers) are set up
       by all threads: the first touch of gigabytes is not free */
#pragma omp parallel for schedule(static) if (n > ((size_t)1 << 20))
    for (size_t i = 0; i < n; i++) {
        mpfr_custom_init(base + i * sz, prec);
        mpfr_custom_init_set(a->x + i, MPFR_ZERO_KIND, 0, prec, base + i * sz);
    }
    a->n = n;
    return RA_OK;
}

void ra_mparr_free(ra_mparr *a)
{
    free(a->x);
    free(a->limbs);
    a->x = NULL;
    a->limbs = NULL;
    a->n = 0;
}

void ra_mp_zero(mpfr_ptr x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mpfr_set_zero(x + i, 1);
}

void ra_mp_range_widen(ra_mp_range *saved)
{
    saved->emin = mpfr_get_emin();
    saved->emax = mpfr_get_emax();
    mpfr_set_emin(mpfr_get_emin_min());
    mpfr_set_emax(mpfr_get_emax_max());
}

void ra_mp_range_restore(const ra_mp_range *saved)
{
    mpfr_set_emin(saved->emin);
    mpfr_set_emax(saved->emax);
}

long ra_mp_agree_bits(mpfr_srcptr a, mpfr_srcptr b, long cap)
{
    if (!mpfr_number_p(a) || !mpfr_number_p(b))
        return 0;
    if (mpfr_zero_p(a) || mpfr_zero_p(b))
        return mpfr_zero_p(a) && mpfr_zero_p(b) ? cap : 0;
    if (mpfr_equal_p(a, b))
        return cap;
    if (mpfr_sgn(a) != mpfr_sgn(b))
        return 0;
    MPFR_DECL_INIT(d, 64); /* on the stack: this runs once per output element */
    mpfr_sub(d, a, b, MPFR_RNDN);
    long eb, ed;
    double mb = fabs(mpfr_get_d_2exp(&eb, b, MPFR_RNDN));
    double md = fabs(mpfr_get_d_2exp(&ed, d, MPFR_RNDN));
    long bits = eb - ed - (mb >= md ? 0 : 1);
    if (bits < 0)
        bits = 0;
    return bits > cap ? cap : bits;
}
