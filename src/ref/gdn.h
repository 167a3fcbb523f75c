/* The gated delta rule in MPFR: inputs, per-head forward/backward, whole runs. */
#ifndef RA_REF_GDN_H
#define RA_REF_GDN_H

#include <stdint.h>

#include <mpfr.h>

#include "core/gdn_case.h"
#include "core/progress.h"
#include "core/status.h"
#include "ref/mparr.h"

/*
 * The operation of docs/gdn.md, evaluated in MPFR at one working precision
 * (how: docs/gdn-reference.md).  The reference (ra_ref_compute) runs it at
 * two precisions and compares; the gradient checks (src/gradcheck) run its
 * forward on perturbed inputs.
 *
 * Inputs are held as the exact stored values (doubles: every storage dtype
 * widens to double without rounding) and converted to MPFR when a time
 * step reads them, so a head needs no O(T) input copies.  A perturbation
 * x + step * dir[x] (directional finite differences) and a single-element
 * offset (element-wise finite differences) are applied at that point, in
 * MPFR; with neither, every input enters exactly (precision >= 53).
 */

/* The arrays of a gdn problem; the first RA_GDN_NDIFF are differentiable. */
enum {
    RA_GDN_Q,
    RA_GDN_K,
    RA_GDN_V,
    RA_GDN_G,
    RA_GDN_BETA,
    RA_GDN_H0,
    RA_GDN_DO,
    RA_GDN_DHT,
    RA_GDN_NARR
};
#define RA_GDN_NDIFF 6

/* "q", "k", "v", "g", "beta", "h0", "do", "dht" */
extern const char *const ra_gdn_arr_names[RA_GDN_NARR];

typedef struct ra_gdn_in {
    ra_gdn_shape s;
    const double *x[RA_GDN_NARR]; /* NULL: absent (h0, do, dht) */
    int l2norm;
    const char *scale_text; /* NULL: exactly K^-1/2 */
    const char *l2eps_text; /* NULL: the decimal 1e-6 */
    /* Perturbation: x + step * dir[a] for every array a with dir[a] != NULL
       (when step != NULL), plus one_delta added to element one_idx of array
       one_arr (one_arr < 0: none). */
    const double *dir[RA_GDN_NDIFF];
    mpfr_srcptr step;
    int one_arr;
    int64_t one_idx;
    mpfr_srcptr one_delta;
    /* Checkpoint spacing of the backward (0: ra_gdn_segment_length); a
       tuning knob, also used by the tests to exercise many segments.  The
       results do not depend on it beyond rounding. */
    int64_t segment;
} ra_gdn_in;

/* Element count of array a for shape s. */
int64_t ra_gdn_arr_numel(const ra_gdn_shape *s, int a);

/* Inputs of a validated problem converted to doubles (owned). */
typedef struct ra_gdn_data {
    ra_gdn_in in;
    double *buf[RA_GDN_NARR];
} ra_gdn_data;
ra_status ra_gdn_data_init(ra_gdn_data *d, const ra_gdn_problem *p);
void ra_gdn_data_clear(ra_gdn_data *d);

/* Checks what a run needs beyond ra_gdn_problem_init: the scale and l2eps
   texts are numbers MPFR reads in full, prec >= 53 (every stored input is
   then exact), do present when gradients or a loss are asked for. */
ra_status ra_gdn_in_check(const ra_gdn_in *in, mpfr_prec_t prec, int need_do);

/* Everything a run produces at one precision, as MPFR arrays in the
   tensors' row-major layouts (o [B,T,Hv,V], ht/dh0 [B,Hv,K,V], dq/dk
   [B,T,Hk,K], dv [B,T,Hv,V], dg/dbeta [B,T,Hv]).  Arrays not produced have
   n == 0 (gradients without grads, dh0 without h0). */
typedef struct ra_gdn_out {
    mpfr_prec_t prec;
    ra_mparr o, ht, dq, dk, dv, dg, dbeta, dh0;
    ra_mparr dqv, dkv; /* per value head [B,T,Hv,K], before the group sum */
} ra_gdn_out;
void ra_gdn_out_clear(ra_gdn_out *out);

