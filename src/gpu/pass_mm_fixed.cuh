/* The sequential passes' products at the production head's sizes, for IEEE, tf32 and 3xtf32. */
#ifndef RA_GPU_PASS_MM_FIXED_CUH
#define RA_GPU_PASS_MM_FIXED_CUH

/*
 * mm_cols16_ieee (blk_mm.cuh) for a full chunk of the production head's
 * sizes (C = 64, K = V = 128), where m, kc and the column arrays' stride
 * are constants.  Each output element is the same fmaf chain, in
 * increasing p from C or zero, so the bits are mm_cols16_ieee's.
 *
 * Why: ncu of the IEEE states pass (B=1, T=8192, Hv=32, K=V=128 on the
 * H200) found its inner loop issue-bound at 2.9 executed instructions per
 * fmaf: generic loads through 64-bit addresses and runtime strides, four
 * scalar loads per four fmaf.  Here a thread keeps two rows by CW = M / 32
 * adjacent columns (one output slot per thread of 256 at M = 64 and 128),
 * so that one 8-byte load of A and one 8- or 16-byte load of B feed 2 CW
 * fmaf, through shared-space addresses at constant offsets.
 *
 * A read in place from global memory (the dstates pass's Q and W at two
 * blocks per SM, transposed) is loaded PB k-steps ahead of its fmafs:
 * mm_cols16_ieee loaded four ahead, and its first fmafs after each load
 * held half of that pass's stall samples (long scoreboard).
 *
 * mm_cols16_tf32_fixed is the same for tf32 and 3xtf32: each warp's 16 x
 * 8 tiles are mm_cols16's (cols16_tiles, mma_tile), the same fragments in
 * the same k-steps from C or zero, so the same bits; at M = 128 a warp
 * takes a row block's two column halves, forming (and in 3xtf32
 * splitting) each A fragment once for both.
 */

#include <cstdint>

#include "gpu/blk_mm.cuh"

namespace ra_gpu
{

__device__ __forceinline__ float2 lds_f2(unsigned a)
{
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(a));
    return v;
}

__device__ __forceinline__ float4 lds_f4(unsigned a)
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(a));
    return v;
}

/* Columns x0..x0+CW-1 of row p of the column arrays at shared address b. */
template <int CW, int LDB>
__device__ __forceinline__ void lds_row(float (&v)[CW], unsigned b, int p)
{
    const unsigned a = b + (unsigned)(p * LDB * 4);
    if constexpr (CW == 4) {
        const float4 r = lds_f4(a);
        v[0] = r.x, v[1] = r.y, v[2] = r.z, v[3] = r.w;
    } else {
        static_assert(CW == 2, "two or four columns a thread");
        const float2 r = lds_f2(a);
        v[0] = r.x, v[1] = r.y;
    }
}

/* C (M x 16, row stride LDB) = (acc ? C : 0) + A B, B the column arrays b
   (row stride LDB), A(i, p) at a[i * lda + p] (a[p * lda + i] when TA):
   in shared memory unless AG, where A is global, TA, lda even and a
   8-byte aligned.  256 threads, one output slot each. */
template <int M, int KC, bool TA, bool AG, int LDB>
__device__ __forceinline__ void mm_cols16_ieee_fixed(float *c, const float *a, int lda,
                                                     const float *b, bool acc)
{
    constexpr int CW = M / 32, G = 16 / CW, PB = 16;
    static_assert(M / 2 * G == 256 && KC % PB == 0, "one slot per thread of 256");
    static_assert(!AG || TA, "a global A is read transposed");
    const int x = threadIdx.x % G, y = threadIdx.x / G, r0 = 2 * y, c0 = CW * x;
    float d[2][CW];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < CW; j++)
            d[i][j] = acc ? c[(r0 + i) * LDB + c0 + j] : 0.f;
    const unsigned bs = (unsigned)__cvta_generic_to_shared(b + c0);
    /* A(r0, p) and A(r0 + 1, p) */
    const auto load_a = [&](float2(&av)[PB], int p0) {
        if constexpr (AG) {
#pragma unroll
            for (int q = 0; q < PB; q++)
                av[q] = __ldg(reinterpret_cast<const float2 *>(a + (int64_t)(p0 + q) * lda + r0));
        } else if constexpr (TA) {
            const unsigned as = (unsigned)__cvta_generic_to_shared(a + r0);
#pragma unroll
            for (int q = 0; q < PB; q++)
                av[q] = lds_f2(as + (unsigned)((p0 + q) * lda * 4));
        } else {
            const unsigned as = (unsigned)__cvta_generic_to_shared(a + r0 * lda);
#pragma unroll
            for (int q = 0; q < PB; q += 2) {
                const float2 u = lds_f2(as + (unsigned)((p0 + q) * 4)),
                             w = lds_f2(as + (unsigned)((lda + p0 + q) * 4));
                av[q] = make_float2(u.x, w.x), av[q + 1] = make_float2(u.y, w.y);
            }
        }
    };
    float2 av[PB];
    load_a(av, 0);
