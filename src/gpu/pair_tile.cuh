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
 * bits.  Staging reads fp32 rows with float4 loads, or stored bf16 rows
 * four elements a load: the source rows and their stride must be 16-byte
 * (bf16: 8-byte) aligned.
 */

#include <cstdint>

#include "gpu/mma.cuh"
#include "gpu/stored_load.cuh"

namespace ra_gpu
{

/* Words per row of a pair tile over W contraction elements. */
template <int W> __host__ __device__ constexpr int pair_ld() { return W / 2 + 4; }

__device__ __forceinline__ float4 scale4(float4 v, float s)
{
    return make_float4(__fmul_rn(v.x, s), __fmul_rn(v.y, s), __fmul_rn(v.z, s), __fmul_rn(v.w, s));
}

/* Float4 loads a staging thread keeps in flight: it issues them all
   before its first store, since a loop that stores each element before
   loading the next waits a full memory latency per element (one block per
   SM of the bf16 gradients kernel staged that way at a few loads in
   flight per SM). */
constexpr int STAGE_LOADS = 8;

template <int N, int NT, int PER> __host__ __device__ constexpr int stage_batch()
{
    return (N + NT - 1) / NT < STAGE_LOADS / PER ? (N + NT - 1) / NT : STAGE_LOADS / PER;
}

/* Rows r < ROWS of x (COLS elements a row, stride ld), four at a time:
   put(r, c, v) for columns c..c+3 of row r, v zero at or past row nr or
   column nc; nothing there is read. */
template <int ROWS, int COLS, int NT, typename T, typename Put>
__device__ __forceinline__ void load_rows4(const T *x, int ld, int nr, int nc, Put put)
{
    constexpr int Q = COLS / 4, N = ROWS * Q, U = stage_batch<N, NT, 1>();
    for (int e0 = threadIdx.x; e0 < N; e0 += U * NT) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * NT, r = e / Q, c = 4 * (e % Q);
            const T *xr = x + r * ld + c;
            v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (e < N && r < nr && c + 3 < nc)
                v[u] = load4(xr);
            else if (e < N && r < nr && c < nc) /* the row's last columns: no read past nc */
                v[u] = make_float4(load1(xr), c + 1 < nc ? load1(xr + 1) : 0.f,
                                   c + 2 < nc ? load1(xr + 2) : 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * NT;
            if (e < N)
                put(e / Q, 4 * (e % Q), v[u]);
        }
    }
}

/* Columns c..c+3 of row r of a pair tile along the row (LD words a row,
   c a multiple of 4, dst 8-byte aligned): f(r, v) where r < nr, zero
   elsewhere and from column nc on.  One 8-byte store: two 4-byte ones
   two words apart across a warp's lanes were 2-way bank conflicts each. */
template <int LD, typename F>
__device__ __forceinline__ void put_row_pairs(uint32_t *dst, int r, int c, float4 v, int nr, int nc,
                                              F f)
{
    float4 y = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r < nr && c < nc) {
        y = f(r, v);
        y.y = c + 1 < nc ? y.y : 0.f, y.z = c + 2 < nc ? y.z : 0.f;
        y.w = c + 3 < nc ? y.w : 0.f;
    }
    static_assert(LD % 2 == 0, "8-byte aligned rows");
    *reinterpret_cast<uint2 *>(dst + r * LD + c / 2) =
        make_uint2(bf16x2_rn(y.x, y.y), bf16x2_rn(y.z, y.w));
}

/* dst = x scaled, for pair tiles of ROWS rows along COLS columns
   (pair_ld<COLS>() words a row, 16-byte aligned): element (r, j) widened,
   times scale(r, j) by __fmul_rn and rounded, as put_row_pairs with
   scale4 forms it from the same floats. */
template <int ROWS, int COLS, int NT, typename S>
__device__ __forceinline__ void scale_pairs(uint32_t *dst, const uint32_t *x, S scale)
{
    constexpr int LD = pair_ld<COLS>(), Q = COLS / 8; /* uint4 a row */
    for (int e = threadIdx.x; e < ROWS * Q; e += NT) {
        const int r = e / Q, j = 8 * (e % Q), o = r * LD + j / 2; /* columns j .. j + 7 */
        const auto sc = [&](uint32_t w, int c) {
            return bf16x2_rn(__fmul_rn(bf16_lo(w), scale(r, c)),
                             __fmul_rn(bf16_hi(w), scale(r, c + 1)));
        };
        const uint4 v = *reinterpret_cast<const uint4 *>(x + o);
        *reinterpret_cast<uint4 *>(dst + o) =
            make_uint4(sc(v.x, j), sc(v.y, j + 2), sc(v.z, j + 4), sc(v.w, j + 6));
    }
}

