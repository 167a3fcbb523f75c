/* The bidirectional frame GDN family's rows of the operation table: bigdn and bigdn.core. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "core/bigdn_case.h"
#include "core/gen_bigdn.h"
#include "core/op.h"
#include "gradcheck/bigdn_gc.h"
#include "ref/refop.h"

/*
 * docs/bigdn.md defines the tensors (SPEC.md §4, seed 003); this file
 * says it once for the generic code.  Both rows share their hooks: each
 * learns the member from the spec's or the case's op.  No capability
 * bits: every variant serves every shape and regime.
 */

static const ra_op_tensor full_tensors[] = {
    {"qkv", RA_ROLE_INPUT, "B,N,3,H,D", 0, 0},
    {"beta", RA_ROLE_INPUT, "B,H,F,S", 0, 1},
    {"decay", RA_ROLE_INPUT, "B,H,F", 0, 1},
    {"q_norm_w", RA_ROLE_INPUT, "H*D", 0, 1},
    {"k_norm_w", RA_ROLE_INPUT, "H*D", 0, 1},
    {"rope_cos", RA_ROLE_INPUT, "N,D", 0, 1},
    {"rope_sin", RA_ROLE_INPUT, "N,D", 0, 1},
    {"dout", RA_ROLE_COTANGENT, "B,N,H,D", 0, 0},
    {"out", RA_ROLE_OUTPUT, "B,N,H,D", 0, 0},
    {"dqkv", RA_ROLE_GRADIENT, "B,N,3,H,D", 0, 0},
    {"dbeta", RA_ROLE_GRADIENT, "B,H,F,S", 0, 1},
    {"ddecay", RA_ROLE_GRADIENT, "B,H,F", 0, 1},
    {"dq_norm_w", RA_ROLE_GRADIENT, "H*D", 0, 1},
    {"dk_norm_w", RA_ROLE_GRADIENT, "H*D", 0, 1},
    {NULL, 0, NULL, 0, 0},
};

static const ra_op_tensor core_tensors[] = {
    {"Q", RA_ROLE_INPUT, "B,N,H,D", 0, 0},
    {"K", RA_ROLE_INPUT, "B,N,H,D", 0, 0},
    {"Qr", RA_ROLE_INPUT, "B,N,H,D", 0, 0},
    {"Kr", RA_ROLE_INPUT, "B,N,H,D", 0, 0},
    {"V", RA_ROLE_INPUT, "B,N,H,D", 0, 0},
    {"beta", RA_ROLE_INPUT, "B,H,F,S", 0, 1},
    {"decay", RA_ROLE_INPUT, "B,H,F", 0, 1},
    {"dout", RA_ROLE_COTANGENT, "B,N,H,D", 0, 0},
    {"out", RA_ROLE_OUTPUT, "B,N,H,D", 0, 0},
    {"dQ", RA_ROLE_GRADIENT, "B,N,H,D", 0, 0},
    {"dK", RA_ROLE_GRADIENT, "B,N,H,D", 0, 0},
    {"dQr", RA_ROLE_GRADIENT, "B,N,H,D", 0, 0},
    {"dKr", RA_ROLE_GRADIENT, "B,N,H,D", 0, 0},
    {"dV", RA_ROLE_GRADIENT, "B,N,H,D", 0, 0},
    {"dbeta", RA_ROLE_GRADIENT, "B,H,F,S", 0, 1},
    {"ddecay", RA_ROLE_GRADIENT, "B,H,F", 0, 1},
    {NULL, 0, NULL, 0, 0},
};

static const ra_op_item full_params[] = {
    {"k_scale", "key scale after ReLU (default D^-1/2 S^-1/2, the seed's recipe; the generator "
                "writes it into every case)"},
    {"norm_eps", "RMSNorm epsilon (default 1e-5)"},
    {"eps", "division epsilon: out = num / (den + eps) (default 1e-6)"},
    {NULL, NULL},
};

static const ra_op_item core_params[] = {
    {"eps", "division epsilon: out = num / (den + eps) (default 1e-6)"},
    {NULL, NULL},
};

static int kind_of(const char *op)
{
    int k = ra_bigdn_kind_of(op);
    return k < 0 ? RA_BIGDN_FULL : k;
}