#pragma unroll
    for (int p0 = 0; p0 < KC; p0 += PB) {
        float2 an[PB];
        if (p0 + PB < KC)
            load_a(an, p0 + PB);
#pragma unroll
        for (int q = 0; q < PB; q++) {
            float bv[CW];
            lds_row<CW, LDB>(bv, bs, p0 + q);
#pragma unroll
            for (int j = 0; j < CW; j++) {
                d[0][j] = fmaf(av[q].x, bv[j], d[0][j]);
                d[1][j] = fmaf(av[q].y, bv[j], d[1][j]);
            }
        }
        if (p0 + PB < KC)
#pragma unroll
            for (int q = 0; q < PB; q++)
                av[q] = an[q];
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < CW; j++)
            c[(r0 + i) * LDB + c0 + j] = d[i][j];
}

/* Shared-space 32-bit load at byte address a. */
__device__ __forceinline__ float lds_f1(unsigned a)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
    return v;
}

/* mm_cols16_ieee_fixed's product in tf32 or 3xtf32 (P): 256 threads, a
   warp on NB = M / 64 of the 16 x 8 tiles, both in one row block. */
template <int P, int M, int KC, bool TA, bool AG, int LDB>
__device__ __forceinline__ void mm_cols16_tf32_fixed(float *c, const float *a, int lda,
                                                     const float *b, bool acc)
{
    static_assert(P == RA_GPU_PREC_TF32 || P == RA_GPU_PREC_TF32X3, "tf32 precisions");
    constexpr int NB = M / 64, KS = KC / 8, PB = 4;
    static_assert(M % 64 == 0 && NB <= 2 && KS % PB == 0, "eight warps over M x 16");
    static_assert(!AG || TA, "a global A is read transposed");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    /* the warp's row block and first column half */
    const int rb = NB == 2 ? warp : warp >> 1, h0 = NB == 2 ? 0 : warp & 1;
    const int r0 = 16 * rb + g;
    float d[NB][4];
#pragma unroll
    for (int u = 0; u < NB; u++) {
        const float *c0 = c + r0 * LDB + 8 * (h0 + u) + 2 * t, *c1 = c0 + 8 * LDB;
        d[u][0] = acc ? c0[0] : 0.f, d[u][1] = acc ? c0[1] : 0.f;
        d[u][2] = acc ? c1[0] : 0.f, d[u][3] = acc ? c1[1] : 0.f;
    }
    /* A(r0 + 8h, p): TA at a[p * lda + r0 + 8h], else a[(r0 + 8h) * lda + p] */
    const auto load_a = [&](float(&x)[4], int k0) {
        const int p0 = k0 + t, p1 = p0 + 4;
        if constexpr (AG) {
            const float *ar = a + r0;
            x[0] = __ldg(ar + (int64_t)p0 * lda), x[1] = __ldg(ar + (int64_t)p0 * lda + 8);
            x[2] = __ldg(ar + (int64_t)p1 * lda), x[3] = __ldg(ar + (int64_t)p1 * lda + 8);
        } else if constexpr (TA) {
            const unsigned as = (unsigned)__cvta_generic_to_shared(a + r0);
            x[0] = lds_f1(as + (unsigned)(p0 * lda * 4)),
            x[1] = lds_f1(as + (unsigned)((p0 * lda + 8) * 4));
            x[2] = lds_f1(as + (unsigned)(p1 * lda * 4)),
            x[3] = lds_f1(as + (unsigned)((p1 * lda + 8) * 4));
        } else {
            const unsigned as = (unsigned)__cvta_generic_to_shared(a + r0 * lda);
            x[0] = lds_f1(as + (unsigned)(p0 * 4)),
            x[1] = lds_f1(as + (unsigned)((8 * lda + p0) * 4));
            x[2] = lds_f1(as + (unsigned)(p1 * 4)),
            x[3] = lds_f1(as + (unsigned)((8 * lda + p1) * 4));
        }
    };
    const unsigned bs = (unsigned)__cvta_generic_to_shared(b + 8 * h0 + g);
#pragma unroll
    for (int q0 = 0; q0 < KS; q0 += PB) {
        float x[PB][4];
#pragma unroll
        for (int q = 0; q < PB; q++)
            load_a(x[q], 8 * (q0 + q));
#pragma unroll
        for (int q = 0; q < PB; q++) {
            const int p0 = 8 * (q0 + q) + t;
            const tf32_frag<P, 4> fa(x[q]);
#pragma unroll
            for (int u = 0; u < NB; u++) {
                const float y[2] = {lds_f1(bs + (unsigned)((p0 * LDB + 8 * u) * 4)),
                                    lds_f1(bs + (unsigned)(((p0 + 4) * LDB + 8 * u) * 4))};
                mma_kstep_f32<P>(d[u], fa, tf32_frag<P, 2>(y));
            }
        }
    }
#pragma unroll
    for (int u = 0; u < NB; u++) {
        float *c0 = c + r0 * LDB + 8 * (h0 + u) + 2 * t, *c1 = c0 + 8 * LDB;
        c0[0] = d[u][0], c0[1] = d[u][1], c1[0] = d[u][2], c1[1] = d[u][3];
    }
}

} // namespace ra_gpu

#endif