/* Runs every (b, hv) head with OpenMP (threads 0: the OpenMP default),
   then sums dq/dk over each group of value heads in increasing hv and
   applies the l2norm chain rule.  Bit-identical for any thread count.
   prog (may be NULL) advances by one per head.  On failure out is
   cleared and the first failing head (lowest index) is reported. */
ra_status ra_gdn_run(ra_gdn_out *out, const ra_gdn_in *in, mpfr_prec_t prec, int grads, int threads,
                     ra_progress *prog);

/* The same at nprec precisions at once (outs[i] at precs[i]), all heads of
   all precisions in one dynamically scheduled pool, the highest precision
   first.  prog advances by one per (head, precision). */
#define RA_GDN_MAX_PRECS 4
ra_status ra_gdn_run_multi(ra_gdn_out *outs, const mpfr_prec_t *precs, int nprec,
                           const ra_gdn_in *in, int grads, int threads, ra_progress *prog);

/* --- single heads (finite differences) ---------------------------------------------- */

typedef struct ra_gdn_ws ra_gdn_ws;

/* Workspace for one head at a time at precision prec: the state, and when
   bwd the checkpoints (every `segment` steps, 0: ra_gdn_segment_length)
   and per-step vectors of the backward.  exact_inputs: the heads it runs
   read unperturbed inputs, which are then held as exact 53-bit numbers
   (faster products); perturbed inputs need 0. */
ra_status ra_gdn_ws_new(ra_gdn_ws **out, const ra_gdn_shape *s, mpfr_prec_t prec, int bwd,
                        int exact_inputs, int64_t segment);
void ra_gdn_ws_free(ra_gdn_ws *w);
/* Checkpoint spacing the workspace uses; the default for a shape is
   max(1 + K V / (4 (K + V)), ceil(T / 512)), at most T. */
int64_t ra_gdn_ws_segment(const ra_gdn_ws *w);
int64_t ra_gdn_segment_length(const ra_gdn_shape *s);
/* 1 when `in` asks for any perturbation. */
int ra_gdn_in_perturbed(const ra_gdn_in *in);

/* Head (b, hv): forward, and backward when bwd (the workspace must have
   been made with bwd, and `in` must have do).  Results go to out at their
   global positions when out != NULL (dq/dk into out->dqv/dkv), and the
   head's share of L = <do, o> + <dht, ht> into *loss when loss != NULL.
   Does not report: on failure (a value leaving MPFR's exponent range, a
   zero norm with l2eps = 0) returns the status and leaves the reason in
   msg (msglen bytes). */
ra_status ra_gdn_head(ra_gdn_ws *w, const ra_gdn_in *in, int64_t b, int64_t hv,
                      const ra_gdn_out *out, mpfr_ptr loss, int bwd, char *msg, size_t msglen);

/* Helpers shared with gdn_run.c and the gradient checks. */
/* out = input a at flat index i, perturbed as `in` says, at out's precision. */
void ra_gdn_get(mpfr_ptr out, const ra_gdn_in *in, int a, int64_t i);
/* n2 = sum x_i^2 + eps (fma accumulation in index order), nrm = sqrt(n2). */
void ra_gdn_l2norm(mpfr_ptr n2, mpfr_ptr nrm, mpfr_srcptr x, int64_t n, mpfr_srcptr eps);
/* scale (the text read as a real, or K^-1/2) and l2eps at their precisions. */
void ra_gdn_params(mpfr_ptr scale, mpfr_ptr l2eps, const ra_gdn_in *in);
int ra_gdn_shape_equal(const ra_gdn_shape *a, const ra_gdn_shape *b);

/* MPFR arithmetic operations (mpfr_fma, mpfr_mul, exp, sqrt, ...; not
   conversions or copies) that ra_gdn_run performs, by formula, split into
   the forward of every head and the backward (including the group sums),
   for checkpoint spacing `segment` (0: the default). */
void ra_gdn_op_count(const ra_gdn_shape *s, int l2norm, int dht, int64_t segment, double *fwd,
                     double *bwd);

#endif
