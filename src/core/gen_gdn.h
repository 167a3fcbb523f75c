/* Case generation for the gated delta rule: shapes and input regimes. */
#ifndef RA_CORE_GEN_GDN_H
#define RA_CORE_GEN_GDN_H

#include <stdint.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/op.h"
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
 * generator sets l2norm=true only when asked (RA_GDN_FLAG_L2NORM) and leaves
 * scale and l2eps absent (their defaults) unless the spec's parameters
 * (`--param scale=X`) set them.
 *
 * Every tensor is drawn from its own stream ra_rng_new(seed, tensor name)
 * in double and rounded once to its dtype, so equal options give
 * bit-identical cases on every machine, and q is the same whatever other
 * tensors or regimes (with the same q distribution) are asked for.
 */

/* Generation flags of gdn cases (bit i of ra_case_spec.flags is
   ra_gdn_flags[i]). */
enum { RA_GDN_FLAG_H0 = 1u << 0, RA_GDN_FLAG_L2NORM = 1u << 1, RA_GDN_FLAG_NO_DHT = 1u << 2 };
extern const ra_op_item ra_gdn_flags[];
/* The gdn regimes, terminated by {NULL, NULL}; the first is the default. */
extern const ra_op_item ra_gdn_regimes[];

/* Fills an empty case from spec (shape text, dtype, regime, seed, flags:
   RA_GDN_FLAG_H0 also generates h0, RA_GDN_FLAG_L2NORM sets the l2norm
   parameter, RA_GDN_FLAG_NO_DHT leaves dht out; spec->params' scale,
   set by ra_case_spec_generate, must be finite and > 0).  Unknown
   regimes, bad shapes or dtypes and shapes a regime cannot serve
   (ra_gdn_spec_check) are refused with a message, as is a case that is
   not empty.  After a failure the case may hold part of a fill: clear
   it. */
ra_status ra_gdn_generate(ra_case *c, const ra_case_spec *spec);
/* What the regimes need of the shape: tail wants T not a multiple of 64. */
ra_status ra_gdn_spec_check(const ra_case_spec *spec);

#endif
