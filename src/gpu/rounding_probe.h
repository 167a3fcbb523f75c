/* Hardware rounding probes: what the GPU's conversions and tensor cores do. */
#ifndef RA_GPU_ROUNDING_PROBE_H
#define RA_GPU_ROUNDING_PROBE_H

#include <stddef.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The CPU variants emulate GPU rounding points (TF32 operands with
 * cvt.rna.tf32.f32, bf16 and f16 with round-to-nearest-even).  These
 * probes run the real instructions on the device so a test can compare the
 * emulation with the hardware bit for bit, and find out what a tensor core
 * does with fp32 operands that were NOT converted to TF32 first (many
 * kernels pass raw fp32 registers to mma.sync ... .tf32).
 * Every function returns RA_EUNSUPPORTED when no device is usable.
 */

/* out[i] = cvt.rna.tf32.f32(in[i]) (as a float bit pattern). */
ra_status ra_gpu_probe_cvt_tf32(float *out, const float *in, size_t n);
/* out[i] = cvt.rn.bf16.f32(in[i]) and cvt.rn.f16.f32(in[i]) bit patterns. */
ra_status ra_gpu_probe_cvt_bf16(unsigned short *out, const float *in, size_t n);
ra_status ra_gpu_probe_cvt_f16(unsigned short *out, const float *in, size_t n);
/* The operand a tensor core reads: d = A * I + 0 through
   mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 with A (16 x 8, row
   major) passed as raw fp32 bits, so d[r][c] is the value the hardware
   used for a[r][c].  a and d hold 128 floats each. */
ra_status ra_gpu_probe_mma_tf32_operand(float *d, const float *a);

#ifdef __cplusplus
}
#endif

#endif