/* Rows r < ROWS of x as pairs along the row into dst (pair_ld<COLS>()
   words a row): element (r, j) is f(r, x(r, j)) for r < nr and j < nc,
   zero elsewhere (f maps a row's float4); nothing at or past row nr or
   column nc is read. */
template <int ROWS, int COLS, int NT, typename T, typename F>
__device__ __forceinline__ void stage_rows(uint32_t *dst, const T *x, int ld, int nr, int nc, F f)
{
    load_rows4<ROWS, COLS, NT>(x, ld, nr, nc, [&](int r, int c, float4 v) {
        put_row_pairs<pair_ld<COLS>()>(dst, r, c, v, nr, nc, f);
    });
}

/* Rows r < ROWS of x (COLS floats a row, stride ld) by row pairs:
   put(p, c, v0, v1) with rows 2p and 2p + 1 at columns 4c..4c+3, zero
   from row nr on (not read).  Sixteen lanes of a warp take consecutive p
   and the two halves two column groups, so that stores of a pair tile
   along the columns hit distinct banks and each row's loads are 32
   contiguous bytes. */
template <int ROWS, int COLS, int NT, typename T, typename Put>
__device__ __forceinline__ void load_row_pairs4(const T *x, int ld, int nr, Put put)
{
    constexpr int PW = ROWS / 32; /* warps across the row pairs */
    constexpr int N = ROWS / 2 * COLS / 4, U = stage_batch<N, NT, 2>();
    static_assert(ROWS % 32 == 0 && COLS % 8 == 0, "whole warps of row pairs");
    for (int e0 = threadIdx.x; e0 < N; e0 += U * NT) {
        float4 v[U][2];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * NT, lane = e & 31, wi = e >> 5;
            const int p = (lane & 15) + 16 * (wi % PW), c = (lane >> 4) + 2 * (wi / PW);
#pragma unroll
            for (int b = 0; b < 2; b++) {
                const int r = 2 * p + b;
                v[u][b] =
                    (e < N && r < nr) ? load4(x + r * ld + 4 * c) : make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = e0 + u * NT, lane = e & 31, wi = e >> 5;
            if (e < N)
                put((lane & 15) + 16 * (wi % PW), (lane >> 4) + 2 * (wi / PW), v[u][0], v[u][1]);
        }
    }
}

/* Rows 2p, 2p + 1 at columns 4c..4c+3 into a pair tile along the
   columns (LD words a row): f(r, v) for rows r < nr, v (zero) from nr. */
template <int LD, typename F>
__device__ __forceinline__ void put_col_pairs(uint32_t *dst, int p, int c, float4 v0, float4 v1,
                                              int nr, F f)
{
    v0 = 2 * p < nr ? f(2 * p, v0) : v0, v1 = 2 * p + 1 < nr ? f(2 * p + 1, v1) : v1;
    uint32_t *d = dst + 4 * c * LD + p;
    d[0] = bf16x2_rn(v0.x, v1.x);
    d[LD] = bf16x2_rn(v0.y, v1.y);
    d[2 * LD] = bf16x2_rn(v0.z, v1.z);
    d[3 * LD] = bf16x2_rn(v0.w, v1.w);
}

/* Rows r < ROWS of x (COLS floats a row, stride ld) as pairs along the
   columns, transposed (COLS rows of pair_ld<ROWS>() words): element (r, j)
   is f(r, x(r, j)) for r < nr, zero from row nr on. */
template <int ROWS, int COLS, int NT, typename T, typename F>
__device__ __forceinline__ void stage_cols(uint32_t *dst, const T *x, int ld, int nr, F f)
{
    load_row_pairs4<ROWS, COLS, NT>(x, ld, nr, [&](int p, int c, float4 v0, float4 v1) {
        put_col_pairs<pair_ld<ROWS>()>(dst, p, c, v0, v1, nr, f);
    });
}

__device__ __forceinline__ float4 same4(int, float4 v) { return v; }

/* This lane's row address in a warp's 16 rows of A (pair tile, lda words
   a row) for an ldmatrix x4 of A's fragment, as a shared-space address:
   matrix j = lane / 8 is rows 8 (j % 2), words 4 (j / 2) on. */
__device__ __forceinline__ unsigned a_lane_row(const uint32_t *a, int lda)
{
    const int lane = threadIdx.x & 31;
    return smem_addr(a + ((lane & 7) + 8 * ((lane >> 3) & 1)) * lda + 4 * (lane >> 4));
}

