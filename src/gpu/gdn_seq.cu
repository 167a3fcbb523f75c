/* The sequential gated delta rule on CUDA (gdn.cuda.f32): fp32 forward and checkpointed reverse-time backward. */

/*
 * Work split.  One warp per (b, hv, V-tile of 32 columns); lane l owns
 * state column j = 32 tile + l, all K rows of it, in registers (K padded up
 * to 32, 64 or 128; beyond 128 the column lives in a per-warp global
 * scratch, same code).  Padded rows and columns hold exact zeros: their
 * keys, queries, values and cotangents are zero, so every product they add
 * is an exact zero and the real rows and columns are unchanged.  Tokens
 * are staged in batches of NT into shared memory by cp.async, double
 * buffered: the next batch is in flight while the current one is computed;
 * lanes read q and k rows four at a time (16-byte broadcasts).  A warp has
 * only its own lanes to synchronise (__syncwarp), never a block barrier.
 *
 * Rounding points (those of gdn.cpu.f32, src/cpu/gdn_tmpl_seq.h): per token
 * a = exp(g) (computed in double and rounded once to fp32, i.e. correctly
 * rounded but for double-rounding ties, where glibc's expf is within 0.502
 * ulp), S~ = a*S, u = fma chain over the key index in increasing order,
 * u = beta*(v - u), S = fma(k, u, S~), o = fma chain of S with scale*q.
 * Since a lane owns a whole column, every chain over the key index runs in
 * one thread in the CPU's order: the forward (o, ht) is the CPU twin's to
 * the bit whenever the two exps agree.  The update of token t and the
 * decay and u chain of token t+1 share one pass over the column (the same
 * operations per element, in the same order), which gives two independent
 * fma chains per pass instead of one.  Explicit __f*_rn intrinsics keep
 * nvcc from contracting any product into a neighbouring add.
 *
 * Backward (docs/gdn.md's adjoint): the forward is rerun keeping the state
 * every `seg` tokens (seg ~ sqrt(T), a multiple of NT) in a per-warp global
 * checkpoint array; each segment, last first, is recomputed from its
 * checkpoint into a segment buffer (S_{t0} .. S_{t1}, the same step code as
 * the checkpoint pass, so bit-identical states; no step is ever inverted)
 * and walked backwards with lambda = dL/dS_t in registers (in shared
 * memory when K is padded to 128, where registers would spill).  Per
 * token, the column chains u and du = lambda^T k run in the CPU's order
 * (so dv = beta du and dh0 are the twin's to the bit when the states are).
 * The sums over V (dq = scale S_t do, dk = lambda u - S~ (beta du),
 * dbeta = du . r, and dg = <dS~, S~> after a chain down each column) cross
 * lanes and are summed by a fixed butterfly (a transpose-reduce for the K
 * rows: 31 shuffles per 32 rows), then over V-tiles in increasing tile
 * order by a second kernel: deterministic, and a tree instead of the CPU's
 * linear fma chain, whose error bound is no larger than the twin's.
 *
 * Memory: backward scratch (nseg + seg + 1) K V floats per (b, hv), plus
 * V/32 partial copies of dq, dk, dg, dbeta when V > 32.  All offsets are
 * 64-bit.  Errors: CUDA failures come back as RA_EIO (RA_ENOMEM for
 * allocation) with the call and CUDA's reason in msg.
 */

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include <mpfr.h>

/* The core headers carry no C++ linkage guards: declare them C here, before
   gdn_cuda.h includes them (mpfr.h first, outside, for its C++ parts). */
extern "C" {
#include "core/case.h"
#include "core/gdn_case.h"
#include "core/tensor.h"
#include "cpu/gdn_variants.h"
}
#include "gpu/gdn_cuda.h"

