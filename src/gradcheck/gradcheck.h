/* Gradient checks: high-precision finite differences of an operation's MPFR forward. */
#ifndef RA_GRADCHECK_GRADCHECK_H
#define RA_GRADCHECK_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include <mpfr.h>

#include "core/case.h"
#include "core/status.h"
#include "ref/mparr.h"

/*
 * The loss is L = sum_j <w_j, y_j> over the operation's outputs y_j with
 * the case's cotangents w_j, so its gradient is the vector-Jacobian product
 * the backward computes.  Finite differences run on the operation's MPFR
 * forward at prec bits with the central quotient
 * D(h) = (L(x + h e) - L(x - h e)) / (2h) at h = 2^-h_log2 and h/2,
 * combined by one Richardson step R = (4 D(h/2) - D(h)) / 3, whose
 * truncation error is O(h^4) (2^-320 at the defaults) while the rounding
 * error is about 2^-prec |L| / h: far below any formula error, so a right
 * gradient agrees to tens of digits and a wrong one to about none.
 *
 * Modes:
 *   elementwise  every element of every differentiable input (the
 *                operation may re-run only the part of its forward the
 *                element feeds)
 *   directional  per input tensor X a random direction u (normal, fixed
 *                seed) on X alone: FD of L(x + t u) against <dL/dX, u>;
 *                plus a row "all" with directions on every input at once
 *   dot          the VJP/JVP dot-product test: random output cotangents w
 *                (replacing the case's) and directions u as above;
 *                <w, J u> from finite differences of every output element,
 *                against <J^T w, u> from the backward with cotangents w
 *
 * Agreement per row: rel = max |fd - an| / max(max |an|, max |fd|) over the
 * tensor's elements (one value in the directional modes), digits =
 * -log10(rel), capped at RA_GC_MAX_DIGITS (also when rel is 0).  Normwise,
 * so elements whose gradient is tiny are judged against the tensor's scale.
 *
 * An operation takes part by providing an ra_gc_op (below) next to its
 * reference; the engine (fd.c) never names an operation or its tensors.
 */

#define RA_GC_MAX_DIGITS 60.0
#define RA_GC_MAX_INPUTS 32  /* differentiable inputs of one operation */
#define RA_GC_MAX_OUTPUTS 16 /* outputs (with cotangents) of one operation */
#define RA_GC_NAME 32        /* tensor names, with their terminating zero */

typedef enum ra_gc_mode { RA_GC_ELEMENTWISE, RA_GC_DIRECTIONAL, RA_GC_DOT } ra_gc_mode;

typedef struct ra_gc_opts {
    ra_gc_mode mode;
    mpfr_prec_t prec;       /* default 256 */
    long h_log2;            /* step 2^-h_log2, default 80 */
    uint64_t seed;          /* directions and cotangents of the random modes */
    int threads;            /* 0: OpenMP default */
    const char *grads_what; /* names the given gradients (a file) in messages;
                              NULL: the case's name */
} ra_gc_opts;

void ra_gc_opts_init(ra_gc_opts *o);
/* "elementwise", "directional", "dot"; RA_EINVAL otherwise. */
ra_status ra_gc_mode_parse(ra_gc_mode *out, const char *s);
const char *ra_gc_mode_name(ra_gc_mode m);

/* --- the operation's side ------------------------------------------------------------------- */

/* A tensor the engine differentiates by (input) or through (output). */
typedef struct ra_gc_tensor {
    char name[RA_GC_NAME]; /* the case's name: result rows, the direction stream
                              "gradcheck.u.<name>" or cotangent stream
                              "gradcheck.w.<name>", given gradients "d<name>" */
    int64_t n;             /* elements (row-major, the case's layout) */
    const double *cot;     /* outputs: the cotangent (n values, owned by the
                              op's state); NULL: none, the output is not in L */
} ra_gc_tensor;

typedef struct ra_gc_layout {
    int nin, nout;
    ra_gc_tensor in[RA_GC_MAX_INPUTS];   /* in the order of the result rows */
    ra_gc_tensor out[RA_GC_MAX_OUTPUTS]; /* in the order L sums them */
} ra_gc_layout;

/*
 * The hooks an operation's reference provides.  `state` is the op's own
 * (the case converted once); inputs and outputs are addressed by their
 * index in the layout.  Results must not depend on `threads` (the
 * reference's bit-identity rule).  Hooks called by worker threads
 * (loss_one) must not report: they return the status with the reason in
 * msg; every other hook reports its own failures (RA_ERROR).  Hooks a mode
 * does not use may be NULL; that mode is then RA_EUNSUPPORTED.
 */
