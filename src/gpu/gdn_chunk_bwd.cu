/* Chunked CUDA gdn backward kernel: the gradients per (head, chunk). */

/*
 * The CPU twin's RN(chunk_backward) (src/cpu/gdn_tmpl_chunk_bwd.h, which
 * holds the derivation, steps (1)..(10) below), after the forward's prep
 * and states kernels have left every chunk's S' (st(S), bf16 in the bf16
 * configuration), T, W, U, V' and P in its slice (the same bits as the
 * forward's):
 *
 *   dstates  (gdn_chunk_pass.cu) per (head, column tile of the state),
 *            chunks in reverse: the end cotangent dS of each chunk into
 *            its slice (from dht or zero), (1) dV' from it, and (5)'s
 *            recursion to the chunk's start; what is left after the first
 *            chunk is dh0;
 *   grads    per (head, chunk): steps (2)..(10) from S', dS, V', dV':
 *            dq, dk of this value head (the driver sums the group), dv,
 *            dg, dbeta.
 *
 * Accumulation orders follow the CPU where a sum is a rounding point of
 * the algorithm: the gate cotangent dG gets its contributions step by step
 * in the CPU's order (for the pair terms of (2) and (9), index m first
 * adds its row terms in increasing j, then subtracts its column terms in
 * increasing i, which is the order of the CPU's i-j loop), row dot products
 * are one fmaf chain per row.  The one long reduction, <dS, S> over K*V in
 * (5), is a fixed-shape block tree of fmaf partial chains instead of the
 * CPU's single chain: deterministic, and its rounding error is smaller.
 *
 * Three kernels run these steps (chunk_grads): the general one, its
 * products blk_mm's, and at the production head in IEEE (chunk 64,
 * K = V = 128) one whose products are ffma_mm's, each operand staged
 * whole in shared memory and run as register tiles of the same fmaf
 * chains (H200, B=1, T=8192, Hv=32: 6.83 against 4.74 ms, ncu).  The
 * 3xtf32 kernel at the same head runs x3_mm's products (each operand split
 * once into tf32 word pairs in shared memory, blk_mm's k-steps).  The
 * steps, and so the bits, are the same; gpu-bits checks them.
 */

#include "gpu/ffma_mm.cuh"
#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_bf16.cuh"
#include "gpu/gdn_chunk_grads.cuh"
#include "gpu/gdn_chunk_kernels.h"
#include "gpu/x3_mm.cuh"

