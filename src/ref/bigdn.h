/* The bidirectional frame GDN family in MPFR: inputs, per-head forward/backward, whole runs. */
#ifndef RA_REF_BIGDN_H
#define RA_REF_BIGDN_H

#include <stdint.h>

#include <mpfr.h>

#include "core/bigdn_case.h"
#include "core/progress.h"
#include "core/status.h"
#include "ref/mparr.h"

/*
 * docs/bigdn.md (SPEC.md §4) evaluated in MPFR at one working precision,
 * for both members: bigdn (from qkv through RMSNorm, ReLU, k_scale, RoPE)
 * and bigdn.core (from the features).  Inputs are the exact stored values
 * (doubles), converted when a step reads them; perturbations (x + step
 * dir, one element + delta) are applied there, in MPFR.
 *
 * Besides the seven inputs there are perturbation-only arrays, identically
 * zero, each added to one internal quantity right where it is formed, so
 * that the gradient of the loss with respect to it is the adjoint of that
 * quantity (the derivation checks prove the seed's phase formulas for
 * those adjoints by finite differences like any input gradient):
 *
 *   Qn, Kn [B,N,H,D]      the RMSNorm outputs before ReLU (bigdn only)
 *   P, A, Pz [B,H,F,D,D]  Bz [B,H,F,D]     the per-frame phase-A products
 *   Mf, Mr [B,H,F,D,D]    zf, zr [B,H,F,D] the forward and reverse streams
 *                                          (M_f, M'_f after frame f's step)
 *   Mt [B,H,F,D,D]        zt [B,H,F,D]     the combined states the readout uses
 *   num [B,N,H,D]         den [B,N,H]      before the division
 *   M0 [B,H,D,D]          the forward stream's initial state M_{-1}
 */

enum {
    RA_BIGDN_P_QN = RA_BIGDN_NIN, /* 7 */
    RA_BIGDN_P_KN,
    RA_BIGDN_P_P,
    RA_BIGDN_P_A,
    RA_BIGDN_P_PZ,
    RA_BIGDN_P_BZ,
    RA_BIGDN_P_MF,
    RA_BIGDN_P_MR,
    RA_BIGDN_P_ZF,
    RA_BIGDN_P_ZR,
    RA_BIGDN_P_MT,
    RA_BIGDN_P_ZT,
    RA_BIGDN_P_NUM,
    RA_BIGDN_P_DEN,
    RA_BIGDN_P_M0,
    RA_BIGDN_DOUT,
    RA_BIGDN_NARR
};

/* The name of array a of a member ("qkv", ..., "Qn", ..., "dout"). */
const char *ra_bigdn_arr_name(ra_bigdn_kind kind, int a);
int64_t ra_bigdn_arr_numel(const ra_bigdn_shape *s, ra_bigdn_kind kind, int a);
/* Array a exists for the member (Qn, Kn only for bigdn). */
int ra_bigdn_arr_exists(ra_bigdn_kind kind, int a);

typedef struct ra_bigdn_in {
    ra_bigdn_kind kind;
    ra_bigdn_shape s;
    double k_scale, norm_eps, eps;
    const double *x[RA_BIGDN_NARR]; /* perturbation arrays NULL (zeros); dout may be NULL */
    const double *dir[RA_BIGDN_NARR];
    mpfr_srcptr step; /* NULL: no directional perturbation */
    int one_arr;      /* < 0: no single-element offset */
    int64_t one_idx;
    mpfr_srcptr one_delta;
} ra_bigdn_in;

typedef struct ra_bigdn_data {
    ra_bigdn_in in;
    double *buf[RA_BIGDN_NARR];
} ra_bigdn_data;
ra_status ra_bigdn_data_init(ra_bigdn_data *d, const ra_bigdn_problem *p);
void ra_bigdn_data_clear(ra_bigdn_data *d);

/* Everything a run produces at one precision: out, and with grads the
   gradient of every differentiable input in input order (bigdn: dqkv,
   dbeta, ddecay, dq_norm_w, dk_norm_w; the tables none; bigdn.core: dQ,
   dK, dQr, dKr, dV, dbeta, ddecay). */
typedef struct ra_bigdn_out {
    mpfr_prec_t prec;
    ra_mparr out;
    ra_mparr g[RA_BIGDN_NIN];
    ra_mparr dqn, dkn; /* bigdn: the gradients at the RMSNorm outputs (internal) */
    ra_mparr inv;      /* bigdn: q_inv, k_inv per token (internal) */
} ra_bigdn_out;
void ra_bigdn_out_clear(ra_bigdn_out *o);

/* The input gradients a member has: bigdn has none for the RoPE tables. */
int ra_bigdn_ndiff(ra_bigdn_kind kind);

#define RA_BIGDN_MAX_PRECS 4
/* Every (b, h) head of every precision, then (bigdn, with grads) the
   RMSNorm backward per token and the weight gradients as sums in
   increasing (b, n): bit-identical for any thread count.  Heads run either
   one per thread in a pool, or (when there are few heads for the threads,
   or the heads are large: ra_bigdn_team) one after the other, each on a
   team of all the threads. */
ra_status ra_bigdn_run_multi(ra_bigdn_out *outs, const mpfr_prec_t *precs, int nprec,
                             const ra_bigdn_in *in, int grads, int threads, ra_progress *prog);
ra_status ra_bigdn_run(ra_bigdn_out *out, const ra_bigdn_in *in, mpfr_prec_t prec, int grads,
                       int threads, ra_progress *prog);

/* A head's workspace at prec (with bwd: for the backward too), for a team of `threads`
   OpenMP threads that ra_bigdn_head runs the head on (1: the calling thread alone). */
typedef struct ra_bigdn_ws ra_bigdn_ws;
ra_status ra_bigdn_ws_new(ra_bigdn_ws **out, const ra_bigdn_in *in, mpfr_prec_t prec, int bwd,
                          int threads);
void ra_bigdn_ws_free(ra_bigdn_ws *w);

/* Head (b, h): forward, and the backward when bwd (in with dout).  Writes
   out (and the per-head gradients) when o != NULL, the head's share of
   L = <dout, out> into *loss when loss != NULL.  Does not report.  Runs on
   the workspace's team (a parallel region of its own, also for a team of
   one, so it may be called from a worker of an enclosing pool); the
   result does not depend on the team size. */
ra_status ra_bigdn_head(ra_bigdn_ws *w, const ra_bigdn_in *in, int64_t b, int64_t h,
                        const ra_bigdn_out *o, mpfr_ptr loss, int bwd, char *msg, size_t msglen);

/* out = array a at flat index i, perturbed as `in` says. */
void ra_bigdn_get(mpfr_ptr out, const ra_bigdn_in *in, int a, int64_t i);

/* The team size for the heads of a run on `threads` threads (ra_pool_threads applied) at
   nprec precisions: 1 (one head per thread, in a pool) or all of them (heads one after the
   other, each on the whole team). */
int ra_bigdn_team(const ra_bigdn_in *in, int nprec, int threads);

/* MPFR arithmetic calls of ra_bigdn_run (forward, and what the backward
   adds), by formula. */
void ra_bigdn_op_count(const ra_bigdn_in *in, double *fwd, double *bwd);

#endif