namespace {

constexpr unsigned FULL = 0xffffffffu;

struct SeqParams {
    ra_gpu_gdn_args a;
    const float *dec;         /* exp(g) in fp32, [B,T,Hv] */
    float *scr;               /* per-warp global scratch */
    int64_t scr_per_warp;     /* floats */
    float *pdq, *pdk;         /* [nvt][B,T,Hv,K] partials when nvt > 1 */
    float *pdg, *pdb;         /* [nvt][B,T,Hv] */
    int Kx, NT, nvt;          /* padded K, tokens per staged batch, V-tiles */
    int64_t seg, nseg;        /* checkpoint spacing and count (backward) */
};

/* One staged batch of NT tokens in shared memory; padded rows and columns
   are zero and stay zero (cp.async only writes real elements). */
struct Stage {
    float *q, *k, *v, *d, *dec, *beta;
};

/* Every section starts on 16 bytes (float4 reads of q and k rows). */
__host__ __device__ inline int64_t stage_floats(int Kx, int NT)
{
    return (int64_t)NT * (2 * Kx + 2 * 32) + 2 * ((NT + 3) / 4 * 4);
}

__device__ inline Stage stage_at(float *smem, int which, int Kx, int NT)
{
    Stage s;
    s.q = smem + which * stage_floats(Kx, NT);
    s.k = s.q + NT * Kx;
    s.v = s.k + NT * Kx;
    s.d = s.v + NT * 32;
    s.dec = s.d + NT * 32;
    s.beta = s.dec + (NT + 3) / 4 * 4;
    return s;
}

/* Where this warp works. */
struct Ctx {
    int64_t warp, bh, b, hv, hk, j;
    int lane, tile;
    bool col; /* j < V: a real column */
};

__device__ inline Ctx ctx_of(const SeqParams &p)
{
    const ra_gdn_shape &s = p.a.s;
    Ctx c;
    c.warp = blockIdx.x;
    c.bh = c.warp / p.nvt;
    c.tile = (int)(c.warp % p.nvt);
    c.b = c.bh / s.Hv;
    c.hv = c.bh % s.Hv;
    c.hk = c.hv / (s.Hv / s.Hk);
    c.lane = threadIdx.x;
    c.j = (int64_t)c.tile * 32 + c.lane;
    c.col = c.j < s.V;
    return c;
}

/* A state (or adjoint) column: registers when KP > 0, else a global
   column with stride 32 (coalesced across the warp). */
template <int KP> struct Col {
    float r[KP > 0 ? KP : 1];
    float *g;
    __device__ __forceinline__ float &operator[](int i)
    {
        if constexpr (KP > 0)
            return r[i];
        else
            return g[(int64_t)i * 32];
    }
};

/* Four consecutive staged values (one 16-byte shared-memory read instead of
   four: rows are padded to multiples of 32 and 16-byte aligned). */
__device__ __forceinline__ void ld4(float (&r)[4], const float *p)
{
    const float4 v = *reinterpret_cast<const float4 *>(p);
    r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}

/* The same read, volatile: the compiler may neither keep the values of an
   earlier read of the row alive nor hoist the read, which in the
   backward's step would hold a second copy of k beside the state column
   and spill. */
__device__ __forceinline__ void ld4v(float (&r)[4], const float *p)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
                 : "r"(a));
}

enum { LOAD_Q = 1, LOAD_DO = 2 };

__device__ void stage_issue(const Stage &st, const SeqParams &p, const Ctx &c, int64_t t0, int n,
                            unsigned what)
{
    const ra_gdn_shape &s = p.a.s;
    for (int tt = 0; tt < n; tt++) {
        const int64_t qk = ((c.b * s.T + t0 + tt) * s.Hk + c.hk) * s.K;
        for (int64_t i = c.lane; i < s.K; i += 32) {
            __pipeline_memcpy_async(st.k + tt * p.Kx + i, p.a.k + qk + i, sizeof(float));
            if (what & LOAD_Q)
                __pipeline_memcpy_async(st.q + tt * p.Kx + i, p.a.q + qk + i, sizeof(float));
        }
        if (c.col) {
            const int64_t vo = ((c.b * s.T + t0 + tt) * s.Hv + c.hv) * s.V + c.j;
            __pipeline_memcpy_async(st.v + tt * 32 + c.lane, p.a.v + vo, sizeof(float));
            if (what & LOAD_DO)
                __pipeline_memcpy_async(st.d + tt * 32 + c.lane, p.a.do_ + vo, sizeof(float));
        }
    }
    if (c.lane < n) {
        const int64_t go = (c.b * s.T + t0 + c.lane) * s.Hv + c.hv;
        __pipeline_memcpy_async(st.dec + c.lane, p.dec + go, sizeof(float));
        __pipeline_memcpy_async(st.beta + c.lane, p.a.beta + go, sizeof(float));
    }
}

