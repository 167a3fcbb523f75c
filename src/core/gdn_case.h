/* The gated delta rule as a case: dimensions, parameters, validation. */
#ifndef RA_CORE_GDN_CASE_H
#define RA_CORE_GDN_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "core/case.h"
#include "core/status.h"

/*
 * The gdn case, as docs/gdn.md defines it.  Inputs q, k [B,T,Hk,K];
 * v [B,T,Hv,V]; g, beta [B,T,Hv]; optional h0 [B,Hv,K,V]; cotangents
 * do [B,T,Hv,V], optional dht [B,Hv,K,V].
 * Parameters (case metadata): scale (default K^-1/2), l2norm (default
 * false), l2eps (default 1e-6).  Every reader of a gdn case (references,
 * CPU variants, the audit) goes through ra_gdn_problem_init so that they
 * all accept and refuse the same files with the same messages.
 */

typedef struct ra_gdn_shape {
    int64_t B, T, Hk, Hv, K, V;
} ra_gdn_shape;

/* Parses "B=1,T=64,Hk=1,Hv=2,K=16,V=16" (any order; H= sets Hk and Hv;
   every key once, every value a positive integer, Hv a multiple of Hk).
   Errors name the offending field. */
ra_status ra_gdn_shape_parse(ra_gdn_shape *s, const char *text);
/* Canonical text "B=1,T=64,Hk=1,Hv=2,K=16,V=16". */
void ra_gdn_shape_format(char *buf, size_t len, const ra_gdn_shape *s);

typedef struct ra_gdn_problem {
    ra_gdn_shape s;
    const ra_tensor *q, *k, *v, *g, *beta;
    const ra_tensor *h0;       /* NULL when absent */
    const ra_tensor *do_, *dht; /* NULL when absent */
    int l2norm;
    /* Parameter values as doubles for kernels; the texts (NULL when the
       parameter is absent) let MPFR references read the exact decimal. */
    double scale, l2eps;
    const char *scale_text, *l2eps_text;
} ra_gdn_problem;

enum { RA_GDN_NEED_COTANGENTS = 1 };

/* Validates case c (named `what` in messages, e.g. its file name):
   op "gdn"; q, k, v, g, beta present (and do when flags has
   RA_GDN_NEED_COTANGENTS); every shape consistent (errors name tensor and
   axis); Hv a multiple of Hk; no NaN or Inf in any input or cotangent
   (error names tensor and multi-index); parameters well formed. */
ra_status ra_gdn_problem_init(ra_gdn_problem *p, const ra_case *c, unsigned flags,
                              const char *what);

/* Flat offsets (row-major) used by every implementation. */
static inline int64_t ra_gdn_qk_index(const ra_gdn_shape *s, int64_t b, int64_t t, int64_t h,
                                      int64_t i)
{
    return ((b * s->T + t) * s->Hk + h) * s->K + i;
}
static inline int64_t ra_gdn_v_index(const ra_gdn_shape *s, int64_t b, int64_t t, int64_t h,
                                     int64_t j)
{
    return ((b * s->T + t) * s->Hv + h) * s->V + j;
}
static inline int64_t ra_gdn_gate_index(const ra_gdn_shape *s, int64_t b, int64_t t, int64_t h)
{
    return (b * s->T + t) * s->Hv + h;
}
static inline int64_t ra_gdn_state_index(const ra_gdn_shape *s, int64_t b, int64_t h, int64_t i,
                                         int64_t j)
{
    return ((b * s->Hv + h) * s->K + i) * s->V + j;
}
/* Key head read by value head hv. */
static inline int64_t ra_gdn_key_head(const ra_gdn_shape *s, int64_t hv)
{
    return hv / (s->Hv / s->Hk);
}

#endif
