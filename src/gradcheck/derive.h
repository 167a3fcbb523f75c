/* Derivation checks: closed-form gradient formulas, as written, against finite differences. */
#ifndef RA_GRADCHECK_DERIVE_H
#define RA_GRADCHECK_DERIVE_H

#include <stddef.h>
#include <stdio.h>

#include <mpfr.h>

#include "core/case.h"
#include "core/status.h"
#include "gradcheck/gradcheck.h"

/*
 * A formula set is what one source (the suite's own docs, a seed document)
 * writes for the backward of one operation: one closed form per gradient,
 * implemented exactly as written by the operation's eval hook, evaluated
 * in MPFR and compared by the generic finite-difference engine
 * (ra_gradcheck_formula) with differences of the operation's MPFR forward.
 * Each set lists the parameterisations (cases) it is checked under; a
 * formula that fails may carry a corrected form, evaluated too, so the
 * report says what the right formula is and proves it.
 *
 * Operations contribute sets through their row of the operation table
 * (ra_op.derive); `recaudit derive` runs every set of every operation and
 * never names one.  A set the suite ships (shipped = 1) is a claim of the
 * suite: its failure fails `recaudit derive` (exit 1) and `make check`.
 * A published formula that fails is a verdict in the report.
 */

typedef struct ra_derive_formula {
    const char *input;     /* the FD row it is the gradient of: an input of set->gc's layout */
    const char *written;   /* the formula as the source writes it */
    const char *corrected; /* the right form where it differs, or NULL */
} ra_derive_formula;

typedef struct ra_derive_case {
    const char *label; /* the parameterisation, for the report: "decay=expneg" */
    const char *shape; /* generated case: shape, regime, op flags (space separated) */
    const char *regime;
    const char *flags;
} ra_derive_case;

typedef struct ra_derive_set {
    const char *name;   /* "glr, seed 000" */
    const char *source; /* file and section */
    int shipped;
    const ra_gc_op *gc;                /* finite-difference hooks; gc->name is the operation */
    const ra_derive_formula *formulas; /* ends with a NULL input */
    const ra_derive_case *cases;       /* ends with a NULL label */
    /* Every formula of the set on case c, as written (corrected = 0) or
       with the corrected forms (1), into grads in io's input order (a
       ra_gc_formula_fn with the flag). */
    ra_status (*eval)(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c, int corrected,
                      mpfr_prec_t prec);
} ra_derive_set;

typedef struct ra_derive_row {
    const ra_derive_set *set;
    const ra_derive_formula *f;
    const ra_derive_case *cs;
    double digits;      /* as written */
    int holds;          /* digits >= the threshold */
    double corr_digits; /* the corrected form's, or -1 when not evaluated */
} ra_derive_row;

/* Checks every formula of set under every case of it (finite differences
   element-wise at o's precision and step), appending rows to rows[*n..max). */
ra_status ra_derive_check(ra_derive_row *rows, size_t *n, size_t max, const ra_derive_set *set,
                          const ra_gc_opts *o, double min_digits);

/* Writes the markdown report of rows (stamp: a line naming what produced
   it: versions, date, precision). */
ra_status ra_derive_report(FILE *f, const ra_derive_row *rows, size_t n, const char *stamp,
                           double min_digits);

#endif
