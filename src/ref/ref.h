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
 * Agreeing bits of one element, a at p and b at the check precision:
 * floor(log2(|b| / |a - b|)) clamped to [0, p]; p when a == b (two zeros
 * of any signs included); 0 when exactly one is zero or the signs differ.
 * A tensor's bits are the minimum over its elements (an empty tensor: p).
 * Precision raising: round k+1 works at round k's check precision c (its
 * results are reused, not recomputed) and checks at 2c; it stops when
 * every tensor has min_bits, or when the next working precision would
 * exceed prec_cap.
 *
 * The result is a case with the same op whose tensors are every output and
 * gradient rounded to nearest f64, from the check-precision run, and whose
 * params hold the case's parameters followed by:
 *   ref_prec            working precision of the final round (bits)
 *   ref_check_prec      its check precision
 *   ref_rounds          each round's precisions and its least agreeing bits
 *                       over all tensors, "p/c:bits", comma-separated, e.g.
 *                       "128/256:45,256/512:173"
 *   certified_bits.<t>  agreeing bits of tensor <t>
 *   certified_worst.<t> for a tensor below min_bits only: the multi-index
 *                       of its first element with the fewest bits
 *   certified           "yes" when every tensor reached min_bits, else "no"
 *   ref_min_bits        the threshold asked for
 *   ref_prec_cap        the cap
 *   mpfr_version        the MPFR that ran
 *   cache_key           hex key of (op, params, input bytes, precision opts)
 *   content_hash        hex XXH3-128 of the result tensors (names, dtypes,
 *                       shapes, bytes): the cache verifies it on every hit
 *   cache               "hit", "miss" (computed and stored), "refreshed"
 *                       (a stale or corrupt entry was recomputed) or "off"
 * When certification is off (--no-certify), ref_check_prec and the bits are
 * absent and certified is "unchecked"; the tensors come from the p run.
 *
 * Errors: bad options (prec < 53, check_prec <= prec, prec > prec_cap,
 * min_bits < 1) RA_EINVAL; an op without a reference RA_EUNSUPPORTED naming
 * the ops that have one; the op's own validation (shapes, NaN/Inf ...);
 * RA_ENUMERIC when an intermediate leaves MPFR's exponent range.  A cache
 * that cannot be found (no $RECAUDIT_CACHE nor $HOME) or written is a
 * warning, not an error.
 */

typedef struct ra_ref_opts {
    mpfr_prec_t prec;       /* working precision p (default 128) */
    mpfr_prec_t check_prec; /* 0: 2p */
    mpfr_prec_t prec_cap;   /* default 1024 */
    int min_bits;           /* default 60 */
    int certify;            /* default 1 */
    int grads;              /* compute gradients when cotangents exist (default 1) */
    int threads;            /* 0: OpenMP default */
    int use_cache;          /* default 1 */
    const char *cache_dir;  /* NULL: $RECAUDIT_CACHE, else ~/.cache/recaudit */
    int progress;           /* progress bar on a terminal (default 1) */
} ra_ref_opts;

void ra_ref_opts_init(ra_ref_opts *o);

/* `what` names the case in messages (its file name). */
ra_status ra_ref_compute(ra_case *ref, const ra_case *c, const ra_ref_opts *o, const char *what);

/* The cache key ra_ref_compute uses for (c, o): 32 hex digits of XXH3-128
   over a format tag, the reference code's version, the op, every parameter (sorted by key), every
   tensor (sorted by name: name, dtype, shape, bytes) and the options that change the result (prec,
   effective check_prec, prec_cap, min_bits, certify, grads). */
void ra_ref_cache_key(char hex[33], const ra_case *c, const ra_ref_opts *o);

/* The reference code's version: "<crc>-<bytes>", cksum of the reference
   sources (the .c and .h files of src/ref and the ops' case validation,
   src/core/<op>_case.c and .h) taken at build time. */
const char *ra_ref_code_version(void);

/* input_hash of a reference: 16 hex digits of XXH3-64 (seed 0) over the
   case's tensors (count, then each sorted by name: name, dtype, shape,
   bytes, strings and bytes prefixed by their 8-byte little-endian length).
   RA_ENOMEM only. */
ra_status ra_ref_input_hash(char hex[17], const ra_case *c);

#endif
