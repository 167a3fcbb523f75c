/* Kernel speed: time variants on one generated case, median and spread of N repetitions. */
#ifndef RA_AUDIT_BENCH_H
#define RA_AUDIT_BENCH_H

/*
 * `recaudit bench` times every variant matching a glob on one case: a
 * warm-up run, then N repetitions of the forward and (unless forward-only)
 * the backward, each direction's times kept separately and their sum per
 * repetition as fwd+bwd.  For a variant with forward_backward, fwd+bwd is
 * that one call's time instead (the note says "one call"), and the row
 * fails unless its tensors are the separate calls' bit for bit.  A
 * variant that times itself (ra_run.elapsed_ms) is believed: the CUDA
 * variants time their kernels alone with CUDA events after flushing the
 * L2 cache (src/gpu/gdn_cuda.cu), the CPU variants their whole call by
 * the wall clock; any other variant is timed by the wall clock around its
 * call.  Rates: the operation's nominal FLOP count (ra_op.flops, the same
 * for every variant) over the median time, and the compulsory traffic
 * (the bytes of the case's inputs and cotangents the direction reads, and
 * of the outputs and gradients the variant wrote, in their storage dtypes;
 * the fused call reads the inputs once) over the median time.
 */

#include <stddef.h>

#include "audit/registry.h"
#include "core/op.h"
#include "core/progress.h"
#include "core/status.h"
#include "core/table.h"

typedef struct ra_bench_opts {
    int reps;              /* timed repetitions (>= 1) */
    int warmup;            /* untimed runs before them (>= 0) */
    int threads;           /* ra_run.threads (0: the variant's default) */
    ra_progress *progress; /* advanced once per variant (may be NULL) */
} ra_bench_opts;

void ra_bench_opts_init(ra_bench_opts *o); /* 10 repetitions, 1 warm-up */

typedef struct ra_bench_row {
    char variant[96];
    const char *device;    /* "cpu", "cuda" */
    const char *timer;     /* "events", "variant", "wall" */
    const char *direction; /* "fwd", "bwd", "fwd+bwd" */
    int reps;              /* 0: not timed (note says why) */
    double median_ms, min_ms, max_ms;
    double flops; /* nominal operations; NaN when the op states none */
    double bytes; /* compulsory traffic */
    int failed;   /* the variant failed (note); a skip is not a failure */
    char note[256];
} ra_bench_row;

typedef struct ra_bench_rows {
    size_t n, cap;
    ra_bench_row *v;
    size_t failed;
} ra_bench_rows;

void ra_bench_rows_init(ra_bench_rows *rows);
void ra_bench_rows_clear(ra_bench_rows *rows);

/* Generates the case of id (a checked spec; id->bwd asks for the backward)
   and times each variant of r whose name matches glob and whose op is
   id->op.  A variant that cannot serve the case gets one row with the
   reason; one that fails gets a failed row (the error was reported), and
   the others still run.  Errors: the case cannot be made, no memory. */
ra_status ra_bench_case(ra_bench_rows *rows, const ra_registry *r, const char *glob,
                        const ra_case_spec *id, const ra_bench_opts *o);

/* The table of rows: variant, device, direction, reps, median/min/max ms,
   TFLOP/s, GB/s, timer, note. */
ra_status ra_bench_table(ra_table **out, const ra_bench_rows *rows);

/* `bench --sm-clock`: a row per load of src/gpu/clock_probe.h (load,
   sm_mhz, min_mhz, max_mhz, blocks, ms, timer_ms, flop_per_sm_cycle),
   each load run for about ms milliseconds; progress (may be NULL) is
   advanced once per load.  RA_EUNSUPPORTED without a CUDA device. */
ra_status ra_bench_clock_table(ra_table **out, double ms, ra_progress *progress);

#endif
