/* Certified references: operation dispatch, precision certificate, cache. */
#ifndef RA_REF_REF_H
#define RA_REF_REF_H

#include <mpfr.h>

#include "core/case.h"
#include "core/status.h"

/*
 * ra_ref_compute is the one entry point the audit, `recaudit ref` and
 * `recaudit check` use.  It runs the operation's MPFR forward (and the
 * reverse-time backward when the case carries cotangents and grads are
 * asked for) at working precision p and again at a higher check precision
 * (2p by default), counts per output tensor the minimum number of leading
 * bits on which the two agree (exact zeros must agree exactly), and while
 * any tensor has fewer than min_bits, raises p and repeats (Ziv), up to
 * prec_cap.  A shortfall at the cap is reported in the result, never
 * hidden (certified=no, and the bits per tensor).
 *
 * The result is a case with the same op whose tensors are every output and
 * gradient rounded to nearest f64, from the check-precision run, and whose
 * params hold:
 *   ref_prec            working precision of the final round (bits)
 *   ref_check_prec      its check precision
 *   certified_bits.<t>  agreeing bits of tensor <t>
 *   certified           "yes" when every tensor reached min_bits, else "no"
 *   ref_min_bits        the threshold asked for
 *   mpfr_version        the MPFR that ran
 *   cache_key           hex key of (op, params, input bytes, precision opts)
 * When certification is off (--no-certify), ref_check_prec and the bits are
 * absent and certified is "unchecked".
 */

typedef struct ra_ref_opts {
    mpfr_prec_t prec;     /* working precision p (default 128) */
    mpfr_prec_t check_prec; /* 0: 2p */
    mpfr_prec_t prec_cap; /* default 1024 */
    int min_bits;         /* default 60 */
    int certify;          /* default 1 */
    int grads;            /* compute gradients when cotangents exist (default 1) */
    int threads;          /* 0: OpenMP default */
    int use_cache;        /* default 1 */
    const char *cache_dir; /* NULL: $RECAUDIT_CACHE, else ~/.cache/recaudit */
    int progress;         /* progress bar on a terminal (default 1) */
} ra_ref_opts;

void ra_ref_opts_init(ra_ref_opts *o);

/* `what` names the case in messages (its file name). */
ra_status ra_ref_compute(ra_case *ref, const ra_case *c, const ra_ref_opts *o,
                         const char *what);

/* Operations that have a reference, NULL-terminated ("gdn", ...). */
const char *const *ra_ref_ops(void);

#endif
