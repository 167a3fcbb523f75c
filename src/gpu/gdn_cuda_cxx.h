/* gdn_cuda.h for CUDA C++ translation units. */
#ifndef RA_GPU_GDN_CUDA_CXX_H
#define RA_GPU_GDN_CUDA_CXX_H

/*
 * gdn_cuda.h includes core headers (case.h, tensor.h, gdn_case.h) that
 * carry no extern "C" of their own; included bare from C++ they would
 * declare C functions with C++ linkage and clash with recaudit/plugin.h's
 * C declarations of the same functions.  Including it inside one
 * extern "C" block gives every declaration C linkage; the system headers
 * they pull in (mpfr.h brings gmp.h's C++ operators) are included first,
 * outside the block, so that their include guards keep them out of it.
 */

#include <stddef.h>
#include <stdint.h>

#include <mpfr.h>

extern "C" {
#include "gpu/gdn_cuda.h"
}

#endif
