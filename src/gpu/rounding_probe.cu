/* Hardware rounding probes: what the GPU's conversions and tensor cores do. */
#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

#include "gpu/device.h"
#include "gpu/rounding_probe.h"

/*
 * Each probe is one small launch over a device copy of the inputs; the
 * conversions are written as inline PTX so that the instruction under test
 * is exactly the one named (no compiler choice of rounding).  The mma probe
 * uses the m16n8k8 TF32 fragment layout of the PTX ISA: lane = 4*group +
 * tid_in_group; A regs (g, t), (g+8, t), (g, t+4), (g+8, t+4); B regs
 * (t, g), (t+4, g); C/D regs (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
 */

__global__ void cvt_tf32_kernel(float *out, const float *in, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) {
        uint32_t r;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(in[i]));
        out[i] = __uint_as_float(r);
    }
}

__global__ void cvt_bf16_kernel(unsigned short *out, const float *in, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned short r;
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(in[i]));
        out[i] = r;
    }
}

__global__ void cvt_f16_kernel(unsigned short *out, const float *in, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned short r;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(in[i]));
        out[i] = r;
    }
}

__global__ void mma_tf32_operand_kernel(float *d, const float *a)
{
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    uint32_t a0 = __float_as_uint(a[g * 8 + t]), a1 = __float_as_uint(a[(g + 8) * 8 + t]);
    uint32_t a2 = __float_as_uint(a[g * 8 + t + 4]), a3 = __float_as_uint(a[(g + 8) * 8 + t + 4]);
    /* B = I (8 x 8): element (row, col) is 1 on the diagonal. */
    uint32_t b0 = __float_as_uint(t == g ? 1.0f : 0.0f);
    uint32_t b1 = __float_as_uint(t + 4 == g ? 1.0f : 0.0f);
    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    d[g * 8 + 2 * t] = c0;
    d[g * 8 + 2 * t + 1] = c1;
    d[(g + 8) * 8 + 2 * t] = c2;
    d[(g + 8) * 8 + 2 * t + 1] = c3;
}

/* Copies n inputs in, runs launch(out_dev, in_dev), copies out_bytes back. */
template <typename Out, typename Launch>
static ra_status run_probe(Out *out, const float *in, size_t n, Launch launch)
{
    if (ra_gpu_count() == 0)
        RA_ERROR("no CUDA device", RA_EUNSUPPORTED);
    float *din = nullptr;
    Out *dout = nullptr;
    ra_status st = RA_OK;
    cudaError_t e = cudaMalloc(&din, n * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc(&dout, n * sizeof(Out));
    if (e == cudaSuccess)
        e = cudaMemcpy(din, in, n * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
        launch(dout, din);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess)
        e = cudaMemcpy(out, dout, n * sizeof(Out), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        RA_REPORTF(RA_EIO, "CUDA probe failed: %s", cudaGetErrorString(e));
        st = RA_EIO;
    }
    cudaFree(din);
    cudaFree(dout);
    return st;
}

static unsigned blocks_for(size_t n) { return (unsigned)((n + 255) / 256); }

extern "C" ra_status ra_gpu_probe_cvt_tf32(float *out, const float *in, size_t n)
{
    return run_probe(out, in, n, [n](float *o, const float *i) {
        cvt_tf32_kernel<<<blocks_for(n), 256>>>(o, i, n);
    });
}

extern "C" ra_status ra_gpu_probe_cvt_bf16(unsigned short *out, const float *in, size_t n)
{
    return run_probe(out, in, n, [n](unsigned short *o, const float *i) {
        cvt_bf16_kernel<<<blocks_for(n), 256>>>(o, i, n);
    });
}

extern "C" ra_status ra_gpu_probe_cvt_f16(unsigned short *out, const float *in, size_t n)
{
    return run_probe(out, in, n, [n](unsigned short *o, const float *i) {
        cvt_f16_kernel<<<blocks_for(n), 256>>>(o, i, n);
    });
}

extern "C" ra_status ra_gpu_probe_mma_tf32_operand(float *d, const float *a)
{
    return run_probe(d, a, 128, [](float *o, const float *i) {
        mma_tf32_operand_kernel<<<1, 32>>>(o, i);
    });
}
