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
 *   RA_GPU_PREC_IEEE    each output element an fmaf chain in increasing p
 *                       from zero or from C: exactly the CPU twin's order,
 *                       so the results agree bit for bit (a thread runs
 *                       one chain, or several side by side);
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
 * the same.  In bf16 and tf32 the panels hold the operands already rounded
 * (bf16 pairs, half the shared memory; tf32 words), each element rounded
 * once (panel_fmt says why 3xtf32's hold floats).  On the tensor cores each
 * warp computes 16 x 32 of the block in bf16, reusing its A fragment over
 * four mmas (same k-steps, same operands: the same bits; H200, B=1, T=8192,
 * Hv=32, K=V=128: chunk64.bf16 fwd+bwd 28.3 to 24.0 ms together with the
 * dstates change of gdn_chunk_pass.cu), 16 x 16 over two in tf32 and
 * 3xtf32; in IEEE each thread runs the 16 chains of a 4 x 4 micro-tile
 * (mm_block_panel_ieee).  Panels are staged whole (zeros past the
 * operand), so their index arithmetic is shifts, and A's panel once for
 * all column blocks (contraction panels outside the column blocks).  The
 * staged form synchronises the block inside, which is why every thread
 * must call it.  A third form, mm_cols16, serves the sequential passes'
 * in-range 16-column products without bounds tests.  The direct form and
 * mm_cols16 build their fragments in mma_tile; the staged blocks and the
 * pair-tile products read theirs at the same positions, so that one A
 * fragment serves several n-subtiles (IEEE: each form its own fmaf loop).
 */

#include <cstdint>

#include "gpu/ffma_tile.cuh"
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

/* A lane's four accumulator entries of a 16x8 tile, (r0, c0), (r0, c0 + 1),
   (r0 + 8, c0), (r0 + 8, c0 + 1) of C (row stride ldc), rows below m and
   columns below n: read (zero outside, or everywhere unless from_c) and
   written back. */
__device__ __forceinline__ void frag_load(float (&d)[4], const float *c, int64_t ldc, int r0,
                                          int c0, int m, int n, bool from_c)
{
    const int r1 = r0 + 8, c1 = c0 + 1;
    d[0] = (from_c && r0 < m && c0 < n) ? c[r0 * ldc + c0] : 0.f;
    d[1] = (from_c && r0 < m && c1 < n) ? c[r0 * ldc + c1] : 0.f;
    d[2] = (from_c && r1 < m && c0 < n) ? c[r1 * ldc + c0] : 0.f;
    d[3] = (from_c && r1 < m && c1 < n) ? c[r1 * ldc + c1] : 0.f;
}

__device__ __forceinline__ void frag_store(const float (&d)[4], float *c, int64_t ldc, int r0,
                                           int c0, int m, int n)
{
    const int r1 = r0 + 8, c1 = c0 + 1;
    if (r0 < m && c0 < n)
        c[r0 * ldc + c0] = d[0];
    if (r0 < m && c1 < n)
        c[r0 * ldc + c1] = d[1];
    if (r1 < m && c0 < n)
        c[r1 * ldc + c0] = d[2];
    if (r1 < m && c1 < n)
        c[r1 * ldc + c1] = d[3];
}

/* A sum's start (C or zero) and end for output element (i, j) of the
   products that keep their sums in registers (ffma_mm, x3_mm, x3w_mm). */
__device__ __forceinline__ float mm_start(const float *c, int64_t ldc, int m, int n, bool acc,
                                          int i, int j)
{
    return (acc && i < m && j < n) ? c[i * ldc + j] : 0.f;
}

__device__ __forceinline__ void mm_end(float *c, int64_t ldc, int m, int n, int i, int j, float x)
{
    if (i < m && j < n)
        c[i * ldc + j] = x;
}

/* The four floats from s of which the first `left` exist, zeros past
   them: one 16-byte load when all four exist (s 16-byte aligned), else
   word by word, so that nothing past the operand is read. */
__device__ __forceinline__ float4 load4_upto(const float *s, int left)
{
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (left >= 4) {
        v = *reinterpret_cast<const float4 *>(s);
    } else {
        if (left > 0)
            v.x = s[0];
        if (left > 1)
            v.y = s[1];
        if (left > 2)
            v.z = s[2];
    }
    return v;
}

/* X(r, x) = src[r*rs + x*cs] for r < nr, x < nx, else zero, r < ROWS,
   x < COLS, element by element over THREADS threads (consecutive threads
   along X's unit stride: r when rs == 1): put(r, x, X(r, x)), a thread's
   loads (up to UMAX) issued before its puts.  The whole-operand products'
   staging (ffma_mm, x3_mm, x3w_mm) of operands whose rows are not 16-byte
   runs. */
template <int ROWS, int COLS, int THREADS, int UMAX, typename PUT>
__device__ __forceinline__ void stage_elems(const float *src, int64_t rs, int64_t cs, int nr,
                                            int nx, PUT put)
{
    constexpr int N = ROWS * COLS, U = N / THREADS < UMAX ? N / THREADS : UMAX;
    const bool down = rs == 1;
#pragma unroll 1
    for (int e0 = threadIdx.x; e0 < N; e0 += U * THREADS) {
        float v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * THREADS;
            const int r = down ? e % ROWS : e / COLS, x = down ? e / ROWS : e % COLS;
            v[u] = (r < nr && x < nx) ? src[r * rs + x * cs] : 0.f;
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * THREADS;
            put(down ? e % ROWS : e / COLS, down ? e / ROWS : e % COLS, v[u]);
        }
    }
}

