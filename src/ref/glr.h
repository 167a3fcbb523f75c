/* The gated linear recurrence in MPFR: inputs, per-head forward/backward, whole runs. */
#ifndef RA_REF_GLR_H
#define RA_REF_GLR_H

#include <stdint.h>

#include <mpfr.h>

#include "core/glr_case.h"
#include "core/progress.h"
#include "core/status.h"
#include "ref/mparr.h"

/*
 * The operation of docs/glr.md (SPEC.md §2) evaluated in MPFR at one
 * working precision.  The reference (ra_ref_compute) runs it at two
 * precisions and compares; the gradient and derivation checks
 * (src/gradcheck) run its forward on perturbed inputs.  Inputs are held
 * as the exact stored values (doubles) and converted when a step reads
 * them; perturbations (x + step dir, one element + delta) are applied
 * there, in MPFR, as in the gdn reference.
 *
 * Besides the five differentiable inputs there is one perturbation-only
 * array, hs [B,T,H,S,D], identically zero: hs[t] is added to the state
 * right after step t, so that dL/dhs[t] is dL/dh_t, the adjoint state of
 * the seed's dh recursion, which the derivation checks prove by finite
 * differences like any input gradient.
 */

enum { RA_GLR_V, RA_GLR_B, RA_GLR_C, RA_GLR_G, RA_GLR_ALOG, RA_GLR_HS, RA_GLR_DO, RA_GLR_NARR };
#define RA_GLR_NDIFF 5 /* v, b, c, g, A_log */
#define RA_GLR_NPERT 6 /* and hs */

/* "v", "b", "c", "g", "A_log", "hs", "do" */
extern const char *const ra_glr_arr_names[RA_GLR_NARR];

typedef struct ra_glr_in {
    ra_glr_shape s;
    ra_glr_decay decay;
    const double *x[RA_GLR_NARR]; /* x[RA_GLR_HS] is always NULL (zeros); do may be NULL */
    const double *dir[RA_GLR_NPERT];
    mpfr_srcptr step; /* NULL: no directional perturbation */
    int one_arr;      /* < 0: no single-element offset */
    int64_t one_idx;
    mpfr_srcptr one_delta;
    /* Checkpoint spacing of the backward (0: ra_glr_segment_length). */
    int64_t segment;
} ra_glr_in;

int64_t ra_glr_arr_numel(const ra_glr_shape *s, int a);
int64_t ra_glr_segment_length(const ra_glr_shape *s);

/* Inputs of a validated problem as doubles (owned). */
typedef struct ra_glr_data {
    ra_glr_in in;
    double *buf[RA_GLR_NARR];
} ra_glr_data;
ra_status ra_glr_data_init(ra_glr_data *d, const ra_glr_problem *p);
void ra_glr_data_clear(ra_glr_data *d);

/* Everything a run produces at one precision (row-major, the tensors'
   layouts): o, and with grads dv, db, dc, dg, dA_log. */
typedef struct ra_glr_out {
    mpfr_prec_t prec;
    ra_mparr o, dv, db, dc, dg, dA_log;
    ra_mparr dAp; /* per (b, h, s) share of dA_log, before the batch sum */
} ra_glr_out;
void ra_glr_out_clear(ra_glr_out *out);

/* Every (b, h) head of every precision in one pool (the highest first),
   then dA_log as the sum over b in increasing order: bit-identical for any
   thread count.  prog advances by one per (head, precision). */
#define RA_GLR_MAX_PRECS 4
ra_status ra_glr_run_multi(ra_glr_out *outs, const mpfr_prec_t *precs, int nprec,
                           const ra_glr_in *in, int grads, int threads, ra_progress *prog);
ra_status ra_glr_run(ra_glr_out *out, const ra_glr_in *in, mpfr_prec_t prec, int grads, int threads,
                     ra_progress *prog);

/* --- single heads ---------------------------------------------------------------------- */

typedef struct ra_glr_ws ra_glr_ws;
ra_status ra_glr_ws_new(ra_glr_ws **out, const ra_glr_shape *s, mpfr_prec_t prec, int bwd,
                        int64_t segment);
void ra_glr_ws_free(ra_glr_ws *w);

/* Head (b, h): forward, and the reverse-time backward when bwd (the
   workspace made with bwd, `in` with do).  Results to out at their global
   positions when out != NULL (dA_log into out->dAp), the head's share of
   L = <do, o> into *loss when loss != NULL.  Does not report: a failure
   (a value leaving MPFR's exponent range) returns the status with the
   reason in msg. */
ra_status ra_glr_head(ra_glr_ws *w, const ra_glr_in *in, int64_t b, int64_t h,
                      const ra_glr_out *out, mpfr_ptr loss, int bwd, char *msg, size_t msglen);

/* out = input a at flat index i, perturbed as `in` says. */
void ra_glr_get(mpfr_ptr out, const ra_glr_in *in, int a, int64_t i);
/* alpha = the decay of rate parameter A under gate g, and its partial
   derivatives da_dg, da_dA (either may be NULL); tmp a scratch number. */
void ra_glr_alpha(mpfr_ptr alpha, mpfr_ptr da_dg, mpfr_ptr da_dA, mpfr_srcptr g, mpfr_srcptr A,
                  ra_glr_decay decay, mpfr_ptr tmp);

/* MPFR arithmetic calls of ra_glr_run with gradients, by formula: the
   forward of every head, and what the backward adds (it does not depend
   on the checkpoint spacing: every segment is recomputed once). */
void ra_glr_op_count(const ra_glr_shape *s, ra_glr_decay decay, double *fwd, double *bwd);

#endif
