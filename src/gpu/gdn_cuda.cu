/* CUDA gdn host driver: case in, fp32 device arrays, kernel dispatch, tensors out. */

/*
 * ra_gpu_gdn_forward / ra_gpu_gdn_backward (gdn_cuda.h) for every CUDA gdn
 * variant; the kernels behind them are ra_gpu_gdn_seq_launch (gdn_seq.cu)
 * and ra_gpu_gdn_chunk_launch, chosen by cfg->algo.
 *
 * Inputs go up in their storage bytes and are widened on the device: bf16
 * by placing its 16 bits above 16 zero bits, f16 by __half2float, both
 * exact; f64 is rounded once to fp32 (__double2float_rn, RNE), which is the
 * CPU float variants' (float)x.  bf16 q, k and v (unless l2norm changes
 * them) and dO also stay on the device as stored (args::qb), for the
 * kernels that read half the bytes (the same values).  With l2norm, q
 * and k are normalised on the device per token and key head exactly as
 * src/cpu/gdn_tmpl_driver.h does in float: n = sqrt(fma chain of x_i^2 in
 * index order + (float)l2eps), x^ = x / n (IEEE division and square
 * root), one thread per row.
 *
 * The backward's kernels leave dq and dk per value head [B,T,Hv,K]; one
 * thread per [b, t, hk] row sums the group's value heads in increasing hv
 * (a left fold, the CPU's order: no dependence on scheduling) and, with
 * l2norm, applies dx = dx^/n - x (x . dx^)/n^3 with the CPU's rounding
 * points (fma-chain dot, (n n) n, one rounding per operation).
 *
 * Outputs are rounded on the device into their storage dtype and copied
 * into tensors made by ra_tensors_new: f32 as is, bf16 and f16 by
 * cvt.rn (RNE, subnormals kept; t-gpu-rounding checks these conversions
 * against ra_double_to_bf16/f16 bit for bit, so the result is what
 * ra_tensor_set stores), f64 widened exactly.  o, dq, dk, dv in
 * cfg->act_dtype; ht, dh0, dg, dbeta in cfg->aux_dtype; names, shapes and
 * order as the CPU variants'.
 *
 * Every size and offset is 64-bit.  Errors: invalid cases as
 * ra_gdn_problem_init reports them; no device RA_EUNSUPPORTED; a device
 * index out of range or an inconsistent configuration RA_EINVAL; CUDA
 * failures RA_EIO (RA_ENOMEM for allocation) naming the step and CUDA's
 * reason.  Device memory is released on every path.
 */

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <mpfr.h>

/* The core headers carry no C++ linkage guards: declare them C here, before
   gdn_cuda.h includes them (mpfr.h first, outside, for its C++ parts). */
extern "C" {
#include "core/case.h"
#include "core/gdn_case.h"
#include "core/status.h"
#include "core/tensor.h"
#include "cpu/gdn_variants.h"
}
#include "gpu/cuda_try.h"
#include "gpu/device.h"
#include "gpu/gdn_cuda.h"

namespace
{

/* The driver's failed CUDA calls, "cuda gdn: WHAT: reason" (cuda_try.h). */
#define CU_TRY(call, what) RA_CUDA_TRY(call, "cuda gdn", what)

unsigned grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#define GRID_STRIDE(e, n)                                                                          \
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < (n);                      \
         e += (int64_t)gridDim.x * blockDim.x)

/* --- storage dtype <-> fp32 ------------------------------------------------------------- */

__global__ void widen_bf16(float *dst, const uint16_t *src, int64_t n)
{
    GRID_STRIDE(e, n) dst[e] = __uint_as_float((uint32_t)src[e] << 16);
}

__global__ void widen_f16(float *dst, const __half *src, int64_t n)
{
    GRID_STRIDE(e, n) dst[e] = __half2float(src[e]);
}

__global__ void round_f64(float *dst, const double *src, int64_t n)
{
    GRID_STRIDE(e, n) dst[e] = __double2float_rn(src[e]);
}

__global__ void store_bf16(uint16_t *dst, const float *src, int64_t n)
{
    GRID_STRIDE(e, n) dst[e] = __bfloat16_as_ushort(__float2bfloat16_rn(src[e]));
}

