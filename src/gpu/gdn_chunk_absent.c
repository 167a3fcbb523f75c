/* The chunked CUDA gdn launcher while its kernels are not part of the tree. */

/*
 * The host driver (gdn_cuda.cu) dispatches RA_GPU_GDN_CHUNK configurations
 * to ra_gpu_gdn_chunk_launch, which the chunked kernels' own file defines.
 * Until that file is in the tree this one answers RA_EUNSUPPORTED, so the
 * library links and a chunked configuration is refused with its reason;
 * no row of ra_gpu_gdn_rows uses it.  The file that defines the real
 * launcher replaces this one (remove it and its line in src/gpu/local.mk:
 * the recaudit link, which takes the whole archive, fails on two
 * definitions).
 */

#include <stdio.h>

#include "gpu/gdn_cuda.h"

ra_status ra_gpu_gdn_chunk_launch(const ra_gpu_gdn_cfg *cfg, const ra_gpu_gdn_args *a, int bwd,
                                  char *msg, size_t msglen)
{
    (void)a, (void)bwd;
    snprintf(msg, msglen,
             "cuda gdn: the chunked kernels (chunk %d) are not part of this build",
             cfg ? cfg->chunk : 0);
    return RA_EUNSUPPORTED;
}
