/* The chunk kernels' product engines, one product per block: their bit test and their benchmark. */

/*
 * One kernel per engine: 256 threads (ffma_mm's, x3_mm's and x3w_mm's
 * block; blk_mm serves any), two blocks an SM as in the production head's
 * kernels, the engine's shared memory as dynamic memory (blk_mm's is its
 * own static buffer).  mm_engines.h says what is measured and why.
 */

#include <cstdint>

#include "gpu/blk_mm.cuh"
#include "gpu/cuda_try.h"
#include "gpu/device.h"
#include "gpu/ffma_mm.cuh"
#include "gpu/mm_engines.h"
#include "gpu/x3_mm.cuh"
#include "gpu/x3_wgmma.cuh"

namespace ra_gpu
{

constexpr int ME_THREADS = 256;
static_assert(ME_THREADS == FM_THREADS && ME_THREADS == X3_THREADS && ME_THREADS == XW_THREADS,
              "one block size for every engine");

template <int E>
__global__ void __launch_bounds__(ME_THREADS, 2)
    mm_engine_kernel(float *c, const float *a, const float *b, const ra_gpu_mm_shape s, int nsets)
{
    extern __shared__ __align__(16) float sm[];
    constexpr int64_t LD = RA_GPU_MM_LD;
    const int64_t set = blockIdx.x % nsets;
    const float *ap = a + set * RA_GPU_MM_SET, *bp = b + set * RA_GPU_MM_SET;
    float *cp = c + (int64_t)blockIdx.x * RA_GPU_MM_CSET;
    const mat ma = s.ak ? mk(ap, LD, 1) : mk(ap, 1, LD), mb = s.bk ? mk(bp, 1, LD) : mk(bp, LD, 1);
    uint32_t *sw = reinterpret_cast<uint32_t *>(sm);
    if constexpr (E == RA_GPU_MM_BLK_IEEE)
        blk_mm<RA_GPU_PREC_IEEE>(cp, LD, 0, s.m, s.n, s.kc, ma, mb, s.acc);
    else if constexpr (E == RA_GPU_MM_FFMA)
        ffma_mm(sm, cp, LD, s.m, s.n, s.kc, ma, mb, s.acc);
    else if constexpr (E == RA_GPU_MM_BLK_X3)
        blk_mm<RA_GPU_PREC_TF32X3>(cp, LD, 0, s.m, s.n, s.kc, ma, mb, s.acc);
    else if constexpr (E == RA_GPU_MM_X3)
        x3_mm(sw, cp, LD, s.m, s.n, s.kc, ma, mb, s.acc);
    else if constexpr (E == RA_GPU_MM_X3W)
        x3w_mm<64>(sw, cp, LD, s.m, s.n, s.kc, ma, mb, s.acc);
    else
        x3w_mm<32>(sw, cp, LD, s.m, s.n, s.kc, ma, mb, s.acc);
}

/* launch(kernel, dynamic shared bytes) for the engine's kernel. */
template <typename F> static cudaError_t by_engine(int engine, F launch)
{
    switch (engine) {
    case RA_GPU_MM_BLK_IEEE:
        return launch(mm_engine_kernel<RA_GPU_MM_BLK_IEEE>, 0);
    case RA_GPU_MM_FFMA:
        return launch(mm_engine_kernel<RA_GPU_MM_FFMA>, FM_WORDS * 4);
    case RA_GPU_MM_BLK_X3:
        return launch(mm_engine_kernel<RA_GPU_MM_BLK_X3>, 0);
    case RA_GPU_MM_X3:
        return launch(mm_engine_kernel<RA_GPU_MM_X3>, X3_WORDS * 4);
    case RA_GPU_MM_X3W:
        return launch(mm_engine_kernel<RA_GPU_MM_X3W>, XW_WORDS * 4);
    default:
        return launch(mm_engine_kernel<RA_GPU_MM_X3W32>, XW_WORDS * 4);
    }
}

static cudaError_t launch_engine(int engine, const ra_gpu_mm_shape &s, float *c, const float *a,
                                 const float *b, int nsets, int nprod)
{
    return by_engine(engine, [&](auto kernel, int bytes) {
        cudaError_t e =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (e != cudaSuccess)
            return e;
        kernel<<<(unsigned)nprod, ME_THREADS, bytes>>>(c, a, b, s, nsets);
        return cudaGetLastError();
    });
}

/* Device copies of a batch's operands and results, freed on scope exit. */
struct batch {
    float *a = nullptr, *b = nullptr, *c = nullptr;
    ~batch()
    {
        cudaFree(a);
        cudaFree(b);
        cudaFree(c);
    }
};

static ra_status check_args(int engine, const ra_gpu_mm_shape *s, int nsets, int nprod)
{
    if (engine < 0 || engine >= RA_GPU_MM_NENGINES)
        RA_ERRORF(RA_EINVAL, "mm engine %d: no such engine", engine);
    if (s->m < 1 || s->m > 64 || s->n < 1 || s->n > 128 || s->kc < 1 || s->kc > 128)
        RA_ERRORF(RA_EINVAL, "mm engine %s: m=%d n=%d kc=%d outside 1..64, 1..128, 1..128",
                  ra_gpu_mm_engine_name(engine), s->m, s->n, s->kc);
    if (nsets < 1 || nprod < 1)
        RA_ERRORF(RA_EINVAL, "mm engine: %d operand sets, %d products (both must be >= 1)", nsets,
                  nprod);
    if (ra_gpu_count() == 0)
        RA_ERROR("mm engine: no CUDA device", RA_EUNSUPPORTED);
    return RA_OK;
}

static ra_status upload(batch &d, const float *a, const float *b, int nsets, int nprod)
{
    const size_t ops = (size_t)nsets * RA_GPU_MM_SET * sizeof(float);
    RA_CUDA_TRY(cudaMalloc(&d.a, ops), "mm engine", "operands");
    RA_CUDA_TRY(cudaMalloc(&d.b, ops), "mm engine", "operands");
    RA_CUDA_TRY(cudaMalloc(&d.c, (size_t)nprod * RA_GPU_MM_CSET * sizeof(float)), "mm engine",
                "results");
    RA_CUDA_TRY(cudaMemcpy(d.a, a, ops, cudaMemcpyHostToDevice), "mm engine", "copy in");
    RA_CUDA_TRY(cudaMemcpy(d.b, b, ops, cudaMemcpyHostToDevice), "mm engine", "copy in");
    return RA_OK;
}

} // namespace ra_gpu

