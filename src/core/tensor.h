/* Dense tensors: storage dtypes, exact widening, correctly rounded narrowing. */
#ifndef RA_CORE_TENSOR_H
#define RA_CORE_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include <mpfr.h>

#include "core/status.h"

/*
 * A tensor is a named, dense, row-major block of one storage dtype with up to
 * RA_MAX_DIMS dimensions.  Stored values are read exactly: every bf16, f16
 * and f32 value widens to double without rounding, and every double widens
 * to MPFR (precision >= 53) without rounding.  Writes round a double to the
 * storage dtype to nearest, ties to even, with gradual underflow, signed
 * zeros, overflow to infinity and NaN preserved: the same result IEEE 754
 * conversion gives, computed directly from the double (never through an
 * intermediate float, which would round twice).
 *
 * Element counts and byte sizes are int64/size_t and every product is
 * checked for overflow.
 */

#include "recaudit/types.h"

/* --- memory ------------------------------------------------------------------ */

/* 1 when count elements of size bytes can plausibly be allocated: the
   product does not overflow and stays within the machine's physical
   memory and the process's address-space and data limits.  Sizes derived
   from files (a shape, a state K*V) are checked with it before malloc:
   sanitizer builds abort on a failed huge allocation instead of returning
   NULL, and a file must never be able to end the program that way. */
int ra_alloc_plausible(uint64_t count, uint64_t size);

/* --- dtypes ------------------------------------------------------------------ */

size_t ra_dtype_size(ra_dtype t);
/* "f64", "f32", "bf16", "f16" */
const char *ra_dtype_name(ra_dtype t);
/* safetensors spelling: "F64", "F32", "BF16", "F16" */
const char *ra_dtype_st_name(ra_dtype t);
/* Accepts either spelling, any case; RA_EINVAL (with message) otherwise. */
ra_status ra_dtype_parse(ra_dtype *out, const char *s);
/* Precision in bits (53, 24, 8, 11), minimum normal exponent, maximum
   exponent: a finite value is m * 2^e with 1 <= |m| < 2, emin <= e <= emax. */
int ra_dtype_precision(ra_dtype t);
int ra_dtype_emin(ra_dtype t);
int ra_dtype_emax(ra_dtype t);
/* Largest finite value and smallest positive subnormal of a dtype. */
double ra_dtype_max(ra_dtype t);
double ra_dtype_min_subnormal(ra_dtype t);

/* --- scalar conversions ---------------------------------------------------- */

double ra_bf16_to_double(uint16_t bits);
double ra_f16_to_double(uint16_t bits);
uint16_t ra_double_to_bf16(double x); /* RNE, directly from the double */
uint16_t ra_double_to_f16(double x);  /* RNE, directly from the double */
float ra_double_to_f32(double x);     /* RNE (the C conversion) */

/* x rounded to the dtype, returned as the (exactly representable) double. */
double ra_round_to_dtype(double x, ra_dtype t);

/* TF32 as the tensor cores read it: 10 explicit mantissa bits, rounding to
   nearest with ties away from zero (PTX cvt.rna.tf32.f32). Inf/NaN kept. */
float ra_round_tf32_rna(float x);
/* bf16 rounding of a float, RNE, returned as float. */
float ra_round_bf16_f(float x);
/* f16 rounding of a float, RNE, returned as float: |x| >= 65520 (the tie
   above the largest half, 65504) overflows to inf, below 2^-14 the half
   subnormals (multiples of 2^-24). */
float ra_round_f16_f(float x);

/* ulp(z) in the dtype: 2^(e - p + 1) for |z| in [2^e, 2^(e+1)), with e
   clamped to [emin, emax] (so values below the normal range, zero included,
   get the subnormal spacing, the dtype's smallest subnormal).  NaN for
   non-finite z. */
double ra_dtype_ulp(double z, ra_dtype t);

/* --- shapes ---------------------------------------------------------------- */

/* Product of the dims with overflow and negativity checks (ndim 0 -> 1). */
ra_status ra_shape_numel(int64_t *numel, int ndim, const int64_t *shape);
/* "[2, 3, 4]" into buf. */
void ra_shape_format(char *buf, size_t len, int ndim, const int64_t *shape);
int ra_shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b);

/* --- tensors --------------------------------------------------------------- */

/* Zero-filled tensor; fails with a message naming the tensor when the shape
   is invalid or its byte size overflows. */
ra_status ra_tensor_new(ra_tensor **out, const char *name, ra_dtype dtype,
                        int ndim, const int64_t *shape);
/* Deep copy under a (possibly different) name; NULL keeps the name. */
ra_status ra_tensor_clone(ra_tensor **out, const ra_tensor *src, const char *name);
void ra_tensor_free(ra_tensor *t);

/* Element i (flat, row-major) widened exactly. No bounds check. */
double ra_tensor_get(const ra_tensor *t, int64_t i);
/* Stores x rounded to the tensor's dtype (RNE). No bounds check. */
void ra_tensor_set(ra_tensor *t, int64_t i, double x);
/* Exact widening into MPFR; RA_EINVAL if prec < 53 would round a value. */
ra_status ra_tensor_get_mpfr(mpfr_ptr out, const ra_tensor *t, int64_t i);
/* Whole tensor into a caller array of numel doubles / from one. */
void ra_tensor_to_doubles(double *out, const ra_tensor *t);
void ra_tensor_from_doubles(ra_tensor *t, const double *in);
/* The same with a float array: to_floats rounds each value once (RNE; exact
   for f32, bf16 and f16 tensors), from_floats stores them as set does. */
void ra_tensor_to_floats(float *out, const ra_tensor *t);
void ra_tensor_from_floats(ra_tensor *t, const float *in);

/* Counts of NaN and infinite elements. */
void ra_tensor_count_nonfinite(const ra_tensor *t, int64_t *nan, int64_t *inf);
/* First non-finite element (index, value) or -1. */
int64_t ra_tensor_find_nonfinite(const ra_tensor *t);

/* --- ordered collections of named tensors (ra_tensors, in types.h) ------- */

void ra_tensors_init(ra_tensors *ts);
void ra_tensors_clear(ra_tensors *ts); /* frees every tensor */
/* Takes ownership of t; a tensor of the same name is replaced. */
ra_status ra_tensors_add(ra_tensors *ts, ra_tensor *t);
/* Adds t at the end without looking for its name (O(1)): only for a name
   known to be absent, e.g. read from a source whose names are distinct.
   Takes ownership of t (freed on failure). */
ra_status ra_tensors_append(ra_tensors *ts, ra_tensor *t);
/* Creates a zero tensor and adds it; *out (if not NULL) points at it. */
ra_status ra_tensors_new(ra_tensors *ts, ra_tensor **out, const char *name,
                         ra_dtype dtype, int ndim, const int64_t *shape);
ra_tensor *ra_tensors_find(const ra_tensors *ts, const char *name);
/* Like find, but reports RA_ENOTFOUND naming `what` (a file) and the tensor. */
ra_status ra_tensors_require(ra_tensor **out, const ra_tensors *ts,
                             const char *name, const char *what);
/* Removes and returns the tensor (caller owns), or NULL. */
ra_tensor *ra_tensors_take(ra_tensors *ts, const char *name);

#endif
