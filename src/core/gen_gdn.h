/* Case generation for the gated delta rule: shapes and input regimes. */
#ifndef RA_CORE_GEN_GDN_H
#define RA_CORE_GEN_GDN_H

#include <stdint.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/status.h"

/*
 * Tensor layout (docs/gdn.md): q, k [B,T,Hk,K]; v [B,T,Hv,V];
 * g, beta [B,T,Hv]; h0 [B,Hv,K,V] (optional); cotangents do [B,T,Hv,V] and
 * dht [B,Hv,K,V].  q, k, v and do are stored in the requested dtype; g,
 * beta, h0 and dht in f32 (f64 when the requested dtype is f64), as
 * production kernels keep gates and states in fp32.
 *
 * Case metadata: op=gdn, shape (B=..,T=..), dtype, regime, seed, and the
 * operation parameters scale (absent: K^-1/2), l2norm, l2eps.  The
 * generator sets l2norm=true only when asked (opts.l2norm) and leaves
 * scale and l2eps absent (their defaults).
 *
 * Every tensor is drawn from its own stream ra_rng_new(seed, tensor name)
 * in double and rounded once to its dtype, so equal options give
 * bit-identical cases on every machine, and q is the same whatever other
 * tensors or regimes (with the same q distribution) are asked for.
 */

typedef struct ra_regime_info {
    const char *name;
    const char *doc; /* one line: the input distribution */
} ra_regime_info;

/* The gdn regimes, terminated by {NULL, NULL}. */
const ra_regime_info *ra_gdn_regimes(void);

typedef struct ra_gdn_gen_opts {
    ra_gdn_shape shape;
    ra_dtype dtype;
    const char *regime; /* NULL = "default" */
    uint64_t seed;
    int h0;             /* also generate h0 */
    int l2norm;         /* set the l2norm parameter (kernel normalises q/k) */
} ra_gdn_gen_opts;

/* Fills an empty case.  Unknown regimes and shapes a regime cannot serve
   (tail needs T not a multiple of 64) are refused with a message, as are
   a case that is not empty, non-positive dims and Hv not a multiple of
   Hk.  After a failure the case may hold part of a fill: clear it. */
ra_status ra_gdn_generate(ra_case *c, const ra_gdn_gen_opts *o);

#endif
