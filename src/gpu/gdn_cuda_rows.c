/* The registered CUDA gdn variants: one row per kernel configuration. */

/*
 * Each row names a configuration of the CUDA kernels (gdn_cuda.h) and its
 * CPU twin, the variant with the same algorithm and rounding points: the
 * twin-agreement test (tests/t-gpu-gdn.c) holds every row's errors against
 * the MPFR reference to within twice its twin's.  src/gpu/variants.c makes
 * each row a registered variant in builds with CUDA; on a machine without
 * a GPU they then report themselves unsupported (skip rows), never pass.
 */

#include "gpu/gdn_cuda.h"
#include "gpu/gpu.h"

const ra_gpu_gdn_row ra_gpu_gdn_rows[] = {
    {"gdn.cuda.f32",
     "sequential recurrence in fp32 FFMA, one warp per (b, hv, 32 value columns) with the "
     "state column in registers; backward by checkpoints every ~sqrt(T) tokens and "
     "recomputed segments",
     "gdn.cpu.f32", 0,
     {RA_GPU_GDN_SEQ, 0, RA_GPU_PREC_IEEE, RA_CPU_INV_FWDSUBST, RA_F32, RA_F32}},
    /* Chunked WY rows (gdn_chunk*.cu): chunk-local work one block per
       (head, chunk), the state recurrence one block per (head, 16 state
       columns); the backward recomputes the chunk states. */
    {"gdn.cuda.chunk64.ieee",
     "chunked C=64, fp32 FFMA products in the CPU twin's order, T by forward substitution",
     "gdn.cpu.chunk64.ieee", 0,
     {RA_GPU_GDN_CHUNK, 64, RA_GPU_PREC_IEEE, RA_CPU_INV_FWDSUBST, RA_F32, RA_F32}},
    {"gdn.cuda.chunk64.tf32",
     "chunked C=64, cvt.rna.tf32 operands on mma.sync m16n8k8 tensor cores, fp32 "
     "accumulation, T by forward substitution",
     "gdn.cpu.chunk64.tf32", 0,
     {RA_GPU_GDN_CHUNK, 64, RA_GPU_PREC_TF32, RA_CPU_INV_FWDSUBST, RA_F32, RA_F32}},
    {"gdn.cuda.chunk64.tf32x3",
     "chunked C=64, 3xTF32 tensor-core products (small*big + big*small + big*big), T by "
     "forward substitution",
     "gdn.cpu.chunk64.tf32x3", 0,
     {RA_GPU_GDN_CHUNK, 64, RA_GPU_PREC_TF32X3, RA_CPU_INV_FWDSUBST, RA_F32, RA_F32}},
    {"gdn.cuda.chunk64.bf16",
     "chunked C=64, bf16 operands on mma.sync m16n8k16, T/W/U/chunk states stored bf16 (fla), "
     "fp32 running state, forward substitution",
     "gdn.cpu.chunk64.bf16", 0,
     {RA_GPU_GDN_CHUNK, 64, RA_GPU_PREC_BF16, RA_CPU_INV_FWDSUBST, RA_BF16, RA_F32}},
    {"gdn.cuda.chunk64.bf16.neumann",
     "chunked C=64, bf16 tensor-core operands and intermediates, T by 16x16 Neumann blocks "
     "(NKI)",
     "gdn.cpu.chunk64.bf16.neumann", 1,
     {RA_GPU_GDN_CHUNK, 64, RA_GPU_PREC_BF16, RA_CPU_INV_NEUMANN, RA_BF16, RA_F32}},
    {"gdn.cuda.chunk128.bf16.schur",
     "chunked C=128, bf16 tensor-core operands and intermediates, T by recursive 2x2 block "
     "merge (NKI schur)",
     "gdn.cpu.chunk128.bf16.schur", 1,
     {RA_GPU_GDN_CHUNK, 128, RA_GPU_PREC_BF16, RA_CPU_INV_SCHUR, RA_BF16, RA_F32}},
};

const size_t ra_gpu_gdn_nrows = sizeof ra_gpu_gdn_rows / sizeof ra_gpu_gdn_rows[0];

_Static_assert(sizeof ra_gpu_gdn_rows / sizeof ra_gpu_gdn_rows[0] <= RA_GPU_MAX_VARIANTS,
               "the CUDA variant list has no room for every row (gpu.h)");