/* This lane's row address in B^T (pair tile, ldb words a row) for
   mma_ntiles, as a shared-space address: two n-tiles u, u + 1 to an
   ldmatrix x4, matrix j = lane / 8 being rows 8u + 8 (j / 2), words
   4 (j % 2) on. */
__device__ __forceinline__ unsigned bt_lane_row(const uint32_t *b, int ldb)
{
    const int lane = threadIdx.x & 31;
    return smem_addr(b + ((lane & 7) + 8 * (lane >> 4)) * ldb + 4 * ((lane >> 3) & 1));
}

/* One k-step of the first `used` of NT n-tiles: d[u] += fa times the
   16 x 8 slice of B whose B^T rows start at br (bt_lane_row, advanced to
   the k-step's words).  B's fragments come from ldmatrix, two n-tiles to
   an x4 (the words blk_mm's fragments hold, in a quarter of the
   shared-memory instructions of word loads, whose MIO throttle was 16.7%
   of the bf16 gradients kernel's stall samples, ncu).  B: br is instead
   in B itself, a pair tile along its columns (a_lane_row of the k-step's
   16 rows, advanced to the first n-tile's words), whose fragments
   ldmatrix .trans transposes: the same words. */
template <int NT, bool B = false>
__device__ __forceinline__ void mma_ntiles(float (&d)[NT][4], const uint32_t (&fa)[4], unsigned br,
                                           int ldb, int used)
{
#pragma unroll
    for (int u = 0; u < NT; u += 2) {
        /* 8u rows of B^T, or 4u words of B's rows, on */
        const unsigned bu = br + (B ? (unsigned)(16 * u) : (unsigned)(32 * u * ldb));
        if (u + 1 < NT && u + 1 < used) {
            uint32_t fb[4];
            ldmatrix_x4<B>(fb, bu);
            const uint32_t f0[2] = {fb[0], fb[1]}, f1[2] = {fb[2], fb[3]};
            mma_bf16(d[u], fa, f0);
            mma_bf16(d[u + 1], fa, f1);
        } else if (u < used) {
            uint32_t fb[2];
            ldmatrix_x2<B>(fb, bu);
            mma_bf16(d[u], fa, fb);
        }
    }
}

/* d[u] += the 16 x 8 output tile (rows g, g + 8 of a, column 8u + g of
   b) of A B, where a is the warp's 16 rows of A (pair tile, lda words a
   row) and b the rows of B^T from its first column (ldb words a row), for
   the first `used` of NT n-tiles, over the k-steps of 16 while k0 < kc:
   blk_mm's loop for a contraction of kc, carrying d (blk_mm's acc, whose
   fp32 partial sum in C is exact).  Both tiles are in shared memory with
   16-byte aligned rows; A's four words come from one ldmatrix x4. */
template <int NT>
__device__ __forceinline__ void warp_mm_pairs_add(float (&d)[NT][4], const uint32_t *a, int lda,
                                                  const uint32_t *b, int ldb, int kc, int used)
{
    const unsigned ar = a_lane_row(a, lda), br = bt_lane_row(b, ldb);
    for (int k0 = 0; k0 < kc; k0 += 16) {
        uint32_t fa[4];
        ldmatrix_x4(fa, ar + (unsigned)(2 * k0)); /* k0 / 2 words */
        mma_ntiles(d, fa, br + (unsigned)(2 * k0), ldb, used);
    }
}

/* warp_mm_pairs_add with A's fragments in registers, fa[s] those of
   k-step s (KS of them, the k-steps while 16 s < kc taken).  B: b is
   B's first column in B itself, a pair tile along its columns (ldb words
   a row, a row per contraction index), instead of B^T's rows. */
template <int NT, int KS, bool B = false>
__device__ __forceinline__ void warp_mm_regs_add(float (&d)[NT][4], const uint32_t (&fa)[KS][4],
                                                 const uint32_t *b, int ldb, int kc, int used)
{
    const unsigned br = B ? a_lane_row(b, ldb) : bt_lane_row(b, ldb);
#pragma unroll
    for (int s = 0; s < KS; s++)
        if (16 * s < kc) /* 8 s words of B^T's rows, or 16 s rows of B */
            mma_ntiles<NT, B>(d, fa[s], br + (unsigned)(B ? 64 * s * ldb : 32 * s), ldb, used);
}

