/* Warp-level tensor-core products (tf32, 3xtf32, bf16) and operand roundings, as inline PTX. */
#ifndef RA_GPU_MMA_CUH
#define RA_GPU_MMA_CUH

/*
 * Every rounding here is the named PTX instruction, so that the CPU
 * emulation (src/cpu/gdn_tmpl_linalg.h) can reproduce it bit for bit:
 *
 *   tf32      cvt.rna.tf32.f32 (nearest, ties away from zero: what
 *             ra_round_tf32_rna emulates and tests/t-gpu-rounding checks);
 *   3xtf32    big = tf32(x), small = tf32(x - big) (x - big is exact in
 *             fp32), the product a*b as small_a*big_b + big_a*small_b +
 *             big_a*big_b: three accumulating mmas per k-step, small terms
 *             first, so the error is close to an fp32 FFMA product (how the
 *             k-steps are summed: blk_mm.cuh);
 *   bf16      cvt.rn.bf16x2.f32 (nearest even, ra_round_bf16_f).
 *
 * Fragments follow the PTX ISA layouts of mma.sync.aligned.m16n8k8 (tf32)
 * and m16n8k16 (bf16), with g = lane / 4 and t = lane % 4:
 *   m16n8k8 tf32   A (16x8): a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
 *                  B (8x8):  b0 (t, g), b1 (t+4, g)            [(k, n)]
 *   m16n8k16 bf16  A (16x16): a0 (g, 2t..2t+1), a1 (g+8, 2t..2t+1),
 *                             a2 (g, 2t+8..2t+9), a3 (g+8, 2t+8..2t+9)
 *                  B (16x8):  b0 (2t..2t+1, g), b1 (2t+8..2t+9, g)
 *                  (two bf16 per register, the lower index in the low half)
 *   C/D (16x8, fp32): c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1).
 * The accumulation inside one mma is the tensor core's (fp32 accumulate, not
 * a sequence of FFMA roundings); across k-steps the fp32 accumulator is
 * carried in registers.
 */

#include <cstdint>

namespace ra_gpu
{

__device__ __forceinline__ uint32_t tf32_rna(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

/* x = big + small (+ a remainder below 2^-22 |x|). */
__device__ __forceinline__ void tf32_split(float x, uint32_t &big, uint32_t &small)
{
    big = tf32_rna(x);
    small = tf32_rna(__fsub_rn(x, __uint_as_float(big)));
}

/* Two floats to a bf16x2 register: lo in bits 0..15, hi in bits 16..31. */
__device__ __forceinline__ uint32_t bf16x2_rn(float lo, float hi)
{
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* p's shared-space address.  Conversions are made once per product and
   the loads address by offsets from it: each conversion reads the CTA's
   shared window (S2UR, a short-scoreboard wait), and the compiler does not
   share one between the asm volatile loads that follow. */
__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* ldmatrix: four (x4) or two (x2) 8 x 8 matrices of b16 from shared
   memory (a: a shared-space address, smem_addr), each lane giving the
   address of one 16-byte row (lanes 8j to 8j + 7 the rows of matrix j;
   x2 reads the first 16 lanes' addresses); lane l receives row l / 4,
   elements 2 (l % 4) and 2 (l % 4) + 1, of each matrix: the mma
   fragment layout.  TRANS (.trans): lane l receives column l / 4, the
   elements of rows 2 (l % 4) and 2 (l % 4) + 1, the first in the low
   half: the fragment of the transposed matrix. */
template <bool TRANS = false>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], unsigned a)
{
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
}

template <bool TRANS = false>
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], unsigned a)
{
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(a));
}

/* x rounded to bf16 (nearest even) and widened back to fp32. */
__device__ __forceinline__ float bf16_round(float x)
{
    return __uint_as_float(bf16x2_rn(0.f, x) & 0xffff0000u);
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

} // namespace ra_gpu

#endif