/* Runs body(stage, first token, count) over the batches of [t0, t1), in
   increasing or decreasing order, the next batch loading while the current
   one is processed.  With LOAD_Q the staged queries are scaled (scale*q,
   rounded once, as the CPU's qs) before body sees them. */
template <class Body>
__device__ void sweep(float *smem, const SeqParams &p, const Ctx &c, int64_t t0, int64_t t1,
                      bool reverse, unsigned what, Body &&body)
{
    const int NT = p.NT;
    const int64_t nb = (t1 - t0 + NT - 1) / NT;
    if (nb <= 0)
        return;
    auto start = [&](int64_t m) { return t0 + (reverse ? nb - 1 - m : m) * NT; };
    auto count = [&](int64_t tb) { return (int)(t1 - tb < NT ? t1 - tb : NT); };
    stage_issue(stage_at(smem, 0, p.Kx, NT), p, c, start(0), count(start(0)), what);
    __pipeline_commit();
    for (int64_t m = 0; m < nb; m++) {
        if (m + 1 < nb)
            stage_issue(stage_at(smem, (int)((m + 1) & 1), p.Kx, NT), p, c, start(m + 1),
                        count(start(m + 1)), what);
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncwarp();
        const Stage st = stage_at(smem, (int)(m & 1), p.Kx, NT);
        const int64_t tb = start(m);
        const int n = count(tb);
        if (what & LOAD_Q) {
            for (int tt = 0; tt < n; tt++)
                for (int64_t i = c.lane; i < p.a.s.K; i += 32)
                    st.q[tt * p.Kx + i] = __fmul_rn(p.a.scale, st.q[tt * p.Kx + i]);
            __syncwarp();
        }
        body(st, tb, n);
        __syncwarp();
    }
}

__device__ inline void zero_smem(float *smem, int64_t n)
{
    for (int64_t i = threadIdx.x; i < n; i += 32)
        smem[i] = 0.f;
    __syncwarp();
}

/* Initial column: h0's (zero outside the real rows and columns). */
template <int KP>
__device__ inline void load_state(Col<KP> &S, int n, const float *h0, const SeqParams &p,
                                  const Ctx &c)
{
    const ra_gdn_shape &s = p.a.s;
#pragma unroll
    for (int i = 0; i < n; i++)
        S[i] = (h0 && c.col && i < s.K) ? h0[(c.bh * s.K + i) * s.V + c.j] : 0.f;
}

template <int KP>
__device__ inline void store_state(float *dst, Col<KP> &S, int n, const SeqParams &p,
                                   const Ctx &c)
{
    const ra_gdn_shape &s = p.a.s;
#pragma unroll
    for (int i = 0; i < n; i++)
        if (c.col && i < s.K)
            dst[(c.bh * s.K + i) * s.V + c.j] = S[i];
}

/* One token, S_{t-1} -> S_t (gdn.cpu.f32's seq_step). */
template <int KP>
__device__ __forceinline__ void step(Col<KP> &S, int n, const float *k, float a, float beta,
                                     float v)
{
    float u = 0.f;
#pragma unroll
    for (int i0 = 0; i0 < n; i0 += 4) {
        float kk[4];
        ld4v(kk, k + i0);
#pragma unroll
        for (int d = 0; d < 4; d++) {
            const float s = __fmul_rn(a, S[i0 + d]);
            S[i0 + d] = s;
            u = __fmaf_rn(s, kk[d], u);
        }
    }
    u = __fmul_rn(beta, __fsub_rn(v, u));
#pragma unroll
    for (int i0 = 0; i0 < n; i0 += 4) {
        float kk[4];
        ld4v(kk, k + i0);
#pragma unroll
        for (int d = 0; d < 4; d++)
            S[i0 + d] = __fmaf_rn(kk[d], u, S[i0 + d]);
    }
}