/* The A fragments of k-steps over a product held as 2 KS n-tiles d (16 x
   8 accumulator tiles): an accumulator tile's values (g, 2t..2t+1) and
   (g + 8, 2t..2t+1) are the A fragment's words for the same indices, so
   the product's rows stay with their lanes; each pair rounded to bf16 as
   blk_mm rounds an fp32 operand. */
template <int KS>
__device__ __forceinline__ void acc_to_a(uint32_t (&fa)[KS][4], const float (&d)[2 * KS][4])
{
#pragma unroll
    for (int s = 0; s < KS; s++) {
        fa[s][0] = bf16x2_rn(d[2 * s][0], d[2 * s][1]);
        fa[s][1] = bf16x2_rn(d[2 * s][2], d[2 * s][3]);
        fa[s][2] = bf16x2_rn(d[2 * s + 1][0], d[2 * s + 1][1]);
        fa[s][3] = bf16x2_rn(d[2 * s + 1][2], d[2 * s + 1][3]);
    }
}

/* Clears NT accumulator tiles. */
template <int NT> __device__ __forceinline__ void zero_tiles(float (&d)[NT][4])
{
#pragma unroll
    for (int n = 0; n < NT; n++)
        d[n][0] = d[n][1] = d[n][2] = d[n][3] = 0.f;
}

/* Fragment tiles: a matrix of 16-row tiles held as its mma A fragments
   (acc_to_a's words), tile r's k-step s at uint4s (r KS + s) 32, a uint4
   a lane, so that a warp stores a k-step with one 512-byte store.  Read
   back (warp_mm_frags) as the B fragments of a product with the matrix
   as B^T: a tile's rows g and g + 8 are two n-tiles' columns.
   frag_tile: the tile holding rows r0 .. r0 + 15 (r0 a multiple of 16);
   store_frags: the warp's fragments fa[q] to k-steps s0 + q of the tile
   at dst. */
template <int KS, typename U> __device__ __forceinline__ U *frag_tile(U *base, int r0)
{
    return base + r0 / 16 * KS * 32;
}

template <int N>
__device__ __forceinline__ void store_frags(uint4 *dst, int s0, const uint32_t (&fa)[N][4])
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int q = 0; q < N; q++)
        dst[(s0 + q) * 32 + lane] = make_uint4(fa[q][0], fa[q][1], fa[q][2], fa[q][3]);
}

/* warp_mm_pairs with B^T a fragment tile in shared memory (b: its first
   16-row tile, KS k-steps a tile): d[2j], d[2j + 1] from tile j's rows
   g and g + 8, over the k-steps while 16 s < kc.  The same operands in
   the same k-steps as warp_mm_pairs over B^T's pair tile, so its bits. */
template <int NT, int KS>
__device__ __forceinline__ void warp_mm_frags(float (&d)[NT][4], const uint32_t *a, int lda,
                                              const uint4 *b, int kc)
{
    static_assert(NT % 2 == 0, "whole tiles");
    const int lane = threadIdx.x & 31;
    const unsigned ar = a_lane_row(a, lda);
    zero_tiles(d);
#pragma unroll
    for (int s = 0; s < KS; s++) {
        if (16 * s >= kc)
            break;
        uint32_t fa[4];
        ldmatrix_x4(fa, ar + (unsigned)(32 * s)); /* 8 s words */
#pragma unroll
        for (int j = 0; j < NT / 2; j++) {
            const uint4 x = b[(j * KS + s) * 32 + lane];
            const uint32_t f0[2] = {x.x, x.z}, f1[2] = {x.y, x.w};
            mma_bf16(d[2 * j], fa, f0);
            mma_bf16(d[2 * j + 1], fa, f1);
        }
    }
}

/* warp_mm_pairs_add from zero (the first `used` n-tiles; the rest stay
   zero). */
template <int NT>
__device__ __forceinline__ void warp_mm_pairs(float (&d)[NT][4], const uint32_t *a, int lda,
                                              const uint32_t *b, int ldb, int kc, int used)
{
    zero_tiles(d);
    warp_mm_pairs_add(d, a, lda, b, ldb, kc, used);
}

/* f(i, u, d[u][2h], d[u][2h + 1]) for the warp's rows i = i0 + g + 8h
   < L of a product held as NT 16 x 8 tiles (row i's columns 8u + 2t and
   8u + 2t + 1 of the tile row). */
template <int NT, typename F>
__device__ __forceinline__ void for_rows(const float (&d)[NT][4], int i0, int L, F f)
{
    const int g = (threadIdx.x & 31) >> 2;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int i = i0 + g + 8 * h;
        if (i < L)
#pragma unroll
            for (int u = 0; u < NT; u++)
                f(i, u, d[u][2 * h], d[u][2 * h + 1]);
    }
}

