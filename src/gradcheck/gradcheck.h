/* Gradient checks: high-precision finite differences of the MPFR forward. */
#ifndef RA_GRADCHECK_GRADCHECK_H
#define RA_GRADCHECK_GRADCHECK_H

#include <stdint.h>

#include <mpfr.h>

#include "core/case.h"
#include "core/status.h"

/*
 * The loss is L = <do, o> + <dht, ht> with the case's cotangents, so its
 * gradient is the vector-Jacobian product the backward computes.  Finite
 * differences run on the MPFR forward (src/ref/gdn.h) at prec bits with the
 * central quotient D(h) = (L(x + h e) - L(x - h e)) / (2h) at h = 2^-h_log2
 * and h/2, combined by one Richardson step R = (4 D(h/2) - D(h)) / 3, whose
 * truncation error is O(h^4) (2^-320 at the defaults) while the rounding
 * error is about 2^-prec |L| / h: far below any formula error, so a right
 * gradient agrees to tens of digits and a wrong one to about none.
 *
 * Modes:
 *   elementwise  every element of every differentiable input (q, k, v, g,
 *                beta, h0): each FD re-runs only the heads the element feeds
 *   directional  per input tensor X a random direction u (normal, fixed
 *                seed) on X alone: FD of L(x + t u) against <dL/dX, u>;
 *                plus a row "all" with directions on every input at once
 *   dot          the VJP/JVP dot-product test: random output cotangents w
 *                (replacing do, dht) and directions u as above; <w, J u>
 *                from finite differences of every output element, against
 *                <J^T w, u> from the backward run with cotangents w
 *
 * Agreement per row: rel = max |fd - an| / max(max |an|, max |fd|) over the
 * tensor's elements (one value in the directional modes), digits =
 * -log10(rel), capped at RA_GC_MAX_DIGITS (also when rel is 0).  Normwise,
 * so elements whose gradient is tiny are judged against the tensor's scale.
 */

#define RA_GC_MAX_DIGITS 60.0

typedef enum ra_gc_mode { RA_GC_ELEMENTWISE, RA_GC_DIRECTIONAL, RA_GC_DOT } ra_gc_mode;

typedef struct ra_gc_opts {
    ra_gc_mode mode;
    mpfr_prec_t prec; /* default 256 */
    long h_log2;      /* step 2^-h_log2, default 80 */
    uint64_t seed;    /* directions and cotangents of the random modes */
    int threads;      /* 0: OpenMP default */
} ra_gc_opts;

void ra_gc_opts_init(ra_gc_opts *o);
/* "elementwise", "directional", "dot"; RA_EINVAL otherwise. */
ra_status ra_gc_mode_parse(ra_gc_mode *out, const char *s);
const char *ra_gc_mode_name(ra_gc_mode m);

typedef struct ra_gc_row {
    char tensor[16]; /* "q", ..., "h0", or "all" */
    int64_t n;       /* elements compared (1 in the directional modes) */
    double digits;
    double rel;    /* max |fd - an| / scale, 0 when they agree exactly */
    int64_t worst; /* elementwise: flat index of the largest |fd - an| */
    double fd, an; /* at the worst element, or the two directional values */
} ra_gc_row;

typedef struct ra_gc_result {
    size_t n;
    ra_gc_row rows[8];
    mpfr_prec_t prec;
    long h_log2;
} ra_gc_result;

/* Checks the gradients of a gdn case (which must hold do; dht optional).
   grads NULL: the reference backward (src/ref) at opts->prec; otherwise the
   tensors dq, dk, dv, dg, dbeta (and dh0 when the case has h0) of grads,
   widened exactly: any backward's output can be proved right or wrong
   (not in dot mode, whose cotangents are drawn here).  `what` names the
   case in messages. */
ra_status ra_gradcheck_gdn(ra_gc_result *r, const ra_case *c, const ra_gc_opts *o,
                           const ra_tensors *grads, const char *what);

/* The smallest digits over the rows (RA_GC_MAX_DIGITS when there are none). */
double ra_gc_min_digits(const ra_gc_result *r);

#endif