__global__ void store_f16(uint16_t *dst, const float *src, int64_t n)
{
    GRID_STRIDE(e, n) dst[e] = __half_as_ushort(__float2half_rn(src[e]));
}

__global__ void store_f64(double *dst, const float *src, int64_t n)
{
    GRID_STRIDE(e, n) dst[e] = (double)src[e];
}

/* --- l2norm --------------------------------------------------------------------------------- */

/* xn = x / sqrt(|x|^2 + eps) per row of K (xn may be x); the norms into nrm
   when it is not NULL; the first row with a zero norm into *bad. */
__global__ void l2norm_rows(float *xn, float *nrm, const float *x, int64_t rows, int64_t K,
                            float eps, unsigned long long *bad)
{
    GRID_STRIDE(r, rows)
    {
        const float *xr = x + r * K;
        float s = 0.f;
        for (int64_t i = 0; i < K; i++)
            s = __fmaf_rn(xr[i], xr[i], s);
        const float n = __fsqrt_rn(__fadd_rn(s, eps));
        if (n == 0.f) {
            atomicMin(bad, (unsigned long long)r);
            continue;
        }
        if (nrm)
            nrm[r] = n;
        for (int64_t i = 0; i < K; i++)
            xn[r * K + i] = __fdiv_rn(xr[i], n);
    }
}

/* dx[b,t,hk,:] = sum over the group's value heads of dxv[b,t,hv,:] in
   increasing hv, then (nrm not NULL) the l2norm chain rule with the raw x.
   A warp per row, lane l on the row's elements l, l + 32, ..., so that a
   warp's loads and stores are contiguous (a thread per row had each load
   touch 32 rows grp K floats apart).  The dot's chain runs in
   increasing i on every lane, its operands broadcast by shuffle, so each
   value is the same fp32 operation as a thread walking the row. */
__global__ void group_sum_rows(float *dx, const float *dxv, const float *x, const float *nrm,
                               int64_t rows, int64_t Hk, int64_t grp, int64_t K)
{
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5); r < rows;
         r += warps) {
        const int64_t bt = r / Hk, hk = r % Hk;
        const float *src = dxv + (bt * Hk * grp + hk * grp) * K, *xr = x + r * K;
        float *d = dx + r * K;
        float dot = 0.f;
        for (int64_t i0 = 0; i0 < K; i0 += 32) {
            const int64_t i = i0 + lane;
            float s = 0.f, xi = 0.f;
            if (i < K) {
                s = src[i];
                for (int64_t m = 1; m < grp; m++)
                    s = __fadd_rn(s, src[m * K + i]);
                d[i] = s;
                if (nrm)
                    xi = xr[i];
            }
            if (nrm) {
                const int n = K - i0 < 32 ? (int)(K - i0) : 32;
                for (int l = 0; l < n; l++)
                    dot = __fmaf_rn(__shfl_sync(0xffffffffu, xi, l), __shfl_sync(0xffffffffu, s, l),
                                    dot);
            }
        }
        if (nrm) {
            const float n = nrm[r];
            const float c = __fdiv_rn(dot, __fmul_rn(__fmul_rn(n, n), n));
            for (int64_t i = lane; i < K; i += 32)
                d[i] = __fsub_rn(__fdiv_rn(d[i], n), __fmul_rn(xr[i], c));
        }
    }
}

/* --- device memory ---------------------------------------------------------------------- */

/* Every allocation of one call, released when the call returns. */
struct Arena {
    std::vector<void *> ptrs;
    Arena() = default;
    Arena(const Arena &) = delete;
    Arena &operator=(const Arena &) = delete;
    ~Arena()
    {
        for (void *p : ptrs)
            cudaFree(p);
    }
    void release(void *p)
    {
        for (auto &q : ptrs)
            if (q == p) {
                cudaFree(q);
                q = nullptr;
            }
    }
};

ra_status dev_alloc(void **out, Arena &ar, size_t bytes, const char *what)
{
    *out = nullptr;
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *out = nullptr;
        cudaGetLastError();
        RA_ERRORF(e == cudaErrorMemoryAllocation ? RA_ENOMEM : RA_EIO,
                  "cuda gdn: cannot allocate %.3g GiB of device memory for %s: %s",
                  (double)bytes / 1073741824.0, what, cudaGetErrorString(e));
    }
    ar.ptrs.push_back(*out);
    return RA_OK;
}

