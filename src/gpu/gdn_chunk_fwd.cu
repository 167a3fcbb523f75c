/* Chunked CUDA gdn forward kernels: prep and output per (head, chunk), the states pass per column
 * tile. */

/*
 * The CPU twin's RN(chunk_forward) (src/cpu/gdn_tmpl_chunk.h) split as
 * gdn_chunk.cuh describes: prep writes every chunk's G, gamma, D, T, W, U
 * and P; the states pass walks the chunks of one head in order on a tile
 * of state columns, storing each chunk's S' and V' and leaving ht; output
 * forms each chunk's rows of o.  The backward runs prep and the states pass
 * too (without ht), so its S', T, W, U, V' are the forward's bits.  The
 * operand precision P is a template parameter (one instance per
 * ra_gpu_prec), the inverse a run-time choice.
 */

#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_kernels.h"

namespace ra_gpu
{

template <int P>
__global__ void __launch_bounds__(CHUNK_THREADS)
    gdn_chunk_prep_kernel(const ra_gpu_gdn_args a, const group g)
{
    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head(a, g.h0 + hl);
    const cws w = make_cws(g, h.K, h.V, hl, c);
    const int L = chunk_rows(h, g.C, c);
    chunk_prep<P>(w, h, c * g.C, L);
    chunk_p<P>(w, h, c * g.C, L);
}

template <int P>
__global__ void __launch_bounds__(PASS_THREADS)
    gdn_chunk_states_kernel(const ra_gpu_gdn_args a, const group g)
{
    int64_t hl;
    int j0, nv;
    pass_block(g, (int)a.s.V, hl, j0, nv);
    const head h = make_head(a, g.h0 + hl);
    const int K = h.K, V = h.V;
    float *S = make_pws(g, K, V, hl).S;
    for (int e = threadIdx.x; e < K * nv; e += blockDim.x) {
        const int x = e / nv * V + j0 + e % nv;
        S[x] = h.h0 ? h.h0[x] : 0.f;
    }
    __syncthreads();
    for (int64_t c = 0; c < g.nch; c++)
        chunk_state_cols<P>(make_cws(g, K, V, hl, c), h, S, c * g.C, chunk_rows(h, g.C, c), j0, nv);
    if (h.ht)
        for (int e = threadIdx.x; e < K * nv; e += blockDim.x) {
            const int x = e / nv * V + j0 + e % nv;
            h.ht[x] = S[x];
        }
}

template <int P>
__global__ void __launch_bounds__(CHUNK_THREADS)
    gdn_chunk_output_kernel(const ra_gpu_gdn_args a, const group g)
{
    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head(a, g.h0 + hl);
    chunk_output<P>(make_cws(g, h.K, h.V, hl, c), h, c * g.C, chunk_rows(h, g.C, c));
}

} // namespace ra_gpu

using ra_gpu::group;

cudaError_t ra_gpu_gdn_chunk_prep(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    const unsigned grid = (unsigned)(g->nh * g->nch);
    return ra_gpu::by_prec(prec, [&](auto p) {
        ra_gpu::gdn_chunk_prep_kernel<decltype(p)::value><<<grid, ra_gpu::CHUNK_THREADS>>>(*a, *g);
    });
}

cudaError_t ra_gpu_gdn_chunk_states(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    const unsigned grid =
        (unsigned)(g->nh * ((a->s.V + ra_gpu::PASS_COLS - 1) / ra_gpu::PASS_COLS));
    return ra_gpu::by_prec(prec, [&](auto p) {
        ra_gpu::gdn_chunk_states_kernel<decltype(p)::value><<<grid, ra_gpu::PASS_THREADS>>>(*a, *g);
    });
}

cudaError_t ra_gpu_gdn_chunk_output(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    const unsigned grid = (unsigned)(g->nh * g->nch);
    return ra_gpu::by_prec(prec, [&](auto p) {
        ra_gpu::gdn_chunk_output_kernel<decltype(p)::value>
            <<<grid, ra_gpu::CHUNK_THREADS>>>(*a, *g);
    });
}