namespace ra_gpu
{

/* term(i, j) <- coef(i) term(i, j), then dst(i, j) += term(i, j), for
   i < L, j < K (term row-major K wide, dst row stride ldd). */
template <typename CF>
__device__ __forceinline__ void add_scaled_rows(float *dst, int64_t ldd, float *term, int L, int K,
                                                CF coef)
{
    ew(
        L, K,
        [&](int i, int j) {
            const float x = __fmul_rn(coef(i), term[i * K + j]);
            return make_float2(__fadd_rn(dst[i * ldd + j], x), x);
        },
        [&](int i, int j, float2 r) {
            dst[i * ldd + j] = r.x;
            term[i * K + j] = r.y;
        });
}

/* The pair terms of a C x C cotangent x (rows and columns < L): with
   y = yf(x(i, j)), z(i, j) = y m(i, j) for j < i (the gate terms) and
   x(i, j) <- y d(i, j) on j < i, and on j == i when diag; zero elsewhere. */
template <typename YF>
__device__ __forceinline__ void pair_terms(float *x, float *z, const float *m, const float *d,
                                           int C, int L, bool diag, YF yf)
{
    ew(
        L, L,
        [&](int i, int j) {
            const int o = i * C + j;
            if (j > i || (j == i && !diag))
                return make_float2(0.f, 0.f);
            const float y = yf(x[o]);
            return make_float2(__fmul_rn(y, d[o]), __fmul_rn(y, m[o]));
        },
        [&](int i, int j, float2 r) {
            x[i * C + j] = r.x;
            if (j < i)
                z[i * C + j] = r.y;
        });
}

/* chunk_grads' products and reductions.  In the general kernel (FF
   false) blk_mm<P>, row_dot and blk_dot<1>, written out at each call site:
   through a policy object's inline members instead, the tf32, 3xtf32 and
   bf16 instances compiled to other machine code (bench/same-sass.sh,
   comparing .text).  In the production head's IEEE and 3xtf32 kernels (FF)
   ffma_mm or x3_mm on the block's shared memory fm, and row_dot's and blk_dot's
   chains with their loads issued ahead (16 float4s a row, eight terms a
   lane), since there most of the block waits at the next barrier while
   the L threads of a row dot run. */
#define RA_GRADS_MM(c, ldc, m, n, kc, a, b, acc)                                                   \
    do {                                                                                           \
        if constexpr (FF && P == RA_GPU_PREC_IEEE)                                                 \
            ffma_mm(fm, c, ldc, m, n, kc, a, b, acc);                                              \
        else if constexpr (FF)                                                                     \
            x3_mm(reinterpret_cast<uint32_t *>(fm), c, ldc, m, n, kc, a, b, acc);                  \
        else                                                                                       \
            blk_mm<P>(c, ldc, 0, m, n, kc, a, b, acc);                                             \
    } while (0)
#define RA_GRADS_RDOT(x, y, n) (FF && (n) == PK ? row_dot_ld4<PK>(x, y) : row_dot(x, y, n))
#define RA_GRADS_BDOT(x, y, n, red) (FF ? blk_dot<8>(x, y, n, red) : blk_dot<1>(x, y, n, red))

/* Gradients of one chunk from its slice: S' (w.Sst), the end cotangent
   (w.dS), V', dV' and P; products and reductions by the RA_GRADS_
   macros (FF: the production head's IEEE kernel, fm its shared memory;
   the same chains either way, so the same bits). */
template <int P, bool FF>
__device__ __forceinline__ void chunk_grads(const cws &w, const head &h, int64_t t0, int L,
                                            float *red, float *fm)
{
    const int C = w.C, K = w.K, V = w.V, KV = K * V;
    const float s = h.scale;
    const float *q = h.q + t0 * h.qs, *k = h.k + t0 * h.qs, *v = h.v + t0 * h.vs,
                *beta = h.beta + t0 * h.gs, *dO = h.dO + t0 * h.vs;
    float *dq = h.dq + t0 * h.ks, *dk = h.dk + t0 * h.ks, *dv = h.dv + t0 * h.vs,
          *dgo = h.dg + t0 * h.gs, *dbo = h.dbeta + t0 * h.gs, *dG = w.dG;
    const float gl = w.G[L - 1], gC = expf(gl);

    for (int i = threadIdx.x; i < L; i += blockDim.x)
        dG[i] = 0.f, dbo[i * h.gs] = 0.f;
    /* (1), dV', came from the dstates pass. (2) dP = s dO V'^T -> gate terms, then dP <- d(QK^T) =
     * dP . M */
    RA_GRADS_MM(w.dP, C, L, L, V, mk(dO, h.vs, 1), mk(w.Vp, 1, V), false);
    __syncthreads();
    pair_terms(w.dP, w.Z, w.P, w.Dm, C, L, true, [&](float x) { return __fmul_rn(s, x); });
    __syncthreads();
    pair_gates(dG, w.Z, C, L);
    /* (3) dQ = d(QK^T) K + s diag(gamma) dO S^T, with its gamma gate term */
    RA_GRADS_MM(dq, h.ks, L, K, L, mk(w.dP, C, 1), mk(k, h.qs, 1), false);
    RA_GRADS_MM(w.dQc, K, L, K, V, mk(dO, h.vs, 1), mk(w.Sst, 1, V), false);
    __syncthreads();
    add_scaled_rows(dq, h.ks, w.dQc, L, K, [&](int i) { return __fmul_rn(s, w.gam[i]); });
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += blockDim.x)
        dG[i] = __fadd_rn(dG[i], RA_GRADS_RDOT(q + i * h.qs, w.dQc + i * K, K));
    __syncthreads();
    /* (4) dK = d(QK^T)^T Q + diag(delta) V' dSn^T, with its delta gate terms */
    RA_GRADS_MM(dk, h.ks, L, K, L, mk(w.dP, 1, C), mk(q, h.qs, 1), false);
    RA_GRADS_MM(w.dKc, K, L, K, V, mk(w.Vp, V, 1), mk(w.dS, 1, V), false);
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += blockDim.x)
        w.tmp[i] = expf(__fsub_rn(gl, w.G[i]));
    __syncthreads();
    add_scaled_rows(dk, h.ks, w.dKc, L, K, [&](int i) { return w.tmp[i]; });
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += blockDim.x)
        w.tmp[i] = RA_GRADS_RDOT(k + i * h.qs, w.dKc + i * K, K);
    __syncthreads();
    for (int m = threadIdx.x; m < L; m += blockDim.x)
        dG[m] = delta_gate(dG[m], w.tmp, m, L);
    /* (5) the gC gate (the dS recursion ran in the dstates pass) */
    const float sd = RA_GRADS_BDOT(w.dS, w.Sst, KV, red); /* synchronises */
    if (threadIdx.x == 0)
        dG[L - 1] = __fadd_rn(dG[L - 1], __fmul_rn(gC, sd));
    /* (6) dW = -dV' S^T */
    RA_GRADS_MM(w.dW, K, L, K, V, mk(w.dVp, V, 1), mk(w.Sst, 1, V), false);
    __syncthreads();
    ew_to(w.dW, K, L, K, [&](int i, int j) { return -w.dW[i * K + j]; });
    __syncthreads();
    /* (7) dT = dV' X^T + dW Y^T (strict lower); dX = T^T dV', dY = T^T dW */
    RA_GRADS_MM(w.dT, C, L, L, V, mk(w.dVp, V, 1), mk(w.X, 1, V), false);
    __syncthreads();
    RA_GRADS_MM(w.dT, C, L, L, K, mk(w.dW, K, 1), mk(w.Y, 1, K), true);
    RA_GRADS_MM(w.dX, V, L, V, L, mk(w.T, 1, C), mk(w.dVp, V, 1), false);
    RA_GRADS_MM(w.dY, K, L, K, L, mk(w.T, 1, C), mk(w.dW, K, 1), false);
    __syncthreads();
    for (int e = threadIdx.x; e < L * L; e += blockDim.x) {
        const int i = e / L, j = e % L;
        if (j >= i)
            w.dT[i * C + j] = 0.f;
    }
    ew_to(dv, h.vs, L, V, [&](int i, int j) { return __fmul_rn(beta[i * h.gs], w.dX[i * V + j]); });
    ew_to(dk, h.ks, L, K, [&](int i, int j) {
        const float bg = __fmul_rn(beta[i * h.gs], w.gam[i]);
        return fmaf(bg, w.dY[i * K + j], dk[i * h.ks + j]);
    });
    for (int i = threadIdx.x; i < L; i += blockDim.x) {
        const float x = RA_GRADS_RDOT(v + i * h.vs, w.dX + i * V, V),
                    y = RA_GRADS_RDOT(k + i * h.qs, w.dY + i * K, K);
        const float bg = __fmul_rn(beta[i * h.gs], w.gam[i]);
        dbo[i * h.gs] = __fadd_rn(__fadd_rn(dbo[i * h.gs], x), __fmul_rn(w.gam[i], y));
        dG[i] = __fadd_rn(dG[i], __fmul_rn(bg, y));
    }
    __syncthreads();
    /* (8) dA = -T^T dT T^T on the strict lower triangle */
    RA_GRADS_MM(w.Z, C, L, L, L, mk(w.dT, C, 1), mk(w.T, 1, C), false);
    __syncthreads();
    RA_GRADS_MM(w.dA, C, L, L, L, mk(w.T, 1, C), mk(w.Z, C, 1), false);
    __syncthreads();
    /* (9) A terms: gates, then dGram = dA . D into dA, dKb, dK, dbeta */
    pair_terms(w.dA, w.Z, w.A, w.Dm, C, L, false, [](float x) { return -x; });
    __syncthreads();
    pair_gates(dG, w.Z, C, L);
    RA_GRADS_MM(w.tK, K, L, K, L, mk(w.dA, C, 1), mk(k, h.qs, 1), false);
    RA_GRADS_MM(dk, h.ks, L, K, L, mk(w.dA, 1, C), mk(w.Kb, K, 1), true);
    __syncthreads();
    ew_to(dk, h.ks, L, K,
          [&](int i, int j) { return fmaf(beta[i * h.gs], w.tK[i * K + j], dk[i * h.ks + j]); });
    for (int i = threadIdx.x; i < L; i += blockDim.x)
        dbo[i * h.gs] = __fadd_rn(dbo[i * h.gs], RA_GRADS_RDOT(k + i * h.qs, w.tK + i * K, K));
    __syncthreads();
    /* (10) dg = reverse cumulative sum of dG */
    /* rev_cumsum's loop (gdn_chunk_grads.cuh), written out: called here,
       ptxas -v spilled in four instances of this kernel (tf32x3 and bf16
       44 and 56 more bytes), whichever way the call was put */
    if (threadIdx.x == 0) {
        const float *__restrict__ src = dG;
        float *__restrict__ dst = dgo;
        float acc = 0.f;
#pragma unroll 8
        for (int i = L - 1; i >= 0; i--) {
            acc = __fadd_rn(acc, src[i]);
            dst[i * h.gs] = acc;
        }
    }
    __syncthreads();
}