template <int KP> __global__ void __launch_bounds__(32) seq_fwd(const SeqParams p)
{
    extern __shared__ __align__(16) float smem[];
    const Ctx c = ctx_of(p);
    const ra_gdn_shape &s = p.a.s;
    const int n = KP > 0 ? KP : p.Kx, Kx = p.Kx;
    zero_smem(smem, 2 * stage_floats(Kx, p.NT));
    Col<KP> S;
    S.g = p.scr + c.warp * p.scr_per_warp + c.lane;
    load_state(S, n, p.a.h0, p, c);
    float uacc = 0.f; /* u chain of the next token, before beta (v - .) */
    sweep(smem, p, c, 0, s.T, false, LOAD_Q, [&](const Stage &st, int64_t tb, int len) {
        for (int tt = 0; tt < len; tt++) {
            const float *k = st.k + tt * Kx, *q = st.q + tt * Kx;
            if (tt == 0) { /* first token of a batch: its decay and u chain */
                const float a = st.dec[0];
                uacc = 0.f;
#pragma unroll
                for (int i0 = 0; i0 < n; i0 += 4) {
                    float kk[4];
                    ld4(kk, k + i0);
#pragma unroll
                    for (int d = 0; d < 4; d++) {
                        const float x = __fmul_rn(a, S[i0 + d]);
                        S[i0 + d] = x;
                        uacc = __fmaf_rn(x, kk[d], uacc);
                    }
                }
            }
            const float u = __fmul_rn(st.beta[tt], __fsub_rn(st.v[tt * 32 + c.lane], uacc));
            float o = 0.f;
            if (tt + 1 < len) { /* update t, output t, decay and u chain of t+1 */
                const float an = st.dec[tt + 1], *kn = k + Kx;
                float un = 0.f;
#pragma unroll
                for (int i0 = 0; i0 < n; i0 += 4) {
                    float kk[4], qq[4], kq[4];
                    ld4(kk, k + i0), ld4(qq, q + i0), ld4(kq, kn + i0);
#pragma unroll
                    for (int d = 0; d < 4; d++) {
                        float x = __fmaf_rn(kk[d], u, S[i0 + d]);
                        o = __fmaf_rn(x, qq[d], o);
                        x = __fmul_rn(an, x);
                        un = __fmaf_rn(x, kq[d], un);
                        S[i0 + d] = x;
                    }
                }
                uacc = un;
            } else {
#pragma unroll
                for (int i0 = 0; i0 < n; i0 += 4) {
                    float kk[4], qq[4];
                    ld4(kk, k + i0), ld4(qq, q + i0);
#pragma unroll
                    for (int d = 0; d < 4; d++) {
                        const float x = __fmaf_rn(kk[d], u, S[i0 + d]);
                        o = __fmaf_rn(x, qq[d], o);
                        S[i0 + d] = x;
                    }
                }
            }
            if (c.col)
                p.a.o[((c.b * s.T + tb + tt) * s.Hv + c.hv) * s.V + c.j] = o;
        }
    });
    store_state(p.a.ht, S, n, p, c);
}

/* x[m] on every lane -> on lane l, the sum over the 32 lanes of x[l]
   (recursive halving: each step hands half of the rows to the partner;
   templated on the step so that every register index is a constant). */
template <int OFF> __device__ __forceinline__ void halve(float (&x)[32], int lane)
{
    const bool up = (lane & OFF) != 0;
#pragma unroll
    for (int m = 0; m < OFF; m++) {
        const float send = up ? x[m] : x[m + OFF];
        const float keep = up ? x[m + OFF] : x[m];
        x[m] = __fadd_rn(keep, __shfl_xor_sync(FULL, send, OFF));
    }
}

__device__ __forceinline__ float reduce_scatter32(float (&x)[32], int lane)
{
    halve<16>(x, lane);
    halve<8>(x, lane);
    halve<4>(x, lane);
    halve<2>(x, lane);
    halve<1>(x, lane);
    return x[0];
}

__device__ __forceinline__ float warp_sum(float x)
{
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        x = __fadd_rn(x, __shfl_xor_sync(FULL, x, off));
    return x;
}