/* A tf32 or 3xtf32 fragment (A's four values or B's two) as the mma reads
   it: the tf32 words, and in 3xtf32 the small parts too.  Formed once,
   a fragment may feed several k-steps of the same operands. */
template <int P, int N> struct tf32_frag {
    uint32_t big[N], small[N]; /* small: 3xtf32 only */

    /* tf32 words already rounded (a staged tf32 panel, panel_fmt) */
    __device__ __forceinline__ explicit tf32_frag(const uint32_t (&w)[N])
    {
        static_assert(P == RA_GPU_PREC_TF32, "3xtf32 fragments are split from floats");
#pragma unroll
        for (int r = 0; r < N; r++)
            big[r] = w[r];
    }

    __device__ __forceinline__ explicit tf32_frag(const float (&x)[N])
    {
#pragma unroll
        for (int r = 0; r < N; r++) {
            if constexpr (P == RA_GPU_PREC_TF32)
                big[r] = tf32_rna(x[r]);
            else
                tf32_split(x[r], big[r], small[r]);
        }
    }
};

/* One k-step of 8 of a 16x8 tile in tf32 or 3xtf32 (fa: A's fragment,
   fb: B's; d the running sum). */
template <int P>
__device__ __forceinline__ void mma_kstep_f32(float (&d)[4], const tf32_frag<P, 4> &fa,
                                              const tf32_frag<P, 2> &fb)
{
    if constexpr (P == RA_GPU_PREC_TF32) {
        mma_tf32(d, fa.big, fb.big);
    } else {
        /* The k-step's partial sum from zero in the tensor core (small
           terms first, as the CPU twin), then one RN add into the running
           sum: see the header comment. */
        float e[4] = {0.f, 0.f, 0.f, 0.f};
        mma_tf32(e, fa.small, fb.big);
        mma_tf32(e, fa.big, fb.small);
        mma_tf32(e, fa.big, fb.big);
        for (int r = 0; r < 4; r++)
            d[r] = __fadd_rn(d[r], e[r]);
    }
}

/* Every k-step of one 16x8 output tile (tensor-core precisions): la(h, p)
   is A(r0 + 8h, p) for the lane's rows r0 = i0 + g, r0 + 8, lb(p) is
   B(p, j0 + g), both zero outside the product; d carries the sum.  The
   layout every form of the product follows (direct and mm_cols16 call
   it; the staged blocks read the same positions to reuse A's fragment),
   so that each feeds the same operands to the same k-steps.  UNROLL
   k-steps issue their loads together (the passes read some operands
   from global memory). */
