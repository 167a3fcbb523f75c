/* Thread-block matmuls on strided fp32 operands: IEEE FFMA, tf32, 3xtf32, bf16 mma. */
#ifndef RA_GPU_BLK_MM_CUH
#define RA_GPU_BLK_MM_CUH

/*
 * blk_mm<P> is the GPU counterpart of the CPU kernels' RN(mm)
 * (src/cpu/gdn_tmpl_linalg.h) and has its semantics:
 *
 *   C(i, j) = (acc ? C(i, j) : 0) + sum_{p < kc} A(i, p) B(p, j),
 *   i < m, j < n, A(i, p) = a.p[i*a.rs + p*a.cs], B(p, j) = b.p[p*b.rs + j*b.cs],
 *
 * with both operands rounded by the precision P right before the product,
 * optionally over a batch of independent products (operand and result
 * bases advanced by their batch strides).  Transposes are strides, so one
 * routine serves every product of the chunked algorithm.
 *
 *   RA_GPU_PREC_IEEE    one thread per output element, an fmaf chain in
 *                       increasing p from zero or from C: exactly the CPU
 *                       twin's order, so the results agree bit for bit;
 *   RA_GPU_PREC_TF32    16x8 output tiles per warp, mma m16n8k8 on
 *                       cvt.rna.tf32 operands, fp32 accumulator carried
 *                       across k-steps of 8;
 *   RA_GPU_PREC_TF32X3  the same tiles, three mmas per k-step (mma.cuh) into
 *                       a k-step partial that starts from zero, added to the
 *                       fp32 running sum with one __fadd_rn (split
 *                       accumulation).  Why: the tensor core's fp32
 *                       accumulation aligns and adds with truncation (Fasi et
 *                       al., "Numerical behavior of NVIDIA tensor cores", 2021),
 *                       so carrying the running sum through three mmas per
 *                       k-step truncates it three times per step; measured on
 *                       the H200 (B=1,T=130,K=V=128 strong-decay; B=1,T=1024,
 *                       Hk=4,Hv=8,K=V=128) that costs 1.4..2.6x the CPU twin's
 *                       rel_rms (dk 9.5e-7 vs 3.6e-7), while the split form
 *                       measures 0.4..1.2x of it.  TF32 and bf16 keep the
 *                       tensor core's own accumulation, as production kernels
 *                       do: their operand rounding (2^-11, 2^-8) dominates;
 *   RA_GPU_PREC_BF16    16x8 tiles, mma m16n8k16 on RNE bf16 operands.
 * Out-of-range rows, columns and contraction indices are read as zero
 * (exact: they add +0 products), so any m, n, kc >= 1 is served.
 *
 * Every thread of the block must call it (same arguments).  The caller
 * puts a __syncthreads() between a product and the first read of its
 * result, and may issue several products with disjoint outputs back to
 * back; the output must not overlap the operands.  Operands are read with
 * plain loads (they are written by the same block earlier in the kernel,
 * so the read-only path would be wrong).
 *
 * Two ways to the same bits.  Small or batched products (the inverses'
 * 16x16 blocks) go straight to memory, one warp per 16x8 tile.  Larger
 * ones are staged: 64 x 64 output blocks, the contraction in panels of 64
 * copied to shared memory with loads along the operand's unit stride
 * (coalesced), the partial sum kept in C between panels (an fp32 store and
 * load, exact).  Panels start at multiples of 64, so every k-step of 8 or
 * 16 sees the same operands in the same order as the direct form, and the
 * IEEE chain runs in the same increasing p: the results are bit for bit
 * the same.  In bf16 the panels hold the operands already rounded (bf16
 * pairs, half the shared memory) and each warp computes 16 x 32 of the
 * block, reusing its A fragment over four mmas (same k-steps, same
 * operands: the same bits; H200, B=1, T=8192, Hv=32, K=V=128: chunk64.bf16
 * fwd+bwd 28.3 to 24.0 ms together with the dstates change of
 * gdn_chunk_pass.cu).  The staged form synchronises the block inside,
 * which is why every thread must call it.
 */

