/* Chunked CUDA gdn backward: the gradient steps' fixed-order reductions (both grads kernels). */
#ifndef RA_GPU_GDN_CHUNK_GRADS_CUH
#define RA_GPU_GDN_CHUNK_GRADS_CUH

/*
 * The sums of the gradients kernels (gdn_chunk_bwd.cu, and the bf16 one
 * of gdn_chunk_bwd_bf16.cu) whose order is a rounding point of the CPU
 * twin: gate sums and row dot products in its order, the <dS, S> dot as
 * a fixed tree.  Both kernels call these, so they agree bit for bit.
 */

#include <cstdint>

#include "gpu/stored_load.cuh"

namespace ra_gpu
{

/* sum_e x[e] y[e] as DOT_LANES fmaf chains (lane p over e = p mod
   DOT_LANES) summed by a fixed pairwise tree: the same bits for any
   blockDim.  dot_lane runs lane p's chain into red[p] (red holds
   DOT_LANES floats), dot_tree the tree once every lane is in; blk_dot
   does both with the whole block, a kernel may give the lanes to threads
   that are free at the time. */
constexpr int DOT_LANES = 256;

template <int U> /* terms whose loads issue before their fmafs */
__device__ __forceinline__ void dot_lane(const float *x, const float *y, int n, float *red, int p)
{
    float s = 0.f;
    int e = p;
    for (; e + (U - 1) * DOT_LANES < n; e += U * DOT_LANES) {
        float a[U], b[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            a[u] = x[e + u * DOT_LANES], b[u] = y[e + u * DOT_LANES];
#pragma unroll
        for (int u = 0; u < U; u++)
            s = fmaf(a[u], b[u], s);
    }
    for (; e < n; e += DOT_LANES)
        s = fmaf(x[e], y[e], s);
    red[p] = s;
}

/* Every thread of the block; synchronises first and last. */
__device__ inline float dot_tree(float *red)
{
    __syncthreads();
    for (int w = DOT_LANES / 2; w > 0; w /= 2) {
        for (int p = threadIdx.x; p < w; p += blockDim.x)
            red[p] = __fadd_rn(red[p], red[p + w]);
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();
    return r;
}

template <int U> /* dot_lane's U: the general kernel's loop as it was timed is U = 1 */
__device__ inline float blk_dot(const float *x, const float *y, int n, float *red)
{
    for (int p = threadIdx.x; p < DOT_LANES; p += blockDim.x)
        dot_lane<U>(x, y, n, red, p);
    return dot_tree(red);
}

/* sum_j x[j] y[j], one fmaf chain in increasing j (the CPU's row dot);
   a loop of loads only, so they issue ahead of the chain. */
__device__ __forceinline__ float row_dot(const float *x, const float *y, int n)
{
    float acc = 0.f;
#pragma unroll 8
    for (int j = 0; j < n; j++)
        acc = fmaf(x[j], y[j], acc);
    return acc;
}

/* row_dot(x, y, N) for x in global memory (fp32 or stored bf16, load4)
   and y in shared memory (16-byte aligned): the same chain, its x loads
   issued four elements each, 16 at a time before their fmafs, y read as
   float4,
   so that a row costs N / 64 memory latencies rather than one per eight
   elements (the bf16 gradients kernel runs its row dots while the rest of
   its one block per SM waits). */
template <int N, typename T>
__device__ __forceinline__ float row_dot_ld4(const T *x, const float *y)
{
    constexpr int U = 16;
    static_assert(N % (4 * U) == 0, "whole batches");
    float acc = 0.f;
#pragma unroll 1
    for (int j0 = 0; j0 < N; j0 += 4 * U) {
        float4 a[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            a[u] = load4(x + j0 + 4 * u);
#pragma unroll
        for (int u = 0; u < U; u++) {
            const float4 b = *reinterpret_cast<const float4 *>(y + j0 + 4 * u);
            acc = fmaf(a[u].x, b.x, acc);
            acc = fmaf(a[u].y, b.y, acc);
            acc = fmaf(a[u].z, b.z, acc);
            acc = fmaf(a[u].w, b.w, acc);
        }
    }
    return acc;
}

/* row_dot(x, y, N) for x a column of a bf16 pair tile in shared memory
   (element j at x[j * ldx], widened exactly) and y as row_dot_ld4 reads
   it: the same chain. */
template <int N>
__device__ __forceinline__ float col_dot(const uint16_t *x, int ldx, const float *y)
{
    static_assert(N % 4 == 0, "whole float4s of y");
    float acc = 0.f;
#pragma unroll 8
    for (int j = 0; j < N; j += 4) {
        const float4 b = *reinterpret_cast<const float4 *>(y + j);
        acc = fmaf(load1(x + j * ldx), b.x, acc);
        acc = fmaf(load1(x + (j + 1) * ldx), b.y, acc);
        acc = fmaf(load1(x + (j + 2) * ldx), b.z, acc);
        acc = fmaf(load1(x + (j + 3) * ldx), b.w, acc);
    }
    return acc;
}

/* dG[m] += sum_{j<m} z[m][j] - sum_{i>m} z[i][m], in the CPU's order,
   thread m for row m (pair_gates_rows; the caller synchronises before dG
   is read), or the whole block, synchronised (pair_gates). */
__device__ __forceinline__ void pair_gates_rows(float *dG, const float *z, int C, int L)
{
    for (int m = threadIdx.x; m < L; m += blockDim.x) {
        float acc = dG[m];
        for (int j = 0; j < m; j++)
            acc = __fadd_rn(acc, z[m * C + j]);
        for (int i = m + 1; i < L; i++)
            acc = __fsub_rn(acc, z[i * C + m]);
        dG[m] = acc;
    }
}

__device__ inline void pair_gates(float *dG, const float *z, int C, int L)
{
    pair_gates_rows(dG, z, C, L);
    __syncthreads();
}

/* dG[m] - tmp[m] for m < L - 1 (the delta gate term of row m); for
   m = L - 1, the CPU adds every row's term to dG[L-1] in turn first. */
__device__ __forceinline__ float delta_gate(float dG, const float *tmp, int m, int L)
{
    if (m < L - 1)
        return __fsub_rn(dG, tmp[m]);
    float acc = dG;
    for (int i = 0; i < L; i++)
        acc = __fadd_rn(acc, tmp[i]);
    return __fsub_rn(acc, tmp[m]);
}

/* dg[i * gs] = sum_{j >= i} dG[j], one running sum from the chunk's end
   (step (10)); one thread. */
__device__ __forceinline__ void rev_cumsum(float *dg, int gs, const float *dG, int L)
{
    const float *__restrict__ src = dG;
    float *__restrict__ dst = dg;
    float acc = 0.f;
#pragma unroll 8
    for (int i = L - 1; i >= 0; i--) {
        acc = __fadd_rn(acc, src[i]);
        dst[i * gs] = acc;
    }
}

} // namespace ra_gpu

#endif
