/* Thread-block matmuls on strided fp32 operands: IEEE FFMA, tf32, 3xtf32, bf16 mma. */
#ifndef RA_GPU_BLK_MM_CUH
#define RA_GPU_BLK_MM_CUH

/*
 * blk_mm<P> is the GPU counterpart of the CPU kernels' RN(mm)
 * (src/cpu/gdn_tmpl_linalg.h) and has its semantics:
 *
 *   C(i, j) = (acc ? C(i, j) : 0) + sum_{p < kc} A(i, p) B(p, j),
 *   i < m, j < n, A(i, p) = a.p[i*a.rs + p*a.cs], B(p, j) = b.p[p*b.rs + j*b.cs],
 *
 * with both operands rounded by the precision P right before the product,
 * optionally over a batch of independent products (operand and result
 * bases advanced by their batch strides).  Transposes are strides, so one
 * routine serves every product of the chunked algorithm.
 *
 *   RA_GPU_PREC_IEEE    one thread per output element, an fmaf chain in
 *                       increasing p from zero or from C: exactly the CPU
 *                       twin's order, so the results agree bit for bit;
 *   RA_GPU_PREC_TF32    16x8 output tiles per warp, mma m16n8k8 on
 *                       cvt.rna.tf32 operands, fp32 accumulator carried
 *                       across k-steps of 8;
 *   RA_GPU_PREC_TF32X3  the same tiles, three mmas per k-step (mma.cuh) into
 *                       a k-step partial that starts from zero, added to the
 *                       fp32 running sum with one __fadd_rn (split
 *                       accumulation).  Why: the tensor core's fp32
 *                       accumulation aligns and adds with truncation (Fasi et
 *                       al., "Numerical behavior of NVIDIA tensor cores", 2021),
 *                       so carrying the running sum through three mmas per
 *                       k-step truncates it three times per step; measured on
 *                       the H200 (B=1,T=130,K=V=128 strong-decay; B=1,T=1024,
 *                       Hk=4,Hv=8,K=V=128) that costs 1.4..2.6x the CPU twin's
 *                       rel_rms (dk 9.5e-7 vs 3.6e-7), while the split form
 *                       measures 0.4..1.2x of it.  TF32 and bf16 keep the
 *                       tensor core's own accumulation, as production kernels
 *                       do: their operand rounding (2^-11, 2^-8) dominates;
 *   RA_GPU_PREC_BF16    16x8 tiles, mma m16n8k16 on RNE bf16 operands.
 * Out-of-range rows, columns and contraction indices are read as zero
 * (exact: they add +0 products), so any m, n, kc >= 1 is served.
 *
 * Every thread of the block must call it (same arguments); it does not
 * synchronise: the caller puts a __syncthreads() between a product and the
 * first read of its result, and may issue several products with disjoint
 * outputs back to back.  Operands are read with plain loads (they are
 * written by the same block earlier in the kernel, so the read-only path
 * would be wrong).  This is the straightforward form, one warp per 16x8
 * tile with fragments loaded from global memory; a staged shared-memory
 * pipeline can replace it without changing the semantics.
 */

#include <cstdint>

#include "gpu/gdn_cuda_cxx.h"
#include "gpu/mma.cuh"