#include <cstdint>

#include "gpu/gdn_cuda_cxx.h"
#include "gpu/mma.cuh"

namespace ra_gpu
{

/* A strided operand: element (i, p) of batch entry z at p[z*bs + i*rs + p*cs]. */
struct mat {
    const float *p;
    int64_t rs, cs, bs;
};

__device__ __forceinline__ mat mk(const float *p, int64_t rs, int64_t cs, int64_t bs = 0)
{
    return mat{p, rs, cs, bs};
}

__device__ __forceinline__ float ld(const float *base, const mat &x, int i, int p, int rows,
                                    int cols)
{
    return (i < rows && p < cols) ? base[i * x.rs + p * x.cs] : 0.f;
}

/* The product with operands read straight from memory (any batch). */
template <int P>
__device__ void blk_mm_direct(float *c, int64_t ldc, int64_t cbs, int m, int n, int kc, mat a,
                              mat b, bool acc, int batch)
{
    if (P == RA_GPU_PREC_IEEE) {
        const int64_t per = (int64_t)m * n, total = per * batch;
        for (int64_t e = threadIdx.x; e < total; e += blockDim.x) {
            const int z = (int)(e / per), i = (int)(e % per / n), j = (int)(e % n);
            const float *ap = a.p + z * a.bs + i * a.rs, *bp = b.p + z * b.bs + j * b.cs;
            float *cp = c + z * cbs + i * ldc + j;
            float s = acc ? *cp : 0.f;
            for (int p = 0; p < kc; p++)
                s = fmaf(ap[p * a.cs], bp[p * b.rs], s);
            *cp = s;
        }
        return;
    }
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int tm = (m + 15) / 16, tn = (n + 7) / 8, per = tm * tn;
    for (int tile = threadIdx.x >> 5; tile < per * batch; tile += blockDim.x >> 5) {
        const int z = tile / per, i0 = (tile % per) / tn * 16, j0 = tile % tn * 8;
        const float *ab = a.p + z * a.bs, *bb = b.p + z * b.bs;
        float *cb = c + z * cbs;
        const int r0 = i0 + g, r1 = r0 + 8, c0 = j0 + 2 * t, c1 = c0 + 1;
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        if (acc) {
            d[0] = (r0 < m && c0 < n) ? cb[r0 * ldc + c0] : 0.f;
            d[1] = (r0 < m && c1 < n) ? cb[r0 * ldc + c1] : 0.f;
            d[2] = (r1 < m && c0 < n) ? cb[r1 * ldc + c0] : 0.f;
            d[3] = (r1 < m && c1 < n) ? cb[r1 * ldc + c1] : 0.f;
        }
        const int col = j0 + g; /* B fragment column */
        if (P == RA_GPU_PREC_BF16) {
            for (int k0 = 0; k0 < kc; k0 += 16) {
                const int ka = k0 + 2 * t, kb = ka + 8;
                uint32_t fa[4], fb[2];
                fa[0] = bf16x2_rn(ld(ab, a, r0, ka, m, kc), ld(ab, a, r0, ka + 1, m, kc));
                fa[1] = bf16x2_rn(ld(ab, a, r1, ka, m, kc), ld(ab, a, r1, ka + 1, m, kc));
                fa[2] = bf16x2_rn(ld(ab, a, r0, kb, m, kc), ld(ab, a, r0, kb + 1, m, kc));
                fa[3] = bf16x2_rn(ld(ab, a, r1, kb, m, kc), ld(ab, a, r1, kb + 1, m, kc));
                /* B(p, j) = bb[p*rs + j*cs]: the view with rows p, columns j. */
                const mat bt = mk(nullptr, b.cs, b.rs);
                fb[0] = bf16x2_rn(ld(bb, bt, col, ka, n, kc), ld(bb, bt, col, ka + 1, n, kc));
                fb[1] = bf16x2_rn(ld(bb, bt, col, kb, n, kc), ld(bb, bt, col, kb + 1, n, kc));
                mma_bf16(d, fa, fb);
            }
        } else {
            const mat bt = mk(nullptr, b.cs, b.rs);
            for (int k0 = 0; k0 < kc; k0 += 8) {
                const float x[4] = {ld(ab, a, r0, k0 + t, m, kc), ld(ab, a, r1, k0 + t, m, kc),
                                    ld(ab, a, r0, k0 + t + 4, m, kc),
                                    ld(ab, a, r1, k0 + t + 4, m, kc)};
                const float y[2] = {ld(bb, bt, col, k0 + t, n, kc),
                                    ld(bb, bt, col, k0 + t + 4, n, kc)};
                if (P == RA_GPU_PREC_TF32) {
                    const uint32_t fa[4] = {tf32_rna(x[0]), tf32_rna(x[1]), tf32_rna(x[2]),
                                            tf32_rna(x[3])};
                    const uint32_t fb[2] = {tf32_rna(y[0]), tf32_rna(y[1])};
                    mma_tf32(d, fa, fb);
                } else {
                    uint32_t ba[4], sa[4], bb2[2], sb[2];
                    for (int r = 0; r < 4; r++)
                        tf32_split(x[r], ba[r], sa[r]);
                    for (int r = 0; r < 2; r++)
                        tf32_split(y[r], bb2[r], sb[r]);
                    /* The k-step's partial sum from zero in the tensor core
                       (small terms first, as the CPU twin), then one RN add
                       into the running sum: see the header comment. */
                    float e[4] = {0.f, 0.f, 0.f, 0.f};
                    mma_tf32(e, sa, bb2);
                    mma_tf32(e, ba, sb);
                    mma_tf32(e, ba, bb2);
                    for (int r = 0; r < 4; r++)
                        d[r] = __fadd_rn(d[r], e[r]);
                }
            }
        }
        if (r0 < m && c0 < n)
            cb[r0 * ldc + c0] = d[0];
        if (r0 < m && c1 < n)
            cb[r0 * ldc + c1] = d[1];
        if (r1 < m && c0 < n)
            cb[r1 * ldc + c0] = d[2];
        if (r1 < m && c1 < n)
            cb[r1 * ldc + c1] = d[3];
    }
}

constexpr int MM_T = 64; /* staged output block side and contraction panel */

/* The shared-memory row of a staged panel: 65 floats for the IEEE chains
   (a warp's 32 rows in distinct banks), 68 for the fragment loads (lanes
   (g, t) at banks 4g + t). */
template <int P> struct mm_ld {
    static constexpr int v = P == RA_GPU_PREC_IEEE ? MM_T + 1 : MM_T + 4;
};

/* dst[r * LD + p] = X(r0 + r, k0 + p) for r < nr, p < np (nr, np: the
   panel's rows and columns rounded up to 16, as the fragments read them),
   zero outside rows x cols.  The loop runs along x's unit stride and keeps
   MM_LOADS loads in flight per thread: the loads are what the products
   wait for. */
constexpr int MM_LOADS = 8;

template <int LD>
__device__ void mm_stage(float *dst, const float *base, int64_t rs, int64_t cs, int r0, int k0,
                         int rows, int cols, int nr, int np)
{
    const bool along_rows = rs == 1 && cs != 1;
    const int total = nr * np, step = blockDim.x;
    for (int e0 = threadIdx.x; e0 < total; e0 += MM_LOADS * step) {
        float v[MM_LOADS];
#pragma unroll
        for (int u = 0; u < MM_LOADS; u++) {
            const int e = e0 + u * step;
            const int r = along_rows ? e % nr : e / np, p = along_rows ? e / nr : e % np;
            const int i = r0 + r, k = k0 + p;
            v[u] =
                (e < total && i < rows && k < cols) ? base[(int64_t)i * rs + (int64_t)k * cs] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < MM_LOADS; u++) {
            const int e = e0 + u * step;
            const int r = along_rows ? e % nr : e / np, p = along_rows ? e / nr : e % np;
            if (e < total)
                dst[r * LD + p] = v[u];
        }
    }
}

/* The bf16 form of a staged panel: dst[r * MM_LDW + p / 2] holds X(r0 + r,
   k0 + p) and X(r0 + r, k0 + p + 1) rounded to bf16 (the fragment's pair,
   lower index in the low half), zero outside rows x cols; np even.  The
   operands are rounded once here instead of once per fragment load, to
   the same values (round to nearest even either way). */
constexpr int MM_LDW = MM_T / 2 + 4; /* words; lanes (g, t) at banks 4g + t */

__device__ inline void mm_stage_bf16(uint32_t *dst, const float *base, int64_t rs, int64_t cs,
                                     int r0, int k0, int rows, int cols, int nr, int np)
{
    const bool along_rows = rs == 1 && cs != 1;
    const int nw = np / 2, total = nr * nw, step = blockDim.x;
    for (int e0 = threadIdx.x; e0 < total; e0 += MM_LOADS * step) {
        float v[MM_LOADS][2];
#pragma unroll
        for (int u = 0; u < MM_LOADS; u++) {
            const int e = e0 + u * step;
            const int r = along_rows ? e % nr : e / nw, w = along_rows ? e / nr : e % nw;
            const int i = r0 + r, k = k0 + 2 * w;
            const bool in = e < total && i < rows;
            const float *x = base + (int64_t)i * rs + (int64_t)k * cs;
            v[u][0] = (in && k < cols) ? x[0] : 0.f;
            v[u][1] = (in && k + 1 < cols) ? x[cs] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < MM_LOADS; u++) {
            const int e = e0 + u * step;
            const int r = along_rows ? e % nr : e / nw, w = along_rows ? e / nr : e % nw;
            if (e < total)
                dst[r * MM_LDW + w] = bf16x2_rn(v[u][0], v[u][1]);
        }
    }
}

/* mm_block_panel for bf16 on panels staged by mm_stage_bf16: each warp
   computes 16 rows x 32 columns, one A fragment per k-step serving four
   mmas.  Every output element sees the same mma k-steps on the same
   operands as in blk_mm_direct, so the bits are the same. */
__device__ inline void mm_block_panel_bf16(float *c, int64_t ldc, int i0, int j0, int mt, int nt,
                                           int kt, bool from_c, const uint32_t *As,
                                           const uint32_t *Bs)
{
    constexpr int NB = 4; /* n-subtiles of 8 per warp */
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int tn = (nt + 8 * NB - 1) / (8 * NB), tiles = (mt + 15) / 16 * tn;
    float *cb = c + (int64_t)i0 * ldc + j0;
    for (int tile = threadIdx.x >> 5; tile < tiles; tile += blockDim.x >> 5) {
        const int ti = tile / tn * 16, tj = tile % tn * 8 * NB;
        const int r0 = ti + g, r1 = r0 + 8;
        float d[NB][4];
#pragma unroll
        for (int u = 0; u < NB; u++) {
            const int c0 = tj + 8 * u + 2 * t, c1 = c0 + 1;
            d[u][0] = (from_c && r0 < mt && c0 < nt) ? cb[r0 * ldc + c0] : 0.f;
            d[u][1] = (from_c && r0 < mt && c1 < nt) ? cb[r0 * ldc + c1] : 0.f;
            d[u][2] = (from_c && r1 < mt && c0 < nt) ? cb[r1 * ldc + c0] : 0.f;
            d[u][3] = (from_c && r1 < mt && c1 < nt) ? cb[r1 * ldc + c1] : 0.f;
        }
        const uint32_t *a0 = As + r0 * MM_LDW, *a1 = As + r1 * MM_LDW;
        for (int k0 = 0; k0 < kt; k0 += 16) {
            const int wa = k0 / 2 + t, wb = wa + 4;
            const uint32_t fa[4] = {a0[wa], a1[wa], a0[wb], a1[wb]};
#pragma unroll
            for (int u = 0; u < NB; u++)
                if (tj + 8 * u < nt) {
                    const uint32_t *bc = Bs + (tj + 8 * u + g) * MM_LDW;
                    const uint32_t fb[2] = {bc[wa], bc[wb]};
                    mma_bf16(d[u], fa, fb);
                }
        }
#pragma unroll
        for (int u = 0; u < NB; u++) {
            const int c0 = tj + 8 * u + 2 * t, c1 = c0 + 1;
            if (r0 < mt && c0 < nt)
                cb[r0 * ldc + c0] = d[u][0];
            if (r0 < mt && c1 < nt)
                cb[r0 * ldc + c1] = d[u][1];
            if (r1 < mt && c0 < nt)
                cb[r1 * ldc + c0] = d[u][2];
            if (r1 < mt && c1 < nt)
                cb[r1 * ldc + c1] = d[u][3];
        }
    }
}

/* One staged output block (rows i0.., columns j0..) over the panel in
   As (rows x p) and Bs (columns x p) at contraction offset k0. */
template <int P>
__device__ void mm_block_panel(float *c, int64_t ldc, int i0, int j0, int mt, int nt, int kt,
                               bool from_c, const float *As, const float *Bs)
{
    constexpr int LD = mm_ld<P>::v;
    if (P == RA_GPU_PREC_IEEE) {
        for (int e = threadIdx.x; e < mt * nt; e += blockDim.x) {
            const int i = e / nt, j = e % nt;
            float *cp = c + (int64_t)(i0 + i) * ldc + j0 + j;
            float s = from_c ? *cp : 0.f;
            for (int p = 0; p < kt; p++)
                s = fmaf(As[i * LD + p], Bs[j * LD + p], s);
            *cp = s;
        }
        return;
    }
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int tn = (nt + 7) / 8, tiles = (mt + 15) / 16 * tn;
    for (int tile = threadIdx.x >> 5; tile < tiles; tile += blockDim.x >> 5) {
        const int ti = tile / tn * 16, tj = tile % tn * 8;
        const int r0 = ti + g, r1 = r0 + 8, c0 = tj + 2 * t, c1 = c0 + 1;
        float *cb = c + (int64_t)i0 * ldc + j0;
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        if (from_c) {
            d[0] = (r0 < mt && c0 < nt) ? cb[r0 * ldc + c0] : 0.f;
            d[1] = (r0 < mt && c1 < nt) ? cb[r0 * ldc + c1] : 0.f;
            d[2] = (r1 < mt && c0 < nt) ? cb[r1 * ldc + c0] : 0.f;
            d[3] = (r1 < mt && c1 < nt) ? cb[r1 * ldc + c1] : 0.f;
        }
        const float *a0 = As + r0 * LD, *a1 = As + r1 * LD, *bc = Bs + (tj + g) * LD;
        if (P == RA_GPU_PREC_BF16) {
            for (int k0 = 0; k0 < kt; k0 += 16) {
                const int ka = k0 + 2 * t, kb = ka + 8;
                const uint32_t fa[4] = {
                    bf16x2_rn(a0[ka], a0[ka + 1]), bf16x2_rn(a1[ka], a1[ka + 1]),
                    bf16x2_rn(a0[kb], a0[kb + 1]), bf16x2_rn(a1[kb], a1[kb + 1])};
                const uint32_t fb[2] = {bf16x2_rn(bc[ka], bc[ka + 1]),
                                        bf16x2_rn(bc[kb], bc[kb + 1])};
                mma_bf16(d, fa, fb);
            }
        } else {
            for (int k0 = 0; k0 < kt; k0 += 8) {
                const float x[4] = {a0[k0 + t], a1[k0 + t], a0[k0 + t + 4], a1[k0 + t + 4]};
                const float y[2] = {bc[k0 + t], bc[k0 + t + 4]};
                if (P == RA_GPU_PREC_TF32) {
                    const uint32_t fa[4] = {tf32_rna(x[0]), tf32_rna(x[1]), tf32_rna(x[2]),
                                            tf32_rna(x[3])};
                    const uint32_t fb[2] = {tf32_rna(y[0]), tf32_rna(y[1])};
                    mma_tf32(d, fa, fb);
                } else {
                    uint32_t ba[4], sa[4], bb2[2], sb[2];
                    for (int r = 0; r < 4; r++)
                        tf32_split(x[r], ba[r], sa[r]);
                    for (int r = 0; r < 2; r++)
                        tf32_split(y[r], bb2[r], sb[r]);
                    float e[4] = {0.f, 0.f, 0.f, 0.f}; /* as blk_mm_direct */
                    mma_tf32(e, sa, bb2);
                    mma_tf32(e, ba, sb);
                    mma_tf32(e, ba, bb2);
                    for (int r = 0; r < 4; r++)
                        d[r] = __fadd_rn(d[r], e[r]);
                }
            }
        }
        if (r0 < mt && c0 < nt)
            cb[r0 * ldc + c0] = d[0];
        if (r0 < mt && c1 < nt)
            cb[r0 * ldc + c1] = d[1];
        if (r1 < mt && c0 < nt)
            cb[r1 * ldc + c0] = d[2];
        if (r1 < mt && c1 < nt)
            cb[r1 * ldc + c1] = d[3];
    }
}

/* The staged form's two panels (A, then B^T), one buffer per block and
   precision; callers between products may borrow it (inverse.cuh). */
template <int P> __device__ __forceinline__ float *mm_smem()
{
    __shared__ float buf[2 * MM_T * mm_ld<P>::v];
    return buf;
}

template <int P>
__device__ void blk_mm(float *c, int64_t ldc, int64_t cbs, int m, int n, int kc, mat a, mat b,
                       bool acc, int batch = 1)
{
    /* Staging pays where a panel is reused across many output tiles:
       measured on the H200 (gdn at B=1, T=8192, Hv=32, K=V=128), staging
       the pass kernels' 16-column products made them slower, staging the
       64- and 128-wide ones made the IEEE gradients kernel 5.8x faster. */
    if (batch > 1 || m < 32 || n < 64 || kc < 32) {
        blk_mm_direct<P>(c, ldc, cbs, m, n, kc, a, b, acc, batch);
        return;
    }
    constexpr int LD = mm_ld<P>::v;
    float *As = mm_smem<P>(), *Bs = As + MM_T * LD;
    for (int i0 = 0; i0 < m; i0 += MM_T)
        for (int j0 = 0; j0 < n; j0 += MM_T) {
            const int mt = m - i0 < MM_T ? m - i0 : MM_T, nt = n - j0 < MM_T ? n - j0 : MM_T;
            for (int k0 = 0; k0 < kc; k0 += MM_T) {
                __syncthreads(); /* the previous panel is consumed */
                const int kt = kc - k0 < MM_T ? kc - k0 : MM_T, np = (kt + 15) / 16 * 16;
                const int nra = (mt + 15) / 16 * 16, nrb = (nt + 15) / 16 * 16;
                if (P == RA_GPU_PREC_BF16) {
                    uint32_t *Aw = reinterpret_cast<uint32_t *>(As), *Bw = Aw + MM_T * MM_LDW;
                    mm_stage_bf16(Aw, a.p, a.rs, a.cs, i0, k0, m, kc, nra, np);
                    mm_stage_bf16(Bw, b.p, b.cs, b.rs, j0, k0, n, kc, nrb, np);
                    __syncthreads();
                    mm_block_panel_bf16(c, ldc, i0, j0, mt, nt, kt, acc || k0 > 0, Aw, Bw);
                    continue;
                }
                mm_stage<LD>(As, a.p, a.rs, a.cs, i0, k0, m, kc, nra, np);
                /* B^T: rows j, columns p */
                mm_stage<LD>(Bs, b.p, b.cs, b.rs, j0, k0, n, kc, nrb, np);
                __syncthreads();
                mm_block_panel<P>(c, ldc, i0, j0, mt, nt, kt, acc || k0 > 0, As, Bs);
            }
        }
}

} // namespace ra_gpu

#endif
