/* Chunked CUDA gdn: ra_gpu_gdn_chunk_launch, configuration checks, workspace and head groups. */

/*
 * The host driver (gdn_cuda.cu) has validated the case and uploaded it;
 * this file checks what only the chunked kernels require (chunk 64 or
 * 128, which also meets the inverses' needs: a multiple of 16 for neumann,
 * a power of two for the bottom-up schur merge of gdn_chunk_inverse.cuh;
 * K, V and the head count in the kernels' int ranges), sizes the workspace
 * (ra_gpu_gdn_chunk_ws_floats: one slice per (head, chunk) and three K x V
 * pass arrays per head, capped by the free device memory, so that the
 * driver allocates it outside its timed region) and runs the kernels of
 * gdn_chunk_kernels.h over groups of heads that fit it, in order, then
 * synchronises.  Failures come back as a status and a reason in msg, never
 * as a report of their own: the driver reports them.
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
    /* The kernels' token strides are int: every row of a chunk must be
       addressable from the chunk's first token (Hv >= Hk, so Hv*K and Hv*V
       are the widest strides). */
    const int64_t wide = a->s.Hv * (a->s.K > a->s.V ? a->s.K : a->s.V);
    if ((int64_t)(cfg->chunk + 1) * wide > 0x7fffffff)
        return fail(msg, msglen, RA_EUNSUPPORTED,
                    "cuda gdn chunk: a token stride of %lld floats (Hv = %lld) overflows the "
                    "kernels' int offsets within a chunk of %d",
                    (long long)wide, (long long)a->s.Hv, cfg->chunk);
    if (a->s.B * a->s.Hv > 0x7fffffff)
        return fail(msg, msglen, RA_EUNSUPPORTED,
                    "cuda gdn chunk: %lld (b, hv) heads exceed one grid",
                    (long long)(a->s.B * a->s.Hv));
    return RA_OK;
}

/* Floats one group of heads may use: half the free device memory, at most
   2^32 floats (so the flattened grids stay far below 2^31 blocks), and at
   least one head. */
static int64_t ws_budget(int64_t per_head)
{
    size_t freeb = 0, total = 0;
    if (cudaMemGetInfo(&freeb, &total) != cudaSuccess) {
        cudaGetLastError();
        freeb = 0;
    }
    int64_t b = (int64_t)(freeb / 2 / sizeof(float));
    if (b > ((int64_t)1 << 32))
        b = (int64_t)1 << 32;
    return b > per_head ? b : per_head;
}

int64_t ra_gpu_gdn_chunk_ws_floats(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a)
{
    if ((cfg->chunk != 64 && cfg->chunk != 128) || a->s.K > 4096 || a->s.V > 4096)
        return 0; /* refused by the launch */
    const int C = cfg->chunk, K = (int)a->s.K, V = (int)a->s.V;
    const int64_t nch = (a->s.T + C - 1) / C, heads = a->s.B * a->s.Hv;
    const int64_t per_head = ra_gpu::group_floats(1, nch, C, K, V);
    const int64_t nh = ws_budget(per_head) / per_head;
    return (nh < heads ? nh : heads) * per_head;
}

/* The kernels of one group, in order: prep and the states pass once, for
   the output kernel and the backward's alike. */
static cudaError_t run_group(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a,
                             const ra_gpu::group *g)
{
    const int p = (int)cfg->prec;
    cudaError_t e = ra_gpu_gdn_chunk_prep(p, a, g);
    if (e == cudaSuccess)
        e = ra_gpu_gdn_chunk_states(p, a, g);
    if (e == cudaSuccess && g->out)
        e = ra_gpu_gdn_chunk_output(p, a, g);
    if (e == cudaSuccess && g->bwd)
        e = ra_gpu_gdn_chunk_dstates(p, a, g);
    if (e == cudaSuccess && g->bwd)
        e = ra_gpu_gdn_chunk_grads(p, a, g);
    return e;
}

ra_status ra_gpu_gdn_chunk_launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a,
                                  ra_gpu_gdn_mode mode, float *ws, int64_t ws_floats, char *msg,
                                  size_t msglen)
{
    if (mode != RA_GPU_GDN_FWD && mode != RA_GPU_GDN_BWD && mode != RA_GPU_GDN_FWD_BWD)
        return fail(msg, msglen, RA_EINVAL, "cuda gdn chunk: unknown mode %d", (int)mode);
    const bool bwd = mode != RA_GPU_GDN_FWD, out = mode != RA_GPU_GDN_BWD;
    ra_status st = check_cfg(cfg, a, msg, msglen);
    if (st != RA_OK)
        return st;
    const int C = cfg->chunk, K = (int)a->s.K, V = (int)a->s.V;
    const int64_t heads = a->s.B * a->s.Hv, nch = (a->s.T + C - 1) / C;
    const int64_t per_head = ra_gpu::group_floats(1, nch, C, K, V);
    if (!ws || ws_floats < per_head)
        return fail(msg, msglen, RA_EINVAL,
                    "cuda gdn chunk: workspace of %lld floats, one head needs %lld",
                    (long long)ws_floats, (long long)per_head);
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess) {
        cudaGetLastError();
        return fail(msg, msglen, RA_EIO,
                    "cuda gdn chunk: cannot read the device's shared memory limit");
    }
    for (int pass = 0; pass < 2; pass++) { /* states, dstates */
        const int64_t smem = ra_gpu_gdn_chunk_pass_bytes(pass, C, K);
        if ((pass == 0 || bwd) && smem > optin)
            return fail(msg, msglen, RA_EUNSUPPORTED,
                        "cuda gdn chunk: K = %d needs %lld bytes of shared memory per %s pass "
                        "block, the device allows %d",
                        K, (long long)smem, pass ? "dstates" : "states", optin);
    }
    const int64_t per_group = ws_floats / per_head;
    cudaError_t e = cudaSuccess;
    for (int64_t h0 = 0; h0 < heads && e == cudaSuccess; h0 += per_group) {
        ra_gpu::group g;
        g.h0 = h0, g.nh = heads - h0 < per_group ? heads - h0 : per_group;
        g.nch = nch, g.C = C, g.inv = (int)cfg->inverse, g.bwd = bwd, g.out = out, g.ws = ws;
        g.wpairs = ra_gpu_gdn_chunk_fwd_bf16_serves((int)cfg->prec, a, &g);
        e = run_group(cfg, a, &g);
    }
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        cudaGetLastError();
        return fail(msg, msglen, RA_EIO, "cuda gdn chunk %s: %s",
                    !bwd  ? "forward"
                    : out ? "forward and backward"
                          : "backward",
                    cudaGetErrorString(e));
    }
    return RA_OK;
}
