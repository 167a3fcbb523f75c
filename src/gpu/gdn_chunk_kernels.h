/* Chunked CUDA gdn: the kernel launchers behind ra_gpu_gdn_chunk_launch (internal). */
#ifndef RA_GPU_GDN_CHUNK_KERNELS_H
#define RA_GPU_GDN_CHUNK_KERNELS_H

/*
 * gdn_chunk.cu validates the configuration, splits the heads into groups
 * that fit the workspace and calls these in order for each group:
 * forward prep, states, output; backward prep, states, dstates, grads
 * (gdn_chunk.cuh says what each does).  gdn_chunk_fwd.cu holds prep and
 * output (gdn_chunk_fwd_bf16.cu and gdn_chunk_fwd_ieee.cu the production
 * head's bf16 and IEEE ones),
 * gdn_chunk_bwd.cu grads (gdn_chunk_bwd_bf16.cu the bf16 one), gdn_chunk_pass.cu the states and
 * dstates passes (gdn_chunk_states_bf16.cu and gdn_chunk_dstates_bf16.cu the bf16 ones), each
 * instantiated for the four operand precisions.  A launcher only enqueues its
 * grid and returns the launch error (cudaErrorInvalidValue for an unknown precision).
 */

#include <cstdint>

#include <cuda_runtime.h>

#include "gpu/gdn_cuda_cxx.h"

namespace ra_gpu
{
struct group;
}

/* Bytes of shared memory a states (bwd = 0) or dstates (bwd = 1) pass
   block needs with no tile staged: the running state and the per-column
   arrays.  Above the device's opt-in limit the pass cannot run. */
int64_t ra_gpu_gdn_chunk_pass_bytes(int bwd, int C, int K);
cudaError_t ra_gpu_gdn_chunk_prep(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);
/* The bf16 prep and output of gdn_chunk_fwd_bf16.cu: whether they serve
   the configuration (bf16, chunk 64, K = V = 128, forward substitution,
   16-byte aligned tensors and workspace, the shared memory of the bf16
   passes and grads: the launch sets group::wpairs from it), and their
   launches; ra_gpu_gdn_chunk_prep and
   ra_gpu_gdn_chunk_output call them for groups with wpairs. */
bool ra_gpu_gdn_chunk_fwd_bf16_serves(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_prep_bf16(const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_output_bf16(const ra_gpu_gdn_args *a, const ra_gpu::group *g);
/* The IEEE prep and output of gdn_chunk_fwd_ieee.cu: whether they serve
   group g (IEEE, chunk 64, K = V = 128, forward substitution, 16-byte
   aligned tensors and workspace, their shared memory), and their
   launches, which ra_gpu_gdn_chunk_prep and ra_gpu_gdn_chunk_output call
   for such groups; ra_gpu_gdn_chunk_grads runs gdn_chunk_bwd.cu's IEEE
   gradients kernel for them too (when its shared memory fits), and the
   passes stay the general kernels. */
bool ra_gpu_gdn_chunk_ieee_serves(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_prep_ieee(const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_output_ieee(const ra_gpu_gdn_args *a, const ra_gpu::group *g);
/* The production head's 3xtf32 kernels (gdn_chunk_fwd.cu's output and
   gdn_chunk_bwd.cu's gradients, their products x3_mm's): whether
   they serve group g (3xtf32, the production head as for IEEE, x3_mm's
   shared memory).  ra_gpu_gdn_chunk_output and _grads launch
   them for such groups; the prep and the passes stay the general kernels. */
bool ra_gpu_gdn_chunk_x3_serves(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);
/* The bf16 gradients kernel of gdn_chunk_bwd_bf16.cu, which serves the
   backward of the groups with wpairs (the serving test above asks for
   its shared memory then), and the bytes of shared memory it takes. */
cudaError_t ra_gpu_gdn_chunk_grads_bf16(const ra_gpu_gdn_args *a, const ra_gpu::group *g);
int64_t ra_gpu_gdn_chunk_grads_bf16_bytes(void);
/* The passes of gdn_chunk_states_bf16.cu and gdn_chunk_dstates_bf16.cu,
   which ra_gpu_gdn_chunk_states and ra_gpu_gdn_chunk_dstates run for the
   groups with wpairs. */
cudaError_t ra_gpu_gdn_chunk_states_bf16(const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_dstates_bf16(const ra_gpu_gdn_args *a, const ra_gpu::group *g);
/* The bytes of shared memory a block of each takes (the serving test
   above asks for them). */
int64_t ra_gpu_gdn_chunk_states_bf16_bytes(void);
int64_t ra_gpu_gdn_chunk_dstates_bf16_bytes(void);
cudaError_t ra_gpu_gdn_chunk_states(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_output(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_dstates(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);
cudaError_t ra_gpu_gdn_chunk_grads(int prec, const ra_gpu_gdn_args *a, const ra_gpu::group *g);

#endif
