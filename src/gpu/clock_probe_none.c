/* The SM clock probe in a build without CUDA: no device to probe. */
#include "gpu/clock_probe.h"

ra_status ra_gpu_clock_probe(ra_gpu_load load, double ms, ra_gpu_clock *out)
{
    (void)out;
    RA_TRY(ra_gpu_clock_args(load, ms));
    RA_ERROR("sm clock probe: this build has no CUDA", RA_EUNSUPPORTED);
}
