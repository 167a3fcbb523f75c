/* A failed CUDA runtime call as an RA_EIO return from the calling function. */
#ifndef RA_GPU_CUDA_TRY_H
#define RA_GPU_CUDA_TRY_H

#include <cuda_runtime.h>

#include "core/status.h"

/* what names the caller in the message; the runtime's last error is
   cleared so that later calls do not report it again. */
#define RA_CUDA_TRY(what, call)                                                                    \
    do {                                                                                           \
        const cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                                   \
            cudaGetLastError();                                                                    \
            RA_ERRORF(RA_EIO, "%s: %s: %s", (what), #call, cudaGetErrorString(e_));                \
        }                                                                                          \
    } while (0)

#endif