template <int P, int UNROLL = 1, typename LA, typename LB>
__device__ __forceinline__ void mma_tile(float (&d)[4], int kc, LA la, LB lb)
{
    const int t = threadIdx.x & 3;
    if constexpr (P == RA_GPU_PREC_BF16) {
#pragma unroll UNROLL
        for (int k0 = 0; k0 < kc; k0 += 16) {
            const int ka = k0 + 2 * t, kb = ka + 8;
            const uint32_t fa[4] = {
                bf16x2_rn(la(0, ka), la(0, ka + 1)), bf16x2_rn(la(1, ka), la(1, ka + 1)),
                bf16x2_rn(la(0, kb), la(0, kb + 1)), bf16x2_rn(la(1, kb), la(1, kb + 1))};
            const uint32_t fb[2] = {bf16x2_rn(lb(ka), lb(ka + 1)), bf16x2_rn(lb(kb), lb(kb + 1))};
            mma_bf16(d, fa, fb);
        }
    } else {
#pragma unroll UNROLL
        for (int k0 = 0; k0 < kc; k0 += 8) {
            const float x[4] = {la(0, k0 + t), la(1, k0 + t), la(0, k0 + t + 4), la(1, k0 + t + 4)};
            const float y[2] = {lb(k0 + t), lb(k0 + t + 4)};
            mma_kstep_f32<P>(d, tf32_frag<P, 4>(x), tf32_frag<P, 2>(y));
        }
    }
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
        const int r0 = i0 + g, r1 = r0 + 8, c0 = j0 + 2 * t;
        float d[4];
        frag_load(d, cb, ldc, r0, c0, m, n, acc);
        /* B(p, j) = bb[p*rs + j*cs]: the view with rows j, columns p */
        const mat bt = mk(nullptr, b.cs, b.rs);
        const int col = j0 + g;
        mma_tile<P>(
            d, kc, [&](int h, int p) { return ld(ab, a, h ? r1 : r0, p, m, kc); },
            [&](int p) { return ld(bb, bt, col, p, n, kc); });
        frag_store(d, cb, ldc, r0, c0, m, n);
    }
}

/* The 16 x 8 output tiles of an m x 16 product (column arrays C, row
   stride ldc), one warp each: d from C (acc) or zero, then
   kstep(d, r0, col) (r0 = the lane's first row, col = the lane's B
   column), then back to C. */
template <typename KS>
__device__ __forceinline__ void cols16_tiles(float *c, int ldc, int m, bool acc, KS kstep)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int tile = threadIdx.x >> 5; tile < m / 8; tile += blockDim.x >> 5) {
        const int r0 = (tile >> 1) * 16 + g, c0 = (tile & 1) * 8 + 2 * t;
        float *c0p = c + r0 * ldc + c0, *c1p = c0p + 8 * ldc;
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        if (acc)
            d[0] = c0p[0], d[1] = c0p[1], d[2] = c1p[0], d[3] = c1p[1];
        kstep(d, r0, (tile & 1) * 8 + g);
        c0p[0] = d[0], c0p[1] = d[1], c1p[0] = d[2], c1p[1] = d[3];
    }
}

/* mm_cols16 for IEEE: blk_mm_direct's fmaf chains (each element in
   increasing p from C or zero), a thread running the four of rows y and
   y + m/2, columns x and x + 8 side by side: two loads per two fmafs
   where one thread per element made two per one, and four independent
   chains in flight. */
template <bool TA>
__device__ void mm_cols16_ieee(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                               int m, int kc, bool acc)
{
    const int h = m / 2;
    for (int slot = threadIdx.x; slot < h * 8; slot += blockDim.x) {
        const int x = slot % 8, y = slot / 8;
        float *c0 = c + y * ldc + x, *c1 = c0 + h * ldc;
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        if (acc)
            d[0] = c0[0], d[1] = c0[8], d[2] = c1[0], d[3] = c1[8];
        /* A(y, p) at a0[p * sa], A(y + h, p) at a0[p * sa + ha] */
        const int sa = TA ? lda : 1, ha = TA ? h : h * lda;
        const float *a0 = a + (TA ? y : y * lda), *bx = b + x;
#pragma unroll 4
        for (int p = 0; p < kc; p++) {
            const float u0 = a0[p * sa], u1 = a0[p * sa + ha], v0 = bx[p * ldb],
                        v1 = bx[p * ldb + 8];
            d[0] = fmaf(u0, v0, d[0]);
            d[1] = fmaf(u0, v1, d[1]);
            d[2] = fmaf(u1, v0, d[2]);
            d[3] = fmaf(u1, v1, d[3]);
        }
        c0[0] = d[0], c0[8] = d[1], c1[0] = d[2], c1[8] = d[3];
    }
}

