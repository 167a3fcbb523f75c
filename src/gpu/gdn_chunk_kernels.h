/* Chunked CUDA gdn: the kernel launchers behind ra_gpu_gdn_chunk_launch (internal). */
#ifndef RA_GPU_GDN_CHUNK_KERNELS_H
#define RA_GPU_GDN_CHUNK_KERNELS_H

/*
 * gdn_chunk.cu validates the configuration and owns the workspace;
 * gdn_chunk_fwd.cu and gdn_chunk_bwd.cu each hold one kernel, instantiated
 * for the four operand precisions, and these launchers.  ws holds
 * B*Hv slices of ws_len floats (ra_gpu::ws_head_len); the launchers only
 * enqueue the grid (one block per (b, hv)) and return the launch error.
 */

#include <cstdint>

#include <cuda_runtime.h>

#include "gpu/gdn_cuda_cxx.h"

cudaError_t ra_gpu_gdn_chunk_fwd(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, float *ws,
                                 int64_t ws_len);
cudaError_t ra_gpu_gdn_chunk_bwd(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, float *ws,
                                 int64_t ws_len);

#endif
