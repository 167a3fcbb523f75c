/* Chunked CUDA gdn: (I + A)^-1 by forward substitution, Neumann or Schur blocks. */
#ifndef RA_GPU_GDN_CHUNK_INVERSE_CUH
#define RA_GPU_GDN_CHUNK_INVERSE_CUH

/*
 * The three algorithms of the CPU twin (src/cpu/gdn_tmpl_inverse.h), on an
 * n x n row-major A whose strict lower part is the chunk's A (zero rows and
 * columns past the chunk's L rows), into T, with the same products and the
 * same operand rounding:
 *
 *  fwdsubst  T_ij = -sum_{m=j}^{i-1} A_im T_mj, row by row (rows depend on
 *            the rows above), one thread per entry of a row, each an fmaf
 *            chain in increasing m: scalar fp32 with no operand rounding,
 *            the CPU's order, so bit-identical to it.  Chunks of 64 run
 *            it two lanes per column (inv_fwdsubst_pairs; the general
 *            prep from the blk_mm panel buffer), smaller chunks in that
 *            buffer a thread per column.
 *  neumann   16x16 diagonal blocks (I - N)^-1 = (I+N)(I+N^2)(I+N^4)(I+N^8),
 *            N = -A_bb: three squarings and three products, batched over the
 *            n/16 diagonal blocks (independent); then, block row by block
 *            row, T_ij = -T_ii (sum_{m=j}^{i-1} A_im T_mj).  The CPU sums
 *            the inner product as a chain of accumulating 16-deep matmuls
 *            over m, which is one matmul of depth 16 (i - j): the same
 *            accumulation order.  Needs n % 16 == 0.
 *  schur     recursive 2x2 merge M^-1 = [[P^-1, 0], [-Q^-1 (R P^-1), Q^-1]]
 *            of halves, computed bottom-up: level s merges every pair of
 *            s x s blocks at once (batched products; the merges of one
 *            level are independent, and each reads only blocks finished at
 *            the level below, as the recursion does).  Needs n a power of
 *            two (the CPU halves floor/ceil; for powers of two the splits
 *            are the same).
 * The caller has synchronised A; inverse() returns synchronised.
 */

#include <cstdint>

#include "gpu/blk_mm.cuh"
#include "gpu/gdn_cuda_cxx.h"

