/* The SM clock under a sustained instruction stream: FFMA or tensor-core mma.sync. */
#ifndef RA_GPU_CLOCK_PROBE_H
#define RA_GPU_CLOCK_PROBE_H

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Why: a kernel's time is cycles over the SM clock, and the clock a GPU
 * runs at can depend on what it executes.  Per-kernel profiles of the
 * chunked gdn kernels on an H200 (ncu --clock-control none,
 * sm__cycles_elapsed.avg.per_second) put the FFMA-only IEEE kernels near
 * 1.98 GHz and every kernel issuing mma.sync near 1.80 GHz, so comparing
 * an FFMA kernel with a tensor-core one by time mixes the work done with
 * the clock.  The probe isolates the instruction stream: one block per SM
 * runs a loop of independent FFMA chains or of mma.sync instructions (no
 * memory traffic), and each block reads clock64() and %globaltimer at its
 * start and end, so its clock is cycles over nanoseconds.
 */
typedef enum {
    RA_GPU_LOAD_FFMA = 0, /* fp32 fmaf, 8 independent chains a thread */
    RA_GPU_LOAD_MMA_TF32, /* mma.sync m16n8k8 tf32, 4 independent accumulators a warp */
    RA_GPU_LOAD_MMA_BF16, /* mma.sync m16n8k16 bf16, the same */
    RA_GPU_LOADS
} ra_gpu_load;

static inline const char *ra_gpu_load_name(ra_gpu_load load)
{
    static const char *const names[] = {"ffma", "mma.tf32", "mma.bf16"};
    return load >= 0 && load < RA_GPU_LOADS ? names[load] : "?";
}

typedef struct {
    double mhz, mhz_min, mhz_max; /* median, min and max over the blocks */
    double ms;                    /* the timed launch, by CUDA events */
    double timer_ms;              /* the same launch, by the blocks' %globaltimer (median) */
    double flop_per_sm_cycle;     /* the load's fp work per SM per cycle (median block) */
    int blocks;                   /* one per SM */
} ra_gpu_clock;

/* RA_OK when load and ms are in range, else reported RA_EINVAL: both
   builds check the request before they look for a device. */
static inline ra_status ra_gpu_clock_args(ra_gpu_load load, double ms)
{
    if (load < 0 || load >= RA_GPU_LOADS)
        RA_ERRORF(RA_EINVAL, "sm clock probe: unknown load %d", (int)load);
    if (!(ms >= 1.0 && ms <= 60000.0))
        RA_ERRORF(RA_EINVAL, "sm clock probe: %g ms (1 to 60000)", ms);
    return RA_OK;
}

/* Runs load on device 0 for about ms milliseconds (after an untimed run of
   the same length, so that the clock has settled) and fills out.
   RA_EUNSUPPORTED without a usable device or without CUDA. */
ra_status ra_gpu_clock_probe(ra_gpu_load load, double ms, ra_gpu_clock *out);

#ifdef __cplusplus
}
#endif

#endif
