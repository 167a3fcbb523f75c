/* Chunked CUDA gdn: the production head's bf16 shared-memory kernels, their sizes and launch. */
#ifndef RA_GPU_GDN_CHUNK_BF16_CUH
#define RA_GPU_GDN_CHUNK_BF16_CUH

/*
 * gdn_chunk_fwd_bf16.cu (prep, output) and gdn_chunk_bwd_bf16.cu (grads)
 * serve bf16 operands at chunk 64, K = V = 128, forward substitution
 * (ra_gpu_gdn_chunk_fwd_bf16_serves, group::wpairs): each stages its
 * operands once in shared memory as the bf16 pair tiles of pair_tile.cuh
 * and keeps its products in registers, with the general kernels'
 * arithmetic, so their bits.
 */

#include <cstdint>

#include <cuda_runtime.h>

#include "gpu/pair_tile.cuh"

namespace ra_gpu
{

constexpr int PC = 64, PK = 128; /* the configuration's chunk and head size */
constexpr int LDK = pair_ld<PK>(), LDC = pair_ld<PC>(); /* pair tiles along 128 and 64 */

/* Launches kernel(a, g) on `blocks` blocks with `words` 32-bit words of
   dynamic shared memory. */
template <typename KER, typename A, typename G>
cudaError_t launch_blocks(KER kernel, unsigned blocks, int threads, int words, const G *g,
                          const A *a)
{
    const size_t bytes = (size_t)words * sizeof(uint32_t);
    cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess)
        return e;
    kernel<<<blocks, threads, bytes>>>(*a, *g);
    return cudaGetLastError();
}

/* The same over the group's (head, chunk) blocks. */
template <typename KER, typename A, typename G>
cudaError_t launch_smem(KER kernel, int threads, int words, const G *g, const A *a)
{
    return launch_blocks(kernel, (unsigned)(g->nh * g->nch), threads, words, g, a);
}

} // namespace ra_gpu

#endif