namespace ra_gpu
{

/* Scratch floats of inverse() for n (neumann: 8 blocks of 16 x n; schur: n^2/4). */
__host__ __device__ inline int64_t inv_scratch_len(int n)
{
    const int64_t a = 8 * 16 * (int64_t)n, b = (int64_t)n * n / 4;
    return a > b ? a : b;
}

__device__ inline void inv_fwdsubst(float *t, const float *a, int n)
{
    for (int e = threadIdx.x; e < n * n; e += blockDim.x)
        t[e] = (e / n == e % n) ? 1.f : 0.f;
    __syncthreads();
    for (int i = 1; i < n; i++) {
        for (int j = threadIdx.x; j < i; j += blockDim.x) {
            float s = 0.f;
            for (int m = j; m < i; m++)
                s = fmaf(a[i * n + m], t[m * n + j], s);
            t[i * n + j] = -s;
        }
        __syncthreads();
    }
}

/* The same chains for n <= 64 in shared memory (sm: 2 n (n + 1) floats),
   one thread per column: column j of T needs only its own rows above, so
   no barrier between rows; each entry is the same fmaf chain in
   increasing m as inv_fwdsubst's, so the bits are the same. */
__device__ inline void inv_fwdsubst_smem(float *t, const float *a, int n, float *sm)
{
    const int ld = n + 1;
    float *as = sm, *ts = sm + n * ld;
    for (int e = threadIdx.x; e < n * n; e += blockDim.x)
        as[e / n * ld + e % n] = a[e];
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        ts[j * ld + j] = 1.f;
        for (int i = j + 1; i < n; i++) {
            const float *ar = as + i * ld;
            float s = 0.f;
#pragma unroll 4
            for (int m = j; m < i; m++)
                s = fmaf(ar[m], ts[m * ld + j], s);
            ts[i * ld + j] = -s;
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
        const int i = e / n, j = e % n;
        t[e] = j <= i ? ts[i * ld + j] : 0.f;
    }
    __syncthreads();
}

/* Where inv_fwdsubst_pairs reads A_im: column-major (column m at m LDA),
   the column's even rows first, then its odd rows, so that a lane's rows
   (one parity) are contiguous. */
template <int N, int LDA> __device__ __forceinline__ int pairs_at(int i, int m)
{
    return m * LDA + (i & 1) * (N / 2) + (i >> 1);
}

/* inv_fwdsubst_smem's chains for n = N <= 64 on 2N threads, two lanes per
   column and A read from pairs_at's layout: lanes 2j and 2j + 1 hold, in
   registers, the running sums s_i of column j's rows of their parity.
   Once T_mj is known (-s_m on the lane of m's parity, shuffled to the
   other), each lane adds its rows' terms s_i = fmaf(A_im, T_mj, s_i),
   i > m, with four of A's values per load.  Each s_i is the fmaf chain in
   increasing m from m = j, so the bits are inv_fwdsubst_smem's, and a
   column's critical path is half a row's terms per step instead of all
   of them.  put(m, t) runs on every lane for m = 0..N-1 in order (a lane's
   column is threadIdx.x / 2), t = T_mj, zero above the diagonal, so put
   may shuffle; threads from 2N on do nothing. */
template <int N, int LDA, class Put>
__device__ __forceinline__ void inv_fwdsubst_pairs(const float *at, Put put)
{
    static_assert(N % 16 == 0 && LDA % 4 == 0, "whole warps, float4 loads");
    const int j = threadIdx.x >> 1, p = threadIdx.x & 1;
    if (j >= N)
        return;
    const float *ap = at + p * (N / 2);
    float s[N / 2];
#pragma unroll
    for (int r = 0; r < N / 2; r++)
        s[r] = 0.f;
#pragma unroll
    for (int m = 0; m < N; m++) {
        const float own = s[m >> 1], other = __shfl_xor_sync(0xffffffffu, own, 1);
        const float t = m < j ? 0.f : m == j ? 1.f : -(p == (m & 1) ? own : other);
        put(m, t);
        if (m < j)
            continue;
#pragma unroll
        for (int q = m / 8; q < N / 8; q++) {
            const float4 x = *reinterpret_cast<const float4 *>(ap + m * LDA + 4 * q);
            const float xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (2 * (4 * q + u) + p > m)
                    s[4 * q + u] = fmaf(xs[u], t, s[4 * q + u]);
        }
    }
}

/* inv_fwdsubst_smem for n = N on 2N or more threads (the general prep's
   chunk 64): A copied into pairs_at's layout in sm (N (N + 4) floats),
   T's entries written from the lane of their row's parity; same chains,
   so the same bits. */
template <int N> __device__ inline void inv_fwdsubst_pairs_smem(float *t, const float *a, float *sm)
{
    constexpr int LDA = N + 4;
    for (int e = threadIdx.x; e < N * N; e += blockDim.x)
        sm[pairs_at<N, LDA>(e / N, e % N)] = a[e];
    __syncthreads();
    const int j = threadIdx.x >> 1, p = threadIdx.x & 1;
    inv_fwdsubst_pairs<N, LDA>(sm, [&](int m, float x) {
        if (p == (m & 1))
            t[m * N + j] = x;
    });
    __syncthreads();
}

/* e = I + x for nb 16x16 blocks stored contiguously. */
__device__ inline void inv_eye_plus(float *e, const float *x, int nb)
{
    for (int r = threadIdx.x; r < nb * 256; r += blockDim.x)
        e[r] = __fadd_rn(x[r], (r % 256) % 17 == 0 ? 1.f : 0.f);
}

template <int P> __device__ void inv_neumann(float *t, const float *a, int n, float *scr)
{
    const int nb = n / 16, B = 256;
    float *nn = scr, *n2 = nn + nb * B, *n4 = n2 + nb * B, *n8 = n4 + nb * B, *e = n8 + nb * B,
          *p1 = e + nb * B, *p2 = p1 + nb * B, *acc = p2 + nb * B;
    for (int r = threadIdx.x; r < n * n; r += blockDim.x)
        t[r] = 0.f;
    for (int r = threadIdx.x; r < nb * B; r += blockDim.x) {
        const int b = r / B, i = r % B / 16, j = r % 16, o = 16 * b;
        nn[r] = j < i ? -a[(o + i) * n + o + j] : 0.f;
    }
    __syncthreads();
    const mat nnm = mk(nn, 16, 1, B), n2m = mk(n2, 16, 1, B), n4m = mk(n4, 16, 1, B);
    blk_mm<P>(n2, 16, B, 16, 16, 16, nnm, nnm, false, nb);
    __syncthreads();
    blk_mm<P>(n4, 16, B, 16, 16, 16, n2m, n2m, false, nb);
    __syncthreads();
    blk_mm<P>(n8, 16, B, 16, 16, 16, n4m, n4m, false, nb);
    inv_eye_plus(p2, nn, nb);
    inv_eye_plus(e, n2, nb);
    __syncthreads();
    blk_mm<P>(p1, 16, B, 16, 16, 16, mk(p2, 16, 1, B), mk(e, 16, 1, B), false, nb);
    __syncthreads();
    inv_eye_plus(e, n4, nb);
    __syncthreads();
    blk_mm<P>(p2, 16, B, 16, 16, 16, mk(p1, 16, 1, B), mk(e, 16, 1, B), false, nb);
    __syncthreads();
    inv_eye_plus(e, n8, nb);
    __syncthreads();
    blk_mm<P>(t, n, 16 * (n + 1), 16, 16, 16, mk(p2, 16, 1, B), mk(e, 16, 1, B), false, nb);
    __syncthreads();
    for (int bi = 1; bi < nb; bi++) {
        const int o = 16 * bi;
        for (int bj = 0; bj < bi; bj++) /* acc_j = sum_{m=j}^{i-1} A_im T_mj */
            blk_mm<P>(acc + bj * B, 16, 0, 16, 16, 16 * (bi - bj), mk(a + o * n + 16 * bj, n, 1),
                      mk(t + 16 * bj * n + 16 * bj, n, 1), false);
        __syncthreads();
        blk_mm<P>(t + o * n, n, 16, 16, 16, 16, mk(t + o * n + o, n, 1, 0), mk(acc, 16, 1, B),
                  false, bi);
        __syncthreads();
        for (int r = threadIdx.x; r < bi * B; r += blockDim.x) {
            float *x = t + (o + r % B / 16) * n + 16 * (r / B) + r % 16;
            *x = -*x;
        }
        __syncthreads();
    }
}

template <int P> __device__ void inv_schur(float *t, const float *a, int n, float *x)
{
    for (int e = threadIdx.x; e < n * n; e += blockDim.x)
        t[e] = (e / n == e % n) ? 1.f : 0.f;
    __syncthreads();
    for (int s = 1; s < n; s *= 2) {
        const int pairs = n / (2 * s);
        const int64_t step = 2 * (int64_t)s * (n + 1); /* from one pair's corner to the next */
        /* x_r = R P^-1: R = A[o+s.., o..], P^-1 = T[o.., o..] */
        blk_mm<P>(x, s, (int64_t)s * s, s, s, s, mk(a + s * n, n, 1, step), mk(t, n, 1, step),
                  false, pairs);
        __syncthreads();
        /* lower-left = Q^-1 x_r, Q^-1 = T[o+s.., o+s..] */
        blk_mm<P>(t + s * n, n, step, s, s, s, mk(t + s * n + s, n, 1, step),
                  mk(x, s, 1, (int64_t)s * s), false, pairs);
        __syncthreads();
        for (int e = threadIdx.x; e < pairs * s * s; e += blockDim.x) {
            const int r = e / (s * s), i = e % (s * s) / s, j = e % s;
            float *y = t + r * step + (int64_t)(s + i) * n + j;
            *y = -*y;
        }
        __syncthreads();
    }
}

/* t = (I + strictly_lower(a))^-1, n x n; inv an ra_cpu_inverse. */
template <int P> __device__ void inverse(float *t, const float *a, int n, int inv, float *scr)
{
    switch (inv) {
    case RA_CPU_INV_NEUMANN:
        inv_neumann<P>(t, a, n, scr);
        break;
    case RA_CPU_INV_SCHUR:
        inv_schur<P>(t, a, n, scr);
        break;
    default:
        static_assert(64 * (64 + 4) <= MM_SMEM_FLOATS<P>, "A in pairs_at's layout fits");
        if (n == 64 && blockDim.x >= 2 * 64)
            inv_fwdsubst_pairs_smem<64>(t, a, mm_smem<P>());
        else if (2 * n * (n + 1) <= MM_SMEM_FLOATS<P>)
            inv_fwdsubst_smem(t, a, n, mm_smem<P>());
        else
            inv_fwdsubst(t, a, n);
        break;
    }
}

} // namespace ra_gpu

#endif
