/* The sequential passes' IEEE products at fixed sizes: register tiles over shared memory. */
#ifndef RA_GPU_PASS_MM_IEEE_CUH
#define RA_GPU_PASS_MM_IEEE_CUH

/*
 * mm_cols16_ieee (blk_mm.cuh) for a full chunk of the production head's
 * sizes (C = 64, K = V = 128), where m, kc and the column arrays' stride
 * are constants.  Each output element is the same fmaf chain, in
 * increasing p from C or zero, so the bits are mm_cols16_ieee's.
 *
 * Why: ncu of the IEEE states pass (B=1, T=8192, Hv=32, K=V=128 on the
 * H200) found its inner loop issue-bound at about six instructions per
 * fmaf: generic loads through 64-bit addresses and runtime strides, four
 * scalar loads per four fmaf.  Here a thread keeps two rows by CW = M / 32
 * adjacent columns (one output slot per thread of 256 at M = 64 and 128),
 * so that one 8-byte load of A and one 8- or 16-byte load of B feed 2 CW
 * fmaf, through shared-space addresses at constant offsets.
 *
 * A read in place from global memory (the dstates pass's Q and W at two
 * blocks per SM, transposed) is loaded PB k-steps ahead of its fmafs:
 * mm_cols16_ieee loaded four ahead, and its first fmaf after each load
 * held 48% of that pass's stall samples (long scoreboard).
 */

#include <cstdint>

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

} // namespace ra_gpu

#endif
