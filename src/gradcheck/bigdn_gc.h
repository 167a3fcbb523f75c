/* The bidirectional frame GDN family's gradient-check hooks. */
#ifndef RA_GRADCHECK_BIGDN_GC_H
#define RA_GRADCHECK_BIGDN_GC_H

#include "gradcheck/gradcheck.h"

/* bigdn: inputs qkv, beta, decay, q_norm_w, k_norm_w; bigdn.core: Q, K,
   Qr, Kr, V, beta, decay; output out with cotangent dout. */
extern const ra_gc_op ra_gc_op_bigdn, ra_gc_op_bigdn_core;
/* The same plus the perturbation arrays of src/ref/bigdn.h (Qn, Kn for
   bigdn; P, A, Pz, Bz, Mf, Mr, zf, zr, Mt, zt, num, den), M0, whose gradients
   are the adjoints of those internal quantities: for the derivation
   checks of the seed's phase formulas.  No reference backward. */
extern const ra_gc_op ra_gc_op_bigdn_state, ra_gc_op_bigdn_core_state;

/* The formula sets of seed 003 (published), bigdn_derive.c. */
struct ra_derive_set;
extern const struct ra_derive_set *const ra_bigdn_derive_sets[];
extern const struct ra_derive_set *const ra_bigdn_core_derive_sets[];

/* The array of src/ref/bigdn.h behind input a of a layout the hooks made
   (state: 1 for the *_state ops). */
int ra_bigdn_gc_arr(int kind, int state, int a);

#endif
