/* The gated linear recurrence's row of the operation table: layout, flags, hooks. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "core/gen_glr.h"
#include "core/glr_case.h"
#include "core/op.h"
#include "gradcheck/glr_gc.h"
#include "ref/refop.h"

/*
 * docs/glr.md defines the tensors (SPEC.md §2, seed 000).  The generator
 * lives in gen_glr.c, the validator in glr_case.c, the reference in
 * src/ref/glr*.c.  No capability bits: every glr variant serves every
 * shape and both decays.
 */

static const ra_op_tensor tensors[] = {
    {"v", RA_ROLE_INPUT, "B,T,H,D", 0, 0},
    {"b", RA_ROLE_INPUT, "B,T,H,S", 0, 0},
    {"c", RA_ROLE_INPUT, "B,T,H,S", 0, 0},
    {"g", RA_ROLE_INPUT, "B,T,H", 0, 1},
    {"A_log", RA_ROLE_INPUT, "H,S", 0, 1},
    {"do", RA_ROLE_COTANGENT, "B,T,H,D", 0, 0},
    {"o", RA_ROLE_OUTPUT, "B,T,H,D", 0, 0},
    {"dv", RA_ROLE_GRADIENT, "B,T,H,D", 0, 0},
    {"db", RA_ROLE_GRADIENT, "B,T,H,S", 0, 0},
    {"dc", RA_ROLE_GRADIENT, "B,T,H,S", 0, 0},
    {"dg", RA_ROLE_GRADIENT, "B,T,H", 0, 1},
    {"dA_log", RA_ROLE_GRADIENT, "H,S", 0, 1},
    {NULL, 0, NULL, 0, 0},
};

static const ra_op_item params[] = {
    {"decay", "expneg (default): alpha = exp(-g exp(A_log)); linear: alpha = exp(g A_log)"},
    {NULL, NULL},
};

static ra_status shape_canon(char *buf, size_t len, const char *text)
{
    ra_glr_shape s;
    RA_TRY(ra_glr_shape_parse(&s, text));
    ra_glr_shape_format(buf, len, &s);
    return RA_OK;
}

static ra_status unit_shape(char *buf, size_t len, const char *text)
{
    ra_glr_shape s;
    RA_TRY(ra_glr_shape_parse(&s, text));
    s.B = s.H = 1;
    ra_glr_shape_format(buf, len, &s);
    return RA_OK;
}

static void identify(ra_case_spec *spec, const ra_case *c)
{
    const ra_tensor *v = ra_tensors_find(&c->tensors, "v");
    const ra_tensor *b = ra_tensors_find(&c->tensors, "b");
    if (v && b && v->ndim == 4 && b->ndim == 4) {
        ra_glr_shape s = {v->shape[0], v->shape[1], v->shape[2], b->shape[3], v->shape[3]};
        ra_glr_shape_format(spec->shape, sizeof spec->shape, &s);
    } else {
        const char *shape = ra_case_param(c, "shape");
        snprintf(spec->shape, sizeof spec->shape, "%s", shape && *shape ? shape : "-");
    }
    const char *decay = ra_case_param(c, "decay");
    spec->flags = decay && strcmp(decay, "linear") == 0 ? RA_GLR_FLAG_LINEAR : 0;
}

static int supports(const ra_variant *v, const ra_case *c, char *why, size_t len)
{
    (void)v, (void)c, (void)why, (void)len;
    return 1;
}

const ra_op ra_op_glr = {
    .name = "glr",
    .doc = "gated linear recurrence: v [B,T,H,D], b, c [B,T,H,S], g [B,T,H], A_log [H,S] -> "
           "o [B,T,H,D] (docs/glr.md)",
    .tensors = tensors,
    .params = params,
    .flags = ra_glr_flags,
    .regimes = ra_glr_regimes,
    .caps = NULL,
    .shape_example = "B=1,T=64,H=2,S=8,D=8",
    .bench_shape = "B=1,T=256,H=1,S=32,D=32",
    .gradcheck_shapes = {"B=2,T=5,H=2,S=3,D=2", "B=1,T=64,H=2,S=8,D=8"},
    .shape_canon = shape_canon,
    .unit_shape = unit_shape,
    .spec_check = NULL,
    .generate = ra_glr_generate,
    .identify = identify,
    .supports = supports,
    .ref = &ra_ref_op_glr,
    .gradcheck = &ra_gc_op_glr,
    .derive = ra_glr_derive_sets,
};
