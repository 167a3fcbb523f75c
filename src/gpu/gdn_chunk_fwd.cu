/* Chunked CUDA gdn forward: one block per (b, hv) walking its chunks (o, ht). */

/*
 * The kernel is the CPU twin's RN(chunk_forward) (src/cpu/gdn_tmpl_chunk.h)
 * with the steps of gdn_chunk.cuh: per chunk, store the state as the other
 * kernels would read it (st(S)), form T, W, U, V', the chunk's outputs and
 * the decayed, updated running state; ht is the fp32 running state after
 * the last (possibly partial) chunk.  The operand precision P is a template
 * parameter (one instance per ra_gpu_prec), the inverse a run-time choice.
 */

#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_kernels.h"

namespace ra_gpu
{

template <int P>
__global__ void __launch_bounds__(CHUNK_THREADS)
    gdn_chunk_fwd_kernel(const ra_gpu_gdn_args a, int C, int inv, float *ws, int64_t ws_len)
{
    const int64_t bh = blockIdx.x;
    const head h = make_head(a, bh);
    const cws w = make_cws(ws + bh * ws_len, C, h.K, h.V, inv);
    chunk_init_state(w, h);
    const int64_t nch = (h.T + C - 1) / C;
    for (int64_t c = 0; c < nch; c++) {
        const int64_t t0 = c * C;
        const int L = chunk_rows(h, C, c);
        chunk_store_state<P>(w);
        chunk_prep<P>(w, h, t0, L);
        chunk_vprime<P>(w, L);
        chunk_output<P>(w, h, t0, L);
        chunk_update<P>(w, h, t0, L);
    }
    for (int e = threadIdx.x; e < h.K * h.V; e += blockDim.x)
        h.ht[e] = w.S[e];
}

template <int P>
static void launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, float *ws, int64_t ws_len)
{
    const unsigned grid = (unsigned)(a->s.B * a->s.Hv);
    gdn_chunk_fwd_kernel<P><<<grid, CHUNK_THREADS>>>(*a, cfg->chunk, (int)cfg->inverse, ws, ws_len);
}

} // namespace ra_gpu

cudaError_t ra_gpu_gdn_chunk_fwd(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, float *ws,
                                 int64_t ws_len)
{
    switch (cfg->prec) {
    case RA_GPU_PREC_IEEE:
        ra_gpu::launch<RA_GPU_PREC_IEEE>(cfg, a, ws, ws_len);
        break;
    case RA_GPU_PREC_TF32:
        ra_gpu::launch<RA_GPU_PREC_TF32>(cfg, a, ws, ws_len);
        break;
    case RA_GPU_PREC_TF32X3:
        ra_gpu::launch<RA_GPU_PREC_TF32X3>(cfg, a, ws, ws_len);
        break;
    case RA_GPU_PREC_BF16:
        ra_gpu::launch<RA_GPU_PREC_BF16>(cfg, a, ws, ws_len);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