ra_status dev_floats(float **out, Arena &ar, int64_t n, const char *what)
{
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(float))
        RA_ERRORF(RA_EOVERFLOW, "cuda gdn: %s: %lld floats overflow the address space", what,
                  (long long)n);
    void *p;
    RA_TRY(dev_alloc(&p, ar, (size_t)n * sizeof(float), what));
    *out = (float *)p;
    return RA_OK;
}

/* The tensor widened (or for f64 rounded once) to fp32 on the device;
   with stored not NULL, a bf16 tensor's stored bits stay on the device
   too, in *stored (else NULL). */
ra_status upload(float **out, Arena &ar, const ra_tensor *t, const uint16_t **stored = nullptr)
{
    if (stored)
        *stored = nullptr;
    const int64_t n = t->numel;
    RA_TRY(dev_floats(out, ar, n, t->name));
    if (t->dtype == RA_F32) {
        CU_TRY(cudaMemcpy(*out, t->data, t->nbytes, cudaMemcpyHostToDevice), t->name);
        return RA_OK;
    }
    void *raw;
    RA_TRY(dev_alloc(&raw, ar, t->nbytes, t->name));
    CU_TRY(cudaMemcpy(raw, t->data, t->nbytes, cudaMemcpyHostToDevice), t->name);
    switch (t->dtype) {
    case RA_BF16:
        widen_bf16<<<grid_for(n), 256>>>(*out, (const uint16_t *)raw, n);
        break;
    case RA_F16:
        widen_f16<<<grid_for(n), 256>>>(*out, (const __half *)raw, n);
        break;
    case RA_F64:
        round_f64<<<grid_for(n), 256>>>(*out, (const double *)raw, n);
        break;
    default:
        RA_ERRORF(RA_EINTERNAL, "cuda gdn: tensor '%s' has an unknown dtype code %d", t->name,
                  (int)t->dtype);
    }
    CU_TRY(cudaGetLastError(), "launch of the widening kernel");
    CU_TRY(cudaDeviceSynchronize(), "widening of the inputs");
    if (stored && t->dtype == RA_BF16)
        *stored = (const uint16_t *)raw;
    else
        ar.release(raw);
    return RA_OK;
}

/* A new tensor `name` in out holding the device array src rounded (RNE)
   to dtype. */
ra_status emit(ra_tensors *out, Arena &ar, const char *name, ra_dtype dt, int nd,
               const int64_t *shape, const float *src)
{
    ra_tensor *t;
    RA_TRY(ra_tensors_new(out, &t, name, dt, nd, shape));
    const int64_t n = t->numel;
    if (dt == RA_F32) {
        CU_TRY(cudaMemcpy(t->data, src, t->nbytes, cudaMemcpyDeviceToHost), name);
        return RA_OK;
    }
    void *raw;
    RA_TRY(dev_alloc(&raw, ar, t->nbytes, name));
    switch (dt) {
    case RA_BF16:
        store_bf16<<<grid_for(n), 256>>>((uint16_t *)raw, src, n);
        break;
    case RA_F16:
        store_f16<<<grid_for(n), 256>>>((uint16_t *)raw, src, n);
        break;
    default:
        store_f64<<<grid_for(n), 256>>>((double *)raw, src, n);
        break;
    }
    CU_TRY(cudaGetLastError(), "launch of the storage kernel");
    CU_TRY(cudaMemcpy(t->data, raw, t->nbytes, cudaMemcpyDeviceToHost), name);
    ar.release(raw);
    return RA_OK;
}

/* --- timing (bench) ----------------------------------------------------------------------- */

/* CUDA events around the kernels of one call, after a write of twice the L2
   cache's size so that the timed kernels start from a cold cache, as they
   would after the rest of a model's step.  Inactive when ms is NULL. */
