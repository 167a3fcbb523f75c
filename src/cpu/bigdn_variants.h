/* The CPU bigdn variants (bigdn.cpu.f32.p*, bigdn.core.cpu.f32.p*): rows over the fp32 kernels. */
#ifndef RA_CPU_BIGDN_VARIANTS_H
#define RA_CPU_BIGDN_VARIANTS_H

#include <stddef.h>

#include "cpu/bigdn_f32.h"
#include "recaudit/plugin.h"

/* A row's configuration (its data pointer): the seed's precision mode. */
typedef struct ra_cpu_bigdn_cfg {
    ra_bigdn_prec mode;
} ra_cpu_bigdn_cfg;

/* Forward (out) and backward (every gradient of the case's op) of a bigdn
   or bigdn.core case under cfg, results in f32.  Inputs are validated by
   ra_bigdn_problem_init and rounded once to float. */
ra_status ra_cpu_bigdn_run(const ra_cpu_bigdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                           int backward);

/* Row functions: self->data is the ra_cpu_bigdn_cfg. */
ra_variant_fn ra_cpu_bigdn_forward_row, ra_cpu_bigdn_backward_row;

extern const ra_variant ra_cpu_bigdn_variants[];
extern const size_t ra_cpu_bigdn_nvariants;

#endif
