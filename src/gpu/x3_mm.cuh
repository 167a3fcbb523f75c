/* 3xtf32 products of whole operands in shared memory: blk_mm's k-steps on split planes. */
#ifndef RA_GPU_X3_MM_CUH
#define RA_GPU_X3_MM_CUH

/*
 * x3_mm has blk_mm<RA_GPU_PREC_TF32X3>'s semantics (blk_mm.cuh, without
 * batch), for ffma_mm's sizes (m <= 64, n <= 128, kc <= 128, each
 * operand along its rows or its columns):
 *
 *   C(i, j) = (acc ? C(i, j) : 0) + sum_{p < kc} A(i, p) B(p, j).
 *
 * blk_mm stages 64 x 64 float panels per output block and splits every
 * element into its two tf32 words (big = tf32(x), small = tf32(x - big))
 * each time a warp's fragment reads it (two cvt.rna.tf32 and a
 * subtraction a split), four times per element in a 64 x 64 block.  Here each operand
 * is staged once per 64-deep half of the contraction as split planes
 * (element (r, x) as the word pair {big, small}), so every element is
 * split once, and the fragments are 64-bit loads.  The operand is staged
 * in its own layout (the rows of its unit stride), so that the copies run
 * along global memory; the fragments read either layout.  A warp's sums
 * stay in registers through a half's k-steps (x3_form says why not longer).
 *
 * The bits are blk_mm's: every output element of a 16 x 8 tile sees the
 * same k-steps of 8 (the same operand words at the same k positions), each
 * a partial sum from zero through three mmas (small big, big small, big
 * big) added to the running sum with one __fadd_rn, from C or zero, in
 * increasing k, over the same number of steps (kc rounded up to 8; past
 * kc the staged words are zero, as blk_mm's).
 *
 * Shared memory: A as 64 rows of 64 pairs (136 words a row: at eight words
 * past a multiple of 32 banks, the 16 lanes of a half warp's 64-bit
 * fragment loads hit distinct banks in either layout), B as up to 128 rows
 * of 64 pairs (along the contraction) or 64 rows of up to 128 pairs (along
 * the output's columns).  The calling convention is ffma_mm's: every thread
 * of a 256-thread block, the same arguments, X3_WORDS words of shared
 * memory; it synchronises before staging, the caller before reading C.
 */

#include <cstdint>

#include "gpu/blk_mm.cuh"
#include "gpu/mma.cuh"

namespace ra_gpu
{

constexpr int X3_THREADS = 256, X3_H = 64;
/* words a row of h pairs takes, 8 past a multiple of 32 */
__host__ __device__ constexpr int x3_ld(int h) { return 2 * h + 8; }
constexpr int X3_A = X3_H * x3_ld(X3_H), X3_B = 2 * X3_H * x3_ld(X3_H), X3_WORDS = X3_A + X3_B;
static_assert(X3_H * x3_ld(2 * X3_H) <= X3_B, "B along its columns fits");

/* dst row r, pair x (r < ROWS, x < COLS, LD words a row) = the split of
   X(r, x) = src[r*rs + x*cs] for r < nr, x < nx, else zeros.  Rows along
   the unit stride (cs == 1, rs and src 16-byte aligned) by float4 loads,
   any other layout element by element; a thread's loads issue before its
   splits and stores. */
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void x3_stage(uint32_t *dst, const float *src, int64_t rs, int64_t cs,
                                         int nr, int nx)
{
    static_assert(COLS % 4 == 0 && (ROWS * COLS / 4) % X3_THREADS == 0, "whole passes");
    auto put = [&](int r, int x, float v) {
        uint32_t big, small;
        tf32_split(v, big, small);
        *reinterpret_cast<uint2 *>(dst + r * LD + 2 * x) = make_uint2(big, small);
    };
    if (cs == 1 && rs % 4 == 0 && (reinterpret_cast<uintptr_t>(src) & 15) == 0) {
        constexpr int SEG = COLS / 4, N = ROWS * SEG, U = N / X3_THREADS < 8 ? N / X3_THREADS : 8;
        static_assert(N % (U * X3_THREADS) == 0, "whole batches");
#pragma unroll 1
        for (int e0 = threadIdx.x; e0 < N; e0 += U * X3_THREADS) {
            float4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int e = e0 + u * X3_THREADS, r = e / SEG, x = 4 * (e % SEG);
                const int left = r < nr ? nx - x : 0;
                const float *s = src + r * rs + x;
                v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (left >= 4) {
                    v[u] = *reinterpret_cast<const float4 *>(s);
                } else {
                    if (left > 0)
                        v[u].x = s[0];
                    if (left > 1)
                        v[u].y = s[1];
                    if (left > 2)
                        v[u].z = s[2];
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int e = e0 + u * X3_THREADS, r = e / SEG, x = 4 * (e % SEG);
                put(r, x, v[u].x), put(r, x + 1, v[u].y), put(r, x + 2, v[u].z),
                    put(r, x + 3, v[u].w);
            }
        }
        return;
    }
    stage_elems<ROWS, COLS, X3_THREADS, 4>(src, rs, cs, nr, nx, put);
}

/* Element (r, p) of a staged operand, r its row or column index, p the
   contraction's (within the half): KM, staged as rows r of pairs p. */
template <bool KM, int LD> __device__ __forceinline__ uint2 x3_at(const uint32_t *s, int r, int p)
{
    return *reinterpret_cast<const uint2 *>(s + (KM ? r * LD + 2 * p : p * LD + 2 * r));
}

/* The fragments of k-step k0 (within the half) of the warp's row tile at
   i0 and its NT column tiles from j0: A's four elements, B's two per
   tile, each as its {big, small} pair. */
template <int NT, bool AK, int LDA, bool BK, int LDB>
__device__ __forceinline__ void x3_frags(uint2 (&fa)[4], uint2 (&fb)[NT][2], const uint32_t *As,
                                         const uint32_t *Bs, int i0, int j0, int k0)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int q = 0; q < 4; q++)
        fa[q] = x3_at<AK, LDA>(As, i0 + g + 8 * (q & 1), k0 + t + 4 * (q >> 1));
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int q = 0; q < 2; q++)
            fb[nt][q] = x3_at<BK, LDB>(Bs, j0 + 8 * nt + g, k0 + t + 4 * q);
}