struct KernelTimer {
    double *ms = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    KernelTimer() = default;
    KernelTimer(const KernelTimer &) = delete;
    KernelTimer &operator=(const KernelTimer &) = delete;
    ~KernelTimer()
    {
        if (start)
            cudaEventDestroy(start);
        if (stop)
            cudaEventDestroy(stop);
    }
    ra_status begin(double *out, Arena &ar, int device)
    {
        ms = out;
        if (!ms)
            return RA_OK;
        *ms = -1;
        int l2 = 0;
        CU_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "L2 cache size");
        if (l2 > 0) {
            void *flush;
            RA_TRY(dev_alloc(&flush, ar, 2 * (size_t)l2, "the L2 flush buffer"));
            CU_TRY(cudaMemset(flush, 0, 2 * (size_t)l2), "L2 flush");
        }
        CU_TRY(cudaEventCreate(&start), "timer event");
        CU_TRY(cudaEventCreate(&stop), "timer event");
        CU_TRY(cudaEventRecord(start), "timer start");
        return RA_OK;
    }
    ra_status end()
    {
        if (!ms)
            return RA_OK;
        CU_TRY(cudaEventRecord(stop), "timer stop");
        CU_TRY(cudaEventSynchronize(stop), "the timed kernels");
        float t = 0;
        CU_TRY(cudaEventElapsedTime(&t, start, stop), "timer");
        *ms = t;
        return RA_OK;
    }
};

ra_status check_cfg(const ra_gpu_gdn_cfg *cfg)
{
    if (!cfg)
        RA_ERROR("cuda gdn: no configuration", RA_EINVAL);
    if ((unsigned)cfg->act_dtype >= RA_NDTYPES || (unsigned)cfg->aux_dtype >= RA_NDTYPES)
        RA_ERRORF(RA_EINVAL, "cuda gdn: invalid storage dtype codes %d, %d", (int)cfg->act_dtype,
                  (int)cfg->aux_dtype);
    if (cfg->algo != RA_GPU_GDN_SEQ && cfg->algo != RA_GPU_GDN_CHUNK)
        RA_ERRORF(RA_EINVAL, "cuda gdn: unknown algorithm code %d", (int)cfg->algo);
    return RA_OK;
}

ra_status use_device(int device)
{
    const int n = ra_gpu_count();
    if (n == 0)
        RA_ERROR("no CUDA device", RA_EUNSUPPORTED);
    if (device < 0 || device >= n)
        RA_ERRORF(RA_EINVAL, "cuda gdn: device %d does not exist (%d device%s)", device, n,
                  n == 1 ? "" : "s");
    CU_TRY(cudaSetDevice(device), "cudaSetDevice");
    return RA_OK;
}

/* Normalises rows of x [rows x K] into xn (in place when xn == x), norms
   into nrm (may be NULL); the CPU's message for a zero norm. */
ra_status l2norm(float *xn, float *nrm, const float *x, Arena &ar, const ra_gdn_problem &p,
                 const char *name)
{
    const ra_gdn_shape &s = p.s;
    const int64_t rows = s.B * s.T * s.Hk;
    void *badp;
    RA_TRY(dev_alloc(&badp, ar, sizeof(unsigned long long), "the l2norm status"));
    CU_TRY(cudaMemset(badp, 0xff, sizeof(unsigned long long)), "l2norm status");
    l2norm_rows<<<grid_for(rows), 256>>>(xn, nrm, x, rows, s.K, (float)p.l2eps,
                                         (unsigned long long *)badp);
    CU_TRY(cudaGetLastError(), "launch of the l2norm kernel");
    unsigned long long bad;
    CU_TRY(cudaMemcpy(&bad, badp, sizeof bad, cudaMemcpyDeviceToHost), "l2norm");
    ar.release(badp);
    if (bad != ~0ull) {
        const int64_t r = (int64_t)bad;
        RA_ERRORF(RA_EINVAL,
                  "gdn case: tensor '%s' row [%lld, %lld, %lld] (b, t, hk) has zero norm%s: "
                  "l2norm is undefined there",
                  name, (long long)(r / (s.T * s.Hk)), (long long)(r / s.Hk % s.T),
                  (long long)(r % s.Hk),
                  p.l2eps > 0 ? " after rounding l2eps to the arithmetic type" : " and l2eps = 0");
    }
    return RA_OK;
}

/* The chunked kernels' workspace, allocated before any timing. */
struct Workspace {
    float *p = nullptr;
    int64_t n = 0;
};

