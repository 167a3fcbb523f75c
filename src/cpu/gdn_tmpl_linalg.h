/* Template: rounding points and small matmuls of the CPU gdn kernels (float or double). */

/*
 * Included by gdn_f32.c and gdn_f64.c after they define
 *   R         the arithmetic type (float or double)
 *   RN(x)     x with the type's suffix (x_f32, x_f64), for every symbol
 *   R_EXP, R_FMA, R_SQRT   the type's libm functions
 *   R_IS_F64  1 for double
 *
 * A matmul here is what a tensor core computes: both operands rounded to the
 * operand format first (none, TF32 with ties away from zero, or bf16 with
 * ties to even), then every output element accumulated in R with one fused
 * multiply-add per contraction index, in increasing index order, starting
 * from zero or from the existing value of C (an accumulating mma).  The
 * operands are copied, rounded, into row-major scratch laid out along the
 * contraction index (A by rows, B by columns), so one routine serves every
 * transpose through strides and the inner loop reads contiguous memory.
 * Eight (then four) output columns are accumulated at once: independent
 * fma chains, each still in the one fixed order, so the result does not
 * depend on the unrolling.
 *
 * TF32X3 (float only) copies each operand twice, big = tf32(x) and
 * small = tf32(x - big), and accumulates, per contraction index, the three
 * products small_a*big_b, big_a*small_b, big_a*big_b in that order (what
 * three accumulating tensor-core mmas per k-step compute, the two small
 * terms first so that they are not absorbed before the big one arrives).
 *
 * Storage rounding (st) is separate from operand rounding (rop): the bf16
 * configuration also rounds T, W, U and the per-chunk states when they are
 * "written", as fla stores them in the input dtype; cfg->store picks that
 * storage (f32, bf16, f16) independently of the operands.
 */

#include <math.h>
#include <stdint.h>

#include "core/tensor.h"
#include "cpu/gdn_variants.h"

/* The matmuls spend their time in fma: built for generic x86-64, fma and
   fmaf are libm calls (measured 75% of a chunked variant's time at
   K = 256).  GCC's target_clones adds a copy built with FMA instructions,
   picked at load time where the CPU has them.  fma is correctly rounded
   either way, so both copies give the same bits. */
#ifndef RA_FMA_CLONES
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
#define RA_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define RA_FMA_CLONES
#endif
#endif

/* Operand rounding. */
static inline R RN(rop)(R x, int mode)
{
#if R_IS_F64
    (void)mode;
    return x;
#else
    switch (mode) {
    case RA_CPU_ROUND_TF32: return ra_round_tf32_rna(x);
    case RA_CPU_ROUND_BF16: return ra_round_bf16_f(x);
    default: return x;
    }
#endif
}

/* Storage rounding of the intermediates fla writes in the input dtype. */
static inline R RN(st)(R x, int store)
{
#if R_IS_F64
    (void)store;
    return x;
#else
    switch (store) {
    case RA_CPU_STORE_BF16: return ra_round_bf16_f(x);
    case RA_CPU_STORE_F16: return ra_round_f16_f(x);
    default: return x;
    }
#endif
}

/* Scratch for the rounded operand copies: four blocks of at least
   dim*dim elements, dim the largest matrix side a caller uses (as, bs
   hold the small halves of TF32X3 and may be NULL in double). */
typedef struct RN(mmws) {
    R *a, *b, *as, *bs;
} RN(mmws);

#if !R_IS_F64
/* The TF32X3 form of RN(mm) below (same arguments and order of sums). */
RA_FMA_CLONES static void RN(mm_x3)(R *c, int64_t ldc, int64_t m, int64_t n, int64_t kc, const R *a,
                      int64_t ars, int64_t acs, const R *b, int64_t brs, int64_t bcs, int acc,
                      const RN(mmws) *ws)
{
    R *ra = ws->a, *rb = ws->b, *sa = ws->as, *sb = ws->bs;
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < kc; p++) {
            const R x = a[i * ars + p * acs], big = ra_round_tf32_rna(x);
            ra[i * kc + p] = big;
            sa[i * kc + p] = ra_round_tf32_rna(x - big);
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < kc; p++) {
            const R x = b[p * brs + j * bcs], big = ra_round_tf32_rna(x);
            rb[j * kc + p] = big;
            sb[j * kc + p] = ra_round_tf32_rna(x - big);
        }
    /* four output columns at once, as RN(mm): each column's chain of
       three fmas per index keeps its order, so the bits do not change */
    for (int64_t i = 0; i < m; i++) {
        const R *ai = ra + i * kc, *si = sa + i * kc;
        R *ci = c + i * ldc;
        int64_t j = 0;
        for (; j + 4 <= n; j += 4) {
            const R *b0 = rb + j * kc, *b1 = b0 + kc, *b2 = b1 + kc, *b3 = b2 + kc;
            const R *t0 = sb + j * kc, *t1 = t0 + kc, *t2 = t1 + kc, *t3 = t2 + kc;
            R s0 = acc ? ci[j] : 0, s1 = acc ? ci[j + 1] : 0, s2 = acc ? ci[j + 2] : 0,
              s3 = acc ? ci[j + 3] : 0;
            for (int64_t p = 0; p < kc; p++) {
                const R x = ai[p], y = si[p];
                s0 = R_FMA(x, b0[p], R_FMA(x, t0[p], R_FMA(y, b0[p], s0)));
                s1 = R_FMA(x, b1[p], R_FMA(x, t1[p], R_FMA(y, b1[p], s1)));
                s2 = R_FMA(x, b2[p], R_FMA(x, t2[p], R_FMA(y, b2[p], s2)));
                s3 = R_FMA(x, b3[p], R_FMA(x, t3[p], R_FMA(y, b3[p], s3)));
            }
            ci[j] = s0, ci[j + 1] = s1, ci[j + 2] = s2, ci[j + 3] = s3;
        }
        for (; j < n; j++) {
            const R *bj = rb + j * kc, *tj = sb + j * kc;
            R s = acc ? ci[j] : 0;
            for (int64_t p = 0; p < kc; p++) {
                s = R_FMA(si[p], bj[p], s);
                s = R_FMA(ai[p], tj[p], s);
                s = R_FMA(ai[p], bj[p], s);
            }
            ci[j] = s;
        }
    }
}
#endif

