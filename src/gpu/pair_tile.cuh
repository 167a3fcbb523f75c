/* bf16 pair tiles in shared memory: staging from fp32 rows and warp products over them. */
#ifndef RA_GPU_PAIR_TILE_CUH
#define RA_GPU_PAIR_TILE_CUH

/*
 * A pair tile holds an fp32 matrix rounded to bf16 (nearest even, as the
 * fragments of blk_mm round) two elements to a 32-bit word, the lower
 * index in the low half, packed along the product's contraction index:
 * the A operand row by row, the B operand as B^T (one row per output
 * column).  Rows are W / 2 + 4 words for W contraction elements, so that
 * the lanes (g, t) of a fragment load hit banks 4g + t.  warp_mm_pairs
 * feeds mma m16n8k16 the same fragments blk_mm would build from the fp32
 * matrices, in the same k-steps from zero, so its results are blk_mm's
 * bits.  Staging reads fp32 rows with float4 loads: the source rows and
 * their stride must be 16-byte aligned.
 */

#include <cstdint>

#include "gpu/mma.cuh"

namespace ra_gpu
{

/* Words per row of a pair tile over W contraction elements. */
template <int W> __host__ __device__ constexpr int pair_ld() { return W / 2 + 4; }

__device__ __forceinline__ float4 scale4(float4 v, float s)
{
    return make_float4(__fmul_rn(v.x, s), __fmul_rn(v.y, s), __fmul_rn(v.z, s), __fmul_rn(v.w, s));
}

/* Rows r < ROWS of x (COLS floats a row, stride ld) as pairs along the row
   into dst (pair_ld<COLS>() words a row): element (r, j) is f(r, x(r, j))
   for r < nr and j < nc, zero elsewhere (f maps a row's float4); nothing
   at or past row nr or column nc is read. */
template <int ROWS, int COLS, int NT, typename F>
__device__ __forceinline__ void stage_rows(uint32_t *dst, const float *x, int ld, int nr, int nc,
                                           F f)
{
    constexpr int LD = pair_ld<COLS>(), Q = COLS / 4;
    for (int e = threadIdx.x; e < ROWS * Q; e += NT) {
        const int r = e / Q, c = 4 * (e % Q);
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < nr && c + 3 < nc) {
            v = f(r, *reinterpret_cast<const float4 *>(x + r * ld + c));
        } else if (r < nr && c < nc) { /* the row's last columns: no read past nc */
            const float *xr = x + r * ld + c;
            v = f(r, make_float4(xr[0], c + 1 < nc ? xr[1] : 0.f, c + 2 < nc ? xr[2] : 0.f, 0.f));
            v.y = c + 1 < nc ? v.y : 0.f, v.z = c + 2 < nc ? v.z : 0.f, v.w = 0.f;
        }
        dst[r * LD + c / 2] = bf16x2_rn(v.x, v.y);
        dst[r * LD + c / 2 + 1] = bf16x2_rn(v.z, v.w);
    }
}

/* Rows r < ROWS of x (COLS floats a row, stride ld) as pairs along the
   columns, transposed (COLS rows of pair_ld<ROWS>() words): element (r, j)
   is f(r, x(r, j)) for r < nr, zero from row nr on.  A thread takes rows
   (2p, 2p + 1) at four columns; sixteen lanes of a warp take consecutive
   p and the two halves two column groups, so that their stores hit
   distinct banks and each row's loads are 32 contiguous bytes. */
template <int ROWS, int COLS, int NT, typename F>
__device__ __forceinline__ void stage_cols(uint32_t *dst, const float *x, int ld, int nr, F f)
{
    constexpr int LD = pair_ld<ROWS>(), PW = ROWS / 32; /* warps across the row pairs */
    static_assert(ROWS % 32 == 0 && COLS % 8 == 0, "whole warps of row pairs");
    for (int e = threadIdx.x; e < ROWS / 2 * COLS / 4; e += NT) {
        const int lane = e & 31, wi = e >> 5;
        const int p = (lane & 15) + 16 * (wi % PW), c = (lane >> 4) + 2 * (wi / PW);
        const int r0 = 2 * p, r1 = r0 + 1;
        float4 v0 = make_float4(0.f, 0.f, 0.f, 0.f), v1 = v0;
        if (r0 < nr)
            v0 = f(r0, *reinterpret_cast<const float4 *>(x + r0 * ld + 4 * c));
        if (r1 < nr)
            v1 = f(r1, *reinterpret_cast<const float4 *>(x + r1 * ld + 4 * c));
        uint32_t *d = dst + 4 * c * LD + p;
        d[0] = bf16x2_rn(v0.x, v1.x);
        d[LD] = bf16x2_rn(v0.y, v1.y);
        d[2 * LD] = bf16x2_rn(v0.z, v1.z);
        d[3 * LD] = bf16x2_rn(v0.w, v1.w);
    }
}

__device__ __forceinline__ float4 same4(int, float4 v) { return v; }

/* d[u] = the 16 x 8 output tile (rows g, g + 8 of a, column 8u + g of b)
   of A B, where a is the warp's 16 rows of A (pair tile, lda words a row)
   and b the rows of B^T from its first column (ldb words a row), for the
   first `used` of NT n-tiles (the rest stay zero), over the k-steps of 16
   from zero while k0 < kc: blk_mm's loop for a contraction of kc. */
template <int NT>
__device__ __forceinline__ void warp_mm_pairs(float (&d)[NT][4], const uint32_t *a, int lda,
                                              const uint32_t *b, int ldb, int kc, int used)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const uint32_t *a0 = a + g * lda, *a1 = a0 + 8 * lda;
#pragma unroll
    for (int u = 0; u < NT; u++)
        d[u][0] = d[u][1] = d[u][2] = d[u][3] = 0.f;
    for (int k0 = 0; k0 < kc; k0 += 16) {
        const int wa = k0 / 2 + t, wb = wa + 4;
        const uint32_t fa[4] = {a0[wa], a1[wa], a0[wb], a1[wb]};
#pragma unroll
        for (int u = 0; u < NT; u++)
            if (u < used) {
                const uint32_t *bc = b + (8 * u + g) * ldb;
                const uint32_t fb[2] = {bc[wa], bc[wb]};
                mma_bf16(d[u], fa, fb);
            }
    }
}

} // namespace ra_gpu

#endif
