/* Bulk copies (cp.async.bulk, Hopper's TMA without a tensor map) from global to shared memory,
 * completed on mbarriers, as inline PTX. */
#ifndef RA_GPU_BULK_COPY_CUH
#define RA_GPU_BULK_COPY_CUH

/*
 * One instruction moves a whole contiguous block, and the copy engine, not
 * the load/store pipe, carries it: the bf16 passes' copying warp spent its
 * time stalled issuing 16-byte cp.async (short scoreboard, ncu) while the
 * computing warps waited for it at the chunk's barrier.  A copy's bytes
 * count down the barrier's expected transactions; a phase completes when
 * its one arrival (mbar_arrive_tx, which adds the bytes to expect) is in
 * and every expected byte has landed.
 */

#include <cstdint>

namespace ra_gpu
{

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* Sets bar up for one arrival a phase.  Before any thread uses it:
   mbar_init_fence by the initialising thread, then a block barrier. */
__device__ __forceinline__ void mbar_init(uint64_t *bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* The phase's arrival, expecting bytes more of bulk copies (0: the phase
   completes once the copies already counted have landed). */
__device__ __forceinline__ void mbar_arrive_tx(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}

/* Starts copying bytes (a multiple of 16, both addresses 16-byte
   aligned) from src to dst; they count against bar's phase. */
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(smem_addr(dst)),
        "l"(__cvta_generic_to_global(src)), "r"(bytes), "r"(smem_addr(bar))
        : "memory");
}

/* Waits until bar's phase of this parity (0 for its first use, then
   alternating) has completed. */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n\t.reg .pred done;\n"
                 "WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra WAIT;\n}" ::"r"(smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}

} // namespace ra_gpu

#endif
