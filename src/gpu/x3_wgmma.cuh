/* 3xtf32 products of whole operands through Hopper's warpgroup mma: x3_mm's bits, wgmma's rate. */
#ifndef RA_GPU_X3_WGMMA_CUH
#define RA_GPU_X3_WGMMA_CUH

/*
 * x3w_mm has x3_mm's semantics and calling convention (x3_mm.cuh: blk_mm
 * <RA_GPU_PREC_TF32X3>'s bits for m <= 64, n <= 128, kc <= 128, every
 * thread of a 256-thread block), with the k-steps run by wgmma instead of
 * mma.sync.  Why: sm_90 reaches its tensor cores' rate only through wgmma,
 * and three mma.sync per k-step left x3_mm slower than ffma_mm's FFMA
 * chains (H200, the production head's gradients kernel: 5.70 against
 * 4.74 ms, ncu).
 *
 * The bits.  Each k-step of 8 is a partial sum from zero through three
 * wgmma m64nNk8 tf32 (small big, big small, big big: mma.cuh's order),
 * added to the running sum with one __fadd_rn, in increasing k, over kc
 * rounded up to 8 steps; the operand words are x3_mm's (big = tf32(x),
 * small = tf32(x - big), zero past m, n and kc).  The partial starts from
 * zeroed registers with the accumulator enabled, as the mma's C = 0 does,
 * rather than with wgmma's scale-d = 0 (which could keep a -0 that C = +0
 * turns into +0).  That wgmma's k-step sum equals mma.sync's for the same
 * words, the same k positions and the same accumulator is a property of the
 * tensor core, not of the ISA: tests/t-gpu-mm checks it against blk_mm.
 *
 * Staging.  Per 64-deep half of the contraction, both operands go to
 * shared memory K-major (element (r, k) along k), split into a big and a
 * small plane, in wgmma's canonical layout without swizzle: 8 x 4 core
 * matrices of 128 contiguous bytes, the 16 of a row group along k 128
 * bytes apart (the descriptor's leading offset), row groups 2 KB apart
 * (its stride offset).  Rows along k in global memory are read as float4
 * (eight lanes a core matrix: conflict-free stores); rows along r as 4 x 4
 * blocks transposed in registers (the rows each lane stores rotated so
 * that eight lanes hit eight bank groups); anything else element by
 * element.  A: 64 rows, B: up to 128 rows; 96 KB a block.
 *
 * Each warpgroup (threads 128w..) owns half the output columns over all
 * 64 rows, in one or two passes of wgmmas 32 or 64 columns wide (x3w_mm's
 * NW); its running sums stay in registers across the halves.
 *
 * The compute_90 PTX (a driver's JIT for another GPU) has no wgmma: there
 * x3w_mm is x3_mm, whose bits are the same.
 */

#include <cstdint>

#include "gpu/blk_mm.cuh"
#include "gpu/mma.cuh"
#include "gpu/x3_mm.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define RA_X3W_WGMMA 1
#endif

