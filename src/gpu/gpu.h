/* Built-in CUDA variants: the directory's one list. */
#ifndef RA_GPU_GPU_H
#define RA_GPU_GPU_H

#include <stddef.h>

#include "recaudit/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Room for the CUDA rows of every operation (each row table asserts
   that it fits). */
#define RA_GPU_MAX_VARIANTS 64

/* Every CUDA variant row, in listing order (none in a build without
   CUDA): ra_gpu_variant_at(i) for i < ra_gpu_variant_count(). */
size_t ra_gpu_variant_count(void);
const ra_variant *ra_gpu_variant_at(size_t i);

#ifdef __cplusplus
}
#endif

#endif
