/* IEEE products of whole operands in shared memory: blk_mm's chains as ffma_tile's tiles. */
#ifndef RA_GPU_FFMA_MM_CUH
#define RA_GPU_FFMA_MM_CUH

/*
 * ffma_mm has blk_mm<RA_GPU_PREC_IEEE>'s semantics (blk_mm.cuh, without
 * batch):
 *
 *   C(i, j) = (acc ? C(i, j) : 0) + sum_{p < kc} A(i, p) B(p, j),
 *   i < m, j < n, A(i, p) = a.p[i*a.rs + p*a.cs], B(p, j) = b.p[p*b.rs + j*b.cs],
 *
 * for m <= 64, n <= 128, kc <= 128, A along its rows or its columns (a.cs
 * or a.rs is 1) and B along either (b.rs or b.cs is 1): the products of
 * the gradients kernel at the production head (chunk 64, K = V = 128).
 * blk_mm stages 64 x 64 panels and keeps the partial sums in C between
 * them; here both operands are copied whole into shared memory once, by
 * cp.async where their rows run along the unit stride, zero past the
 * operand, and ffma_tile.cuh's register tiles run every chain, 16 to 32 a
 * thread.
 *
 * The bits are blk_mm's: each output element is one fmaf chain in
 * increasing p from C or zero.  A contraction of kc <= 64 runs 64 steps
 * (128 when kc > 64); the steps from kc on multiply staged zeros, which
 * leave a running sum unchanged unless it is -0.  In the gradients kernel
 * a sum is -0 only after a product or sum that underflows to -0 (every
 * chain starts from +0 or from such a sum), as in the forward's IEEE
 * kernels (gdn_chunk_fwd_ieee.cu).
 *
 * Every thread of a 256-thread block calls it with the same arguments and
 * the block's FM_WORDS floats of shared memory; it synchronises before
 * staging (the previous product may still read the buffer), and the caller
 * synchronises before reading C, as with blk_mm.
 */

#include <cstdint>

#include "gpu/blk_mm.cuh"
#include "gpu/cp_async.cuh"
#include "gpu/ffma_tile.cuh"

namespace ra_gpu
{

constexpr int FM_THREADS = 256, FM_M = 64, FM_N = 128, FM_K = 128;
static_assert(FM_THREADS == FFMA_THREADS, "ffma_tile.cuh's 16 x 16 grid");
/* A: FM_M rows of up to FM_K (+4: eight consecutive rows' 16-byte words
   in distinct banks); B: up to FM_N rows of FM_K (along the contraction)
   or FM_K rows of FM_N (along the output's columns). */
constexpr int FM_A = FM_M * (FM_K + 4), FM_B = FM_N * (FM_K + 4), FM_WORDS = FM_A + FM_B;
static_assert(FM_K * (FM_N + 4) <= FM_B, "B along its columns fits");

/* dst(r, x), r < ROWS, x < COLS (rows LD floats apart) = X(r, x) =
   src[r*rs + x*cs] for r < nr, x < nx, else zero.  Rows along the unit
   stride (cs == 1, rs and src 16-byte aligned) go by cp.async, 16 bytes a
   copy (the caller commits and waits), a row's last partial 16 bytes and
   the zeros by plain loads and stores; any other
   layout by plain loads along the unit stride, all of a thread's loads
   issued before its stores. */
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void fm_stage(float *dst, const float *src, int64_t rs, int64_t cs,
                                         int nr, int nx)
{
    static_assert(COLS % 4 == 0 && LD % 4 == 0 && (ROWS * COLS) % (16 * FM_THREADS) == 0,
                  "whole passes");
    if (cs == 1 && rs % 4 == 0 && (reinterpret_cast<uintptr_t>(src) & 15) == 0) {
        constexpr int SEG = COLS / 4;
        for (int e = threadIdx.x; e < ROWS * SEG; e += FM_THREADS) {
            const int r = e / SEG, x = 4 * (e % SEG);
            const int left = r < nr ? nx - x : 0;
            const float *s = src + r * rs + x;
            if (left >= 4) {
                cp_async16(dst + r * LD + x, s);
            } else {
                /* part of a row, or none: word by word (initcheck counts
                   a cp.async of fewer source bytes as a 16-byte read) */
                *reinterpret_cast<float4 *>(dst + r * LD + x) = load4_upto(s, left);
            }
        }
        return;
    }
    stage_elems<ROWS, COLS, FM_THREADS, 16>(src, rs, cs, nr, nx,
                                            [&](int r, int x, float v) { dst[r * LD + x] = v; });
}

/* B^T staged as CN * 16 rows of KD (B along the contraction, b.rs == 1,
   copies by cp.async). */
template <int CN, int KD>
__device__ void fm_nt(float *sm, float *c, int64_t ldc, int m, int n, int kc, const mat &a,
                      const mat &b, bool acc)
{
    constexpr int LD = KD + 4;
    float *As = sm, *Bs = sm + FM_A;
    fm_stage<FM_M, KD, LD>(As, a.p, a.rs, a.cs, m, kc);
    fm_stage<16 * CN, KD, LD>(Bs, b.p, b.cs, b.rs, n, kc);
    cp_commit();
    const int ti = ffma_ti(), tj = ffma_tj();
    float d[1][4][CN];
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int q = 0; q < CN; q++)
            d[0][r][q] = mm_start(c, ldc, m, n, acc, ti + 16 * r, tj + 16 * q);
    cp_wait<0>();
    __syncthreads();
    const float *const ops[1] = {As};
    ffma_nt<1, 4, CN, KD, LD, LD>(d, ops, Bs, [](int, int, float4 x) { return x; });
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int q = 0; q < CN; q++)
            mm_end(c, ldc, m, n, ti + 16 * r, tj + 16 * q, d[0][r][q]);
}