#define SHAPE_HOOKS(name, kind)                                                                    \
    static ra_status name##_canon(char *buf, size_t len, const char *text)                         \
    {                                                                                              \
        ra_bigdn_shape s;                                                                          \
        RA_TRY(ra_bigdn_shape_parse(&s, kind, text));                                              \
        ra_bigdn_shape_format(buf, len, &s);                                                       \
        return RA_OK;                                                                              \
    }                                                                                              \
    static ra_status name##_unit(char *buf, size_t len, const char *text)                          \
    {                                                                                              \
        ra_bigdn_shape s;                                                                          \
        RA_TRY(ra_bigdn_shape_parse(&s, kind, text));                                              \
        s.B = s.H = 1;                                                                             \
        ra_bigdn_shape_format(buf, len, &s);                                                       \
        return RA_OK;                                                                              \
    }
SHAPE_HOOKS(full, RA_BIGDN_FULL)
SHAPE_HOOKS(core, RA_BIGDN_CORE)

static void identify(ra_case_spec *spec, const ra_case *c)
{
    const int kind = kind_of(c->op);
    const ra_tensor *x = ra_tensors_find(&c->tensors, ra_bigdn_in_name(kind, 0));
    const ra_tensor *beta = ra_tensors_find(&c->tensors, "beta");
    const int nd = kind == RA_BIGDN_FULL ? 5 : 4;
    spec->flags = 0;
    if (x && beta && x->ndim == nd && beta->ndim == 4) {
        ra_bigdn_shape s = {x->shape[0], beta->shape[2], beta->shape[3], x->shape[nd - 2],
                            x->shape[nd - 1]};
        ra_bigdn_shape_format(spec->shape, sizeof spec->shape, &s);
        return;
    }
    const char *shape = ra_case_param(c, "shape");
    snprintf(spec->shape, sizeof spec->shape, "%s", shape && *shape ? shape : "-");
}

static int supports(const ra_variant *v, const ra_case *c, char *why, size_t len)
{
    (void)v, (void)c, (void)why, (void)len;
    return 1;
}

static ra_status spec_check(const ra_case_spec *s)
{
    ra_bigdn_shape sh;
    /* the generator needs RoPE pairs for the core's features too */
    return ra_bigdn_shape_parse(&sh, RA_BIGDN_FULL, s->shape);
}

const ra_op ra_op_bigdn = {
    .name = "bigdn",
    .doc = "bidirectional frame gated delta net (seed 003): qkv [B,N,3,H,D], beta [B,H,F,S], "
           "decay [B,H,F], norm weights [H*D], RoPE tables [N,D] -> out [B,N,H,D] (docs/bigdn.md)",
    .tensors = full_tensors,
    .nondiff = (const char *const[]){"rope_cos", "rope_sin", NULL},
    .params = full_params,
    .flags = ra_bigdn_flags,
    .regimes = ra_bigdn_regimes,
    .caps = NULL,
    .shape_example = "B=1,F=4,S=16,H=2,D=8",
    .bench_shape = "B=1,F=4,S=64,H=1,D=32",
    .gradcheck_shapes = {"B=1,F=3,S=2,H=2,D=2", "B=2,F=4,S=6,H=2,D=4"},
    .shape_canon = full_canon,
    .unit_shape = full_unit,
    .spec_check = spec_check,
    .generate = ra_bigdn_generate,
    .identify = identify,
    .supports = supports,
    .ref = &ra_ref_op_bigdn,
    .gradcheck = &ra_gc_op_bigdn,
    .derive = ra_bigdn_derive_sets,
};

const ra_op ra_op_bigdn_core = {
    .name = "bigdn.core",
    .doc = "bigdn's phase kernels from the features: Q, K, Qr, Kr, V [B,N,H,D], beta [B,H,F,S], "
           "decay [B,H,F] -> out [B,N,H,D] (docs/bigdn.md)",
    .tensors = core_tensors,
    .params = core_params,
    .flags = ra_bigdn_flags,
    .regimes = ra_bigdn_regimes,
    .caps = NULL,
    .shape_example = "B=1,F=4,S=16,H=2,D=8",
    .bench_shape = "B=1,F=4,S=64,H=1,D=32",
    .gradcheck_shapes = {"B=1,F=3,S=2,H=2,D=2", "B=2,F=4,S=6,H=2,D=4"},
    .shape_canon = core_canon,
    .unit_shape = core_unit,
    .spec_check = spec_check,
    .generate = ra_bigdn_generate,
    .identify = identify,
    .supports = supports,
    .ref = &ra_ref_op_bigdn_core,
    .gradcheck = &ra_gc_op_bigdn_core,
    .derive = ra_bigdn_core_derive_sets,
};
