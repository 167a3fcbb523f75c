/* Chunked CUDA gdn: the production head's bf16 shared-memory kernels, their sizes and launch. */
#ifndef RA_GPU_GDN_CHUNK_BF16_CUH
#define RA_GPU_GDN_CHUNK_BF16_CUH

/*
 * gdn_chunk_fwd_bf16.cu (prep, output) and gdn_chunk_bwd_bf16.cu (grads)
 * serve bf16 operands at chunk 64, K = V = 128, forward substitution
 * (ra_gpu_gdn_chunk_fwd_bf16_serves, group::wpairs): each stages its
 * operands once in shared memory as the bf16 pair tiles of pair_tile.cuh
 * and keeps its products in registers, with the general kernels'
 * arithmetic, so their bits.  The states and dstates passes
 * (gdn_chunk_states_bf16.cu, gdn_chunk_dstates_bf16.cu) split each
 * 16-column recursion over a team of two or four warps, which trade mma
 * fragments (team_trade).
 */

#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "gpu/cp_async.cuh"
#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_cuda_cxx.h"
#include "gpu/pair_tile.cuh"

namespace ra_gpu
{

constexpr int PC = 64, PK = 128; /* the configuration's chunk and head size */
constexpr int LDK = pair_ld<PK>(), LDC = pair_ld<PC>(); /* pair tiles along 128 and 64 */

/* One warp starts copying W's pair tile (cws::Wp, 64 rows of LDK words)
   into the tile at shared-space address dst, for both passes: rows at
   or past L, which the prep leaves unwritten, are zeroed instead.  A
   loop of four copies an iteration: fully unrolled beside the dstates
   pass's other copies, its addresses took the kernel from 125 registers
   to 168 and a spill (ptxas -v). */
__device__ __forceinline__ void warp_stage_w(uint32_t *dst, const uint32_t *Wp, int L)
{
    const unsigned ws = (unsigned)__cvta_generic_to_shared(dst);
    constexpr int WQ = PK / 8; /* 16-byte copies a row */
#pragma unroll 4
    for (int e = threadIdx.x & 31; e < PC * WQ; e += 32) {
        const int r = e / WQ, x = 4 * (e % WQ);
        if (r < L)
            cp_async16_s(ws + 4u * (r * LDK + x), Wp + r * LDK + x);
        else
            *reinterpret_cast<uint4 *>(dst + r * LDK + x) = make_uint4(0u, 0u, 0u, 0u);
    }
}

/* p is 16-byte aligned (cp.async copies, float4 accesses). */
inline bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

/* The current device's opt-in shared memory per block in bytes, 0 when
   it cannot be read (then no shared-memory kernel serves). */
inline int smem_optin()
{
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return optin;
}

/* Group g of problem a is the production head the shared-memory kernels
   serve: chunk 64, K = V = 128, forward substitution, the forward's
   tensors and the workspace 16-byte aligned. */
inline bool production_head(const ra_gpu_gdn_args *a, const group *g)
{
    return g->C == PC && a->s.K == PK && a->s.V == PK && g->inv == RA_CPU_INV_FWDSUBST &&
           aligned16(a->q) && aligned16(a->k) && aligned16(a->v) && (!a->o || aligned16(a->o)) &&
           aligned16(g->ws);
}

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

/* one: `blocks` blocks fit one per SM of the current device (the passes
   size their blocks by it). */
inline cudaError_t fits_one_wave(int64_t blocks, bool &one)
{
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    one = blocks <= sms;
    return e;
}

/* The same over the group's (head, chunk) blocks. */
template <typename KER, typename A, typename G>
cudaError_t launch_smem(KER kernel, int threads, int words, const G *g, const A *a)
{
    return launch_blocks(kernel, (unsigned)(g->nh * g->nch), threads, words, g, a);
}

/* The array a kernel reading inputs as IN stages from: float, the
   widened fp32 array; uint16_t, the case's stored bf16 (args::qb), the
   same values in half the bytes. */
template <typename IN>
__device__ __forceinline__ const IN *stored(const float *f32, const uint16_t *bf16)
{
    if constexpr (std::is_same<IN, float>::value)
        return f32;
    else
        return bf16;
}

/* Whether the bf16 kernels read q, k, v and dO as stored: the case
   stores them in bf16 (args::qb), 16-byte aligned for cp.async (a row of
   128 is 256 bytes, and rows start at multiples of 128 elements). */
inline bool reads_stored_bf16(const ra_gpu_gdn_args *a)
{
    auto al16 = [](const void *p) { return p && aligned16(p); };
    return al16(a->qb) && al16(a->kb) && al16(a->vb) && (!a->do_ || al16(a->dob));
}

/* The gates of h's chunk at token t0 staged by NT threads: bet[i] =
   beta_i and G the CPU's running sum of g, in its order, by one thread
   (both zero at and past L).  The caller synchronises before reading G. */
template <int NT>
__device__ __forceinline__ void stage_gates(float *bet, float *G, const head &h, int64_t t0, int L)
{
    const float *gg = h.g + t0 * h.gs, *beta = h.beta + t0 * h.gs;
    for (int i = threadIdx.x; i < PC; i += NT)
        bet[i] = i < L ? beta[i * h.gs] : 0.f, G[i] = i < L ? gg[i * h.gs] : 0.f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float run = 0.f;
#pragma unroll 8
        for (int i = 0; i < L; i++) {
            run = __fadd_rn(run, G[i]);
            G[i] = run;
        }
    }
}

