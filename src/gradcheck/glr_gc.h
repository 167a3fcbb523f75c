/* The gated linear recurrence's gradient-check hooks. */
#ifndef RA_GRADCHECK_GLR_GC_H
#define RA_GRADCHECK_GLR_GC_H

#include "gradcheck/gradcheck.h"

/* Inputs v, b, c, g, A_log; output o with cotangent do. */
extern const ra_gc_op ra_gc_op_glr;
/* The same plus the input hs [B,T,H,S,D] (zero; added to h_t after step
   t), whose gradient is the adjoint state dL/dh_t: for the derivation
   checks of a published dh recursion.  No reference backward. */
extern const ra_gc_op ra_gc_op_glr_state;

/* The formula sets of docs/glr.md (shipped) and seed 000 (published),
   glr_derive.c. */
struct ra_derive_set;
extern const struct ra_derive_set *const ra_glr_derive_sets[];

#endif