namespace ra_gpu
{

/* A strided operand: element (i, p) of batch entry z at p[z*bs + i*rs + p*cs]. */
struct mat {
    const float *p;
    int64_t rs, cs, bs;
};

__device__ __forceinline__ mat mk(const float *p, int64_t rs, int64_t cs, int64_t bs = 0)
{
    return mat{p, rs, cs, bs};
}

__device__ __forceinline__ float ld(const float *base, const mat &x, int i, int p, int rows,
                                    int cols)
{
    return (i < rows && p < cols) ? base[i * x.rs + p * x.cs] : 0.f;
}

template <int P>
__device__ void blk_mm(float *c, int64_t ldc, int64_t cbs, int m, int n, int kc, mat a, mat b,
                       bool acc, int batch = 1)
{
    if (P == RA_GPU_PREC_IEEE) {
        const int64_t per = (int64_t)m * n, total = per * batch;
        for (int64_t e = threadIdx.x; e < total; e += blockDim.x) {
            const int z = (int)(e / per), i = (int)(e % per / n), j = (int)(e % n);
            const float *ap = a.p + z * a.bs + i * a.rs, *bp = b.p + z * b.bs + j * b.cs;
            float *cp = c + z * cbs + i * ldc + j;
            float s = acc ? *cp : 0.f;
            for (int p = 0; p < kc; p++)
                s = fmaf(ap[p * a.cs], bp[p * b.rs], s);
            *cp = s;
        }
        return;
    }
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int tm = (m + 15) / 16, tn = (n + 7) / 8, per = tm * tn;
    for (int tile = threadIdx.x >> 5; tile < per * batch; tile += blockDim.x >> 5) {
        const int z = tile / per, i0 = (tile % per) / tn * 16, j0 = tile % tn * 8;
        const float *ab = a.p + z * a.bs, *bb = b.p + z * b.bs;
        float *cb = c + z * cbs;
        const int r0 = i0 + g, r1 = r0 + 8, c0 = j0 + 2 * t, c1 = c0 + 1;
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        if (acc) {
            d[0] = (r0 < m && c0 < n) ? cb[r0 * ldc + c0] : 0.f;
            d[1] = (r0 < m && c1 < n) ? cb[r0 * ldc + c1] : 0.f;
            d[2] = (r1 < m && c0 < n) ? cb[r1 * ldc + c0] : 0.f;
            d[3] = (r1 < m && c1 < n) ? cb[r1 * ldc + c1] : 0.f;
        }
        const int col = j0 + g; /* B fragment column */
        if (P == RA_GPU_PREC_BF16) {
            for (int k0 = 0; k0 < kc; k0 += 16) {
                const int ka = k0 + 2 * t, kb = ka + 8;
                uint32_t fa[4], fb[2];
                fa[0] = bf16x2_rn(ld(ab, a, r0, ka, m, kc), ld(ab, a, r0, ka + 1, m, kc));
                fa[1] = bf16x2_rn(ld(ab, a, r1, ka, m, kc), ld(ab, a, r1, ka + 1, m, kc));
                fa[2] = bf16x2_rn(ld(ab, a, r0, kb, m, kc), ld(ab, a, r0, kb + 1, m, kc));
                fa[3] = bf16x2_rn(ld(ab, a, r1, kb, m, kc), ld(ab, a, r1, kb + 1, m, kc));
                /* B(p, j) = bb[p*rs + j*cs]: the view with rows p, columns j. */
                const mat bt = mk(nullptr, b.cs, b.rs);
                fb[0] = bf16x2_rn(ld(bb, bt, col, ka, n, kc), ld(bb, bt, col, ka + 1, n, kc));
                fb[1] = bf16x2_rn(ld(bb, bt, col, kb, n, kc), ld(bb, bt, col, kb + 1, n, kc));
                mma_bf16(d, fa, fb);
            }
        } else {
            const mat bt = mk(nullptr, b.cs, b.rs);
            for (int k0 = 0; k0 < kc; k0 += 8) {
                const float x[4] = {ld(ab, a, r0, k0 + t, m, kc), ld(ab, a, r1, k0 + t, m, kc),
                                    ld(ab, a, r0, k0 + t + 4, m, kc),
                                    ld(ab, a, r1, k0 + t + 4, m, kc)};
                const float y[2] = {ld(bb, bt, col, k0 + t, n, kc),
                                    ld(bb, bt, col, k0 + t + 4, n, kc)};
                if (P == RA_GPU_PREC_TF32) {
                    const uint32_t fa[4] = {tf32_rna(x[0]), tf32_rna(x[1]), tf32_rna(x[2]),
                                            tf32_rna(x[3])};
                    const uint32_t fb[2] = {tf32_rna(y[0]), tf32_rna(y[1])};
                    mma_tf32(d, fa, fb);
                } else {
                    uint32_t ba[4], sa[4], bb2[2], sb[2];
                    for (int r = 0; r < 4; r++)
                        tf32_split(x[r], ba[r], sa[r]);
                    for (int r = 0; r < 2; r++)
                        tf32_split(y[r], bb2[r], sb[r]);
                    /* The k-step's partial sum from zero in the tensor core
                       (small terms first, as the CPU twin), then one RN add
                       into the running sum: see the header comment. */
                    float e[4] = {0.f, 0.f, 0.f, 0.f};
                    mma_tf32(e, sa, bb2);
                    mma_tf32(e, ba, sb);
                    mma_tf32(e, ba, bb2);
                    for (int r = 0; r < 4; r++)
                        d[r] = __fadd_rn(d[r], e[r]);
                }
            }
        }
        if (r0 < m && c0 < n)
            cb[r0 * ldc + c0] = d[0];
        if (r0 < m && c1 < n)
            cb[r0 * ldc + c1] = d[1];
        if (r1 < m && c0 < n)
            cb[r1 * ldc + c0] = d[2];
        if (r1 < m && c1 < n)
            cb[r1 * ldc + c1] = d[3];
    }
}

} // namespace ra_gpu

#endif
