/* The scan family's gradient-check hooks (ra_gc_op rows of scan.linear, scan.affine, scan.log). */
#ifndef RA_GRADCHECK_SCAN_GC_H
#define RA_GRADCHECK_SCAN_GC_H

#include "gradcheck/gradcheck.h"

extern const ra_gc_op ra_gc_op_scan_linear, ra_gc_op_scan_affine, ra_gc_op_scan_log;

/* The formula sets `recaudit derive` checks (scan_derive.c): seed 002's
   reversed-scan backward for scan.linear and scan.affine, the suite's
   log-space backward for scan.log. */
struct ra_derive_set;
extern const struct ra_derive_set *const ra_scan_linear_derive_sets[],
    *const ra_scan_affine_derive_sets[], *const ra_scan_log_derive_sets[];

/* Slips ra_scan_derive_eval can write instead of the published lines:
   the reversed scan with A_{t+1} untransposed, dA from Abar_t, Bbar_t
   rather than the previous states. */
enum { RA_SCAN_DERIVE_NO_TRANSPOSE = 1, RA_SCAN_DERIVE_STATE_AT_T = 2 };

/* The published backward of case c's scan, implemented as written, in
   MPFR at prec bits into grads (io's two inputs, initialised here; the
   caller frees them), with the slips of alter (0: none).  The log scan
   takes the chain rule through exp (docs/scan.md). */
ra_status ra_scan_derive_eval(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c,
                              unsigned alter, mpfr_prec_t prec);

#endif