typedef struct ra_gc_op {
    const char *name; /* the operation, as cases name it ("op" metadata) */
    /* Validates c, cotangents included (messages name `what`), for work at
       prec bits; converts it into *state; fills io with the differentiable
       inputs c holds (optional ones only when present) and every output,
       with the case's cotangents.  On failure *state is NULL. */
    ra_status (*prepare)(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                         const char *what);
    /* dot mode: from now on L uses cot[j] (io.out[j].n values, owned by the
       caller and alive until release) as the cotangent of every output j. */
    ra_status (*set_cotangents)(void *state, const double *const *cot);
    /* The analytic gradient (the reference backward) at prec bits: for every
       input a, grads[a] (zeroed by the caller) receives io.in[a].n numbers,
       moved in (the caller frees them). */
    ra_status (*backward)(ra_mparr *grads, const void *state, mpfr_prec_t prec, int threads);
    /* directional and dot modes: every output j at x + t dir, where dir[a]
       (io.in[a].n values, or NULL: input a is not moved) is a direction per
       input, into outs[j] (zeroed by the caller; io.out[j].n numbers at prec
       bits, moved in).  x + t dir is formed in MPFR (t is a power of two). */
    ra_status (*along)(ra_mparr *outs, const void *state, const double *const *dir, mpfr_srcptr t,
                       mpfr_prec_t prec, int threads);
    /* elementwise mode: a workspace for one worker thread at prec bits... */
    ra_status (*ws_new)(void **ws, const void *state, mpfr_prec_t prec);
    void (*ws_free)(void *ws);
    /* ...with which *loss = L(x + delta e_i), e_i element i of input a, up
       to a term that does not depend on delta (so an op may evaluate only
       the part of L the element feeds), computed the same way for every
       delta.  Called concurrently on distinct workspaces. */
    ra_status (*loss_one)(mpfr_ptr loss, void *ws, const void *state, int a, int64_t i,
                          mpfr_srcptr delta, char *msg, size_t msglen);
    /* Optional (NULL: none): 1 when element i of input a feeds a
       non-differentiable point of the forward (a ReLU kink) within a few
       steps h = 2^-h_log2 of the finite differences, so that their quotient
       would straddle the kink.  The engine leaves such elements out of the
       comparison (element-wise) or of the direction (directional, dot) and
       counts them in the row's `excluded`. */
    int (*near_kink)(const void *state, int a, int64_t i, long h_log2);
    /* Frees the state (after the last hook that used it). */
    void (*release)(void *state);
} ra_gc_op;

/* --- results -------------------------------------------------------------------------------- */

typedef struct ra_gc_row {
    char tensor[RA_GC_NAME]; /* an input's name, or "all" */
    int64_t n;               /* elements compared (1 in the directional modes) */
    double digits;
    double rel;    /* max |fd - an| / scale, 0 when they agree exactly */
    int64_t worst; /* elementwise: flat index of the largest |fd - an| */
    double fd, an; /* at the worst element, or the two directional values */
    int64_t excluded; /* elements left out: near a kink (ra_gc_op.near_kink) */
} ra_gc_row;

typedef struct ra_gc_result {
    size_t n;
    ra_gc_row rows[RA_GC_MAX_INPUTS + 1]; /* one per input, then "all" */
    mpfr_prec_t prec;
    long h_log2;
} ra_gc_result;

/* Checks the gradients of op on case c (which must hold the cotangents op
   needs).  grads NULL: op's reference backward at opts->prec; otherwise
   the tensors d<input> of grads, widened exactly: any backward's output
   can be proved right or wrong (not in dot mode, whose cotangents are
   drawn here).  `what` names the case in messages. */
ra_status ra_gradcheck(ra_gc_result *r, const ra_gc_op *op, const ra_case *c, const ra_gc_opts *o,
                       const ra_tensors *grads, const char *what);

/* Gradients of a closed form under test, evaluated by the caller at prec
   bits from the case itself: grads[a] (zeroed) receives io->in[a].n
   numbers at prec for every input a of the op's layout, moved in.
   Reports its own failures. */
typedef ra_status (*ra_gc_formula_fn)(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c,
                                      void *ctx, mpfr_prec_t prec);

/* ra_gradcheck with the analytic side from fn (elementwise or directional
   mode): a formula evaluated in MPFR keeps all its digits, where given
   tensors would be rounded to their dtype (the derivation checks). */
ra_status ra_gradcheck_formula(ra_gc_result *r, const ra_gc_op *op, const ra_case *c,
                               const ra_gc_opts *o, ra_gc_formula_fn fn, void *ctx,
                               const char *what);

/* The smallest digits over the rows (RA_GC_MAX_DIGITS when there are none). */
double ra_gc_min_digits(const ra_gc_result *r);
/* The row of tensor name (an input's name, or "all"), or NULL. */
const ra_gc_row *ra_gc_row_find(const ra_gc_result *r, const char *name);

#endif
