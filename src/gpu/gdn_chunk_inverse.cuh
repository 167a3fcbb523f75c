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
 *            the CPU's order, so bit-identical to it.  Chunks up to 64
 *            run it in the blk_mm panel buffer, a thread per column.
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

/* inv_fwdsubst_smem for n = N <= 64 with the chains run column-wise
   rather than entry by entry: once T_mj is known, every row i > m of
   column j takes its term, T_ij's running sum s_i = fmaf(A_im, T_mj, s_i),
   the sums held in registers.  Each s_i is still the fmaf chain in
   increasing m from m = j, so the bits are inv_fwdsubst_smem's; but a
   column's critical path is one fmaf per row instead of one per term
   (n (n - 1) / 2 in the first column), and the terms of one step are
   independent.  Threads N on wait at the final barrier. */
template <int N> __device__ inline void inv_fwdsubst_cols(float *t, const float *a, float *sm)
{
    constexpr int ld = N + 1;
    float *as = sm, *ts = sm + N * ld;
    for (int e = threadIdx.x; e < N * N; e += blockDim.x)
        as[e / N * ld + e % N] = a[e];
    __syncthreads();
    const int j = threadIdx.x;
    if (j < N) {
        float s[N];
#pragma unroll
        for (int i = 0; i < N; i++)
            s[i] = 0.f;
#pragma unroll
        for (int m = 0; m < N; m++) {
            if (m < j)
                continue;
            const float tm = m == j ? 1.f : -s[m];
            ts[m * ld + j] = tm;
#pragma unroll
            for (int i = m + 1; i < N; i++)
                s[i] = fmaf(as[i * ld + m], tm, s[i]);
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < N * N; e += blockDim.x) {
        const int i = e / N, c = e % N;
        t[e] = c <= i ? ts[i * ld + c] : 0.f;
    }
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
        if (2 * n * (n + 1) <= 2 * MM_T * mm_ld<P>::v)
            inv_fwdsubst_smem(t, a, n, mm_smem<P>());
        else
            inv_fwdsubst(t, a, n);
        break;
    }
}

} // namespace ra_gpu

#endif
