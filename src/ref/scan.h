/* The affine scan family in MPFR: lane forward and backward, whole-problem runs. */
#ifndef RA_REF_SCAN_H
#define RA_REF_SCAN_H

#include <stdint.h>

#include <mpfr.h>

#include "core/progress.h"
#include "core/scan_case.h"
#include "core/status.h"
#include "ref/mparr.h"

#define RA_SCAN_MAX_PRECS 2

/*
 * Inputs are doubles (the stored values, widened exactly): x[0], x[1] the
 * two inputs, x[2], x[3] the cotangents of out[0], out[1] (NULL: absent,
 * counted as zero).  A run may move the inputs, formed in MPFR when a step
 * reads them: along a direction (x + step * dir[j], dir[j] NULL: not
 * moved), and by delta at one element (one_arr >= 0: input one_arr, flat
 * index one_idx), for the finite differences.
 */
typedef struct ra_scan_in {
    ra_scan_shape s;
    const double *x[4];
    const double *dir[2];
    mpfr_srcptr step;
    int one_arr; /* -1: none */
    int64_t one_idx;
    mpfr_srcptr one_delta;
} ra_scan_in;

/* Outputs of a run at one precision: y[j] the outputs (y[0] empty for
   scan.log), g[j] the gradients of input j (when asked). */
typedef struct ra_scan_out {
    ra_mparr y[2], g[2];
    mpfr_prec_t prec;
} ra_scan_out;

/* in with the case's values of p (no moves); buf receives the copies
   (free with ra_scan_in_free). */
ra_status ra_scan_in_init(ra_scan_in *in, double *buf[4], const ra_scan_problem *p);
void ra_scan_in_free(double *buf[4]);

/* Every lane at each precision precs[i] into out[i]; grads: also the
   gradients (cotangent x[3] required).  Bit-identical for any thread count. */
ra_status ra_scan_run_multi(ra_scan_out *out, const mpfr_prec_t *precs, int nprec,
                            const ra_scan_in *in, int grads, int threads, ra_progress *prog);
ra_status ra_scan_run(ra_scan_out *out, const ra_scan_in *in, mpfr_prec_t prec, int grads,
                      int threads, ra_progress *prog);
void ra_scan_out_clear(ra_scan_out *out);

/* One lane's scratch at prec bits (made by the calling thread; reports). */
typedef struct ra_scan_ws ra_scan_ws;
ra_status ra_scan_ws_new(ra_scan_ws **ws, const ra_scan_shape *s, mpfr_prec_t prec);
void ra_scan_ws_free(ra_scan_ws *ws);
/* One lane's share of L = sum_j <x[2+j], y[j]> at the workspace's
   precision (no outputs stored): the element-wise finite differences.
   Does not report (the reason goes to msg). */
ra_status ra_scan_lane_loss(mpfr_ptr loss, ra_scan_ws *ws, const ra_scan_in *in, int64_t lane,
                            char *msg, size_t msglen);
/* The lane (b*N + n) input element i of input j feeds. */
int64_t ra_scan_element_lane(const ra_scan_shape *s, int j, int64_t i);

/* The reference table's rows (src/ref/refop.h) of the three operations. */
struct ra_ref_op;
extern const struct ra_ref_op ra_ref_op_scan_linear, ra_ref_op_scan_affine, ra_ref_op_scan_log;

/* MPFR operations of one run (forward, and what the backward adds). */
void ra_scan_op_count(const ra_scan_shape *s, double *fwd, double *bwd);

#endif