/* C (m x 16, row stride ldc) = (acc ? C : 0) + A B for a product whose
   every index is in range: m and kc multiples of 16, A(i, p) at
   a[i * lda + p] (a[p * lda + i] when TA), B(p, j) at b[p * ldb + j].
   No bounds tests and 32-bit offsets: the fragments are plain loads, the
   same operands in the same k-steps as blk_mm_direct, so the same bits.
   The sequential passes run their full chunks with it (their 16-column
   products were mostly index arithmetic in blk_mm_direct). */
template <int P, bool TA>
__device__ void mm_cols16(float *c, int ldc, const float *a, int lda, const float *b, int ldb,
                          int m, int kc, bool acc)
{
    if (P == RA_GPU_PREC_IEEE) {
        mm_cols16_ieee<TA>(c, ldc, a, lda, b, ldb, m, kc, acc);
        return;
    }
    cols16_tiles(c, ldc, m, acc, [&](float(&d)[4], int r0, int col) {
        const float *bc = b + col;
        if (TA) {
            const float *a0 = a + r0;
            mma_tile<P, 4>(
                d, kc, [&](int h, int p) { return a0[p * lda + 8 * h]; },
                [&](int p) { return bc[p * ldb]; });
        } else {
            const float *a0 = a + r0 * lda, *a1 = a0 + 8 * lda;
            mma_tile<P, 4>(
                d, kc, [&](int h, int p) { return (h ? a1 : a0)[p]; },
                [&](int p) { return bc[p * ldb]; });
        }
    });
}

constexpr int MM_T = 64; /* staged output block side */

/* How a staged panel holds its operand (MM_T rows of MM_T contraction
   indices, LD words a row):
     IEEE    floats, rows of 68, so that the chains read four
             contraction steps with one 16-byte load (eight consecutive
             rows' words in distinct banks); rows of 65 put a warp's 32
             rows in distinct banks for scalar loads and for the staging
             of operands along their rows, which at 68 stores 4-way
             conflicted, but the chains then issued a load per fmaf pair;
     tf32    the tf32 words cvt.rna makes, rows of 68 (lanes (g, t) of a
             fragment load at banks 4g + t): each element is rounded once,
             when staged, rather than once for each warp whose fragments
             read it (four in the 64 x 64 block), and the cvt is four
             instructions on sm_90 (FSETP, VIADD, SEL, LOP3); H200, B=1,
             T=8192, Hv=32, K=V=128: gradients kernel 6.87 to 6.40 ms;
     3xtf32  floats, rows of 68, split as the fragments read them: split
             words take two planes, which fit the block's shared memory
             only at half the contraction depth, and there the doubled
             panel count (syncs, C tiles kept in memory between panels)
             cost more than the splits saved (H200, B=1, T=8192, Hv=32,
             K=V=128: gradients kernel 7.84 to 8.73 ms);
     bf16    bf16 pairs (X(., p), X(., p + 1) rounded to nearest even, the
             lower index in the low half), rows of 36 words.
   The mma sees the same words either way, so the bits are the same. */
template <int P> struct panel_fmt {
    static constexpr bool PAIR = P == RA_GPU_PREC_BF16, ROUNDED = P == RA_GPU_PREC_TF32;
    static constexpr int W = PAIR ? 2 : 1;
    static constexpr int LD = MM_T / W + 4;
    static constexpr int WORDS = MM_T * LD;
};

/* Stages the panel X(r0 + r, k0 + p), r, p < MM_T, zero outside
   rows x cols (X(i, k) = base[i * rs + k * cs]) in P's format at dst.
   The loop runs along X's unit stride and keeps MM_LOADS loads in flight
   per thread: the loads are what the products wait for.  The panel is
   always whole, so its index arithmetic is shifts (the products read the
   part they need; the rest is zeros). */
constexpr int MM_LOADS = 8;

/* mm_stage for a one-word format (IEEE, tf32, 3xtf32) whose operand rows
   are contiguous and 16-byte aligned (cs == 1, base 16-byte aligned, rs
   and k0 multiples of 4): four elements a load and a store, so that
   MM_LOADS loads in flight per thread carry four times the bytes, and
   the index arithmetic is per four elements.  The same words as the
   scalar loop's. */
