/* CPU kernels of bidirectional frame GDN (bigdn, bigdn.core) on plain arrays: seed 003's phases. */
#ifndef RA_CPU_BIGDN_F32_H
#define RA_CPU_BIGDN_F32_H

/*
 * The CPU variant of SPEC.md section 4, computed the way seed 003's
 * production kernels compute it, phase by phase, per (b, h):
 *
 *   forward  A  per frame: P = Kr^T diag(beta) Kr, A = Kr^T diag(beta) V,
 *               Pz = K^T diag(beta) K, Bz = K^T beta; the bridges I - P,
 *               I - Pz are what later phases read;
 *            B  the forward frame scan (M, z) and the reverse one (M', z');
 *            C  num = Qr M + Qr M' (two accumulating products, as the seed
 *               runs phase C once per direction), den likewise with Q and
 *               z, out = num / (den + eps);
 *   backward the division VJP; C-bar (dQr = dnum (M + M')^T, dM_C =
 *            Qr^T dnum; dQ = dden (z + z'), dz_C = Q^T dden); B-bar (the
 *            forward stream's reverse-in-time adjoint and the reverse
 *            stream's forward-in-time one, for M and z); the combine step
 *            (dA, dP, dg; dBz, dPz, dgz); A-bar KV (dKr, dV, dbeta) and
 *            A-bar Z (dK, dbeta); then, for the full operation, RoPE
 *            unrope, the ReLU mask (with k_scale) and the full-channel
 *            RMSNorm VJP (dqkv, dq_norm_w, dk_norm_w).
 *
 * Precision modes (the seed's dot_precision): every matrix product's
 * operands are rounded right before the product, P0 not at all (IEEE fp32
 * dots), P1 to TF32 (ties away, cvt.rna), P2 to bf16 (RNE); products
 * accumulate in fp32 (one fma per contraction index, in index order).  P2
 * also stores the bridges I - P, I - Pz and A in bf16, as the seed's
 * phase A writes them; the states M, M', z, z' stay fp32.  Element-wise
 * work and vector reductions (norms, RoPE, Bz, dz_C, dbeta's row sums,
 * the division) are fp32 in every mode.  The mode applies to the backward
 * too: the seed's own backward kernels use bf16 operands whatever the
 * forward's mode, which is what P2 measures; P0 and P1 show what IEEE and
 * TF32 backward products would give.
 *
 * Layouts (row-major): qkv [B,N,3,H,D] with N = F*S; Q, K, Qr, Kr, V and
 * out [B,N,H,D]; beta [B,H,F,S]; decay [B,H,F]; q_norm_w, k_norm_w [H*D];
 * rope_cos, rope_sin [N,D].  Gradients have their input's layout.  Every
 * output array is written in full (no accumulation into it).  Work is
 * parallel over (b, h) with OpenMP (then over tokens and channels for the
 * RMSNorm VJP); every sum has a fixed order, so results are bit-identical
 * for any thread count.  The backward re-runs the forward phases (it
 * takes only the inputs), as a kernel that recomputes instead of saving.
 *
 * Refused with RA_EINVAL and a message naming the tensor and index: a
 * dimension below 1, D odd (full operation: RoPE pairs), a NULL array,
 * a non-finite k_scale, a negative or non-finite norm_eps or eps, any
 * non-finite input element; sizes that overflow give RA_EOVERFLOW,
 * allocation failure RA_ENOMEM.  The _f64 entry points are the same phases in double (P0
 * only): tests use them as a reference of the phase algebra free of fp32
 * roundoff.
 */

#include <stdint.h>

#include "core/status.h"

typedef enum ra_bigdn_prec { RA_BIGDN_P0 = 0, RA_BIGDN_P1 = 1, RA_BIGDN_P2 = 2 } ra_bigdn_prec;

typedef struct ra_bigdn_dims {
    int64_t B, F, S, H, D;
    float k_scale, norm_eps, eps;
    /* Storage of the bridges I - P, I - Pz and of A: 0 for the mode's
       (bf16 in P2, f32 otherwise), or an ra_cpu_store value
       (cpu/gdn_variants.h: RA_CPU_STORE_F32, _BF16, _F16). */
    int store;
} ra_bigdn_dims;

/* bigdn: out [B,N,H,D] from qkv and the rest. */
ra_status ra_cpu_bigdn_forward(const ra_bigdn_dims *d, ra_bigdn_prec p, const float *qkv,
                               const float *beta, const float *decay, const float *q_norm_w,
                               const float *k_norm_w, const float *rope_cos, const float *rope_sin,
                               float *out);

/* bigdn backward: the VJP of out against dout. */
ra_status ra_cpu_bigdn_backward(const ra_bigdn_dims *d, ra_bigdn_prec p, const float *qkv,
                                const float *beta, const float *decay, const float *q_norm_w,
                                const float *k_norm_w, const float *rope_cos, const float *rope_sin,
                                const float *dout, float *dqkv, float *dbeta, float *ddecay,
                                float *dq_norm_w, float *dk_norm_w);

/* bigdn.core: out [B,N,H,D] from Q, K, Qr, Kr, V [B,N,H,D], beta, decay
   (k_scale and norm_eps are not read; D may be odd). */
ra_status ra_cpu_bigdn_core_forward(const ra_bigdn_dims *d, ra_bigdn_prec p, const float *Q,
                                    const float *K, const float *Qr, const float *Kr,
                                    const float *V, const float *beta, const float *decay,
                                    float *out);

ra_status ra_cpu_bigdn_core_backward(const ra_bigdn_dims *d, ra_bigdn_prec p, const float *Q,
                                     const float *K, const float *Qr, const float *Kr,
                                     const float *V, const float *beta, const float *decay,
                                     const float *dout, float *dQ, float *dK, float *dQr,
                                     float *dKr, float *dV, float *dbeta, float *ddecay);

/* The same in double, P0 only (others: RA_EINVAL); d's float parameters
   are read as given. */
ra_status ra_cpu_bigdn_forward_f64(const ra_bigdn_dims *d, ra_bigdn_prec p, const double *qkv,
                                   const double *beta, const double *decay, const double *q_norm_w,
                                   const double *k_norm_w, const double *rope_cos,
                                   const double *rope_sin, double *out);
ra_status ra_cpu_bigdn_backward_f64(const ra_bigdn_dims *d, ra_bigdn_prec p, const double *qkv,
                                    const double *beta, const double *decay, const double *q_norm_w,
                                    const double *k_norm_w, const double *rope_cos,
                                    const double *rope_sin, const double *dout, double *dqkv,
                                    double *dbeta, double *ddecay, double *dq_norm_w,
                                    double *dk_norm_w);
ra_status ra_cpu_bigdn_core_forward_f64(const ra_bigdn_dims *d, ra_bigdn_prec p, const double *Q,
                                        const double *K, const double *Qr, const double *Kr,
                                        const double *V, const double *beta, const double *decay,
                                        double *out);
ra_status ra_cpu_bigdn_core_backward_f64(const ra_bigdn_dims *d, ra_bigdn_prec p, const double *Q,
                                         const double *K, const double *Qr, const double *Kr,
                                         const double *V, const double *beta, const double *decay,
                                         const double *dout, double *dQ, double *dK, double *dQr,
                                         double *dKr, double *dV, double *dbeta, double *ddecay);

#endif
