/* CPU gdn kernels: the per-type entry points behind ra_cpu_gdn_forward/backward. */
#ifndef RA_CPU_GDN_IMPL_H
#define RA_CPU_GDN_IMPL_H

/*
 * gdn_f32.c and gdn_f64.c each instantiate the templates gdn_tmpl_*.h for
 * one arithmetic type and export one entry point; gdn_variants.c picks the
 * one cfg->f64 asks for.  backward = 0 runs the forward (o, ht), 1 the
 * backward (dq, dk, dv, dg, dbeta, dh0).
 */

#include "cpu/gdn_variants.h"

ra_status ra_cpu_gdn_run_f32(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             ra_run *run, int backward);
ra_status ra_cpu_gdn_run_f64(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             ra_run *run, int backward);

#endif