/* stage_rows(dst, x, ld, nr, COLS, same4) by NT threads, for x widened
   or as stored.  A stored row is already its pair-tile row (elements 2j,
   2j + 1 in word j, the first in the low half), so stored rows go by
   cp.async, each warp ROWS / (NT / 32) of them, without passing through
   registers; the caller commits the copies (cp_commit) and waits for
   them before its barrier. */
template <int ROWS, int COLS, int NT, typename IN>
__device__ __forceinline__ void stage_rows_as(uint32_t *dst, const IN *x, int ld, int nr)
{
    if constexpr (std::is_same<IN, float>::value) {
        stage_rows<ROWS, COLS, NT>(dst, x, ld, nr, COLS, same4);
    } else {
        constexpr int RW = ROWS / (NT / 32), LD = 2 * pair_ld<COLS>();
        static_assert(ROWS % (NT / 32) == 0 && COLS % 8 == 0, "whole rows a warp");
        warp_copy_rows_upto<RW, COLS / 8, LD>(reinterpret_cast<uint16_t *>(dst), x, ld,
                                              RW * (threadIdx.x >> 5), nr);
    }
}

/* The n-tiles (of 8 tokens) holding tokens below L among the 8 NTL
   tokens i0 .. i0 + 8 NTL - 1 of a team's warp. */
template <int NTL> __device__ __forceinline__ int warp_ntiles(int L, int i0)
{
    return min(NTL, max(0, (L - i0 + 7) / 8));
}

/* The NW warps of team t of a block meet (named barrier t + 1; 0 is
   __syncthreads'). */
template <int NW> __device__ __forceinline__ void team_sync(int t)
{
    asm volatile("bar.sync %0, %1;" ::"r"(t + 1), "n"(32 * NW) : "memory");
}

/* A team of NW warps trades A fragments of KS k-steps, warp tw (0 ..
   NW - 1) holding k-steps KS / NW tw .. KS / NW (tw + 1) - 1 (`own`):
   team_put writes them to x (a fragment tile of KS k-steps), and after
   team_sync team_get reads all KS in k-step order.  A buffer is written
   again only after the team's next meeting, which each warp reaches
   after its reads. */
template <int KS, int NW>
__device__ __forceinline__ void team_put(uint4 *x, const uint32_t (&own)[KS / NW][4], int tw)
{
    store_frags(x, KS / NW * tw, own);
}

template <int KS> __device__ __forceinline__ void team_get(uint32_t (&fa)[KS][4], const uint4 *x)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int q = 0; q < KS; q++) {
        const uint4 y = x[q * 32 + lane];
        fa[q][0] = y.x, fa[q][1] = y.y, fa[q][2] = y.z, fa[q][3] = y.w;
    }
}

template <int KS, int NW>
__device__ __forceinline__ void team_trade(uint32_t (&fa)[KS][4], const uint32_t (&own)[KS / NW][4],
                                           uint4 *x, int t, int tw)
{
    team_put<KS, NW>(x, own, tw);
    team_sync<NW>(t);
    team_get(fa, x);
}

} // namespace ra_gpu

#endif
