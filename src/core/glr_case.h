/* The gated linear recurrence as a case: dimensions, decay parameter, validation. */
#ifndef RA_CORE_GLR_CASE_H
#define RA_CORE_GLR_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "core/case.h"
#include "core/status.h"

/*
 * The glr case, as docs/glr.md defines it (SPEC.md §2, seed 000).  Inputs
 * v [B,T,H,D]; b, c [B,T,H,S]; g [B,T,H]; A_log [H,S]; cotangent
 * do [B,T,H,D].  Parameter (case metadata) `decay`: `expneg` (default,
 * alpha = exp(-g exp(A_log)), what the HyMo kernel computes) or `linear`
 * (alpha = exp(g A_log), what the seed document writes).  Every reader of
 * a glr case goes through ra_glr_problem_init.
 */

typedef struct ra_glr_shape {
    int64_t B, T, H, S, D;
} ra_glr_shape;

/* Parses "B=1,T=64,H=2,S=8,D=8" (any order, every key once). */
ra_status ra_glr_shape_parse(ra_glr_shape *s, const char *text);
void ra_glr_shape_format(char *buf, size_t len, const ra_glr_shape *s);

typedef enum ra_glr_decay { RA_GLR_EXPNEG, RA_GLR_LINEAR } ra_glr_decay;
/* "expneg" or "linear"; RA_EINVAL naming both otherwise. */
ra_status ra_glr_decay_parse(ra_glr_decay *d, const char *text);
const char *ra_glr_decay_name(ra_glr_decay d);

typedef struct ra_glr_problem {
    ra_glr_shape s;
    const ra_tensor *v, *b, *c, *g, *A_log;
    const ra_tensor *do_; /* NULL when absent */
    ra_glr_decay decay;
} ra_glr_problem;

enum { RA_GLR_NEED_COTANGENTS = 1 };

/* Validates case c (named `what` in messages): op "glr"; every input
   present (and do with RA_GLR_NEED_COTANGENTS); shapes consistent (errors
   name tensor and axis); no NaN or Inf (errors name tensor and index);
   decay well formed. */
ra_status ra_glr_problem_init(ra_glr_problem *p, const ra_case *c, unsigned flags,
                              const char *what);

/* Flat offsets (row-major). */
static inline int64_t ra_glr_vd_index(const ra_glr_shape *s, int64_t b, int64_t t, int64_t h,
                                      int64_t d)
{
    return ((b * s->T + t) * s->H + h) * s->D + d;
}
static inline int64_t ra_glr_bs_index(const ra_glr_shape *s, int64_t b, int64_t t, int64_t h,
                                      int64_t i)
{
    return ((b * s->T + t) * s->H + h) * s->S + i;
}
static inline int64_t ra_glr_gate_index(const ra_glr_shape *s, int64_t b, int64_t t, int64_t h)
{
    return (b * s->T + t) * s->H + h;
}

#endif
