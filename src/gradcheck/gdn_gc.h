/* The gated delta rule's row for the gradient checks (hooks in gdn_gc.c). */
#ifndef RA_GRADCHECK_GDN_GC_H
#define RA_GRADCHECK_GDN_GC_H

#include "gradcheck/gradcheck.h"

/* Inputs q, k, v, g, beta (and h0 when the case has it); outputs o and ht
   with cotangents do (required) and dht (optional); every mode. */
extern const ra_gc_op ra_gc_op_gdn;

/* The adjoint of SPEC.md §1 as a formula set (gdn_derive.c). */
struct ra_derive_set;
extern const struct ra_derive_set *const ra_gdn_derive_sets[];

#endif