/* LP: rows of lambda's column in registers (LP = KP), else (LP = 0) in
   shared memory after the staging buffers when KP > 0, in the warp's
   global scratch when KP = 0. */
template <int KP, int LP> __global__ void __launch_bounds__(32) seq_bwd(const SeqParams p)
{
    extern __shared__ __align__(16) float smem[];
    const Ctx c = ctx_of(p);
    const ra_gdn_shape &s = p.a.s;
    const int n = KP > 0 ? KP : p.Kx, Kx = p.Kx;
    const int64_t slot = (int64_t)Kx * 32, seg = p.seg, nseg = p.nseg;
    /* Row groups of the reductions: unrolled when lambda is in registers
       (constant indices), one at a time otherwise, which keeps the
       compiler from hoisting every state load of a token into registers. */
    constexpr int GU = LP > 0 ? 4 : 1;
    zero_smem(smem, 2 * stage_floats(Kx, p.NT));
    float *const ck = p.scr + c.warp * p.scr_per_warp + c.lane; /* nseg checkpoints */
    float *const sb = ck + nseg * slot;                         /* seg + 1 states */
    Col<KP> S;
    Col<LP> L;
    S.g = sb + (seg + 1) * slot;
    L.g = KP > 0 ? smem + 2 * stage_floats(Kx, p.NT) + c.lane : S.g + slot;

    /* Checkpoints: S_0 = h0, then the state at every multiple of seg. */
    load_state(S, n, p.a.h0, p, c);
    sweep(smem, p, c, 0, (nseg - 1) * seg, false, 0, [&](const Stage &st, int64_t tb, int len) {
        for (int tt = 0; tt < len; tt++) {
            if ((tb + tt) % seg == 0) {
                float *dst = ck + (tb + tt) / seg * slot;
#pragma unroll
                for (int i = 0; i < n; i++)
                    dst[i * 32] = S[i];
            }
            step(S, n, st.k + tt * Kx, st.dec[tt], st.beta[tt], st.v[tt * 32 + c.lane]);
        }
    });
    {
        float *dst = ck + (nseg - 1) * slot;
#pragma unroll
        for (int i = 0; i < n; i++)
            dst[i * 32] = S[i];
    }

    load_state(L, n, p.a.dht, p, c);
    const int64_t nq = s.B * s.T * s.Hv * s.K, ng = s.B * s.T * s.Hv;
    const bool direct = p.nvt == 1;
    for (int64_t sg = nseg - 1; sg >= 0; sg--) {
        const int64_t t0 = sg * seg, t1 = t0 + seg < s.T ? t0 + seg : s.T;
        /* Recompute S_{t0} .. S_{t1} into sb. */
#pragma unroll
        for (int i = 0; i < n; i++) {
            S[i] = ck[sg * slot + i * 32];
            sb[i * 32] = S[i];
        }
        sweep(smem, p, c, t0, t1, false, 0, [&](const Stage &st, int64_t tb, int len) {
            for (int tt = 0; tt < len; tt++) {
                step(S, n, st.k + tt * Kx, st.dec[tt], st.beta[tt], st.v[tt * 32 + c.lane]);
                float *dst = sb + (tb + tt - t0 + 1) * slot;
#pragma unroll
                for (int i = 0; i < n; i++)
                    dst[i * 32] = S[i];
            }
        });
        /* The adjoint, t = t1-1 down to t0. */
        sweep(smem, p, c, t0, t1, true, LOAD_Q | LOAD_DO,
              [&](const Stage &st, int64_t tb, int len) {
            for (int tt = len - 1; tt >= 0; tt--) {
                const int64_t t = tb + tt;
                const float *Sp = sb + (t - t0) * slot, *Sc = Sp + slot;
                const float *q = st.q + tt * Kx, *k = st.k + tt * Kx;
                const float a = st.dec[tt], beta = st.beta[tt];
                const float dj = st.d[tt * 32 + c.lane], vj = st.v[tt * 32 + c.lane];
                float u = 0.f, du = 0.f;
#pragma unroll
                for (int i0 = 0; i0 < n; i0 += 4) {
                    float kk[4], qq[4];
                    ld4v(kk, k + i0), ld4v(qq, q + i0);
#pragma unroll
                    for (int d = 0; d < 4; d++) {
                        const int i = i0 + d;
                        const float l = __fmaf_rn(qq[d], dj, L[i]);
                        L[i] = l;
                        du = __fmaf_rn(l, kk[d], du);
                        u = __fmaf_rn(__fmul_rn(a, Sp[i * 32]), kk[d], u);
                    }
                }
                const int64_t qrow = ((c.b * s.T + t) * s.Hv + c.hv) * s.K;
                const int64_t gi = (c.b * s.T + t) * s.Hv + c.hv;
                /* dq_t = scale S_t do_t: rows across the V lanes. */
#pragma unroll(GU)
                for (int g0 = 0; g0 < n; g0 += 32) {
                    float x[32];
#pragma unroll
                    for (int m = 0; m < 32; m++)
                        x[m] = __fmul_rn(Sc[(g0 + m) * 32], dj);
                    const float r = reduce_scatter32(x, c.lane);
                    if (g0 + c.lane < s.K) {
                        if (direct)
                            p.a.dqv[qrow + g0 + c.lane] = __fmul_rn(p.a.scale, r);
                        else
                            p.pdq[c.tile * nq + qrow + g0 + c.lane] = r;
                    }
                }
                const float rr = __fsub_rn(vj, u), ub = __fmul_rn(beta, rr),
                            bdu = __fmul_rn(beta, du);
                if (c.col)
                    p.a.dv[((c.b * s.T + t) * s.Hv + c.hv) * s.V + c.j] = bdu;
                /* dk_t = lambda u - S~ (beta du); lambda <- lambda - beta k du^T;
                   dg column sum <lambda, S~>; lambda <- a lambda. */
                float dg = 0.f;
#pragma unroll(GU)
                for (int g0 = 0; g0 < n; g0 += 32) {
                    float x[32];
#pragma unroll
                    for (int m0 = 0; m0 < 32; m0 += 4) {
                        float kk[4];
                        ld4v(kk, k + g0 + m0);
#pragma unroll
                        for (int d = 0; d < 4; d++) {
                            const int i = g0 + m0 + d;
                            const float st_ = __fmul_rn(a, Sp[i * 32]);
                            float l = L[i];
                            x[m0 + d] = __fmaf_rn(l, ub, -__fmul_rn(st_, bdu));
                            l = __fmaf_rn(__fmul_rn(-beta, kk[d]), du, l);
                            dg = __fmaf_rn(l, st_, dg);
                            L[i] = __fmul_rn(a, l);
                        }
                    }
                    const float r = reduce_scatter32(x, c.lane);
                    if (g0 + c.lane < s.K) {
                        if (direct)
                            p.a.dkv[qrow + g0 + c.lane] = r;
                        else
                            p.pdk[c.tile * nq + qrow + g0 + c.lane] = r;
                    }
                }
                dg = warp_sum(dg);
                const float db = warp_sum(__fmul_rn(du, rr));
                if (c.lane == 0) {
                    if (direct) {
                        p.a.dg[gi] = dg;
                        p.a.dbeta[gi] = db;
                    } else {
                        p.pdg[c.tile * ng + gi] = dg;
                        p.pdb[c.tile * ng + gi] = db;
                    }
                }
            }
        });
    }
    if (p.a.dh0)
        store_state(p.a.dh0, L, n, p, c);
}

