/* Chunked CUDA gdn forward kernels: prep and output per (head, chunk). */

/*
 * The CPU twin's RN(chunk_forward) (src/cpu/gdn_tmpl_chunk.h) split as
 * gdn_chunk.cuh describes: prep writes every chunk's G, gamma, D, T, W, U
 * and P; the states pass (gdn_chunk_pass.cu) walks the chunks of one head
 * in order on a tile of state columns, storing each chunk's S' and V' and
 * leaving ht; output forms each chunk's rows of o.  The backward runs prep and the states pass
 * too (without ht), so its S', T, W, U, V' are the forward's bits.  The
 * operand precision P is a template parameter (one instance per
 * ra_gpu_prec), the inverse a run-time choice.
 */

#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_bf16.cuh"
#include "gpu/gdn_chunk_kernels.h"

namespace ra_gpu
{

template <int P, int FIX>
__global__ void __launch_bounds__(CHUNK_THREADS, CHUNK_MIN_BLOCKS)
    gdn_chunk_prep_kernel(const ra_gpu_gdn_args a, const group g)
{
    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX>(a, g.h0 + hl);
    const int C = fixed_C<FIX>(g);
    const cws w = make_cws(g, C, h.K, h.V, hl, c);
    const int L = chunk_rows(h, C, c);
    chunk_prep<P>(w, h, c * C, L);
    chunk_p<P>(w, h, c * C, L);
}

template <int P, int FIX>
__global__ void __launch_bounds__(CHUNK_THREADS, CHUNK_MIN_BLOCKS)
    gdn_chunk_output_kernel(const ra_gpu_gdn_args a, const group g)
{
    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX>(a, g.h0 + hl);
    const int C = fixed_C<FIX>(g);
    chunk_output<P>(make_cws(g, C, h.K, h.V, hl, c), h, c * C, chunk_rows(h, C, c));
}

/* The production head's 3xtf32 output (ra_gpu_gdn_chunk_x3_serves): the
   general steps, their products x3_mm's on X3_WORDS of shared memory,
   256 threads and two blocks per SM; the same bits as the general
   kernel's (x3_mm.cuh).  Its prep stays the general kernel: the general
   steps with x3_mm's products took 1.92 ms there against the general
   kernel's 1.55 (H200, B=1, T=8192, Hv=32, K=V=128, ncu). */
__global__ void __launch_bounds__(X3_THREADS, 2)
    gdn_chunk_output_x3_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t xs[];
    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    chunk_output<RA_GPU_PREC_TF32X3, true>(make_cws(g, PC, PK, PK, hl, c), h, c * PC,
                                           chunk_rows(h, PC, c), xs);
}

} // namespace ra_gpu

using ra_gpu::group;

cudaError_t ra_gpu_gdn_chunk_prep(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    if (g->wpairs)
        return ra_gpu_gdn_chunk_prep_bf16(a, g);
    if (ra_gpu_gdn_chunk_ieee_serves(prec, a, g))
        return ra_gpu_gdn_chunk_prep_ieee(a, g);
    const unsigned grid = (unsigned)(g->nh * g->nch);
    return ra_gpu::by_prec(prec, [&](auto p) {
        ra_gpu::by_fix(*a, *g, [&](auto f) {
            ra_gpu::gdn_chunk_prep_kernel<decltype(p)::value, decltype(f)::value>
                <<<grid, ra_gpu::CHUNK_THREADS>>>(*a, *g);
        });
    });
}

cudaError_t ra_gpu_gdn_chunk_output(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    if (g->wpairs)
        return ra_gpu_gdn_chunk_output_bf16(a, g);
    if (ra_gpu_gdn_chunk_ieee_serves(prec, a, g))
        return ra_gpu_gdn_chunk_output_ieee(a, g);
    if (ra_gpu_gdn_chunk_x3_serves(prec, a, g))
        return ra_gpu::launch_smem(ra_gpu::gdn_chunk_output_x3_kernel, ra_gpu::X3_THREADS,
                                   ra_gpu::X3_WORDS, g, a);
    const unsigned grid = (unsigned)(g->nh * g->nch);
    return ra_gpu::by_prec(prec, [&](auto p) {
        ra_gpu::by_fix(*a, *g, [&](auto f) {
            ra_gpu::gdn_chunk_output_kernel<decltype(p)::value, decltype(f)::value>
                <<<grid, ra_gpu::CHUNK_THREADS>>>(*a, *g);
        });
    });
}

bool ra_gpu_gdn_chunk_x3_serves(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    return prec == RA_GPU_PREC_TF32X3 && !g->wpairs && production_head(a, g) &&
           (int64_t)X3_WORDS * 4 <= smem_optin();
}