template <int P>
__device__ void mm_stage_rows4(uint32_t *dst, const float *base, int64_t rs, int r0, int k0,
                               int rows, int cols)
{
    using F = panel_fmt<P>;
    static_assert(F::W == 1 && F::LD % 4 == 0, "one word an element, 16-byte aligned rows");
    constexpr int LD = F::LD, NQ = MM_T / 4, TOTAL = MM_T * NQ, U = MM_LOADS;
    const int step = blockDim.x;
    auto word = [](float x) { return F::ROUNDED ? tf32_rna(x) : __float_as_uint(x); };
    for (int e0 = threadIdx.x; e0 < TOTAL; e0 += U * step) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * step, i = r0 + e / NQ, k = k0 + 4 * (e % NQ);
            const float *x = base + (int64_t)i * rs + k;
            v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (e < TOTAL && i < rows) {
                if (k + 4 <= cols) {
                    v[u] = *reinterpret_cast<const float4 *>(x);
                } else {
                    if (k < cols)
                        v[u].x = x[0];
                    if (k + 1 < cols)
                        v[u].y = x[1];
                    if (k + 2 < cols)
                        v[u].z = x[2];
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * step;
            if (e < TOTAL)
                *reinterpret_cast<uint4 *>(dst + e / NQ * LD + 4 * (e % NQ)) =
                    make_uint4(word(v[u].x), word(v[u].y), word(v[u].z), word(v[u].w));
        }
    }
}

template <int P>
__device__ void mm_stage(uint32_t *dst, const float *base, int64_t rs, int64_t cs, int r0, int k0,
                         int rows, int cols)
{
    using F = panel_fmt<P>;
    if constexpr (F::W == 1) {
        if (cs == 1 && rs % 4 == 0 && k0 % 4 == 0 &&
            (reinterpret_cast<uintptr_t>(base) & 15) == 0) {
            mm_stage_rows4<P>(dst, base, rs, r0, k0, rows, cols);
            return;
        }
    }
    constexpr int W = F::W, LD = F::LD, NW = MM_T / W, TOTAL = MM_T * NW, U = MM_LOADS / W;
    const bool along_rows = rs == 1 && cs != 1;
    const int step = blockDim.x;
    /* Element e is (r, w) = (e % MM_T, e / MM_T) along the rows, else
       (e / NW, e % NW); next() moves (r, w) on by one stride. */
    const int dr = along_rows ? step % MM_T : step / NW, dw = along_rows ? step / MM_T : step % NW;
    auto next = [&](int &r, int &w) {
        r += dr, w += dw;
        if (along_rows && r >= MM_T)
            r -= MM_T, w++;
        else if (!along_rows && w >= NW)
            w -= NW, r++;
    };
    int r = along_rows ? (int)threadIdx.x % MM_T : (int)threadIdx.x / NW,
        w = along_rows ? (int)threadIdx.x / MM_T : (int)threadIdx.x % NW;
    for (int e0 = threadIdx.x; e0 < TOTAL; e0 += U * step) {
        float v[U][W];
        int r1 = r, w1 = w;
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = r0 + r1, k = k0 + W * w1;
            const bool in = e0 + u * step < TOTAL && i < rows;
            const float *x = base + (int64_t)i * rs + (int64_t)k * cs;
#pragma unroll
            for (int q = 0; q < W; q++)
                v[u][q] = (in && k + q < cols) ? x[q * cs] : 0.f;
            next(r1, w1);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (e0 + u * step < TOTAL) {
                uint32_t *o = dst + r * LD + w;
                if constexpr (F::PAIR)
                    *o = bf16x2_rn(v[u][0], v[u][W - 1]);
                else if constexpr (F::ROUNDED)
                    *o = tf32_rna(v[u][0]);
                else
                    *o = __float_as_uint(v[u][0]);
            }
            next(r, w);
        }
    }
}

/* A staged output block for the tensor-core precisions: each warp
   computes 16 rows x 8 NB columns, one A fragment per k-step serving NB
   n-subtiles (bf16: NB 4; tf32 and 3xtf32: NB 2, since at 4 the prep and
   gradients kernels spilled 516 and 600 bytes at their register caps,
   ptxas -v).  The fragments take the panels' words as staged (panel_fmt):
   bf16 pairs and tf32 words as they are, 3xtf32 floats split here.
   Every output element sees the same k-steps on the same operands as in
   blk_mm_direct, so the bits are the same. */
