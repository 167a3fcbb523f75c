/* cp.async copies from global to shared memory and their group fences, as inline PTX. */
#ifndef RA_GPU_CP_ASYNC_CUH
#define RA_GPU_CP_ASYNC_CUH

namespace ra_gpu
{

/* Copies 16 bytes (both addresses 16-byte aligned), bypassing L1. */
__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d),
                 "l"(__cvta_generic_to_global(src)));
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
