/* Chunked CUDA gdn: head views, workspace layout, forward steps shared with the backward. */
#ifndef RA_GPU_GDN_CHUNK_CUH
#define RA_GPU_GDN_CHUNK_CUH

/*
 * The kernels follow the CPU twin (src/cpu/gdn_tmpl_chunk.h, whose notation
 * and rounding points this file reproduces step by step):
 *
 *   G = cumsum(g) (one fp32 running sum), gamma = exp(G),
 *   D_ij = exp(G_i - G_j) (j <= i), Kb = diag(beta) K,
 *   A = strict_lower((Kb K^T) . D), T = st((I + A)^-1),
 *   W = st(T (Kb * gamma)), U = st(T (diag(beta) V)),
 *   S' = st(S), V' = U - W S',
 *   O = (gamma * (Q S')) scale + ((Q K^T) . D)_{j<=i} V' scale,
 *   S <- exp(G_{L-1}) S + K^T (exp(G_{L-1} - G) * V').
 * Every product is blk_mm<P> (operands rounded by P), or x3_mm with the
 * same bits in the production head's 3xtf32 output kernel; st() rounds to bf16
 * in the bf16 configuration (T, W, U and chunk states stored in bf16, as
 * fla) and is the identity otherwise; the running state S, the gates and
 * every elementwise step stay in fp32.  Elementwise steps are written with
 * __fmul_rn / __fadd_rn / fmaf so that nvcc's FMA contraction cannot fuse
 * what the CPU twin (built with -ffp-contract=off) rounds twice.  expf is
 * CUDA's (<= 2 ulp), the CPU's is glibc's: the one place where the IEEE
 * configuration is not bit-identical to its twin.
 *
 * Work is split as in production chunked kernels, so that everything
 * without a dependence between chunks runs one block per (head, chunk):
 *
 *   prep    per (head, chunk): G, gamma, D, A, T, W, U and the masked
 *           P = (Q K^T) . D;
 *   states  per (head, column tile of the state): the one sequential
 *           pass, S' and V' of every chunk from the running state;
 *   output  per (head, chunk): O from S', V', P (forward);
 *   dstates per (head, column tile): the reverse pass, dS at every chunk
 *           end and dV' from it (backward);
 *   grads   per (head, chunk): every gradient from S', dS, V', dV'.
 *
 * In bf16 at the production head (chunk 64, K = V = 128, forward
 * substitution) prep and output are the shared-memory kernels of
 * gdn_chunk_fwd_bf16.cu, in IEEE those of gdn_chunk_fwd_ieee.cu, with the
 * same arithmetic.
 *
 * The columns of the state are independent in both passes (V' = U - W S'
 * and the update act column by column, and so do dV' and the dS
 * recursion), and blk_mm computes each output element by itself, so the
 * split changes no rounding: each kernel's results are bit for bit those
 * of one block walking the head's chunks in order.
 *
 * Each (head, chunk) owns a workspace slice (128-byte aligned arrays)
 * written by the prep kernel and the passes (the passes only touch their
 * own columns); the passes keep their running state in shared memory
 * (gdn_chunk_pass.cu).  Heads are processed in groups when the whole
 * problem's workspace would not fit (gdn_chunk.cu).
 */

#include <cstdint>
#include <type_traits>

#include "gpu/blk_mm.cuh"
#include "gpu/gdn_chunk_inverse.cuh"
#include "gpu/gdn_cuda_cxx.h"
#include "gpu/x3_mm.cuh"

