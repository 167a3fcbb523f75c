/* Register-tiled IEEE products on fp32 tiles in shared memory: fmaf chains, several per thread. */
#ifndef RA_GPU_FFMA_TILE_CUH
#define RA_GPU_FFMA_TILE_CUH

/*
 * The IEEE production-head kernels' products (gdn_chunk_fwd_ieee.cu).
 * Each output element is one fmaf chain in increasing contraction index p
 * from the accumulator's value (zero for a fresh product), as blk_mm's
 * IEEE forms compute it, so the results are theirs bit for bit.  A block
 * of 256 threads is a 16 x 16 grid: thread (ti, tj) = (2 warp + lane / 16,
 * lane % 16) owns rows ti + 16 r of the output, so the 16 lanes of a half
 * warp read the same A row (a broadcast) and the other operand from
 * distinct banks.  Contraction steps go four at a time, so that one
 * 16-byte load of each row feeds four fmaf per column.
 */

namespace ra_gpu
{

/* The block size the 16 x 16 grid takes: callers launch this many
   threads and say so with a static_assert against their own constant. */
constexpr int FFMA_THREADS = 256;

/* The thread's place in the 16 x 16 grid of a 256-thread block. */
__device__ __forceinline__ int ffma_ti()
{
    return 2 * (threadIdx.x >> 5) + ((threadIdx.x >> 4) & 1);
}
__device__ __forceinline__ int ffma_tj() { return threadIdx.x & 15; }

__device__ __forceinline__ float f4_at(const float4 &v, int u)
{
    return u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w;
}

/* Both operands along the contraction (C = A B^T), NA products sharing B:
   d[z][r][c] += sum_{p < KD} fa(z, r, A_z(ti + 16 r, p)) B(tj + 16 c, p),
   rows of A_z at a[z] + i LDA, of B at b + j LDB (16-byte aligned).  fa
   maps four consecutive elements of A_z's row r (an elementwise step
   fused into the load, such as a row scale). */
template <int NA, int R, int CN, int KD, int LDA, int LDB, typename FA>
__device__ __forceinline__ void ffma_nt(float (&d)[NA][R][CN], const float *const (&a)[NA],
                                        const float *b, FA fa)
{
    static_assert(KD % 4 == 0 && LDA % 4 == 0 && LDB % 4 == 0, "16-byte steps");
    const int ti = ffma_ti(), tj = ffma_tj();
#pragma unroll 2
    for (int p = 0; p < KD; p += 4) {
        float4 x[NA][R], y[CN];
#pragma unroll
        for (int z = 0; z < NA; z++)
#pragma unroll
            for (int r = 0; r < R; r++)
                x[z][r] =
                    fa(z, r, *reinterpret_cast<const float4 *>(a[z] + (ti + 16 * r) * LDA + p));
#pragma unroll
        for (int c = 0; c < CN; c++)
            y[c] = *reinterpret_cast<const float4 *>(b + (tj + 16 * c) * LDB + p);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int z = 0; z < NA; z++)
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int c = 0; c < CN; c++)
                        d[z][r][c] = fmaf(f4_at(x[z][r], u), f4_at(y[c], u), d[z][r][c]);
    }
}

/* A along the contraction, B along the output's columns (C = A B):
   d[r][4 h + e] += sum_{p < KD} A(ti + 16 r, p) B(p, 64 h + 4 tj + e),
   e < 4, h < H; rows of A at a + i LDA, of B at b + p LDB. */
template <int R, int H, int KD, int LDA, int LDB>
__device__ __forceinline__ void ffma_nn(float (&d)[R][4 * H], const float *a, const float *b)
{
    static_assert(KD % 4 == 0 && LDA % 4 == 0 && LDB % 4 == 0, "16-byte steps");
    const int ti = ffma_ti(), tj = ffma_tj();
#pragma unroll 2
    for (int p = 0; p < KD; p += 4) {
        float4 x[R];
#pragma unroll
        for (int r = 0; r < R; r++)
            x[r] = *reinterpret_cast<const float4 *>(a + (ti + 16 * r) * LDA + p);
#pragma unroll
        for (int u = 0; u < 4; u++) {
            float4 y[H];
#pragma unroll
            for (int hh = 0; hh < H; hh++)
                y[hh] = *reinterpret_cast<const float4 *>(b + (p + u) * LDB + 64 * hh + 4 * tj);
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int hh = 0; hh < H; hh++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        d[r][4 * hh + e] = fmaf(f4_at(x[r], u), f4_at(y[hh], e), d[r][4 * hh + e]);
        }
    }
}

template <int R, int N> __device__ __forceinline__ void ffma_zero(float (&d)[R][N])
{
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int c = 0; c < N; c++)
            d[r][c] = 0.f;
}

} // namespace ra_gpu

#endif
