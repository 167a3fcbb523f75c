/* The SM clock under a sustained FFMA or mma.sync stream (clock_probe.h). */
#include <algorithm>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "gpu/clock_probe.h"
#include "gpu/cuda_try.h"
#include "gpu/mma.cuh"

namespace
{

using ra_gpu::mma_bf16;
using ra_gpu::mma_tf32;

/* 8 warps a block: two per SM sub-partition, so that each of its FMA
   pipes and tensor cores has a warp to issue from while the other waits
   on its dependency. */
constexpr int PROBE_THREADS = 256;

/* Per block: clock64() and %globaltimer at the start and the end. */
struct span {
    unsigned long long c0, c1, t0, t1;
};

__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* The loop bodies keep their results live (sink) so that nothing is
   eliminated; the inputs come from the caller so that nothing folds. */
template <int LOAD>
__global__ void probe_kernel(long long iters, float seed, span *spans, float *sink)
{
    __shared__ unsigned long long c0, t0;
    __syncthreads();
    if (threadIdx.x == 0)
        c0 = clock64(), t0 = globaltimer();
    __syncthreads();
    float out = 0.f;
    if constexpr (LOAD == RA_GPU_LOAD_FFMA) {
        float x[8];
        const float m = 1.f - 0x1p-20f * seed, a = 0x1p-24f * (float)threadIdx.x;
#pragma unroll
        for (int q = 0; q < 8; q++)
            x[q] = seed + (float)q;
        for (long long i = 0; i < iters; i++)
#pragma unroll
            for (int q = 0; q < 8; q++)
                x[q] = fmaf(x[q], m, a);
#pragma unroll
        for (int q = 0; q < 8; q++)
            out += x[q];
    } else {
        float c[4][4] = {};
        const uint32_t w = __float_as_uint(seed) ^ threadIdx.x;
        const uint32_t a[4] = {w, w + 1, w + 2, w + 3}, b[2] = {w + 4, w + 5};
        for (long long i = 0; i < iters; i++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                if constexpr (LOAD == RA_GPU_LOAD_MMA_TF32)
                    mma_tf32(c[q], a, b);
                else
                    mma_bf16(c[q], a, b);
            }
#pragma unroll
        for (int q = 0; q < 4; q++)
            out += c[q][0] + c[q][1] + c[q][2] + c[q][3];
    }
    __syncthreads();
    if (threadIdx.x == 0)
        spans[blockIdx.x] = span{c0, (unsigned long long)clock64(), t0, globaltimer()};
    if (out == 12345.f) /* practically never: keeps out live */
        sink[blockIdx.x] = out;
}

/* Floating-point operations of one loop iteration of one warp. */
double flop_per_warp_iter(ra_gpu_load load)
{
    switch (load) {
    case RA_GPU_LOAD_FFMA:
        return 2.0 * 8 * 32;
    case RA_GPU_LOAD_MMA_TF32:
        return 4 * 2.0 * 16 * 8 * 8;
    default:
        return 4 * 2.0 * 16 * 8 * 16;
    }
}

cudaError_t launch(ra_gpu_load load, int blocks, long long iters, span *spans, float *sink)
{
    switch (load) {
    case RA_GPU_LOAD_FFMA:
        probe_kernel<RA_GPU_LOAD_FFMA><<<blocks, PROBE_THREADS>>>(iters, 1.f, spans, sink);
        break;
    case RA_GPU_LOAD_MMA_TF32:
        probe_kernel<RA_GPU_LOAD_MMA_TF32><<<blocks, PROBE_THREADS>>>(iters, 1.f, spans, sink);
        break;
    default:
        probe_kernel<RA_GPU_LOAD_MMA_BF16><<<blocks, PROBE_THREADS>>>(iters, 1.f, spans, sink);
    }
    const cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

/* Device buffers and events of one probe, released on every path. */
struct probe_mem {
    span *spans = nullptr;
    float *sink = nullptr;
    cudaEvent_t ev[2] = {nullptr, nullptr};
    ~probe_mem()
    {
        cudaFree(spans);
        cudaFree(sink);
        for (cudaEvent_t e : ev)
            if (e)
                cudaEventDestroy(e);
    }
};

/* One launch between the events, its elapsed time in *ms. */
cudaError_t timed_launch(ra_gpu_load load, int blocks, long long iters, const probe_mem &m,
                         float *ms)
{
    cudaError_t e = cudaEventRecord(m.ev[0]);
    if (e == cudaSuccess)
        e = launch(load, blocks, iters, m.spans, m.sink);
    if (e == cudaSuccess)
        e = cudaEventRecord(m.ev[1]);
    if (e == cudaSuccess)
        e = cudaEventSynchronize(m.ev[1]);
    return e == cudaSuccess ? cudaEventElapsedTime(ms, m.ev[0], m.ev[1]) : e;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The probe's name in its messages. */
const char *const WHAT = "sm clock probe";

} // namespace

extern "C" ra_status ra_gpu_clock_probe(ra_gpu_load load, double ms, ra_gpu_clock *out)
{
    RA_TRY(ra_gpu_clock_args(load, ms));
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        RA_ERROR("sm clock probe: no CUDA device", RA_EUNSUPPORTED);
    }
    int sms = 0;
    RA_CUDA_TRY(cudaSetDevice(0), WHAT, "device 0");
    RA_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), WHAT,
                "the SM count");
    probe_mem m;
    RA_CUDA_TRY(cudaMalloc(&m.spans, sms * sizeof(span)), WHAT, "the blocks' spans");
    RA_CUDA_TRY(cudaMalloc(&m.sink, sms * sizeof(float)), WHAT, "the blocks' sink");
    RA_CUDA_TRY(cudaEventCreate(&m.ev[0]), WHAT, "an event");
    RA_CUDA_TRY(cudaEventCreate(&m.ev[1]), WHAT, "an event");
    std::vector<span> h(sms);

    /* Calibrate the iteration count on a short run, then run the full
       length twice: untimed (the clock settles), then timed. */
    long long iters = 1 << 12;
    float cal = 0.f, ev_ms = 0.f;
    for (;;) {
        RA_CUDA_TRY(timed_launch(load, sms, iters, m, &cal), WHAT, "calibration run");
        if (cal >= 20.f || iters >= (1LL << 40))
            break;
        iters *= 4;
    }
    if (!(cal > 0.f))
        RA_ERRORF(RA_EIO, "sm clock probe: the calibration run took no measurable time");
    iters = (long long)((double)iters * ms / cal) + 1;
    RA_CUDA_TRY(timed_launch(load, sms, iters, m, &ev_ms), WHAT, "untimed run");
    RA_CUDA_TRY(timed_launch(load, sms, iters, m, &ev_ms), WHAT, "timed run");
    RA_CUDA_TRY(cudaMemcpy(h.data(), m.spans, sms * sizeof(span), cudaMemcpyDeviceToHost), WHAT,
                "the blocks' spans");

    std::vector<double> mhz, tms, rate;
    const double flop = flop_per_warp_iter(load) * (PROBE_THREADS / 32) * (double)iters;
    for (const span &s : h) {
        const double cyc = (double)(s.c1 - s.c0), ns = (double)(s.t1 - s.t0);
        if (!(cyc > 0 && ns > 0))
            RA_ERRORF(RA_EIO, "sm clock probe: a block read no elapsed cycles or time");
        mhz.push_back(cyc / ns * 1e3), tms.push_back(ns * 1e-6), rate.push_back(flop / cyc);
    }
    out->mhz = median(mhz);
    out->mhz_min = *std::min_element(mhz.begin(), mhz.end());
    out->mhz_max = *std::max_element(mhz.begin(), mhz.end());
    out->ms = ev_ms;
    out->timer_ms = median(tms);
    out->flop_per_sm_cycle = median(rate);
    out->blocks = sms;
    return RA_OK;
}