template <int P>
__device__ inline void mm_block_panel_mma(float *c, int64_t ldc, int i0, int j0, int mt, int nt,
                                          int kt, bool from_c, const uint32_t *As,
                                          const uint32_t *Bs)
{
    using F = panel_fmt<P>;
    constexpr bool BF = P == RA_GPU_PREC_BF16;
    constexpr int NB = BF ? 4 : 2, LD = F::LD;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int tn = (nt + 8 * NB - 1) / (8 * NB), tiles = (mt + 15) / 16 * tn;
    float *cb = c + (int64_t)i0 * ldc + j0;
    for (int tile = threadIdx.x >> 5; tile < tiles; tile += blockDim.x >> 5) {
        const int ti = tile / tn * 16, tj = tile % tn * 8 * NB;
        const int r0 = ti + g, r1 = r0 + 8;
        float d[NB][4];
#pragma unroll
        for (int u = 0; u < NB; u++)
            frag_load(d[u], cb, ldc, r0, tj + 8 * u + 2 * t, mt, nt, from_c);
        const uint32_t *a0 = As + r0 * LD, *a1 = As + r1 * LD;
        if constexpr (BF) {
            for (int k0 = 0; k0 < kt; k0 += 16) {
                const int wa = k0 / 2 + t, wb = wa + 4;
                const uint32_t fa[4] = {a0[wa], a1[wa], a0[wb], a1[wb]};
#pragma unroll
                for (int u = 0; u < NB; u++)
                    if (tj + 8 * u < nt) {
                        const uint32_t *bc = Bs + (tj + 8 * u + g) * LD;
                        const uint32_t fb[2] = {bc[wa], bc[wb]};
                        mma_bf16(d[u], fa, fb);
                    }
            }
        } else if constexpr (F::ROUNDED) {
            /* not unrolled: unrolled, the early loads of the staged words
               spilled (ptxas -v: gradients kernel 204 bytes) */
#pragma unroll 1
            for (int k0 = 0; k0 < kt; k0 += 8) {
                const int ka = k0 + t, kb = ka + 4;
                const tf32_frag<P, 4> fa({a0[ka], a1[ka], a0[kb], a1[kb]});
#pragma unroll
                for (int u = 0; u < NB; u++)
                    if (tj + 8 * u < nt) {
                        const uint32_t *bc = Bs + (tj + 8 * u + g) * LD;
                        mma_kstep_f32<P>(d[u], fa, tf32_frag<P, 2>({bc[ka], bc[kb]}));
                    }
            }
        } else {
            const float *f0 = reinterpret_cast<const float *>(a0),
                        *f1 = reinterpret_cast<const float *>(a1);
            for (int k0 = 0; k0 < kt; k0 += 8) {
                const float x[4] = {f0[k0 + t], f1[k0 + t], f0[k0 + t + 4], f1[k0 + t + 4]};
                const tf32_frag<P, 4> fa(x);
#pragma unroll
                for (int u = 0; u < NB; u++)
                    if (tj + 8 * u < nt) {
                        const float *bc =
                            reinterpret_cast<const float *>(Bs) + (tj + 8 * u + g) * LD;
                        const float y[2] = {bc[k0 + t], bc[k0 + t + 4]};
                        mma_kstep_f32<P>(d[u], fa, tf32_frag<P, 2>(y));
                    }
            }
        }
#pragma unroll
        for (int u = 0; u < NB; u++)
            frag_store(d[u], cb, ldc, r0, tj + 8 * u + 2 * t, mt, nt);
    }
}

/* mm_block_panel for IEEE: each output element is its fmaf chain in
   increasing p from C or zero, as in blk_mm_direct; a thread runs the 16
   chains of a 4 x 4 micro-tile (rows y + 16 r, columns x + 16 c) side by
   side, reading four steps of each row with one 16-byte load, so that
   eight loads feed 64 fmafs (the steps past the last multiple of four
   below kt one at a time: the chains stop at kt).  A half warp's 16
   columns are 16 consecutive rows of B's panel, its row of A a
   broadcast.  Rows and columns past the block are computed on the
   panel's zeros and not stored. */
