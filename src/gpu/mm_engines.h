/* The chunk kernels' product engines, one product per block: their bit test and their benchmark. */
#ifndef RA_GPU_MM_ENGINES_H
#define RA_GPU_MM_ENGINES_H

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The chunk kernels build every product from an engine with blk_mm.cuh's
 * semantics, C = (acc ? C : 0) + A B, each engine with the bits of one
 * precision:
 *
 *   blk_ieee  blk_mm<IEEE>     the general kernels' IEEE products
 *   ffma      ffma_mm          the production head's IEEE kernels
 *   blk_x3    blk_mm<TF32X3>   the general kernels' 3xtf32 products
 *   x3        x3_mm            mma.sync on split planes
 *   x3w       x3w_mm<64>       wgmma on split planes, m64n64k8 where n > 64
 *   x3w32     x3w_mm<32>       the same, m64n32k8 throughout
 *
 * A kernel keeps its bits when it changes engine only if the engines of a
 * precision agree bit for bit (tests/t-gpu-mm checks it); which engine a
 * kernel uses is decided by how fast each runs (bench/mm-engines).  Each
 * block runs one product, as a chunk kernel's block does, on operands in
 * global memory: set z % nsets of a batch of operand sets (a few sets stay
 * in L2, as a chunk's workspace does between its kernel's steps).
 *
 * Operands are RA_GPU_MM_LD floats a row: A(i, p) = a[i*LD + p] when ak,
 * else a[p*LD + i]; B(p, j) = b[j*LD + p] when bk (along the contraction),
 * else b[p*LD + j]; C(i, j) = c[i*LD + j].  Sizes: m <= 64, n <= 128,
 * kc <= 128 (the production head's products), all >= 1.
 */
enum ra_gpu_mm_engine {
    RA_GPU_MM_BLK_IEEE,
    RA_GPU_MM_FFMA,
    RA_GPU_MM_BLK_X3,
    RA_GPU_MM_X3,
    RA_GPU_MM_X3W,
    RA_GPU_MM_X3W32,
    RA_GPU_MM_NENGINES
};

#define RA_GPU_MM_LD 128
#define RA_GPU_MM_SET (RA_GPU_MM_LD * RA_GPU_MM_LD) /* floats of one operand of a set */
#define RA_GPU_MM_CSET (64 * RA_GPU_MM_LD)          /* floats of one product's C */

typedef struct {
    int m, n, kc;
    int ak, bk, acc;
} ra_gpu_mm_shape;

/* "blk_ieee", "ffma", ...; NULL for an engine out of range. */
const char *ra_gpu_mm_engine_name(int engine);

/* c[z] (z < nprod, RA_GPU_MM_CSET floats each, read when acc) = the
   engine's product of a[z % nsets] and b[z % nsets] (RA_GPU_MM_SET floats
   each), host arrays.  RA_EINVAL for a bad engine, shape or count,
   RA_EUNSUPPORTED without a device, RA_EIO for a CUDA failure. */
ra_status ra_gpu_mm_engine_run(int engine, const ra_gpu_mm_shape *s, float *c, const float *a,
                               const float *b, int nsets, int nprod);

/* The same launch over operands uploaded once, after one warm-up launch,
   `runs` times, each timed by CUDA events: ms[0..runs-1] (the caller
   sorts them).  The operands stay in L2 on purpose (see above), so no
   flush between runs; acc is ignored (C = A B). */
ra_status ra_gpu_mm_engine_time(int engine, const ra_gpu_mm_shape *s, const float *a,
                                const float *b, int nsets, int nprod, int runs, double *ms);

#ifdef __cplusplus
}
#endif

#endif