/*
 * c[i*ldc + j] (i < m, j < n) = (acc ? c : 0) + sum_{p < kc} A(i,p) B(p,j)
 * with A(i,p) = a[i*ars + p*acs], B(p,j) = b[p*brs + j*bcs], operands
 * rounded by mode.  kc = 0 leaves c (acc) or zeroes it.
 */
RA_FMA_CLONES static void RN(mm)(R *c, int64_t ldc, int64_t m, int64_t n, int64_t kc, const R *a,
                   int64_t ars, int64_t acs, const R *b, int64_t brs, int64_t bcs, int mode,
                   int acc, const RN(mmws) *ws)
{
#if !R_IS_F64
    if (mode == RA_CPU_ROUND_TF32X3) {
        RN(mm_x3)(c, ldc, m, n, kc, a, ars, acs, b, brs, bcs, acc, ws);
        return;
    }
#endif
    R *ra = ws->a, *rb = ws->b;
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < kc; p++)
            ra[i * kc + p] = RN(rop)(a[i * ars + p * acs], mode);
    /* B's columns in blocks of eight, interleaved along the contraction
       index (rb[j kc + 8 p + q] = B(p, j + q)), the last n % 8 columns one
       after another: each block's eight chains read one contiguous vector
       per index */
    const int64_t n8 = n - n % 8;
    for (int64_t j = 0; j < n8; j += 8)
        for (int64_t p = 0; p < kc; p++)
            for (int q = 0; q < 8; q++)
                rb[j * kc + 8 * p + q] = RN(rop)(b[p * brs + (j + q) * bcs], mode);
    for (int64_t j = n8; j < n; j++)
        for (int64_t p = 0; p < kc; p++)
            rb[j * kc + p] = RN(rop)(b[p * brs + j * bcs], mode);
    for (int64_t i = 0; i < m; i++) {
        const R *ai = ra + i * kc;
        R *ci = c + i * ldc;
        int64_t j = 0;
        for (; j < n8; j += 8) {
            /* eight independent chains, one per column, each in index
               order: the FMA clone computes them as vector lanes */
            const R *b0 = rb + j * kc;
            R s[8];
            for (int q = 0; q < 8; q++)
                s[q] = acc ? ci[j + q] : 0;
            for (int64_t p = 0; p < kc; p++) {
                const R x = ai[p], *bp = b0 + 8 * p;
                for (int q = 0; q < 8; q++)
                    s[q] = R_FMA(x, bp[q], s[q]);
            }
            for (int q = 0; q < 8; q++)
                ci[j + q] = s[q];
        }
        for (; j + 4 <= n; j += 4) {
            const R *b0 = rb + j * kc, *b1 = b0 + kc, *b2 = b1 + kc, *b3 = b2 + kc;
            R s0 = acc ? ci[j] : 0, s1 = acc ? ci[j + 1] : 0, s2 = acc ? ci[j + 2] : 0,
              s3 = acc ? ci[j + 3] : 0;
            for (int64_t p = 0; p < kc; p++) {
                R x = ai[p];
                s0 = R_FMA(x, b0[p], s0);
                s1 = R_FMA(x, b1[p], s1);
                s2 = R_FMA(x, b2[p], s2);
                s3 = R_FMA(x, b3[p], s3);
            }
            ci[j] = s0, ci[j + 1] = s1, ci[j + 2] = s2, ci[j + 3] = s3;
        }
        for (; j < n; j++) {
            const R *bj = rb + j * kc;
            R s = acc ? ci[j] : 0;
            for (int64_t p = 0; p < kc; p++)
                s = R_FMA(ai[p], bj[p], s);
            ci[j] = s;
        }
    }
}

/* Dot product with fma accumulation in increasing index order. */
static inline R RN(dot)(const R *x, const R *y, int64_t n)
{
    R s = 0;
    for (int64_t i = 0; i < n; i++)
        s = R_FMA(x[i], y[i], s);
    return s;
}

/* Strided dot: sum_i x[i*sx] y[i*sy]. */
static inline R RN(dots)(const R *x, int64_t sx, const R *y, int64_t sy, int64_t n)
{
    R s = 0;
    for (int64_t i = 0; i < n; i++)
        s = R_FMA(x[i * sx], y[i * sy], s);
    return s;
}
