/* The built-in CUDA variants of a build without CUDA: none. */

/*
 * Compiled instead of variants.c when configure found no CUDA toolkit, so
 * that the registry reads the same two lists in every build.
 */

#include "gpu/gpu.h"

size_t ra_gpu_variant_count(void) { return 0; }

const ra_variant *ra_gpu_variant_at(size_t i)
{
    (void)i;
    return NULL;
}
