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

__device__ __forceinline__ float4 load4(const float *x)
{
    return *reinterpret_cast<const float4 *>(x);
}

__device__ __forceinline__ float4 load4(const uint16_t *x)
{
    const uint2 w = *reinterpret_cast<const uint2 *>(x); /* element 0 in w.x's low half */
    return make_float4(__uint_as_float(w.x << 16), __uint_as_float(w.x & 0xffff0000u),
                       __uint_as_float(w.y << 16), __uint_as_float(w.y & 0xffff0000u));
}

__device__ __forceinline__ float load1(const float *x) { return *x; }

__device__ __forceinline__ float load1(const uint16_t *x)
{
    return __uint_as_float((unsigned)*x << 16);
}

} // namespace ra_gpu

#endif