/* Sums of the V-tile partials in increasing tile order. */
__global__ void seq_bwd_finish(const SeqParams p)
{
    const ra_gdn_shape &s = p.a.s;
    const int64_t nq = s.B * s.T * s.Hv * s.K, ng = s.B * s.T * s.Hv;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nq; e += stride) {
        float sq = p.pdq[e], sk = p.pdk[e];
        for (int tl = 1; tl < p.nvt; tl++) {
            sq = __fadd_rn(sq, p.pdq[tl * nq + e]);
            sk = __fadd_rn(sk, p.pdk[tl * nq + e]);
        }
        p.a.dqv[e] = __fmul_rn(p.a.scale, sq);
        p.a.dkv[e] = sk;
    }
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < ng; e += stride) {
        float sg = p.pdg[e], sbt = p.pdb[e];
        for (int tl = 1; tl < p.nvt; tl++) {
            sg = __fadd_rn(sg, p.pdg[tl * ng + e]);
            sbt = __fadd_rn(sbt, p.pdb[tl * ng + e]);
        }
        p.a.dg[e] = sg;
        p.a.dbeta[e] = sbt;
    }
}

/* a = exp(g) rounded once to fp32 (see the file comment). */
__global__ void seq_decay(float *dec, const float *g, int64_t n)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += stride)
        dec[e] = __double2float_rn(exp((double)g[e]));
}

