/* A failed CUDA runtime call as a reported return from the calling function. */
#ifndef RA_GPU_CUDA_TRY_H
#define RA_GPU_CUDA_TRY_H

#include <cuda_runtime.h>

#include "core/status.h"

/* "WHO: WHAT: the runtime's reason", RA_ENOMEM for a failed allocation and
   RA_EIO otherwise; the runtime's last error is cleared so that later
   calls do not report it again. */
#define RA_CUDA_TRY(call, who, what)                                                               \
    do {                                                                                           \
        const cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                                   \
            cudaGetLastError();                                                                    \
            RA_ERRORF(e_ == cudaErrorMemoryAllocation ? RA_ENOMEM : RA_EIO, "%s: %s: %s", (who),   \
                      (what), cudaGetErrorString(e_));                                             \
        }                                                                                          \
    } while (0)

#endif
