/* Chunked CUDA gdn: ra_gpu_gdn_chunk_launch, configuration checks and the per-head workspace. */

/*
 * The host driver (gdn_cuda.cu) has validated the case and uploaded it; this
 * entry point checks what only the chunked kernels require (chunk 64 or
 * 128, which also meets the inverses' needs: a multiple of 16 for neumann,
 * a power of two for the bottom-up schur merge of gdn_chunk_inverse.cuh;
 * K, V and the head count in the kernels' int ranges), allocates one workspace slice per (b, hv)
 * head (ra_gpu::ws_head_len floats; the backward adds the chunk-start states, T/C * K * V per
 * head), runs the forward or the backward kernel, synchronises and frees.  Failures come back as a
 * status and a reason in msg, never as a report of their own: the driver reports them.
 */

#include <cstdarg>
#include <cstdio>

#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_kernels.h"

static ra_status fail(char *msg, size_t msglen, ra_status st, const char *fmt, ...)
{
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return st;
}

static ra_status check_cfg(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, char *msg,
                           size_t msglen)
{
    if (cfg->chunk != 64 && cfg->chunk != 128)
        return fail(msg, msglen, RA_EINVAL, "cuda gdn chunk: chunk length %d (64 or 128)",
                    cfg->chunk);
    if (cfg->prec < RA_GPU_PREC_IEEE || cfg->prec > RA_GPU_PREC_BF16)
        return fail(msg, msglen, RA_EINVAL, "cuda gdn chunk: unknown operand precision %d",
                    (int)cfg->prec);
    if (cfg->inverse < RA_CPU_INV_FWDSUBST || cfg->inverse > RA_CPU_INV_SCHUR)
        return fail(msg, msglen, RA_EINVAL, "cuda gdn chunk: unknown inverse %d",
                    (int)cfg->inverse);
    /* Element indices inside one head are int: C*K, C*V and K*V must fit. */
    if (a->s.K > 4096 || a->s.V > 4096)
        return fail(msg, msglen, RA_EUNSUPPORTED,
                    "cuda gdn chunk: head sizes K = %lld, V = %lld above 4096", (long long)a->s.K,
                    (long long)a->s.V);
    if (a->s.B * a->s.Hv > 0x7fffffff)
        return fail(msg, msglen, RA_EUNSUPPORTED,
                    "cuda gdn chunk: %lld (b, hv) heads exceed one grid",
                    (long long)(a->s.B * a->s.Hv));
    return RA_OK;
}

ra_status ra_gpu_gdn_chunk_launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, int bwd,
                                  char *msg, size_t msglen)
{
    ra_status st = check_cfg(cfg, a, msg, msglen);
    if (st != RA_OK)
        return st;
    const int64_t heads = a->s.B * a->s.Hv;
    const int64_t ws_len = ra_gpu::ws_head_len(cfg->chunk, (int)a->s.K, (int)a->s.V, a->s.T, bwd);
    float *ws = nullptr;
    cudaError_t e = cudaMalloc(&ws, (size_t)(heads * ws_len) * sizeof(float));
    if (e != cudaSuccess) {
        cudaGetLastError();
        return fail(msg, msglen, RA_ENOMEM,
                    "cuda gdn chunk: cannot allocate the %lld MiB workspace",
                    (long long)(heads * ws_len * (int64_t)sizeof(float) >> 20));
    }
    e = bwd ? ra_gpu_gdn_chunk_bwd(cfg, a, ws, ws_len) : ra_gpu_gdn_chunk_fwd(cfg, a, ws, ws_len);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    cudaFree(ws);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return fail(msg, msglen, RA_EIO, "cuda gdn chunk %s: %s", bwd ? "backward" : "forward",
                    cudaGetErrorString(e));
    }
    return RA_OK;
}