/* Device memory released on every return path. */
struct DevMem {
    void *p = nullptr;
    DevMem() = default;
    DevMem(const DevMem &) = delete;
    DevMem &operator=(const DevMem &) = delete;
    ~DevMem()
    {
        if (p)
            cudaFree(p);
    }
};

ra_status fail(char *msg, size_t msglen, cudaError_t e, const char *what)
{
    cudaGetLastError(); /* clear a non-sticky error for the next call */
    snprintf(msg, msglen, "cuda gdn seq: %s: %s", what, cudaGetErrorString(e));
    return e == cudaErrorMemoryAllocation ? RA_ENOMEM : RA_EIO;
}

ra_status alloc(DevMem &m, int64_t nfloats, const char *what, char *msg, size_t msglen)
{
    if (nfloats <= 0)
        nfloats = 1;
    if ((uint64_t)nfloats > SIZE_MAX / sizeof(float)) {
        snprintf(msg, msglen, "cuda gdn seq: %s: %lld floats overflow the address space", what,
                 (long long)nfloats);
        return RA_EOVERFLOW;
    }
    cudaError_t e = cudaMalloc(&m.p, (size_t)nfloats * sizeof(float));
    if (e != cudaSuccess) {
        m.p = nullptr;
        cudaGetLastError();
        snprintf(msg, msglen, "cuda gdn seq: cannot allocate %.3g GiB of device memory for %s: %s",
                 (double)nfloats * sizeof(float) / 1073741824.0, what, cudaGetErrorString(e));
        return e == cudaErrorMemoryAllocation ? RA_ENOMEM : RA_EIO;
    }
    return RA_OK;
}

unsigned grid_for(int64_t n)
{
    int64_t b = (n + 255) / 256;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

template <int KP, int LP>
ra_status launch_kp(const SeqParams &p, int bwd, size_t smem, int64_t nwarps, char *msg,
                    size_t msglen)
{
    auto kernel = bwd ? seq_bwd<KP, LP> : seq_fwd<KP>;
    cudaError_t e = cudaSuccess;
    if (smem > 48 * 1024)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
        return fail(msg, msglen, e, "cudaFuncSetAttribute (dynamic shared memory)");
    kernel<<<(unsigned)nwarps, 32, smem>>>(p);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return fail(msg, msglen, e, bwd ? "launch of the backward kernel"
                                        : "launch of the forward kernel");
    return RA_OK;
}

} // namespace

