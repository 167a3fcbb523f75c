/* Case generation for the gated linear recurrence: shapes, decay and input regimes. */
#ifndef RA_CORE_GEN_GLR_H
#define RA_CORE_GEN_GLR_H

#include "core/case.h"
#include "core/op.h"
#include "core/status.h"

/*
 * Tensor layout (docs/glr.md): v [B,T,H,D], b, c [B,T,H,S], g [B,T,H],
 * A_log [H,S], cotangent do [B,T,H,D].  v, b, c and do are stored in the
 * requested dtype; g and A_log in f32 (f64 when the dtype is f64): HyMo
 * casts everything to fp32 for its kernel, and gates are parameters.
 * Case metadata: op=glr, shape, dtype, regime, seed, decay.
 */

/* Generation flags (bit i of ra_case_spec.flags is ra_glr_flags[i]). */
enum { RA_GLR_FLAG_LINEAR = 1u << 0 };
extern const ra_op_item ra_glr_flags[];
extern const ra_op_item ra_glr_regimes[]; /* the first is the default */

/* Fills an empty case from spec; RA_EINVAL for an unknown regime, a bad
   shape or dtype, or a case that is not empty. */
ra_status ra_glr_generate(ra_case *c, const ra_case_spec *spec);

#endif
