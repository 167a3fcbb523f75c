/* Error metrics of a result tensor against an f64 reference. */
#ifndef RA_CORE_METRICS_H
#define RA_CORE_METRICS_H

#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

/*
 * With err_i = y_i - z_i (y the result widened exactly, z the reference):
 *   max_abs  = max |err_i|
 *   max_rel  = max |err_i| / max |z_i|                  (fla's ratio)
 *   rel_rms  = rms(err) / rms(z)
 *   cos      = <y, z> / (|y| |z|)      (1 when both are zero)
 *   ulp_i    = |err_i| / ulp(z_i) in the storage dtype (ulp of the
 *              reference value, floored at the smallest subnormal:
 *              ra_dtype_ulp); max_ulp and p99_ulp (99th percentile,
 *              nearest-rank) over the CONDITIONED elements only, those
 *              with |z_i| >= ulp_floor = 2^-10 rms(z) (ulp_n of them).
 *   max_ulp_rms = max |err_i| / ulp(rms(z)) in the storage dtype: the
 *              largest error in ulps at the tensor's scale.
 * Why the rule: ulp(z_i) shrinks with |z_i|, so where the reference is
 * (near) zero - dg at t = 0 without h0 is exactly 0 - a rounding residue
 * of a correct kernel counts 1e38 ulps of the smallest subnormal, and
 * elements near cancellation 1e6..1e9.  An element 2^10 below the rms is
 * below the rounding noise any kernel that sums O(rms)-sized terms leaves
 * there, so its own ulp says nothing about the kernel; its error still
 * counts in max_ulp_rms, max_abs, max_rel and rel_rms.  rms(z) > 0 means
 * some |z_i| >= rms(z), so ulp_n >= 1; with rms(z) = 0 (all-zero
 * reference) the floor is 0 and every element is counted, so a non-zero
 * result there is still an enormous error.
 * A correctly rounded result has max_ulp <= 0.5.  NaN or Inf in the result
 * are counted and make every metric NaN or Inf (they never pass a gate);
 * the worst element is the conditioned one with the largest ulp error
 * (first NaN, if any).  Sums run in long double over the flat order.
 */

typedef struct ra_metrics {
    int64_t n;
    int64_t nan_count, inf_count;
    double max_abs, max_rel, rel_rms, cos, max_ulp, p99_ulp, max_ulp_rms;
    ra_dtype ulp_dtype;
    int64_t ulp_n;    /* elements counted in max_ulp and p99_ulp */
    double ulp_floor; /* 2^-10 rms(ref): smaller |ref| elements are not */
    double ref_rms;   /* rms(ref): the tensor's scale (ulp_cls of audit rows) */
    int64_t worst_index;
    double worst_value, worst_ref;
} ra_metrics;

/* Shapes must match (error names both tensors); ulp_dtype is the dtype in
   which ulps are counted (normally the result's storage dtype). */
ra_status ra_metrics_compute(ra_metrics *m, const ra_tensor *result, const ra_tensor *ref,
                             ra_dtype ulp_dtype);

/* Metric by name ("max_abs", "max_rel", "rel_rms", "cos", "max_ulp",
   "p99_ulp", "max_ulp_rms"); RA_ENOTFOUND for an unknown name. */
ra_status ra_metrics_get(double *out, const ra_metrics *m, const char *name);
/* 1 if larger values of the metric are better (cos), else 0. */
int ra_metric_higher_is_better(const char *name);
/* "max_abs,max_rel,rel_rms,cos,max_ulp,p99_ulp,max_ulp_rms" in that order,
   NULL-ended. */
const char *const *ra_metric_names(void);

/* Flat index -> "[b, t, h, d]" with the tensor's shape. */
void ra_index_format(char *buf, size_t len, int64_t flat, int ndim, const int64_t *shape);

#endif
