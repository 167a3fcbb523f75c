/* CUDA devices: what is present and which runtime drives it. */
#include <cstdio>

#include <cuda_runtime.h>

#include "gpu/device.h"

/* cudaGetDeviceCount fails (no driver, no device, insufficient driver) on
   build machines and CI; that is the "no GPU" answer, not an error. */
extern "C" int ra_gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int ra_gpu_describe(char *buf, size_t len)
{
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    int n = ra_gpu_count();
    int used = snprintf(buf, len, "runtime %d.%d, driver %d.%d, %d device%s", rt / 1000,
                        (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10, n, n == 1 ? "" : "s");
    for (int d = 0; d < n && used >= 0 && (size_t)used < len; d++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
            break;
        used += snprintf(buf + used, len - (size_t)used, "%s %s (sm_%d%d)", d ? "," : ":",
                         p.name, p.major, p.minor);
    }
    return 1;
}