namespace ra_gpu
{

/* Threads of the per-(head, chunk) kernels, and the blocks per SM their
   registers are capped for (80 registers either way; the gradients kernel
   has its own cap, GRADS_MIN_BLOCKS).  3 blocks of 256
   rather than the 2 ptxas chose by itself made chunk64.bf16 fwd+bwd about
   10% faster on the H200; 6 blocks of 128 keep as many warps per SM and
   leave fewer of them waiting at the barriers of the steps that run one
   thread per row (row dots, gate sums, the forward substitution): ncu at
   B=1, T=8192, Hv=32, K=V=128, bf16, prep 1.91 to 1.79 ms, grads 6.14 to
   5.94 ms. */
constexpr int CHUNK_THREADS = 128, CHUNK_MIN_BLOCKS = 6;

/* One (b, hv) head of the problem: bases at token 0 and token strides. */
struct head {
    int64_t T;
    int K, V;
    float scale;
    const float *q, *k;           /* token stride qs = Hk*K */
    const float *v;               /* token stride vs = Hv*V */
    const uint16_t *qb, *kb, *vb; /* their stored bf16 (args::qb), or NULL */
    const uint16_t *dOb;          /* dO's (args::dob), or NULL */
    const float *g, *beta;        /* token stride gs = Hv */
    const float *h0, *dO, *dht;
    float *o, *ht;
    float *dq, *dk; /* token stride ks = Hv*K (per value head) */
    float *dv, *dg, *dbeta, *dh0;
    int qs, vs, gs, ks; /* < 2^31 / (C + 1): checked by the launch */
};

/* The sizes a kernel instance is compiled for: FIX_ANY reads the chunk
   length C and the head sizes K, V from its arguments; FIX_C64_KV128, the
   production head (chunk 64, K = V = 128), has them as constants.  With
   every size a constant, each workspace array of a (head, chunk) lies at a
   constant offset from the slice base, and the products' shapes and the
   elementwise steps' index steps fold: ptxas -v, bf16, prep spills 0
   bytes against 228 in FIX_ANY, grads 1004 against 1256 at an 80-register
   cap.  The arithmetic is the same, so the bits are. */
enum { FIX_ANY = 0, FIX_C64_KV128 = 1 };

template <int FIX = FIX_ANY> __device__ inline head make_head(const ra_gpu_gdn_args &a, int64_t bh)
{
    const ra_gdn_shape &s = a.s;
    const int64_t b = bh / s.Hv, hv = bh % s.Hv, hk = hv / (s.Hv / s.Hk);
    head h;
    h.T = s.T, h.scale = a.scale;
    h.K = FIX == FIX_C64_KV128 ? 128 : (int)s.K;
    h.V = FIX == FIX_C64_KV128 ? 128 : (int)s.V;
    h.qs = (int)(s.Hk * s.K), h.vs = (int)(s.Hv * s.V), h.gs = (int)s.Hv, h.ks = (int)(s.Hv * s.K);
    const int64_t qk0 = b * s.T * h.qs + hk * s.K, v0 = b * s.T * h.vs + hv * s.V,
                  g0 = b * s.T * h.gs + hv, k0 = b * s.T * h.ks + hv * s.K, st0 = bh * s.K * s.V;
    h.q = a.q + qk0, h.k = a.k + qk0, h.v = a.v + v0, h.g = a.g + g0, h.beta = a.beta + g0;
    h.qb = a.qb ? a.qb + qk0 : nullptr, h.kb = a.kb ? a.kb + qk0 : nullptr;
    h.vb = a.vb ? a.vb + v0 : nullptr;
    h.h0 = a.h0 ? a.h0 + st0 : nullptr;
    h.dO = a.do_ ? a.do_ + v0 : nullptr;
    h.dOb = a.dob ? a.dob + v0 : nullptr;
    h.dht = a.dht ? a.dht + st0 : nullptr;
    h.o = a.o ? a.o + v0 : nullptr;
    h.ht = a.ht ? a.ht + st0 : nullptr;
    h.dq = a.dqv ? a.dqv + k0 : nullptr;
    h.dk = a.dkv ? a.dkv + k0 : nullptr;
    h.dv = a.dv ? a.dv + v0 : nullptr;
    h.dg = a.dg ? a.dg + g0 : nullptr;
    h.dbeta = a.dbeta ? a.dbeta + g0 : nullptr;
    h.dh0 = a.dh0 ? a.dh0 + st0 : nullptr;
    return h;
}

/* Working arrays of one (head, chunk) (names of the CPU twin's RN(cws)). */
struct cws {
    int C, K, V, inv;
    float *G, *gam, *dG, *tmp;                    /* C */
    float *A, *T, *Dm, *P, *dP, *dT, *Z, *dA;     /* C x C */
    float *Kb, *Y, *W, *dQc, *dKc, *dW, *dY, *tK; /* C x K */
    float *X, *U, *Vp, *QS, *dVp, *dX;            /* C x V */
    float *Sst, *dS;                              /* K x V: start state, end cotangent */
    float *inv_scr;                               /* inverse scratch */
    /* W and K^T as bf16 pair tiles (pair_tile.cuh) for the states pass
       (W for the dstates pass too), when group::wpairs, and Q^T for the
       dstates pass and grads when the group runs the backward: they lie
       in dQc, dKc and dW, which only the gradients kernel writes, after
       both passes; P as the dstates pass's pair tile (Pbp) in D's, which
       no kernel of such a group uses.  The prep leaves P, and the states
       pass S'^T and V'^T, as the output kernel's pair tiles (Pp, Stp,
       Vtp): in a forward group in P's, Sst's and Vp's storage, whose fp32
       values only the backward's kernels read; where make_cws says in a
       group that runs both. */
    uint32_t *Wp, *Ktp, *Qtp, *Pbp, *Pp, *Stp, *Vtp;
};

__host__ __device__ inline int64_t ws_align(int64_t n) { return (n + 31) / 32 * 32; }

/* Floats of one (head, chunk) slice. */
__host__ __device__ inline int64_t ws_chunk_len(int C, int K, int V)
{
    return 4 * ws_align(C) + 8 * ws_align((int64_t)C * C) + 8 * ws_align((int64_t)C * K) +
           6 * ws_align((int64_t)C * V) + 2 * ws_align((int64_t)K * V) +
           ws_align(inv_scratch_len(C));
}

/* A group of heads [h0, h0 + nh) and its workspace: nh * nch chunk slices;
   bwd when the gradients kernel will read the slices (a prep may leave out
   what only the gradients need otherwise), out when the output kernel
   runs (the forward, or both in one training step: then prep and the
   states pass serve the output and the backward's kernels at once),
   wpairs when the bf16
   shared-memory prep and output of gdn_chunk_fwd_bf16.cu serve the group
   (ra_gpu_gdn_chunk_fwd_bf16_serves), whose prep leaves W and K^T as bf16
   pair tiles too (cws::Wp, cws::Ktp), and Q^T when bwd. */
struct group {
    int64_t h0, nh, nch;
    int C, inv;
    bool bwd, out, wpairs;
    float *ws;
};

__host__ __device__ inline int64_t group_floats(int64_t nh, int64_t nch, int C, int K, int V)
{
    return nh * nch * ws_chunk_len(C, K, V);
}

/* The chunk length of instance FIX. */
template <int FIX> __device__ __forceinline__ int fixed_C(const group &g)
{
    return FIX == FIX_C64_KV128 ? 64 : g.C;
}

__device__ inline cws make_cws(const group &g, int C, int K, int V, int64_t hl, int64_t c)
{
    cws w;
    w.C = C, w.K = K, w.V = V, w.inv = g.inv;
    float *p = g.ws + (hl * g.nch + c) * ws_chunk_len(C, K, V);
    auto take = [&p](int64_t n) {
        float *r = p;
        p += ws_align(n);
        return r;
    };
    const int64_t CC = (int64_t)C * C, CK = (int64_t)C * K, CV = (int64_t)C * V,
                  KV = (int64_t)K * V;
    w.G = take(C), w.gam = take(C), w.dG = take(C), w.tmp = take(C);
    w.A = take(CC), w.T = take(CC), w.Dm = take(CC), w.P = take(CC);
    w.dP = take(CC), w.dT = take(CC), w.Z = take(CC), w.dA = take(CC);
    w.Kb = take(CK), w.Y = take(CK), w.W = take(CK), w.dQc = take(CK);
    w.dKc = take(CK), w.dW = take(CK), w.dY = take(CK), w.tK = take(CK);
    w.X = take(CV), w.U = take(CV), w.Vp = take(CV);
    w.QS = take(CV), w.dVp = take(CV), w.dX = take(CV);
    w.Sst = take(KV), w.dS = take(KV);
    w.inv_scr = take(inv_scratch_len(C));
    w.Wp = reinterpret_cast<uint32_t *>(w.dQc);
    w.Ktp = reinterpret_cast<uint32_t *>(w.dKc);
    w.Qtp = reinterpret_cast<uint32_t *>(w.dW);
    w.Pbp = reinterpret_cast<uint32_t *>(w.Dm);
    /* A group that runs the backward keeps S', V' and P in fp32, and P's
       pair tile in D's storage in the output kernel's layout: when it runs
       the output kernel too (a training step), that reads Pbp, and S'^T
       and V'^T go to dS's and dV''s storage, which only the dstates pass
       writes, after the output kernel. */
    w.Pp = reinterpret_cast<uint32_t *>(g.bwd ? w.Dm : w.P);
    w.Stp = reinterpret_cast<uint32_t *>(g.bwd ? w.dS : w.Sst);
    w.Vtp = reinterpret_cast<uint32_t *>(g.bwd ? w.dVp : w.Vp);
    return w;
}

/* Storage rounding of the bf16 configuration. */
template <int P> __device__ __forceinline__ float st(float x)
{
    return P == RA_GPU_PREC_BF16 ? bf16_round(x) : x;
}

/* Rows in chunk c: C, or the remainder for the last one. */
__device__ __forceinline__ int chunk_rows(const head &h, int C, int64_t c)
{
    const int64_t r = h.T - c * C;
    return r < C ? (int)r : C;
}

/* store(i, j, load(i, j)) for every element (i, j) of rows x cols this
   thread owns (row-major index e = i * cols + j from threadIdx.x in
   strides of blockDim.x), in groups of four whose loads all issue before
   the group's first store: in a plain loop that reads global memory and
   writes the workspace the compiler cannot move the next load above the
   store (the pointers may alias).  Measured on the H200 at the bench
   shapes the grouping changed nothing (chunk64.bf16 fwd+bwd 24.10 against
   23.96 ms at B=1, T=8192, Hv=32: the other resident warps already hid
   the latency); it stays as the one form of the kernels' elementwise
   steps.  (i, j) advance by the stride's quotient and remainder, found
   once: a division per element by a run-time width was most of these
   loops' instructions (ncu, 740107a).  Elements of a group are distinct,
   so a load never sees another element's store of the same group. */
template <typename LD, typename ST>
__device__ __forceinline__ void ew(int rows, int cols, LD load, ST store)
{
    constexpr int U = 4;
    const int step = blockDim.x, di = step / cols, dj = step % cols;
    int i = threadIdx.x / cols, j = threadIdx.x % cols;
    while (i < rows) {
        decltype(load(0, 0)) x[U];
        int ri[U], rj[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            ri[u] = i, rj[u] = j;
            if (i < rows)
                x[u] = load(i, j);
            i += di, j += dj;
            if (j >= cols)
                i++, j -= cols;
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            if (ri[u] < rows)
                store(ri[u], rj[u], x[u]);
    }
}

/* ew storing into dst[i * ld + j]. */
template <typename LD>
__device__ __forceinline__ void ew_to(float *dst, int64_t ld, int rows, int cols, LD load)
{
    ew(rows, cols, load, [dst, ld](int i, int j, float x) { dst[i * ld + j] = x; });
}

/* D(i, j) = exp(G_i - G_j) on j <= i < L, else zero. */
__device__ __forceinline__ float decay(const float *G, int L, int i, int j)
{
    return (i < L && j <= i) ? expf(__fsub_rn(G[i], G[j])) : 0.f;
}

/* The steps' products: blk_mm<P>, or with FF (the production head's
   3xtf32 output kernel, xs its X3_WORDS of shared memory) x3_mm, the same
   bits from operands staged whole.  A macro, as chunk_grads' (through an
   inline function, the general prep and output kernels compiled to
   other code). */
#define RA_CHUNK_MM(c, ldc, m, n, kc, a, b)                                                        \
    do {                                                                                           \
        if constexpr (FF) {                                                                        \
            static_assert(P == RA_GPU_PREC_TF32X3, "x3_mm is 3xtf32");                             \
            x3_mm(xs, c, ldc, m, n, kc, a, b, false);                                              \
        } else {                                                                                   \
            blk_mm<P>(c, ldc, 0, m, n, kc, a, b, false);                                           \
        }                                                                                          \
    } while (0)

/* G, gamma, D, A, T, W, U of the chunk at token t0 (L rows). */
template <int P> __device__ void chunk_prep(const cws &w, const head &h, int64_t t0, int L)
{
    const int C = w.C, K = w.K, V = w.V;
    const float *k = h.k + t0 * h.qs, *v = h.v + t0 * h.vs, *g = h.g + t0 * h.gs,
                *beta = h.beta + t0 * h.gs;
    if (threadIdx.x == 0) { /* the CPU's running sum, in its order */
        const float *__restrict__ src = g;
        float *__restrict__ dst = w.G;
        float run = 0.f;
#pragma unroll 8
        for (int i = 0; i < L; i++) {
            run = __fadd_rn(run, src[i * h.gs]);
            dst[i] = run;
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < L; i += blockDim.x)
        w.gam[i] = expf(w.G[i]);
    ew_to(w.Dm, C, C, C, [&](int i, int j) { return decay(w.G, L, i, j); });
    ew_to(w.Kb, K, L, K, [&](int i, int j) { return __fmul_rn(k[i * h.qs + j], beta[i * h.gs]); });
    __syncthreads();
    blk_mm<P>(w.A, C, 0, L, L, K, mk(w.Kb, K, 1), mk(k, 1, h.qs), false);
    __syncthreads();
    ew_to(w.A, C, C, C, [&](int i, int j) {
        const int e = i * C + j;
        return (i < L && j < i) ? __fmul_rn(w.A[e], w.Dm[e]) : 0.f;
    });
    __syncthreads();
    inverse<P>(w.T, w.A, C, w.inv, w.inv_scr); /* ends synchronised */
    /* st() is the identity but in bf16 */
    if (P == RA_GPU_PREC_BF16)
        ew_to(w.T, C, L, C, [&](int i, int j) {
            const float x = w.T[i * C + j];
            return j <= i ? st<P>(x) : x;
        });
    ew_to(w.Y, K, L, K, [&](int i, int j) { return __fmul_rn(w.Kb[i * K + j], w.gam[i]); });
    ew_to(w.X, V, L, V, [&](int i, int j) { return __fmul_rn(v[i * h.vs + j], beta[i * h.gs]); });
    __syncthreads();
    blk_mm<P>(w.W, K, 0, L, K, L, mk(w.T, C, 1), mk(w.Y, K, 1), false);
    blk_mm<P>(w.U, V, 0, L, V, L, mk(w.T, C, 1), mk(w.X, V, 1), false);
    __syncthreads();
    if (P == RA_GPU_PREC_BF16) {
        ew_to(w.W, K, L, K, [&](int i, int j) { return st<P>(w.W[i * K + j]); });
        ew_to(w.U, V, L, V, [&](int i, int j) { return st<P>(w.U[i * V + j]); });
        __syncthreads();
    }
}

/* P = (Q K^T) . D on j <= i (zero above). */
template <int P> __device__ void chunk_p(const cws &w, const head &h, int64_t t0, int L)
{
    const int C = w.C, K = w.K;
    blk_mm<P>(w.P, C, 0, L, L, K, mk(h.q + t0 * h.qs, h.qs, 1), mk(h.k + t0 * h.qs, 1, h.qs),
              false);
    __syncthreads();
    ew_to(w.P, C, L, L,
          [&](int i, int j) { return j <= i ? __fmul_rn(w.P[i * C + j], w.Dm[i * C + j]) : 0.f; });
    __syncthreads();
}

/* O rows of the chunk, into h.o, from the slice's S', V' and P. */
template <int P, bool FF = false>
__device__ void chunk_output(const cws &w, const head &h, int64_t t0, int L, uint32_t *xs = nullptr)
{
    const int C = w.C, K = w.K, V = w.V;
    float *o = h.o + t0 * h.vs;
    RA_CHUNK_MM(w.QS, V, L, V, K, mk(h.q + t0 * h.qs, h.qs, 1), mk(w.Sst, V, 1));
    RA_CHUNK_MM(o, h.vs, L, V, L, mk(w.P, C, 1), mk(w.Vp, V, 1));
    __syncthreads();
    ew_to(o, h.vs, L, V, [&](int i, int j) {
        return __fadd_rn(__fmul_rn(__fmul_rn(w.gam[i], w.QS[i * V + j]), h.scale),
                         __fmul_rn(o[i * h.vs + j], h.scale));
    });
}

#undef RA_CHUNK_MM

/* Flattened grid index: (head of the group, chunk). */
__device__ __forceinline__ void chunk_block(const group &g, int64_t &hl, int64_t &c)
{
    hl = blockIdx.x / g.nch, c = blockIdx.x % g.nch;
}

/* Runs f(std::integral_constant<int, P>) for the operand precision prec
   (host side: f launches the instance) and returns the launch error. */
template <typename F> cudaError_t by_prec(int prec, F f)
{
    switch (prec) {
    case RA_GPU_PREC_IEEE:
        f(std::integral_constant<int, RA_GPU_PREC_IEEE>());
        break;
    case RA_GPU_PREC_TF32:
        f(std::integral_constant<int, RA_GPU_PREC_TF32>());
        break;
    case RA_GPU_PREC_TF32X3:
        f(std::integral_constant<int, RA_GPU_PREC_TF32X3>());
        break;
    case RA_GPU_PREC_BF16:
        f(std::integral_constant<int, RA_GPU_PREC_BF16>());
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

/* Runs f(std::integral_constant<int, FIX>) for the instance that serves
   group g of problem a (host side, inside by_prec's f). */
template <typename F> void by_fix(const ra_gpu_gdn_args &a, const group &g, F f)
{
    if (g.C == 64 && a.s.K == 128 && a.s.V == 128)
        f(std::integral_constant<int, FIX_C64_KV128>());
    else
        f(std::integral_constant<int, FIX_ANY>());
}

} // namespace ra_gpu

#endif