/* One 64-deep half: the k-steps k0 < kt of the warp's 16 x 8 NT tiles at
   rows i0, columns j0. */
template <int NT, bool AK, int LDA, bool BK, int LDB>
__device__ __forceinline__ void x3_half(float (&d)[NT][4], const uint32_t *As, const uint32_t *Bs,
                                        int i0, int j0, int kt)
{
#pragma unroll 1
    for (int k0 = 0; k0 < kt; k0 += 8) {
        uint2 fa[4], fb[NT][2];
        x3_frags<NT, AK, LDA, BK, LDB>(fa, fb, As, Bs, i0, j0, k0);
        const uint32_t ab[4] = {fa[0].x, fa[1].x, fa[2].x, fa[3].x},
                       as[4] = {fa[0].y, fa[1].y, fa[2].y, fa[3].y};
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint32_t bb[2] = {fb[nt][0].x, fb[nt][1].x}, bs[2] = {fb[nt][0].y, fb[nt][1].y};
            /* mma_kstep_f32<TF32X3>'s order: the partial from zero, small
               terms first, one RN add */
            float e[4] = {0.f, 0.f, 0.f, 0.f};
            mma_tf32(e, as, bb);
            mma_tf32(e, ab, bs);
            mma_tf32(e, ab, bb);
#pragma unroll
            for (int r = 0; r < 4; r++)
                d[nt][r] = __fadd_rn(d[nt][r], e[r]);
        }
    }
}

/* The product for A's and B's layouts (AK, BK: along the contraction) and
   W column blocks of 64, one after the other: warps 4 x 2 over a 64 x 64
   block, each 16 x 32 of it.  The running sums start from C or zero and
   go back to C after each column block and half (an fp32 store and load,
   exact, as blk_mm's panels): with sums for all W blocks live across
   the halves, ptxas spilled 2.6 KB in the gradients kernel. */
template <bool AK, bool BK, int W>
__device__ void x3_form(uint32_t *sm, float *c, int64_t ldc, int m, int n, int kc, const mat &a,
                        const mat &b, bool acc)
{
    constexpr int NT = 4, LDA = x3_ld(X3_H), LDB = x3_ld(BK ? X3_H : X3_H * W);
    uint32_t *As = sm, *Bs = sm + X3_A;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int i0 = 16 * (warp & 3);
#pragma unroll 1
    for (int h = 0; h < kc; h += X3_H) {
        if (h > 0)
            __syncthreads(); /* the first half's planes are consumed */
        const int kh = kc - h;
        if constexpr (AK)
            x3_stage<64, X3_H, LDA>(As, a.p + h * a.cs, a.rs, a.cs, m, kh);
        else
            x3_stage<X3_H, 64, LDA>(As, a.p + h * a.cs, a.cs, a.rs, kh, m);
        if constexpr (BK)
            x3_stage<64 * W, X3_H, LDB>(Bs, b.p + h * b.rs, b.cs, b.rs, n, kh);
        else
            x3_stage<X3_H, 64 * W, LDB>(Bs, b.p + h * b.rs, b.rs, b.cs, kh, n);
        __syncthreads();
#pragma unroll 1
        for (int jb = 0; jb < 64 * W; jb += 64) {
            const int j0 = jb + 8 * NT * (warp >> 2);
            float d[NT][4];
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    d[nt][r] = mm_start(c, ldc, m, n, acc || h > 0, i0 + g + 8 * (r >> 1),
                                        j0 + 8 * nt + 2 * t + (r & 1));
            x3_half<NT, AK, LDA, BK, LDB>(d, As, Bs, i0, j0, kh < X3_H ? kh : X3_H);
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    mm_end(c, ldc, m, n, i0 + g + 8 * (r >> 1), j0 + 8 * nt + 2 * t + (r & 1),
                           d[nt][r]);
        }
    }
}

template <bool AK, bool BK>
__device__ __forceinline__ void x3_sized(uint32_t *sm, float *c, int64_t ldc, int m, int n, int kc,
                                         const mat &a, const mat &b, bool acc)
{
    if (n > 64)
        x3_form<AK, BK, 2>(sm, c, ldc, m, n, kc, a, b, acc);
    else
        x3_form<AK, BK, 1>(sm, c, ldc, m, n, kc, a, b, acc);
}

/* sm: the block's X3_WORDS words, 16-byte aligned.  A call, as ffma_mm. */
inline __device__ __noinline__ void x3_mm(uint32_t *sm, float *c, int64_t ldc, int m, int n, int kc,
                                          mat a, mat b, bool acc)
{
    __syncthreads(); /* the previous product is done with sm */
    const bool ak = a.cs == 1, bk = b.rs == 1;
    if (ak)
        bk ? x3_sized<true, true>(sm, c, ldc, m, n, kc, a, b, acc)
           : x3_sized<true, false>(sm, c, ldc, m, n, kc, a, b, acc);
    else
        bk ? x3_sized<false, true>(sm, c, ldc, m, n, kc, a, b, acc)
           : x3_sized<false, false>(sm, c, ldc, m, n, kc, a, b, acc);
}

} // namespace ra_gpu

#endif