#undef RA_GRADS_MM
#undef RA_GRADS_RDOT
#undef RA_GRADS_BDOT

/* The gradients kernel is capped for 4 blocks per SM, 128 registers: at
   the other kernels' 80 it spilled 1004 bytes per thread (ptxas -v, bf16,
   FIX_C64_KV128), at 128 none.  H200, B=1, T=8192, Hv=32, K=V=128,
   chunk64.bf16 fwd+bwd: 15.09 ms capped for 6 blocks, 14.52 ms for 4. */
constexpr int GRADS_MIN_BLOCKS = 4;

template <int P, int FIX>
__global__ void __launch_bounds__(CHUNK_THREADS, GRADS_MIN_BLOCKS)
    gdn_chunk_grads_kernel(const ra_gpu_gdn_args a, const group g)
{
    __shared__ float red[DOT_LANES];
    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX>(a, g.h0 + hl);
    const int C = fixed_C<FIX>(g);
    chunk_grads<P, false>(make_cws(g, C, h.K, h.V, hl, c), h, c * C, chunk_rows(h, C, c), red,
                          nullptr);
}

/* The production head's gradients in IEEE and 3xtf32: chunk_grads with
   FF, 256 threads (ffma_tile's grid, x3_mm's warps), two blocks per SM
   (ffma_mm's 99 KB of shared memory each, x3_mm's 102 KB).  The chunk's
   G and gamma, and the gate cotangent dG and its scratch, live in shared
   memory (the same values: the serial gate sums read them term by term). */