ra_status workspace(Workspace *w, Arena &ar, const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a)
{
    if (cfg->algo != RA_GPU_GDN_CHUNK)
        return RA_OK;
    w->n = ra_gpu_gdn_chunk_ws_floats(cfg, a);
    return w->n > 0 ? dev_floats(&w->p, ar, w->n, "the chunk workspace") : RA_OK;
}

ra_status launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, ra_gpu_gdn_mode mode,
                 const Workspace &w)
{
    char msg[512] = "";
    ra_status st = RA_OK;
    if (cfg->algo == RA_GPU_GDN_CHUNK)
        st = ra_gpu_gdn_chunk_launch(cfg, a, mode, w.p, w.n, msg, sizeof msg);
    else /* the sequential kernels share nothing between the directions */
        for (int bwd = 0; bwd < 2 && st == RA_OK; bwd++)
            if (bwd ? mode != RA_GPU_GDN_FWD : mode != RA_GPU_GDN_BWD)
                st = ra_gpu_gdn_seq_launch(cfg, a, bwd, msg, sizeof msg);
    if (st != RA_OK)
        RA_ERRORF(st, "%s", msg[0] ? msg : "cuda gdn: kernel launch failed");
    return RA_OK;
}

ra_status run(const ra_gpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out, int device,
              ra_gpu_gdn_mode mode, double *kernel_ms)
{
    const bool fwd = mode != RA_GPU_GDN_BWD, bwd = mode != RA_GPU_GDN_FWD;
    RA_TRY(check_cfg(cfg));
    ra_gdn_problem p;
    RA_TRY(ra_gdn_problem_init(&p, c, bwd ? RA_GDN_NEED_COTANGENTS : 0, "gdn case"));
    RA_TRY(use_device(device));
    const ra_gdn_shape &s = p.s;
    const int64_t B = s.B, T = s.T, Hk = s.Hk, Hv = s.Hv, K = s.K, V = s.V;
    const int64_t nv = B * T * Hv * V, ng = B * T * Hv, ns = B * Hv * K * V, nqv = B * T * Hv * K,
                  rows = B * T * Hk;

    Arena ar;
    ra_gpu_gdn_args a;
    memset(&a, 0, sizeof a);
    a.s = s;
    a.scale = (float)p.scale;
    float *q, *k, *v, *g, *beta, *h0 = nullptr;
    /* q, k, v as stored too when that is bf16 and l2norm does not change
       them: the bf16 kernels read those (args::qb) */
    RA_TRY(upload(&q, ar, p.q, p.l2norm ? nullptr : &a.qb));
    RA_TRY(upload(&k, ar, p.k, p.l2norm ? nullptr : &a.kb));
    RA_TRY(upload(&v, ar, p.v, p.l2norm ? nullptr : &a.vb));
    RA_TRY(upload(&g, ar, p.g));
    RA_TRY(upload(&beta, ar, p.beta));
    if (p.h0)
        RA_TRY(upload(&h0, ar, p.h0));
    a.q = q, a.k = k, a.v = v, a.g = g, a.beta = beta, a.h0 = h0;

    /* The forward alone normalises in place; the backward keeps x and n
       for the chain rule. */
    float *qn = q, *kn = k, *qnrm = nullptr, *knrm = nullptr;
    if (p.l2norm) {
        if (bwd) {
            RA_TRY(dev_floats(&qn, ar, rows * K, "the normalised q"));
            RA_TRY(dev_floats(&kn, ar, rows * K, "the normalised k"));
            RA_TRY(dev_floats(&qnrm, ar, rows, "the norms of q"));
            RA_TRY(dev_floats(&knrm, ar, rows, "the norms of k"));
        }
        RA_TRY(l2norm(qn, qnrm, q, ar, p, "q"));
        RA_TRY(l2norm(kn, knrm, k, ar, p, "k"));
        a.q = qn, a.k = kn;
    }

    const int64_t qk_shape[4] = {B, T, Hk, K}, v_shape[4] = {B, T, Hv, V},
                  gate_shape[3] = {B, T, Hv}, state_shape[4] = {B, Hv, K, V};
    if (fwd) {
        RA_TRY(dev_floats(&a.o, ar, nv, "o"));
        RA_TRY(dev_floats(&a.ht, ar, ns, "ht"));
    }
    float *dq = nullptr, *dk = nullptr;
    /* With a value head per key head and no l2norm, the group sum would
       copy dqv and dkv: they are dq and dk. */
    const bool group_sums = bwd && (Hv != Hk || p.l2norm);
    if (bwd) {
        float *dO, *dht = nullptr;
        RA_TRY(upload(&dO, ar, p.do_, &a.dob));
        if (p.dht)
            RA_TRY(upload(&dht, ar, p.dht));
        a.do_ = dO, a.dht = dht;
        RA_TRY(dev_floats(&a.dqv, ar, nqv, "dq per value head"));
        RA_TRY(dev_floats(&a.dkv, ar, nqv, "dk per value head"));
        RA_TRY(dev_floats(&a.dv, ar, nv, "dv"));
        RA_TRY(dev_floats(&a.dg, ar, ng, "dg"));
        RA_TRY(dev_floats(&a.dbeta, ar, ng, "dbeta"));
        if (p.h0)
            RA_TRY(dev_floats(&a.dh0, ar, ns, "dh0"));
        dq = a.dqv, dk = a.dkv;
        if (group_sums) {
            RA_TRY(dev_floats(&dq, ar, rows * K, "dq"));
            RA_TRY(dev_floats(&dk, ar, rows * K, "dk"));
        }
    }

    Workspace ws;
    RA_TRY(workspace(&ws, ar, cfg, &a));
    KernelTimer timer;
    RA_TRY(timer.begin(kernel_ms, ar, device));
    RA_TRY(launch(cfg, &a, mode, ws));
    if (group_sums) {
        group_sum_rows<<<grid_for(32 * rows), 256>>>(dq, a.dqv, q, qnrm, rows, Hk, Hv / Hk, K);
        group_sum_rows<<<grid_for(32 * rows), 256>>>(dk, a.dkv, k, knrm, rows, Hk, Hv / Hk, K);
        CU_TRY(cudaGetLastError(), "launch of the group-sum kernel");
    }
    RA_TRY(timer.end());
    CU_TRY(cudaDeviceSynchronize(), bwd ? "group sums of dq, dk" : "the forward");

    if (fwd) {
        RA_TRY(emit(out, ar, "o", cfg->act_dtype, 4, v_shape, a.o));
        RA_TRY(emit(out, ar, "ht", cfg->aux_dtype, 4, state_shape, a.ht));
    }
    if (!bwd)
        return RA_OK;
    RA_TRY(emit(out, ar, "dq", cfg->act_dtype, 4, qk_shape, dq));
    RA_TRY(emit(out, ar, "dk", cfg->act_dtype, 4, qk_shape, dk));
    RA_TRY(emit(out, ar, "dv", cfg->act_dtype, 4, v_shape, a.dv));
    RA_TRY(emit(out, ar, "dg", cfg->aux_dtype, 3, gate_shape, a.dg));
    RA_TRY(emit(out, ar, "dbeta", cfg->aux_dtype, 3, gate_shape, a.dbeta));
    if (p.h0)
        RA_TRY(emit(out, ar, "dh0", cfg->aux_dtype, 4, state_shape, a.dh0));
    return RA_OK;
}

} // namespace

extern "C" ra_status ra_gpu_gdn_forward(const ra_gpu_gdn_cfg *cfg, const ra_case *c,
                                        ra_tensors *out, int device, double *kernel_ms)
{
    return run(cfg, c, out, device, RA_GPU_GDN_FWD, kernel_ms);
}

extern "C" ra_status ra_gpu_gdn_backward(const ra_gpu_gdn_cfg *cfg, const ra_case *c,
                                         ra_tensors *grads, int device, double *kernel_ms)
{
    return run(cfg, c, grads, device, RA_GPU_GDN_BWD, kernel_ms);
}

extern "C" ra_status ra_gpu_gdn_forward_backward(const ra_gpu_gdn_cfg *cfg, const ra_case *c,
                                                 ra_tensors *out, int device, double *kernel_ms)
{
    return run(cfg, c, out, device, RA_GPU_GDN_FWD_BWD, kernel_ms);
}
