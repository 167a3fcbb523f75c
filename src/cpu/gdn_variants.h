/* CPU gdn variants: configurations, entry points and test hooks. */
#ifndef RA_CPU_GDN_VARIANTS_H
#define RA_CPU_GDN_VARIANTS_H

/*
 * Every CPU gdn variant is one configuration of two implementations, each
 * written once for a generic real type and compiled for float and double
 * (gdn_tmpl_*.h included by gdn_f32.c and gdn_f64.c):
 *
 *   RA_CPU_SEQ    the sequential recurrence of docs/gdn.md and its
 *                 reverse-time adjoint (gdn.cpu.f64, gdn.cpu.f32);
 *   RA_CPU_CHUNK  the chunked algorithm with a choice of chunk length,
 *                 matmul-operand rounding and triangular inverse
 *                 (gdn.cpu.chunk64.*, gdn.cpu.chunk128.*).
 *
 * The registered variants compute the chunked algorithm in float.  The
 * double chunked configuration (f64 = 1, round = IEEE) is not registered:
 * tests use it to check the chunk algebra against the sequential f64
 * variant to ~1e-12, independently of fp32 roundoff.
 */

#include "core/status.h"
#include "recaudit/plugin.h"

typedef enum ra_cpu_algo { RA_CPU_SEQ = 0, RA_CPU_CHUNK = 1 } ra_cpu_algo;

/* Rounding applied to every matmul operand right before the product.
   BF16 also stores T, W, U and the per-chunk states in bf16.  TF32X3 is
   the 3xTF32 emulation of an fp32 product on TF32 tensor cores: each
   operand x splits into big = tf32(x) and small = tf32(x - big) (x - big
   is exact in fp32), and a*b becomes small_a*big_b + big_a*small_b +
   big_a*big_b, three fmas in that order; the dropped small_a*small_b and
   the 21-bit split leave a product error near 2^-21 relative, so the
   variant should measure close to IEEE, far below TF32. */
typedef enum ra_cpu_round {
    RA_CPU_ROUND_IEEE = 0,  /* nothing beyond the arithmetic's own rounding */
    RA_CPU_ROUND_TF32 = 1,  /* ra_round_tf32_rna (PTX cvt.rna.tf32.f32) */
    RA_CPU_ROUND_BF16 = 2,  /* ra_round_bf16_f (RNE) */
    RA_CPU_ROUND_TF32X3 = 3 /* big + small TF32 split, three products (float only) */
} ra_cpu_round;

/* How (I + A)^-1 is formed for a strictly lower A. */
typedef enum ra_cpu_inverse {
    RA_CPU_INV_FWDSUBST = 0, /* row-by-row forward substitution, scalar */
    RA_CPU_INV_NEUMANN = 1,  /* 16x16 blocks by (I+N)(I+N^2)(I+N^4)(I+N^8),
                                stitched by block forward substitution */
    RA_CPU_INV_SCHUR = 2     /* recursive 2x2 block merge down to 1x1 */
} ra_cpu_inverse;

typedef struct ra_cpu_gdn_cfg {
    ra_cpu_algo algo;
    int f64;                /* arithmetic in double (else float) */
    int chunk;              /* chunk length (RA_CPU_CHUNK) */
    ra_cpu_round round;     /* RA_CPU_CHUNK; must be IEEE when f64 */
    ra_cpu_inverse inverse; /* RA_CPU_CHUNK */
    ra_dtype act_dtype;     /* storage of o, dq, dk, dv */
    ra_dtype aux_dtype;     /* storage of ht, dh0, dg, dbeta */
    unsigned faults;        /* planted defects (cpu/faults.h): 0 in every
                               registered row; tests make rows of their own */
    int rev_span;           /* RA_CPU_SEQ backward: 0 recomputes the states
                               from checkpoints; L > 0 keeps every L-th state
                               and recovers the others by inverting steps
                               (walking back <= L - 1 steps; reversal study) */
} ra_cpu_gdn_cfg;

/* Forward (o, ht) and backward (dq, dk, dv, dg, dbeta, dh0 when the case
   has h0) of case c under configuration cfg (with its planted faults),
   honouring run->threads (run may be NULL: default threads).  Inputs are
   read exactly and rounded once to the arithmetic type (a no-op except for
   f64 inputs to a float configuration); outputs are stored with RNE. */
ra_status ra_cpu_gdn_forward(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             ra_run *run);
ra_status ra_cpu_gdn_backward(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *grads,
                              ra_run *run);

/* The variant functions of every CPU gdn row: self->data is the row's
   ra_cpu_gdn_cfg (so a test can make a row with faults of its own). */
ra_variant_fn ra_cpu_gdn_forward_row, ra_cpu_gdn_backward_row;

/* The registered CPU gdn variants and lookup by exact name (NULL if
   none). */
extern const ra_variant ra_cpu_gdn_variants[];
extern const size_t ra_cpu_gdn_nvariants;
const ra_variant *ra_cpu_gdn_variant(const char *name);
/* The configuration behind a registered variant name (NULL if none). */
const ra_cpu_gdn_cfg *ra_cpu_gdn_variant_cfg(const char *name);

/* Test hook: tinv = (I + a)^-1 for the strictly lower part of the n x n
   row-major a (its diagonal and upper part are ignored), with the given
   algorithm and operand rounding, exactly as the chunked variants form it
   (the bf16 storage rounding of T is not applied here).  RA_EINVAL for
   n < 1 or a round other than IEEE in double. */
ra_status ra_cpu_gdn_inverse_f32(float *tinv, const float *a, int n, ra_cpu_inverse inv,
                                 ra_cpu_round round);
ra_status ra_cpu_gdn_inverse_f64(double *tinv, const double *a, int n, ra_cpu_inverse inv);

#endif
