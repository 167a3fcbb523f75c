/* The affine scan family (scan.linear, scan.affine, scan.log) as cases: shapes, validation. */
#ifndef RA_CORE_SCAN_CASE_H
#define RA_CORE_SCAN_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "core/case.h"
#include "core/status.h"

/*
 * The three members of SPEC.md section 3 share one recurrence,
 * H_t = A_t H_{t-1} + B_t, run independently on B*N lanes (N = D for the
 * element-wise members), with k x k transitions and k x v injections
 * (k = v = 1 for scan.linear and scan.log).  Every reader of a scan case
 * (references, gradient checks, CPU variants) goes through
 * ra_scan_problem_init, so they accept and refuse the same files with the
 * same messages.  Tensor slots, by kind:
 *
 *   slot        linear         affine               log
 *   in[0]       a [B,T,D]      A [B,T,N,k,k]        log_coeffs [B,T,D]
 *   in[1]       x [B,T,D]      Bm [B,T,N,k,v]       log_values [B,T+1,D]
 *   out[0]      P              Abar                 (none)
 *   out[1]      h              Bbar                 h [B,T,D]
 *   cot[j]      d<out[j]>      (cot[1] required for gradients, cot[0] optional)
 *   grad[j]     d<in[j]>
 */

typedef enum ra_scan_kind { RA_SCAN_LINEAR, RA_SCAN_AFFINE, RA_SCAN_LOG } ra_scan_kind;

/* The kernel envelope of the seed: k, v in {1, 2, 4, 8, 16}. */
#define RA_SCAN_KV_MAX 16

typedef struct ra_scan_shape {
    ra_scan_kind kind;
    int64_t B, T, N, k, v; /* N: lanes per batch (D); k = v = 1 unless affine */
} ra_scan_shape;

/* The operation's name ("scan.affine") and its tensor names; NULL where a
   kind has no such tensor (log has no out[0]). */
const char *ra_scan_op_name(ra_scan_kind kind);
const char *ra_scan_in_name(ra_scan_kind kind, int j);
const char *ra_scan_out_name(ra_scan_kind kind, int j);
const char *ra_scan_cot_name(ra_scan_kind kind, int j);
const char *ra_scan_grad_name(ra_scan_kind kind, int j);
/* The kind of an operation name; -1 if it is none of the family. */
int ra_scan_kind_of(const char *op);

/* Parses "B=2,T=64,D=8" (linear, log) or "B=2,T=64,N=4,k=2,v=1" (affine):
   any order, every key once, positive integers, k and v in the envelope.
   Errors name the field. */
ra_status ra_scan_shape_parse(ra_scan_shape *s, ra_scan_kind kind, const char *text);
void ra_scan_shape_format(char *buf, size_t len, const ra_scan_shape *s);

/* Shape of a slot's tensor (ndim and dims); numel of it. */
int ra_scan_in_shape(int64_t *dims, const ra_scan_shape *s, int j);
int ra_scan_out_shape(int64_t *dims, const ra_scan_shape *s, int j);
int64_t ra_scan_in_numel(const ra_scan_shape *s, int j);
int64_t ra_scan_out_numel(const ra_scan_shape *s, int j);

typedef struct ra_scan_problem {
    ra_scan_shape s;
    const ra_tensor *in[2];
    const ra_tensor *cot[2]; /* NULL when absent */
} ra_scan_problem;

enum { RA_SCAN_NEED_COTANGENTS = 1 };

/* Validates case c (named `what` in messages): its op is one of the
   family; both inputs present with consistent shapes (errors name tensor
   and axis), k and v in the envelope, T >= 1; cotangents, when present,
   shaped as their outputs (cot[1] required with RA_SCAN_NEED_COTANGENTS);
   no NaN or Inf in any of them (the error names tensor and multi-index). */
ra_status ra_scan_problem_init(ra_scan_problem *p, const ra_case *c, unsigned flags,
                               const char *what);

/* Flat offset of (b, t, n) blocks: transitions (k*k elements), injections
   and outputs (k*v), and the log scan's value slots s = 0..T. */
static inline int64_t ra_scan_lane_step(const ra_scan_shape *s, int64_t b, int64_t t, int64_t n)
{
    return (b * s->T + t) * s->N + n;
}
static inline int64_t ra_scan_log_slot(const ra_scan_shape *s, int64_t b, int64_t slot, int64_t n)
{
    return (b * (s->T + 1) + slot) * s->N + n;
}

#endif
