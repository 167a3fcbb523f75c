/* CPU variants of the affine scan family: configurations and the row table. */
#ifndef RA_CPU_SCAN_VARIANTS_H
#define RA_CPU_SCAN_VARIANTS_H

#include <stddef.h>

#include "core/status.h"
#include "recaudit/plugin.h"
#include "cpu/gdn_variants.h" /* ra_cpu_round, shared with the gdn kernels */

/* How the backward gets Abar_{t-1}, Bbar_{t-1} (SPEC.md section 3). */
typedef enum ra_cpu_scan_bwd {
    RA_CPU_SCAN_STORE = 0,     /* every forward state kept (the forward's outputs) */
    RA_CPU_SCAN_RECOMPUTE = 1, /* checkpoints every span steps, segments re-run */
    RA_CPU_SCAN_REVERSAL = 2   /* checkpoints every span steps, walked back by
                                  Bbar_{t-1} = A_t^-1 (Bbar_t - B_t) */
} ra_cpu_scan_bwd;

typedef struct ra_cpu_scan_cfg {
    int kind;            /* ra_scan_kind of core/scan_case.h */
    ra_cpu_round round;  /* operands of every k x k product: IEEE, TF32 (rna), bf16
                            (RNE) or the 3xTF32 split (cpu/gdn_variants.h) */
    ra_cpu_scan_bwd bwd; /* linear/affine; scan.log always recomputes */
    int span;            /* checkpoint interval (recompute, reversal): L */
} ra_cpu_scan_cfg;

/* Forward (out[0] unless log, out[1]) and backward (both gradients) of
   case c under cfg, in fp32 arithmetic with f32 outputs.  Inputs are read
   exactly and rounded once to float. */
ra_status ra_cpu_scan_forward(const ra_cpu_scan_cfg *cfg, const ra_case *c, ra_tensors *out);
ra_status ra_cpu_scan_backward(const ra_cpu_scan_cfg *cfg, const ra_case *c, ra_tensors *grads);

/* Row functions: self->data is the ra_cpu_scan_cfg. */
ra_variant_fn ra_cpu_scan_forward_row, ra_cpu_scan_backward_row;

extern const ra_variant ra_cpu_scan_variants[];
extern const size_t ra_cpu_scan_nvariants;

#endif
