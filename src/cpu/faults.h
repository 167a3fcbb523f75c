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

    /* Shape-dependent.  A tiled loop over key rows (tiles of 64) whose
       second and later tiles are skipped in o_t = S^T (scale q_t): only the
       first 64 key rows read.  Sequential variants, forward only; no
       effect when K <= 64. */
    RA_FAULT_KTILE64 = 1u << 6,
    /* A checkpoint buffer sized for 256 tokens: the sequential backward
       keeps its per-segment checkpoints in floor(256 / seg) slots, slot
       s mod n, so when the segments span more than 256 tokens the first
       segments' checkpoints are overwritten and their states recomputed
       from a later one.  Sequential variants, backward only; no effect
       for T <= 256. */
    RA_FAULT_CKPT256 = 1u << 7,
    /* dk summed over the value heads of a group two at a time, a 2-wide
       vector loop without its remainder loop over pairs: only the first
       pair of each group adds.  All variants, backward only; no effect
       for Hv / Hk <= 2. */
    RA_FAULT_GQA_PAIR = 1u << 8,
    /* The value head reads key head hv mod Hk (repeat, not
       repeat_interleave): the right map only when Hk = 1 or Hv = Hk.  All
       variants, forward and backward. */
    RA_FAULT_HEAD_INTERLEAVE = 1u << 9,
    /* beta's pointer misses the batch offset: every batch reads batch 0's
       beta.  All variants; no effect when B = 1. */
    RA_FAULT_BATCH_BETA = 1u << 10,

    /* Path-dependent.  h0 read as [V, K] instead of [K, V] (transposed
       per head).  All variants; no effect without h0. */
    RA_FAULT_H0_TRANSPOSED = 1u << 11,
    /* Without dht the sequential backward treats the last token as having
       no cotangent: its q do^T term never enters lambda.  Sequential
       variants, backward only; no effect when the case has dht. */
    RA_FAULT_NO_DHT_LAST = 1u << 12,
    /* l2norm backward with n^2 where the chain rule has n^3:
       dx = dxh/n - x (x . dxh)/n^2.  All variants, backward only; no
       effect without l2norm or on unit-norm rows. */
    RA_FAULT_L2NORM_BACK = 1u << 13,
    /* The case's scale ignored: the default K^-1/2 used.  All variants;
       no effect when the case sets no scale. */
    RA_FAULT_SCALE_DEFAULT = 1u << 14,

    /* Parameter handling.  l2eps ignored: the default 1e-6 used.  All
       variants; no effect without l2norm or without an l2eps parameter. */
    RA_FAULT_L2EPS_IGNORED = 1u << 15,
    /* The scale applied twice (scale^2 q).  All variants. */
    RA_FAULT_SCALE_TWICE = 1u << 16,

    /* Precision class.  One TF32-rounded product (cvt.rna of both
       operands) in a kernel declaring f32: the output o_t = S^T q_t.
       The f32 sequential variant, forward only. */
    RA_FAULT_TF32_OUTPUT = 1u << 17,
    /* The per-chunk states stored in bf16 (as the bf16 class does) in a
       kernel that declares fp32 state storage.  Chunked variants. */
    RA_FAULT_BF16_STATE = 1u << 18,

    /* Small terms.  dk without its beta-scaled term -beta S~ du (only
       lambda u_t kept).  Sequential variants, backward only. */
    RA_FAULT_DK_BETA_TERM = 1u << 19,
    /* dg without the chunk-state gate term gC <dS, S_start> (the decay of
       the carried state).  Chunked variants, backward only. */
    RA_FAULT_DG_STATE_TERM = 1u << 20,
    /* dg_t = <lambda, S~> taken before the rank-1 correction
       -beta k du^T (the beta-scaled term of dg dropped).  Sequential
       variants, backward only. */
    RA_FAULT_DG_BETA_TERM = 1u << 21,
};

/* Every bit above. */
#define RA_FAULT_ALL 0x3fffffu

#endif
