/* Drawing one tensor of a case from its own seeded stream: the distributions generators share. */
#ifndef RA_CORE_GEN_FILL_H
#define RA_CORE_GEN_FILL_H

#include <stdint.h>

#include "core/case.h"
#include "core/status.h"
#include "core/tensor.h"

/*
 * Every operation's generator draws each tensor from the stream
 * ra_rng_new(seed, tensor name), in double, in flat (row-major) order,
 * and rounds once to the storage dtype, so the same seed gives the same
 * tensor whatever else is generated, on every machine.  Transforms are
 * deterministic (src/core/rng.h's, or MPFR's correctly rounded log).
 */

typedef enum ra_draw_kind {
    RA_DRAW_NORMAL,          /* N(0, param^2) */
    RA_DRAW_UNIFORM01,       /* Uniform(0, 1) */
    RA_DRAW_LOGSIGMOID,      /* logsigmoid(N(0,1)) */
    RA_DRAW_SIGMOID,         /* sigmoid(N(0,1)) */
    RA_DRAW_NEG_EXP,         /* -Exponential(mean param) */
    RA_DRAW_ZERO,            /* 0 */
    RA_DRAW_EXP,             /* Exponential(mean param) */
    RA_DRAW_SOFTPLUS_NORMAL, /* softplus(N(0, param^2)) = log(1 + exp(z)) */
    RA_DRAW_LOG_UNIFORM,     /* log(Uniform(param, param2)), log correctly rounded */
    RA_DRAW_NEG_UNIFORM,     /* -Uniform(param, param2) */
    RA_DRAW_UNIFORM,         /* Uniform(param, param2) */
    RA_DRAW_SHIFTED_NORMAL   /* param2 + N(0, param^2) */
} ra_draw_kind;

typedef struct ra_draw {
    ra_draw_kind kind;
    double param;
    int64_t unit_rows; /* > 0: normalise rows of this length to unit L2 norm */
    /* the uniform ranges' upper end; with unit_rows, > 0: the rows' L2 norm
       instead of 1 (raw-keys' bounded positive keys) */
    double param2;
} ra_draw;

/* Adds tensor `name` (dtype dt, shape) to c and fills it from stream
   (seed, name) as d says, clipped to dt's finite range. */
ra_status ra_gen_add_tensor(ra_case *c, const char *name, ra_dtype dt, int ndim,
                            const int64_t *shape, uint64_t seed, ra_draw d);

#endif