extern "C" ra_status ra_gpu_gdn_seq_launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a,
                                           int bwd, char *msg, size_t msglen)
{
    if (!cfg || cfg->algo != RA_GPU_GDN_SEQ) {
        snprintf(msg, msglen, "cuda gdn seq: configuration is not the sequential algorithm");
        return RA_EINVAL;
    }
    const ra_gdn_shape &s = a->s;
    SeqParams p = {};
    p.a = *a;
    p.Kx = s.K <= 32 ? 32 : s.K <= 64 ? 64 : s.K <= 128 ? 128 : (int)((s.K + 31) / 32 * 32);
    if (s.K > (1 << 20)) {
        snprintf(msg, msglen, "cuda gdn seq: K = %lld is beyond this kernel (at most 2^20)",
                 (long long)s.K);
        return RA_EUNSUPPORTED;
    }
    p.NT = 512 / p.Kx;
    p.NT = p.NT < 1 ? 1 : p.NT > 8 ? 8 : p.NT;
    p.nvt = (int)((s.V + 31) / 32);
    const int64_t nwarps = s.B * s.Hv * p.nvt;
    if (nwarps > 0x7fffffff) {
        snprintf(msg, msglen, "cuda gdn seq: B*Hv*ceil(V/32) = %lld warps exceed the grid",
                 (long long)nwarps);
        return RA_EUNSUPPORTED;
    }
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess)
        return fail(msg, msglen, e, "device attributes");
    /* The backward keeps lambda's column in shared memory when K is padded
       to 128: in registers with the reduction buffers it would spill. */
    const bool lsh = bwd && p.Kx == 128;
    const size_t smem =
        (size_t)(2 * stage_floats(p.Kx, p.NT) + (lsh ? 32 * 128 : 0)) * sizeof(float);
    if (smem > (size_t)optin) {
        snprintf(msg, msglen,
                 "cuda gdn seq: K = %lld needs %zu bytes of shared memory per block, the "
                 "device allows %d",
                 (long long)s.K, smem, optin);
        return RA_EUNSUPPORTED;
    }

    const int64_t ng = s.B * s.T * s.Hv, nq = s.B * s.T * s.Hv * s.K, slot = (int64_t)p.Kx * 32;
    ra_status st;
    DevMem dec, scr, pdq, pdk, pdg, pdb;
    if ((st = alloc(dec, ng, "the decays exp(g)", msg, msglen)) != RA_OK)
        return st;
    p.dec = (const float *)dec.p;
    seq_decay<<<grid_for(ng), 256>>>((float *)dec.p, a->g, ng);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return fail(msg, msglen, e, "launch of the decay kernel");

    if (!bwd) {
        p.scr_per_warp = p.Kx > 128 ? slot : 0;
    } else {
        int64_t seg = (int64_t)ceil(sqrt((double)s.T));
        seg = seg < 16 ? 16 : seg;
        p.seg = (seg + p.NT - 1) / p.NT * p.NT;
        p.nseg = (s.T + p.seg - 1) / p.seg;
        p.scr_per_warp = (p.nseg + p.seg + 1 + (p.Kx > 128 ? 2 : 0)) * slot;
    }
    if (p.scr_per_warp > 0) {
        if (p.scr_per_warp > INT64_MAX / nwarps) {
            snprintf(msg, msglen, "cuda gdn seq: scratch size overflows");
            return RA_EOVERFLOW;
        }
        if ((st = alloc(scr, nwarps * p.scr_per_warp,
                        bwd ? "the checkpoints and segment states" : "the state columns", msg,
                        msglen)) != RA_OK)
            return st;
        p.scr = (float *)scr.p;
    }
    if (bwd && p.nvt > 1) {
        if ((st = alloc(pdq, p.nvt * nq, "the per-tile dq partials", msg, msglen)) != RA_OK ||
            (st = alloc(pdk, p.nvt * nq, "the per-tile dk partials", msg, msglen)) != RA_OK ||
            (st = alloc(pdg, p.nvt * ng, "the per-tile dg partials", msg, msglen)) != RA_OK ||
            (st = alloc(pdb, p.nvt * ng, "the per-tile dbeta partials", msg, msglen)) != RA_OK)
            return st;
        p.pdq = (float *)pdq.p, p.pdk = (float *)pdk.p;
        p.pdg = (float *)pdg.p, p.pdb = (float *)pdb.p;
    }

    switch (p.Kx) {
    case 32:
        st = launch_kp<32, 32>(p, bwd, smem, nwarps, msg, msglen);
        break;
    case 64:
        st = launch_kp<64, 64>(p, bwd, smem, nwarps, msg, msglen);
        break;
    case 128:
        st = launch_kp<128, 0>(p, bwd, smem, nwarps, msg, msglen);
        break;
    default:
        st = launch_kp<0, 0>(p, bwd, smem, nwarps, msg, msglen);
        break;
    }
    if (st != RA_OK)
        return st;
    if (bwd && p.nvt > 1) {
        seq_bwd_finish<<<grid_for(nq), 256>>>(p);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return fail(msg, msglen, e, "launch of the partial-sum kernel");
    }
    if ((e = cudaDeviceSynchronize()) != cudaSuccess)
        return fail(msg, msglen, e, bwd ? "backward kernels" : "forward kernel");
    return RA_OK;
}
