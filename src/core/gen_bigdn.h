/* Case generation for the bidirectional frame GDN family: shapes, tables and input regimes. */
#ifndef RA_CORE_GEN_BIGDN_H
#define RA_CORE_GEN_BIGDN_H

#include "core/case.h"
#include "core/op.h"
#include "core/status.h"

/*
 * Tensor layout: docs/bigdn.md.  qkv (bigdn) or Q, K, Qr, Kr, V
 * (bigdn.core) and dout are stored in the requested dtype; beta, decay,
 * the norm weights and the RoPE tables in f32 (f64 when the dtype is
 * f64).  Case metadata: op, shape, dtype, regime, seed, and for bigdn the
 * k_scale the case was made with.
 */

extern const ra_op_item ra_bigdn_regimes[]; /* the first is the default */
extern const ra_op_item ra_bigdn_flags[];   /* none */

/* Fills an empty case from spec (its op says the member); RA_EINVAL for
   an unknown regime, a bad shape or dtype, or a case that is not empty. */
ra_status ra_bigdn_generate(ra_case *c, const ra_case_spec *spec);

#endif
