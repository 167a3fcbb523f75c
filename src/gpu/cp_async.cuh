/* cp.async copies from global to shared memory and their group fences, as inline PTX. */
#ifndef RA_GPU_CP_ASYNC_CUH
#define RA_GPU_CP_ASYNC_CUH

#include <cstdint>

namespace ra_gpu
{

/* Copies 16 bytes (both addresses 16-byte aligned), bypassing L1; dst
   is a shared-space address (__cvta_generic_to_shared). */
__device__ __forceinline__ void cp_async16_s(unsigned dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst),
                 "l"(__cvta_generic_to_global(src)));
}

__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
    cp_async16_s((unsigned)__cvta_generic_to_shared(dst), src);
}

/* One warp copies ROWS rows of SEGS 16-byte segments from src (rows lds
   elements apart) to dst (LDD elements apart), both 16-byte aligned: a
   lane takes segment lane % SEGS of rows lane / SEGS + (32 / SEGS) k, at
   fixed strides from one converted address, so that a copy costs about
   one instruction instead of a dozen of index and address arithmetic.
   The bf16 dstates pass gained 1.4% by it (ncu); the bf16 states pass
   lost 4% and keeps its loop. */
template <int ROWS, int SEGS, int LDD, typename T>
__device__ __forceinline__ void warp_copy_rows(T *dst, const T *src, int64_t lds)
{
    constexpr int RP = 32 / SEGS, E = 16 / sizeof(T);
    static_assert(32 % SEGS == 0 && ROWS % RP == 0 && 16 % sizeof(T) == 0, "whole warp passes");
    const int lane = threadIdx.x & 31, r = lane / SEGS, x = E * (lane % SEGS);
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst + r * LDD + x);
    const T *s = src + r * lds + x;
#pragma unroll
    for (int k = 0; k < ROWS / RP; k++)
        cp_async16_s(d + (unsigned)(RP * k * LDD * sizeof(T)), s + RP * k * lds);
}

/* Copies 16 bytes, or when n is 0 writes 16 zero bytes and reads nothing
   (cp.async's source size). */
__device__ __forceinline__ void cp_async16_zs(unsigned dst, const void *src, unsigned n)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst),
                 "l"(__cvta_generic_to_global(src)), "r"(n));
}

/* warp_copy_rows of rows r0 .. r0 + ROWS - 1 of src and dst (their row 0
   the tiles'), those from row nr on zeros in dst: nothing at or past row
   nr of src is read (row 0, which must exist, is addressed instead). */
template <int ROWS, int SEGS, int LDD, typename T>
__device__ __forceinline__ void warp_copy_rows_upto(T *dst, const T *src, int64_t lds, int r0,
                                                    int nr)
{
    constexpr int RP = 32 / SEGS, E = 16 / sizeof(T);
    static_assert(32 % SEGS == 0 && ROWS % RP == 0 && 16 % sizeof(T) == 0, "whole warp passes");
    const int lane = threadIdx.x & 31, r = r0 + lane / SEGS, x = E * (lane % SEGS);
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst + r * LDD + x);
#pragma unroll
    for (int k = 0; k < ROWS / RP; k++) {
        const int row = r + RP * k;
        const bool in = row < nr;
        cp_async16_zs(d + (unsigned)(RP * k * LDD * sizeof(T)), src + (in ? row : 0) * lds + x,
                      in ? 16u : 0u);
    }
}

/* Copies 4 bytes. */
__device__ __forceinline__ void cp_async4(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d),
                 "l"(__cvta_generic_to_global(src)));
}

/* Closes the thread's current group of copies. */
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

/* Waits until at most N of the thread's groups (the most recent) are in
   flight; a barrier must follow before other threads read the copies. */
template <int N> __device__ __forceinline__ void cp_wait()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

} // namespace ra_gpu

#endif
