/* Helpers of the precision studies (dot, inverse, length, storage): unit roundoffs, device checks,
 * metric columns. */
#ifndef RA_STUDY_PREC_H
#define RA_STUDY_PREC_H

/*
 * The four studies measure "variant on case against the certified
 * reference" over grids and put one row per (variant, case, tensor) into a
 * points table.  What they share is here: the unit roundoff a precision
 * class promises (the model drawn beside the measurements), whether a
 * variant can run on this machine (a CUDA row without a device is left
 * out with a note, never counted as a failure), and the metric columns
 * every row carries.
 */

#include <stddef.h>

#include "study/study.h"

/* Unit roundoff of the operand format a precision class declares:
   f64 2^-53; f32, ieee, tf32x3 2^-24 (3xTF32 products are fp32-level);
   tf32 2^-11 (10 fraction bits, RNA); bf16 2^-8 (7 fraction bits, RNE);
   f16 2^-11.  NaN for an unknown class. */
double ra_study_unit_roundoff(const char *pclass);

/* 1 if v can run here: a CPU row always; a CUDA row only when a device
   answers (else 0 with the reason in why). */
int ra_study_device_ok(const ra_variant *v, char *why, size_t len);

/* The metric columns of the points tables: max_rel, rel_rms, max_abs,
   nonfinite (NaN + Inf count of the result).  The table must have them. */
extern const char *const ra_study_metric_cols[];
ra_status ra_study_put_metrics(ra_points *p, const ra_metrics *m);

/* log2 of x, or NaN for x <= 0 or non-finite (for "2^-11" style text). */
double ra_study_log2(double x);

#endif
