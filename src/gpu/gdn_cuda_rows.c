/* The registered CUDA gdn variants: one row per kernel configuration. */

/*
 * Each row names a configuration of the CUDA kernels (gdn_cuda.h) and its
 * CPU twin, the variant with the same algorithm and rounding points: the
 * twin-agreement test (tests/t-gpu-gdn.c) holds every row's errors against
 * the MPFR reference to within twice its twin's.  The table is plain data,
 * built with or without CUDA, so that a build without a GPU still lists the
 * variants (and reports them as unsupported when asked to run them).
 */

#include "gpu/gdn_cuda.h"

const ra_gpu_gdn_row ra_gpu_gdn_rows[] = {
    {"gdn.cuda.f32",
     "sequential recurrence in fp32 FFMA, one warp per (b, hv, 32 value columns) with the "
     "state column in registers; backward by checkpoints every ~sqrt(T) tokens and "
     "recomputed segments",
     "gdn.cpu.f32", 0,
     {RA_GPU_GDN_SEQ, 0, RA_GPU_PREC_IEEE, RA_CPU_INV_FWDSUBST, RA_F32, RA_F32}},
};

const size_t ra_gpu_gdn_nrows = sizeof ra_gpu_gdn_rows / sizeof ra_gpu_gdn_rows[0];
