/* Planted defects the CPU gdn variants honour, for the suite's sensitivity tests. */
#ifndef RA_CPU_FAULTS_H
#define RA_CPU_FAULTS_H

/*
 * Bits of ra_run.faults.  A real run passes 0 and gets the correct code; a
 * sensitivity test sets one bit and expects the audit to flag the variant.
 * Each fault is a cheap conditional inside the one implementation (never a
 * second copy of the code), modelled on a bug a kernel author could write.
 * Bits a variant does not claim below are ignored by it.
 */
enum {
    /* dbeta misses the state term.  Sequential variants: dbeta_t = du . v_t
       instead of du . r_t (r_t = v_t - S~^T k_t).  Chunked variants: the
       analogous loss, dbeta keeps only the X = beta V term and drops the
       Y = beta exp(G) K and A = beta exp(G_i - G_j) k.k terms; in exact
       arithmetic both give the same wrong value.  Backward only. */
    RA_FAULT_DBETA_TERM = 1u << 0,
    /* The decay applied after the delta update: S_t = a_t (S_{t-1} + k u^T)
       with u = beta (v - S_{t-1}^T k).  Sequential variants, forward and
       the backward's state recomputation (so o, ht, dq, dk, dg, dbeta
       change; dv and dh0 do not, since the adjoint lambda never reads a
       state). */
    RA_FAULT_DECAY_AFTER_UPDATE = 1u << 1,
    /* Tail mask off by one: when T is not a multiple of the chunk length,
       the partial last chunk processes one token fewer; that token neither
       updates the state nor gets an output (o = 0) nor gradients.
       Chunked variants, forward and backward; no effect when the chunk
       length divides T. */
    RA_FAULT_TAIL_MASK = 1u << 2,
    /* TF32 operand rounding (cvt.rna.tf32.f32) before every matmul in a
       variant that claims IEEE fp32 products.  Chunked ieee variants,
       forward and backward. */
    RA_FAULT_TF32_AS_IEEE = 1u << 3,
    /* ht returned one step early: S_{T-1} instead of S_T (h0, or zero,
       when T = 1).  All variants, forward only (the backward still
       differentiates the correct forward). */
    RA_FAULT_FINAL_STATE_EARLY = 1u << 4,
    /* dk not summed over the value heads of a group: only the first value
       head's contribution is kept.  All variants, backward only; no effect
       when Hv = Hk. */
    RA_FAULT_DK_GROUP_SUM = 1u << 5,
};

/* Every bit above. */
#define RA_FAULT_ALL 0x3fu

#endif