using namespace ra_gpu;

extern "C" const char *ra_gpu_mm_engine_name(int engine)
{
    static const char *const names[RA_GPU_MM_NENGINES] = {"blk_ieee", "ffma", "blk_x3",
                                                          "x3",       "x3w",  "x3w32"};
    return engine >= 0 && engine < RA_GPU_MM_NENGINES ? names[engine] : nullptr;
}

extern "C" ra_status ra_gpu_mm_engine_run(int engine, const ra_gpu_mm_shape *s, float *c,
                                          const float *a, const float *b, int nsets, int nprod)
{
    ra_status st = check_args(engine, s, nsets, nprod);
    if (st != RA_OK)
        return st;
    batch d;
    if ((st = upload(d, a, b, nsets, nprod)) != RA_OK)
        return st;
    const size_t cb = (size_t)nprod * RA_GPU_MM_CSET * sizeof(float);
    RA_CUDA_TRY(cudaMemcpy(d.c, c, cb, cudaMemcpyHostToDevice), "mm engine", "copy in");
    RA_CUDA_TRY(launch_engine(engine, *s, d.c, d.a, d.b, nsets, nprod), "mm engine",
                ra_gpu_mm_engine_name(engine));
    RA_CUDA_TRY(cudaMemcpy(c, d.c, cb, cudaMemcpyDeviceToHost), "mm engine", "copy out");
    return RA_OK;
}

extern "C" ra_status ra_gpu_mm_engine_time(int engine, const ra_gpu_mm_shape *s, const float *a,
                                           const float *b, int nsets, int nprod, int runs,
                                           double *ms)
{
    ra_status st = check_args(engine, s, nsets, nprod);
    if (st != RA_OK)
        return st;
    if (runs < 1)
        RA_ERRORF(RA_EINVAL, "mm engine: %d timed runs (must be >= 1)", runs);
    batch d;
    if ((st = upload(d, a, b, nsets, nprod)) != RA_OK)
        return st;
    ra_gpu_mm_shape sa = *s;
    sa.acc = 0;
    cudaEvent_t t0, t1;
    RA_CUDA_TRY(cudaEventCreate(&t0), "mm engine", "events");
    if (cudaEventCreate(&t1) != cudaSuccess) {
        cudaEventDestroy(t0);
        RA_CUDA_TRY(cudaGetLastError(), "mm engine", "events");
    }
    cudaError_t e = launch_engine(engine, sa, d.c, d.a, d.b, nsets, nprod); /* warm-up */
    for (int r = 0; r < runs && e == cudaSuccess; r++) {
        float t = 0.f;
        e = cudaEventRecord(t0);
        if (e == cudaSuccess)
            e = launch_engine(engine, sa, d.c, d.a, d.b, nsets, nprod);
        if (e == cudaSuccess)
            e = cudaEventRecord(t1);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(t1);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&t, t0, t1);
        ms[r] = t;
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    RA_CUDA_TRY(e, "mm engine", ra_gpu_mm_engine_name(engine));
    return RA_OK;
}
