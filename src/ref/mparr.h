/* Contiguous arrays of MPFR numbers (custom interface) and MPFR helpers. */
#ifndef RA_REF_MPARR_H
#define RA_REF_MPARR_H

#include <stddef.h>

#include <mpfr.h>

#include "core/status.h"

/*
 * An ra_mparr holds n MPFR numbers of one precision in two allocations: the
 * __mpfr_struct headers and one block of significands, through MPFR's
 * custom interface.  A K x V state is then two sequential sweeps of memory
 * instead of K*V scattered mallocs, allocation is O(1) calls, and freeing
 * never calls mpfr_clear (the significands are ours).  Elements are
 * ordinary mpfr_t for every MPFR function, as long as their precision is
 * not changed (mpfr_set_prec would reallocate a significand it does not
 * own): set values with mpfr_set / arithmetic only.
 */

typedef struct ra_mparr {
    __mpfr_struct *x;
    void *limbs;
    size_t n;
    mpfr_prec_t prec;
} ra_mparr;

/* n numbers of precision prec, all +0.  n == 0 gives an empty array. */
ra_status ra_mparr_init(ra_mparr *a, size_t n, mpfr_prec_t prec);
/* Frees (a zero-initialised or already freed array is fine). */
void ra_mparr_free(ra_mparr *a);

static inline mpfr_ptr ra_mparr_at(const ra_mparr *a, size_t i) { return a->x + i; }

/* Sets n consecutive numbers to +0. */
void ra_mp_zero(mpfr_ptr x, size_t n);

/* MPFR's exponent range is a per-thread setting.  References widen it to
   the largest range MPFR supports for the duration of a computation (so
   that exp() of a long cumulative decay, or a large state, neither
   underflows to zero nor overflows), and restore it afterwards. */
typedef struct ra_mp_range {
    mpfr_exp_t emin, emax;
} ra_mp_range;
void ra_mp_range_widen(ra_mp_range *saved);
void ra_mp_range_restore(const ra_mp_range *saved);

/* Leading bits on which a (result at working precision) and b (the same
   quantity at a higher precision) agree: floor(log2(|b| / |a - b|)),
   clamped to [0, cap]; cap when a == b (both zeros included, whatever
   their signs); 0 when exactly one of them is zero.  NaN or Inf on either
   side gives 0. */
long ra_mp_agree_bits(mpfr_srcptr a, mpfr_srcptr b, long cap);

#endif
