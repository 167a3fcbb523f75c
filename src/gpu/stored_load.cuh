/* Loads of fp32 arrays or of an input's stored bf16 bits, widened exactly to fp32. */
#ifndef RA_GPU_STORED_LOAD_CUH
#define RA_GPU_STORED_LOAD_CUH

/*
 * A bf16 case's q, k and v reach the bf16 kernels as stored (uint16_t
 * bits, args::qb) as well as widened to fp32.  Widening a bf16 is
 * placing its 16 bits above 16 zero bits, which is exact, so a kernel
 * that loads either gets the same floats; the stored form is half the
 * bytes.  load4 reads four consecutive elements (16-byte aligned fp32,
 * 8-byte aligned bf16), load1 one.
 */

#include <cstdint>

namespace ra_gpu
{

/* The elements of a word of two bf16 (a pair tile's word, or two stored
   elements), widened: the first, in the low half, and the second. */
__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

__device__ __forceinline__ float4 load4(const float *x)
{
    return *reinterpret_cast<const float4 *>(x);
}

__device__ __forceinline__ float4 load4(const uint16_t *x)
{
    const uint2 w = *reinterpret_cast<const uint2 *>(x); /* element 0 in w.x's low half */
    return make_float4(bf16_lo(w.x), bf16_hi(w.x), bf16_lo(w.y), bf16_hi(w.y));
}

__device__ __forceinline__ float load1(const float *x) { return *x; }

__device__ __forceinline__ float load1(const uint16_t *x)
{
    return __uint_as_float((unsigned)*x << 16);
}

} // namespace ra_gpu

#endif
