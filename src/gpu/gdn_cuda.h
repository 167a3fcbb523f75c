/* CUDA gdn kernels: configurations, host entry points, the launch interface. */
#ifndef RA_GPU_GDN_CUDA_H
#define RA_GPU_GDN_CUDA_H

/*
 * Every CUDA gdn variant is one configuration of two kernel families, as on
 * the CPU (src/cpu/gdn_variants.h), whose rounding points they reproduce:
 *
 *   RA_GPU_GDN_SEQ    the sequential recurrence of docs/gdn.md in fp32,
 *                     forward and reverse-time backward with checkpoints
 *                     every C steps recomputed inside a segment;
 *   RA_GPU_GDN_CHUNK  the chunked WY algorithm (chunk 64 or 128) with the
 *                     matmul operand precision of cfg->prec and the
 *                     intra-chunk inverse of cfg->inverse; the backward
 *                     recomputes chunk states.
 *
 * The host entry points validate the case with ra_gdn_problem_init (the
 * validator every gdn consumer shares), widen the stored inputs exactly to
 * fp32 on the device, run the kernels and store every output with RNE into
 * its storage dtype: o, dq, dk, dv in cfg->act_dtype; ht, dh0, dg, dbeta
 * in cfg->aux_dtype.  Without a usable device they return RA_EUNSUPPORTED
 * with the reason, so an audit reports a skip, never a pass.
 */

#include <stddef.h>
#include <stdint.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/status.h"
#include "cpu/gdn_variants.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ra_gpu_gdn_algo { RA_GPU_GDN_SEQ = 0, RA_GPU_GDN_CHUNK = 1 } ra_gpu_gdn_algo;

/* Operand precision of every matmul of the chunked algorithm. */
typedef enum ra_gpu_prec {
    RA_GPU_PREC_IEEE = 0,   /* fp32 FFMA */
    RA_GPU_PREC_TF32 = 1,   /* cvt.rna.tf32 operands, tensor-core mma, fp32 accumulate */
    RA_GPU_PREC_TF32X3 = 2, /* big = tf32(a), small = tf32(a - big); three products */
    RA_GPU_PREC_BF16 = 3    /* bf16 operands (RNE), fp32 accumulate, fp32 state */
} ra_gpu_prec;

typedef struct ra_gpu_gdn_cfg {
    ra_gpu_gdn_algo algo;
    int chunk;              /* RA_GPU_GDN_CHUNK: 64 or 128 */
    ra_gpu_prec prec;       /* RA_GPU_GDN_CHUNK */
    ra_cpu_inverse inverse; /* RA_GPU_GDN_CHUNK */
    ra_dtype act_dtype;     /* storage of o, dq, dk, dv */
    ra_dtype aux_dtype;     /* storage of ht, dh0, dg, dbeta */
} ra_gpu_gdn_cfg;

/* Forward (o, ht) and backward (dq, dk, dv, dg, dbeta, dh0 when the case
   has h0) of case c under cfg on CUDA device `device`.  With kernel_ms not
   NULL the L2 cache is flushed after the inputs are on the device and the
   kernels alone (not the copies, widening or storage rounding) are timed
   with CUDA events, in milliseconds. */
ra_status ra_gpu_gdn_forward(const ra_gpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             int device, double *kernel_ms);
ra_status ra_gpu_gdn_backward(const ra_gpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *grads,
                              int device, double *kernel_ms);
/* Both in one training step (outputs, then gradients, into out): the
   chunked backward reuses what the forward's prep and states pass left
   in the workspace instead of recomputing it; the bits are those of the
   two calls above, kernel_ms the time of all the kernels. */
ra_status ra_gpu_gdn_forward_backward(const ra_gpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                                      int device, double *kernel_ms);

/* The registered CUDA gdn variants: one row each.  twin names the CPU
   variant with the same algorithm and rounding points (the twin-agreement
   test compares their errors); unit_keys marks NKI inverses, defined for
   L2-normalised keys only. */
typedef struct ra_gpu_gdn_row {
    const char *name; /* "gdn.cuda.chunk64.tf32" */
    const char *doc;  /* one line */
    const char *twin; /* "gdn.cpu.chunk64.tf32" */
    int unit_keys;
    ra_gpu_gdn_cfg cfg;
} ra_gpu_gdn_row;

extern const ra_gpu_gdn_row ra_gpu_gdn_rows[];
extern const size_t ra_gpu_gdn_nrows;

/* --- launch interface between the host driver and the kernel files --------------- */

/* Device arrays of one problem, fp32, in the case's row-major layouts
   (docs/gdn.md); 64-bit offsets throughout.  Absent optional arrays are
   NULL (h0, dht; dh0 when there is no h0). */
typedef struct ra_gpu_gdn_args {
    ra_gdn_shape s;
    float scale;
    const float *q, *k, *v, *g, *beta, *h0; /* inputs (q, k already l2-normalised
                                                when the case asks for it) */
    const float *do_, *dht;                 /* cotangents (backward) */
    /* q, k, v (when there is no l2norm) and dO as the case stores them
       when that is bf16 (else NULL): the same values in half the bytes,
       for the kernels that read them in place of the widened arrays */
    const uint16_t *qb, *kb, *vb, *dob;
    float *o, *ht;                /* forward outputs */
    float *dv, *dg, *dbeta, *dh0; /* gradients */
    /* dq, dk per value head [B,T,Hv,K]: kernels write here and the host
       driver sums each group of value heads in increasing hv into the
       [B,T,Hk,K] gradients (a fixed order: results do not depend on
       scheduling) and applies the l2norm chain rule. */
    float *dqv, *dkv;
} ra_gpu_gdn_args;

/* What a launch computes: the forward's outputs, the gradients (outputs
   may be NULL then), or both in one training step. */
typedef enum ra_gpu_gdn_mode {
    RA_GPU_GDN_FWD = 0,
    RA_GPU_GDN_BWD = 1,
    RA_GPU_GDN_FWD_BWD = 2
} ra_gpu_gdn_mode;

/* Kernel families: launch, synchronise, and on failure return a status
   with the reason in msg (msglen bytes).  bwd = 0: forward outputs;
   bwd = 1: gradients (outputs may be NULL then).  The chunked family
   takes a mode: in RA_GPU_GDN_FWD_BWD its backward reuses the prep and
   the states pass the forward ran (the same bits as a forward launch and
   a backward launch). */
ra_status ra_gpu_gdn_seq_launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, int bwd,
                                char *msg, size_t msglen);
/* The chunked family runs in a device workspace the caller allocates
   (outside any timing): ra_gpu_gdn_chunk_ws_floats floats (0 for a
   configuration the launch refuses). */
int64_t ra_gpu_gdn_chunk_ws_floats(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a);
ra_status ra_gpu_gdn_chunk_launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a,
                                  ra_gpu_gdn_mode mode, float *ws, int64_t ws_floats, char *msg,
                                  size_t msglen);

#ifdef __cplusplus
}
#endif

#endif
