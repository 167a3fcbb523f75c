/* CUDA gdn entry points in a build without CUDA: every call is unsupported. */

/*
 * configure found no nvcc, so no kernel exists; the entry points still link
 * and answer RA_EUNSUPPORTED with the reason, so an audit of a CUDA row
 * reports a skip, never a pass.
 */

#include "gpu/gdn_cuda.h"

ra_status ra_gpu_gdn_forward(const ra_gpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             int device)
{
    (void)cfg, (void)c, (void)out, (void)device;
    RA_ERROR("cuda gdn: this build has no CUDA (configure found no nvcc)", RA_EUNSUPPORTED);
}

ra_status ra_gpu_gdn_backward(const ra_gpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *grads,
                              int device)
{
    (void)cfg, (void)c, (void)grads, (void)device;
    RA_ERROR("cuda gdn: this build has no CUDA (configure found no nvcc)", RA_EUNSUPPORTED);
}