/* Its static shared memory (red, vec below): it counts against the same
   per-block limit as the dynamic FM_WORDS or X3_WORDS. */
constexpr int GI_STATIC_WORDS = DOT_LANES + 4 * PC;
static_assert(FM_THREADS == X3_THREADS, "one block size for both products");

template <int P>
__device__ __forceinline__ void grads_whole(const ra_gpu_gdn_args &a, const group &g)
{
    extern __shared__ __align__(16) float fm[];
    __shared__ float red[DOT_LANES], vec[4][PC];
    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const int L = chunk_rows(h, PC, c);
    cws w = make_cws(g, PC, PK, PK, hl, c);
    for (int i = threadIdx.x; i < L; i += FM_THREADS)
        vec[0][i] = w.G[i], vec[1][i] = w.gam[i];
    w.G = vec[0], w.gam = vec[1], w.dG = vec[2], w.tmp = vec[3];
    __syncthreads();
    chunk_grads<P, true>(w, h, c * PC, L, red, fm);
}

__global__ void __launch_bounds__(FM_THREADS, 2)
    gdn_chunk_grads_ieee_kernel(const ra_gpu_gdn_args a, const group g)
{
    grads_whole<RA_GPU_PREC_IEEE>(a, g);
}

__global__ void __launch_bounds__(X3_THREADS, 2)
    gdn_chunk_grads_x3_kernel(const ra_gpu_gdn_args a, const group g)
{
    grads_whole<RA_GPU_PREC_TF32X3>(a, g);
}

} // namespace ra_gpu

using ra_gpu::group;

cudaError_t ra_gpu_gdn_chunk_grads(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    if (g->wpairs)
        return ra_gpu_gdn_chunk_grads_bf16(a, g);
    const int64_t optin = smem_optin(), fixed = GI_STATIC_WORDS * 4;
    if (ra_gpu_gdn_chunk_ieee_serves(prec, a, g) && FM_WORDS * 4 + fixed <= optin)
        return launch_smem(gdn_chunk_grads_ieee_kernel, FM_THREADS, FM_WORDS, g, a);
    if (ra_gpu_gdn_chunk_x3_serves(prec, a, g) && X3_WORDS * 4 + fixed <= optin)
        return launch_smem(gdn_chunk_grads_x3_kernel, X3_THREADS, X3_WORDS, g, a);
    const unsigned grid = (unsigned)(g->nh * g->nch);
    return by_prec(prec, [&](auto p) {
        by_fix(*a, *g, [&](auto f) {
            gdn_chunk_grads_kernel<decltype(p)::value, decltype(f)::value>
                <<<grid, CHUNK_THREADS>>>(*a, *g);
        });
    });
}