/* B staged as KD rows of 64 H (B along the output's columns, b.cs == 1,
   copies by cp.async). */
template <int H, int KD>
__device__ void fm_nn(float *sm, float *c, int64_t ldc, int m, int n, int kc, const mat &a,
                      const mat &b, bool acc)
{
    constexpr int LDA = KD + 4, LDB = 64 * H + 4;
    float *As = sm, *Bs = sm + FM_A;
    fm_stage<FM_M, KD, LDA>(As, a.p, a.rs, a.cs, m, kc);
    fm_stage<KD, 64 * H, LDB>(Bs, b.p, b.rs, b.cs, kc, n);
    cp_commit();
    const int ti = ffma_ti(), tj = ffma_tj();
    float d[4][4 * H];
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int x = 0; x < 4 * H; x++)
            d[r][x] = mm_start(c, ldc, m, n, acc, ti + 16 * r, 64 * (x / 4) + 4 * tj + x % 4);
    cp_wait<0>();
    __syncthreads();
    ffma_nn<4, H, KD, LDA, LDB>(d, As, Bs);
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int x = 0; x < 4 * H; x++)
            mm_end(c, ldc, m, n, ti + 16 * r, 64 * (x / 4) + 4 * tj + x % 4, d[r][x]);
}

/* The product by B's layout (NT: along the contraction) and its size: W
   column blocks of 64 (nt: 4 W warps' columns of 16), contraction depth
   KD of 64 or 128. */
template <bool NT, int W, int KD>
__device__ __forceinline__ void fm_form(float *sm, float *c, int64_t ldc, int m, int n, int kc,
                                        const mat &a, const mat &b, bool acc)
{
    if constexpr (NT)
        fm_nt<4 * W, KD>(sm, c, ldc, m, n, kc, a, b, acc);
    else
        fm_nn<W, KD>(sm, c, ldc, m, n, kc, a, b, acc);
}

template <bool NT>
__device__ __forceinline__ void fm_sized(float *sm, float *c, int64_t ldc, int m, int n, int kc,
                                         const mat &a, const mat &b, bool acc)
{
    const bool wk = kc > 64, wn = n > 64;
    if (wk)
        wn ? fm_form<NT, 2, 128>(sm, c, ldc, m, n, kc, a, b, acc)
           : fm_form<NT, 1, 128>(sm, c, ldc, m, n, kc, a, b, acc);
    else
        wn ? fm_form<NT, 2, 64>(sm, c, ldc, m, n, kc, a, b, acc)
           : fm_form<NT, 1, 64>(sm, c, ldc, m, n, kc, a, b, acc);
}

/* sm: the block's FM_WORDS floats, 16-byte aligned.  A call, not
   inlined: with this body inlined at the gradients kernel's 14 products
   (nvcc's own choice there) that kernel took 5.35 ms, called 4.74 (ncu,
   H200, B=1, T=8192, Hv=32, K=V=128), though ptxas -v gives the called
   form more spills (196 / 460 bytes against 32 / 116).  inline: several
   translation units include it (gdn_chunk_bwd.cu, mm_engines.cu). */
inline __device__ __noinline__ void ffma_mm(float *sm, float *c, int64_t ldc, int m, int n, int kc,
                                            mat a, mat b, bool acc)
{
    __syncthreads(); /* the previous product is done with sm */
    if (b.rs == 1)
        fm_sized<true>(sm, c, ldc, m, n, kc, a, b, acc);
    else
        fm_sized<false>(sm, c, ldc, m, n, kc, a, b, acc);
}

} // namespace ra_gpu

#endif