__device__ inline void mm_block_panel_ieee(float *c, int64_t ldc, int i0, int j0, int mt, int nt,
                                           int kt, bool from_c, const float *As, const float *Bs)
{
    constexpr int LD = panel_fmt<RA_GPU_PREC_IEEE>::LD, R = 4, S = MM_T / R;
    static_assert(LD % 4 == 0, "16-byte aligned panel rows");
    float *cb = c + (int64_t)i0 * ldc + j0;
    for (int slot = threadIdx.x; slot < S * S; slot += blockDim.x) {
        const int x = slot % S, y = slot / S;
        if (y >= mt || x >= nt)
            continue;
        float d[R][R];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int q = 0; q < R; q++) {
                const int i = y + S * r, j = x + S * q;
                d[r][q] = (from_c && i < mt && j < nt) ? cb[i * ldc + j] : 0.f;
            }
        const float *a = As + y * LD, *b = Bs + x * LD;
        const int k4 = kt & ~3;
#pragma unroll 1
        for (int p = 0; p < k4; p += 4) {
            float4 u[R];
#pragma unroll
            for (int r = 0; r < R; r++)
                u[r] = *reinterpret_cast<const float4 *>(a + r * S * LD + p);
#pragma unroll
            for (int q = 0; q < R; q++) { /* one column's word at a time: fewer live registers */
                const float4 v = *reinterpret_cast<const float4 *>(b + q * S * LD + p);
#pragma unroll
                for (int e = 0; e < 4; e++)
#pragma unroll
                    for (int r = 0; r < R; r++)
                        d[r][q] = fmaf(f4_at(u[r], e), f4_at(v, e), d[r][q]);
            }
        }
        for (int p = k4; p < kt; p++)
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int q = 0; q < R; q++)
                    d[r][q] = fmaf(a[r * S * LD + p], b[q * S * LD + p], d[r][q]);
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int q = 0; q < R; q++) {
                const int i = y + S * r, j = x + S * q;
                if (i < mt && j < nt)
                    cb[i * ldc + j] = d[r][q];
            }
    }
}

/* The staged form's two panels (A, then B^T), one buffer per block and
   precision; callers between products may borrow it (inverse.cuh).  bf16's
   keeps the size of two 64 x 68 float panels, which its borrowers count on. */
template <int P>
constexpr int MM_SMEM_FLOATS = 2 *
                               (P == RA_GPU_PREC_BF16 ? MM_T * (MM_T + 4) : panel_fmt<P>::WORDS);

template <int P> __device__ __forceinline__ float *mm_smem()
{
    __shared__ __align__(16) float buf[MM_SMEM_FLOATS<P>]; /* 16-byte panel rows */
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
    uint32_t *As = reinterpret_cast<uint32_t *>(mm_smem<P>()), *Bs = As + panel_fmt<P>::WORDS;
    /* Contraction panels outermost after the row block: A's panel is
       staged once for all the column blocks; each output element still
       sees the panels in increasing k0, its partial sum kept in C. */
    for (int i0 = 0; i0 < m; i0 += MM_T) {
        const int mt = m - i0 < MM_T ? m - i0 : MM_T;
        for (int k0 = 0; k0 < kc; k0 += MM_T) {
            const int kt = kc - k0 < MM_T ? kc - k0 : MM_T;
            for (int j0 = 0; j0 < n; j0 += MM_T) {
                const int nt = n - j0 < MM_T ? n - j0 : MM_T;
                __syncthreads(); /* the previous panel is consumed */
                if (j0 == 0)
                    mm_stage<P>(As, a.p, a.rs, a.cs, i0, k0, m, kc);
                /* B^T: rows j, columns p */
                mm_stage<P>(Bs, b.p, b.cs, b.rs, j0, k0, n, kc);
                __syncthreads();
                if constexpr (P == RA_GPU_PREC_IEEE)
                    mm_block_panel_ieee(c, ldc, i0, j0, mt, nt, kt, acc || k0 > 0,
                                        reinterpret_cast<const float *>(As),
                                        reinterpret_cast<const float *>(Bs));
                else
                    mm_block_panel_mma<P>(c, ldc, i0, j0, mt, nt, kt, acc || k0 > 0, As, Bs);
            }
        }
    }
}

} // namespace ra_gpu

#endif