/* f(u, e, i, j) for every value d[u][e] of the warp's NT 16 x 8 tiles:
   row i = i0 + g + 8 (e / 2), column j = j0 + 8u + 2t + e % 2 (the
   product's indices). */
template <int NT, typename F> __device__ __forceinline__ void for_frags(int i0, int j0, F f)
{
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
    for (int u = 0; u < NT; u++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            f(u, e, i0 + g + 8 * (e >> 1), j0 + 8 * u + 2 * t + (e & 1));
}

/* for_frags<NT>(i0, j0) over an array stored along its second index
   (element (i, j) at x[j * ld + i], x + frag_t_at(i0, j0, ld) the lane's
   first): f(u, e, i, j, o), o the element's offset from the lane's first,
   a constant when ld is, so that the lane's loads or stores share one
   address. */
__device__ __forceinline__ int64_t frag_t_at(int i0, int j0, int64_t ld)
{
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    return (int64_t)(j0 + 2 * t) * ld + i0 + g;
}

template <int NT, typename F>
__device__ __forceinline__ void for_frags_t(int i0, int j0, int64_t ld, F f)
{
    for_frags<NT>(i0, j0, [&](int u, int e, int i, int j) {
        f(u, e, i, j, (int64_t)(8 * u + (e & 1)) * ld + 8 * (e >> 1));
    });
}

/* The value of column i = 8n + 2t + b (b = 0, 1) of the lane's n-tiles
   (of 8 x NT <= 64 columns), from a per-column value computed once per
   lane, x0 for column `lane` and x1 for column lane + 32 (in the passes,
   the decays' expf was 20% of the executed instructions when every lane
   formed all of its 16 columns').  Every lane of the warp must call it. */
__device__ __forceinline__ float row_value(float x0, float x1, int n, int b)
{
    const int t = threadIdx.x & 3, i = 8 * n + 2 * t + b;
    return __shfl_sync(0xffffffffu, n < 4 ? x0 : x1, i & 31);
}

/* d[u][e] = f(i, j, d[u][e]) for every value (for_frags' indices). */
template <int NT, typename F>
__device__ __forceinline__ void map_frags(float (&d)[NT][4], int i0, int j0, F f)
{
    for_frags<NT>(i0, j0, [&](int u, int e, int i, int j) { d[u][e] = f(i, j, d[u][e]); });
}

/* Stores the warp's rows < L of a product to dst (row stride ld) from
   column j0, each value through f. */
template <int NT, typename F>
__device__ __forceinline__ void store_rows(float *dst, int ld, const float (&d)[NT][4], int i0,
                                           int j0, int L, F f)
{
    const int t = threadIdx.x & 3;
    for_rows(d, i0, L, [&](int i, int u, float x0, float x1) {
        const int j = j0 + 8 * u + 2 * t;
        *reinterpret_cast<float2 *>(dst + i * ld + j) = make_float2(f(i, j, x0), f(i, j + 1, x1));
    });
}

/* The warp's rows < L of a product as a pair tile along its columns
   (LD words a row, columns from j0, even): the A operand of a product
   over them. */
template <int LD, int NT>
__device__ __forceinline__ void store_pairs(uint32_t *dst, const float (&d)[NT][4], int i0, int j0,
                                            int L)
{
    const int t = threadIdx.x & 3;
    for_rows(d, i0, L, [&](int i, int u, float x0, float x1) {
        dst[i * LD + j0 / 2 + 4 * u + t] = bf16x2_rn(x0, x1);
    });
}

/* The same rows transposed, as a pair tile along the rows (a row of LD
   words per column j0 + 8u + 2t + b; i0 even): the B^T of a product over
   the rows.  Rows 2p and 2p + 1 of a column share a word, the odd row's
   value coming from the lane that holds it (g + 1, four lanes on); rows
   at or past L are zero.  Every lane of the warp must call it. */
template <int LD, int NT>
__device__ __forceinline__ void store_pairs_t(uint32_t *dst, const float (&d)[NT][4], int i0,
                                              int j0, int L)
{
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
    for (int u = 0; u < NT; u++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = i0 + g + 8 * (e >> 1);
            const float x = i < L ? d[u][e] : 0.f, y = __shfl_down_sync(0xffffffffu, x, 4);
            if ((g & 1) == 0)
                dst[(j0 + 8 * u + 2 * t + (e & 1)) * LD + i / 2] = bf16x2_rn(x, y);
        }
}

} // namespace ra_gpu

#endif
