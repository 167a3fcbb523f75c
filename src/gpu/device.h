/* CUDA devices: what is present and which runtime drives it. */
#ifndef RA_GPU_DEVICE_H
#define RA_GPU_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices: 0 when the build has no CUDA, when no
   driver is installed or when no device is present (never an error: GPU
   tests and benchmarks use it to decide to skip with status 77). */
int ra_gpu_count(void);

/* Fills buf with "runtime R, driver D, N device(s): NAME (sm_XY) ..." and
   returns 1 when CUDA is built in (the text says so if no device answers);
   returns 0 without CUDA. */
int ra_gpu_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