namespace ra_gpu
{

constexpr int XW_THREADS = 256, XW_H = 64;
/* words of one plane: A 64 rows, B 128 rows, of XW_H words */
constexpr int XW_PA = 64 * XW_H, XW_PB = 128 * XW_H;
constexpr int XW_OWN = 2 * XW_PA + 2 * XW_PB;
/* the block's words: the fallback's x3_mm needs more */
constexpr int XW_WORDS = XW_OWN > X3_WORDS ? XW_OWN : X3_WORDS;
static_assert(XW_THREADS == X3_THREADS, "one block size for x3w_mm and its fallback");

/* The word of element (r, k) in a plane (k < XW_H). */
__host__ __device__ constexpr int xw_at(int r, int k)
{
    return (((r >> 3) * (XW_H / 4) + (k >> 2)) << 5) + ((r & 7) << 2) + (k & 3);
}

#ifdef RA_X3W_WGMMA

/* The shared-memory descriptor of a wgmma operand: a plane's rows from r0
   (a multiple of 8) at the k-step from k0 (a multiple of 8), no swizzle:
   its row groups SBO bytes apart, its two core matrices along k LBO. */
__device__ __forceinline__ uint64_t xw_desc(const uint32_t *plane, int r0, int k0)
{
    constexpr uint64_t LBO = 128, SBO = 128 * (XW_H / 4);
    const uint64_t a = smem_addr(plane + xw_at(r0, k0));
    return ((a & 0x3ffff) >> 4) | ((LBO >> 4) << 16) | ((SBO >> 4) << 32);
}

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/* The compiler must neither read nor move a register that a wgmma in
   flight writes: an empty asm that "redefines" it pins it after the wait
   (and before the issue). */
template <int N> __device__ __forceinline__ void wgmma_pin(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* d += A B over one k-step: m64nNk8, tf32, both operands from shared
   memory (K-major), accumulator enabled. */
__device__ __forceinline__ void wgmma_tf32(float (&d)[16], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                 "%16, %17, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(da), "l"(db), "r"(1));
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[32], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "%32, %33, p, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(1));
}

/* Component j (0..3) of v, without indexing a register array. */
__device__ __forceinline__ float xw_pick(const float4 &v, int j)
{
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

__device__ __forceinline__ void xw_put4(uint32_t *big, uint32_t *small, int o, float a, float b,
                                        float c, float d)
{
    uint32_t hb[4], ls[4];
    tf32_split(a, hb[0], ls[0]);
    tf32_split(b, hb[1], ls[1]);
    tf32_split(c, hb[2], ls[2]);
    tf32_split(d, hb[3], ls[3]);
    *reinterpret_cast<uint4 *>(big + o) = make_uint4(hb[0], hb[1], hb[2], hb[3]);
    *reinterpret_cast<uint4 *>(small + o) = make_uint4(ls[0], ls[1], ls[2], ls[3]);
}

/* Plane element (r, k) = X(r, k) = src[r*rr + k*rk] for r < nr, k < nk,
   else zero (r < R, k < XW_H), split into big and small; a thread's loads
   issue before its splits and stores. */
template <int R>
__device__ __forceinline__ void xw_stage(uint32_t *big, uint32_t *small, const float *src,
                                         int64_t rr, int64_t rk, int nr, int nk)
{
    const bool al = (reinterpret_cast<uintptr_t>(src) & 15) == 0;
    if (rk == 1 && rr % 4 == 0 && al) {
        /* rows along k, a float4 a lane: lane bits 0..2 the row within its
           group of 8, so that eight lanes store one core matrix */
        constexpr int U = R * (XW_H / 4) / XW_THREADS;
        static_assert(U * XW_THREADS == R * (XW_H / 4), "whole passes");
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = threadIdx.x + u * XW_THREADS;
            const int r = (e & 7) + 8 * (e >> 7), k = 4 * ((e >> 3) & 15);
            v[u] = load4_upto(src + r * rr + k, r < nr ? nk - k : 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = threadIdx.x + u * XW_THREADS;
            const int r = (e & 7) + 8 * (e >> 7), k = 4 * ((e >> 3) & 15);
            xw_put4(big, small, xw_at(r, k), v[u].x, v[u].y, v[u].z, v[u].w);
        }
        return;
    }
    if (rr == 1 && rk % 4 == 0 && al) {
        /* columns along r: a lane reads a 4 x 4 block (four k rows of four
           r) and stores its four r rows, in an order rotated by
           (lane / 2) % 4 so that eight lanes hit eight bank groups */
        constexpr int R4 = R / 4, U = R4 * (XW_H / 4) / XW_THREADS;
        static_assert(U * XW_THREADS == R4 * (XW_H / 4), "whole passes");
        const int rot = (threadIdx.x >> 1) & 3;
        float4 v[U][4];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = threadIdx.x + u * XW_THREADS, r = 4 * (e % R4), k = 4 * (e / R4);
#pragma unroll
            for (int q = 0; q < 4; q++)
                v[u][q] = load4_upto(src + (k + q) * rk + r, k + q < nk ? nr - r : 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int e = threadIdx.x + u * XW_THREADS, r = 4 * (e % R4), k = 4 * (e / R4);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int jr = (j + rot) & 3;
                xw_put4(big, small, xw_at(r + jr, k), xw_pick(v[u][0], jr), xw_pick(v[u][1], jr),
                        xw_pick(v[u][2], jr), xw_pick(v[u][3], jr));
            }
        }
        return;
    }
    stage_elems<R, XW_H, XW_THREADS, 4>(src, rr, rk, nr, nk, [&](int r, int k, float x) {
        uint32_t b, s;
        tf32_split(x, b, s);
        big[xw_at(r, k)] = b;
        small[xw_at(r, k)] = s;
    });
}

/* One k-step's partial into e: from zero, small big, big small, big big. */
template <int NE>
__device__ __forceinline__ void xw_issue(float (&e)[NE], const uint32_t *ab, const uint32_t *as,
                                         const uint32_t *bb, const uint32_t *bs, int j0, int k0)
{
#pragma unroll
    for (int i = 0; i < NE; i++)
        e[i] = 0.f;
    wgmma_pin(e);
    wgmma_fence();
    wgmma_tf32(e, xw_desc(as, 0, k0), xw_desc(bb, j0, k0));
    wgmma_tf32(e, xw_desc(ab, 0, k0), xw_desc(bs, j0, k0));
    wgmma_tf32(e, xw_desc(ab, 0, k0), xw_desc(bb, j0, k0));
    wgmma_commit();
}

template <int NE> __device__ __forceinline__ void xw_add(float (&d)[NE], float (&e)[NE])
{
    wgmma_pin(e);
#pragma unroll
    for (int i = 0; i < NE; i++)
        d[i] = __fadd_rn(d[i], e[i]);
}

/* The ks k-steps of one half into the warpgroup's sums d (columns from
   j0), two at a time: the second step's wgmmas run while the first's
   partial is added.  No partial is in flight across the loop's back edge:
   ptxas serialises every wgmma of a function where a register a wgmma in
   flight writes is carried round a loop (C7514: the compiler's register
   moves at the loop head read it). */
template <int NE>
__device__ __forceinline__ void xw_half(float (&d)[NE], const uint32_t *ab, const uint32_t *as,
                                        const uint32_t *bb, const uint32_t *bs, int j0, int ks)
{
#pragma unroll 1
    for (int s = 0; s < ks; s += 2) {
        float e0[NE], e1[NE];
        xw_issue(e0, ab, as, bb, bs, j0, 8 * s);
        if (s + 1 < ks) {
            xw_issue(e1, ab, as, bb, bs, j0, 8 * (s + 1));
            wgmma_wait<1>();
            xw_add(d, e0);
            wgmma_wait<0>();
            xw_add(d, e1);
        } else {
            wgmma_wait<0>();
            xw_add(d, e0);
        }
    }
}

/* The product for B's W * 64 staged rows, warpgroup wg's columns in
   passes of NW: pass p takes [NW wg + 2 NW p, + NW).  Its running sums
   stay in registers across the halves. */
template <int W, int NW>
__device__ __forceinline__ void xw_form(uint32_t *sm, float *c, int64_t ldc, int m, int n, int kc,
                                        const mat &a, const mat &b, bool acc)
{
    constexpr int NE = NW / 2, P = 32 * W / NW;
    static_assert(P >= 1 && P * 2 * NW == 64 * W, "the passes cover B's rows");
    uint32_t *ab = sm, *as = ab + XW_PA, *bb = as + XW_PA, *bs = bb + XW_PB;
    const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    auto row = [&](int r) { return 16 * warp + g + 8 * ((r & 3) >> 1); };
    auto col0 = [&](int p) { return NW * wg + 2 * NW * p; };
    auto col = [&](int p, int r) { return col0(p) + 8 * (r >> 2) + 2 * t + (r & 1); };
    float d[P][NE];
#pragma unroll
    for (int p = 0; p < P; p++)
#pragma unroll
        for (int r = 0; r < NE; r++)
            d[p][r] = mm_start(c, ldc, m, n, acc, row(r), col(p, r));
#pragma unroll 1
    for (int h = 0; h < kc; h += XW_H) {
        if (h > 0)
            __syncthreads(); /* the last half's wgmmas have read their planes */
        const int kh = kc - h < XW_H ? kc - h : XW_H;
        xw_stage<64>(ab, as, a.p + h * a.cs, a.rs, a.cs, m, kh);
        xw_stage<64 * W>(bb, bs, b.p + h * b.rs, b.cs, b.rs, n, kh);
        /* the planes were written by ordinary stores; wgmma reads them
           through the async proxy */
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
#pragma unroll
        for (int p = 0; p < P; p++)
            xw_half(d[p], ab, as, bb, bs, col0(p), (kh + 7) / 8);
    }
#pragma unroll
    for (int p = 0; p < P; p++)
#pragma unroll
        for (int r = 0; r < NE; r++)
            mm_end(c, ldc, m, n, row(r), col(p, r), d[p][r]);
}

#endif /* RA_X3W_WGMMA */

/* sm: the block's XW_WORDS words, 16-byte aligned; called as x3_mm is.
   NW (32 or 64): the widest wgmma, columns a warpgroup covers per pass;
   n <= 64 always runs 32.  Wider means fewer, larger wgmmas (A is read
   from shared memory once per wgmma), narrower half the accumulator
   registers (ptxas -v, the 3xtf32 gradients kernel with x3w_mm in its
   14 products: 4092 / 7056 bytes of spill stores / loads at 64, 1548 /
   3260 at 32).  Inlined, not a call as x3_mm and ffma_mm are: ptxas
   serialises every wgmma of a function called from the kernel (C7510,
   "wgmma pipeline crossing function boundary"), which ptxas -v reports. */
template <int NW = 64>
__device__ __forceinline__ void x3w_mm(uint32_t *sm, float *c, int64_t ldc, int m, int n, int kc,
                                       mat a, mat b, bool acc)
{
    static_assert(NW == 32 || NW == 64, "wgmma m64n32k8 or m64n64k8");
#ifdef RA_X3W_WGMMA
    __syncthreads(); /* the previous product is done with sm */
    if (n > 64)
        xw_form<2, NW>(sm, c, ldc, m, n, kc, a, b, acc);
    else
        xw_form<1, 32>(sm, c, ldc, m, n, kc, a, b, acc);
#else
    x3_mm(sm, c, ldc, m, n, kc, a, b, acc);
#endif
}

} // namespace ra_gpu

#endif
