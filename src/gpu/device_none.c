/* CUDA devices in a build without CUDA: there are none. */
#include "gpu/device.h"

int ra_gpu_count(void) { return 0; }

int ra_gpu_describe(char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    return 0;
}
