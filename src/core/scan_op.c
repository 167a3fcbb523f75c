/* The affine scan family's rows of the operation table: scan.linear, scan.affine, scan.log. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/gen_scan.h"
#include "core/op.h"
#include "core/scan_case.h"
#include "gradcheck/scan_gc.h"
#include "recaudit/scan.h"
#include "ref/refop.h"
#include "ref/scan.h"

/*
 * docs/scan.md defines the tensors; this file says it once for the generic
 * code.  The three rows share their hooks: each hook learns the kind from
 * the spec's or the case's op (scan_case.c's name table).
 */

static const ra_op_tensor linear_tensors[] = {
    {"a", RA_ROLE_INPUT, "B,T,D", 0, 0},
    {"x", RA_ROLE_INPUT, "B,T,D", 0, 0},
    {"dP", RA_ROLE_COTANGENT, "B,T,D", 1, 0},
    {"dh", RA_ROLE_COTANGENT, "B,T,D", 0, 0},
    {"P", RA_ROLE_OUTPUT, "B,T,D", 0, 0},
    {"h", RA_ROLE_OUTPUT, "B,T,D", 0, 0},
    {"da", RA_ROLE_GRADIENT, "B,T,D", 0, 0},
    {"dx", RA_ROLE_GRADIENT, "B,T,D", 0, 0},
    {NULL, 0, NULL, 0, 0},
};
static const ra_op_tensor affine_tensors[] = {
    {"A", RA_ROLE_INPUT, "B,T,N,k,k", 0, 0},
    {"Bm", RA_ROLE_INPUT, "B,T,N,k,v", 0, 0},
    {"dAbar", RA_ROLE_COTANGENT, "B,T,N,k,k", 1, 0},
    {"dBbar", RA_ROLE_COTANGENT, "B,T,N,k,v", 0, 0},
    {"Abar", RA_ROLE_OUTPUT, "B,T,N,k,k", 0, 0},
    {"Bbar", RA_ROLE_OUTPUT, "B,T,N,k,v", 0, 0},
    {"dA", RA_ROLE_GRADIENT, "B,T,N,k,k", 0, 0},
    {"dBm", RA_ROLE_GRADIENT, "B,T,N,k,v", 0, 0},
    {NULL, 0, NULL, 0, 0},
};
static const ra_op_tensor log_tensors[] = {
    {"log_coeffs", RA_ROLE_INPUT, "B,T,D", 0, 0},
    {"log_values", RA_ROLE_INPUT, "B,T+1,D", 0, 0},
    {"dh", RA_ROLE_COTANGENT, "B,T,D", 0, 0},
    {"h", RA_ROLE_OUTPUT, "B,T,D", 0, 0},
    {"dlog_coeffs", RA_ROLE_GRADIENT, "B,T,D", 0, 0},
    {"dlog_values", RA_ROLE_GRADIENT, "B,T+1,D", 0, 0},
    {NULL, 0, NULL, 0, 0},
};

static const ra_op_item no_items[] = {{NULL, NULL}};
static const ra_op_item rotation_params[] = {
    {"gamma", "rotation regimes: the transitions' scale (recorded, not read by kernels)"},
    {NULL, NULL},
};

static const ra_op_cap affine_caps[] = {
    {RA_SCAN_NEEDS_CONFORMAL, "conformal",
     "requirement: A_t^T A_t = s^2 I with s >= 1/2 (reversal backward)"},
    {0, NULL, NULL},
};

static int kind_of(const char *op)
{
    int k = ra_scan_kind_of(op);
    return k < 0 ? RA_SCAN_AFFINE : k;
}

#define SHAPE_HOOKS(name, kind)                                                                    \
    static ra_status name##_canon(char *buf, size_t len, const char *text)                         \
    {                                                                                              \
        ra_scan_shape s;                                                                           \
        RA_TRY(ra_scan_shape_parse(&s, kind, text));                                               \
        ra_scan_shape_format(buf, len, &s);                                                        \
        return RA_OK;                                                                              \
    }                                                                                              \
    static ra_status name##_unit(char *buf, size_t len, const char *text)                          \
    {                                                                                              \
        ra_scan_shape s;                                                                           \
        RA_TRY(ra_scan_shape_parse(&s, kind, text));                                               \
        s.B = s.N = 1;                                                                             \
        ra_scan_shape_format(buf, len, &s);                                                        \
        return RA_OK;                                                                              \
    }
SHAPE_HOOKS(linear, RA_SCAN_LINEAR)
SHAPE_HOOKS(affine, RA_SCAN_AFFINE)
SHAPE_HOOKS(log, RA_SCAN_LOG)

static void identify(ra_case_spec *spec, const ra_case *c)
{
    const int kind = kind_of(c->op);
    const ra_tensor *a = ra_tensors_find(&c->tensors, ra_scan_in_name(kind, 0));
    const ra_tensor *b = ra_tensors_find(&c->tensors, ra_scan_in_name(kind, 1));
    const int nd = kind == RA_SCAN_AFFINE ? 5 : 3;
    spec->flags = 0;
    if (a && b && a->ndim == nd && b->ndim == nd) {
        ra_scan_shape s = {kind, a->shape[0], a->shape[1], a->shape[2], 1, 1};
        if (nd == 5)
            s.k = a->shape[3], s.v = b->shape[4];
        ra_scan_shape_format(spec->shape, sizeof spec->shape, &s);
        return;
    }
    const char *shape = ra_case_param(c, "shape");
    snprintf(spec->shape, sizeof spec->shape, "%s", shape && *shape ? shape : "-");
}

/* 1 when every transition of A (a [.., k, k] tensor) is conformal with
   scale >= 1/2 (recaudit/scan.h); else 0 with the first offender in why. */
static int conformal(const ra_tensor *A, int64_t k, char *why, size_t len)
{
    const int64_t kk = k * k;
    for (int64_t m = 0; m < A->numel / kk; m++) {
        double g[RA_SCAN_KV_MAX * RA_SCAN_KV_MAX], s2 = 0;
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < k; j++) {
                double d = 0;
                for (int64_t p = 0; p < k; p++)
                    d +=
                        ra_tensor_get(A, m * kk + p * k + i) * ra_tensor_get(A, m * kk + p * k + j);
                g[i * k + j] = d;
            }
        for (int64_t i = 0; i < k; i++)
            s2 += g[i * k + i] / (double)k;
        double dev = 0;
        for (int64_t i = 0; i < k; i++)
            for (int64_t j = 0; j < k; j++)
                dev = fmax(dev, fabs(g[i * k + j] - (i == j ? s2 : 0)));
        if (!(s2 >= 0.25 * (1 - 0x1p-6) && dev <= s2 * 0x1p-6)) {
            snprintf(why, len,
                     "needs conformal transitions with scale >= 1/2 (requirement "
                     "conformal): transition %lld has s^2 = %.3g, |A^T A - s^2 I| = %.3g",
                     (long long)m, s2, dev);
            return 0;
        }
    }
    return 1;
}

static int supports(const ra_variant *v, const ra_case *c, char *why, size_t len)
{
    const int kind = kind_of(c->op);
    const ra_tensor *A = ra_tensors_find(&c->tensors, ra_scan_in_name(kind, 0));
    if ((v->caps & RA_SCAN_NEEDS_CONFORMAL) && A && kind == RA_SCAN_AFFINE && A->ndim == 5 &&
        A->shape[3] == A->shape[4] && A->shape[3] <= RA_SCAN_KV_MAX)
        return conformal(A, A->shape[3], why, len);
    return 1;
}

static ra_status spec_check(const ra_case_spec *s)
{
    ra_scan_shape sh;
    RA_TRY(ra_scan_shape_parse(&sh, kind_of(s->op), s->shape));
    return ra_scan_regime_check(kind_of(s->op),
                                strcmp(s->regime, "-") != 0 ? s->regime : "default");
}

#define ROW(opname, doc_, tens, params_, regs, caps_, kind_name, ex, bench, gc1, gc2, refrow,      \
            gcrow)                                                                                 \
    {                                                                                              \
        .name = opname, .doc = doc_, .tensors = tens, .params = params_, .flags = no_items,        \
        .regimes = regs, .caps = caps_, .shape_example = ex, .bench_shape = bench,                 \
        .gradcheck_shapes = {gc1, gc2}, .shape_canon = kind_name##_canon,                          \
        .unit_shape = kind_name##_unit, .spec_check = spec_check, .generate = ra_scan_generate,    \
        .identify = identify, .supports = supports, .ref = &refrow, .gradcheck = &gcrow,           \
        .derive = ra_scan_##kind_name##_derive_sets                                                \
    }

const ra_op ra_op_scan_linear = ROW(
    "scan.linear",
    "linear scan: a, x [B,T,D] -> P (running product), h = a h + x [B,T,D] (docs/scan.md)",
    linear_tensors, rotation_params, ra_scan_linear_regimes, NULL, linear, "B=2,T=64,D=8",
    "B=1,T=1024,D=64", "B=1,T=6,D=2", "B=2,T=48,D=3", ra_ref_op_scan_linear, ra_gc_op_scan_linear);
const ra_op ra_op_scan_affine =
    ROW("scan.affine",
        "affine scan: A [B,T,N,k,k], Bm [B,T,N,k,v] -> Abar = A Abar, Bbar = A Bbar + Bm; k, v in "
        "{1,2,4,8,16}; scan.matrix is k=2, v=1 (docs/scan.md)",
        affine_tensors, rotation_params, ra_scan_affine_regimes, affine_caps, affine,
        "B=2,T=64,N=4,k=2,v=1", "B=1,T=256,N=4,k=16,v=16", "B=1,T=4,N=1,k=2,v=2",
        "B=1,T=40,N=2,k=4,v=2", ra_ref_op_scan_affine, ra_gc_op_scan_affine);
const ra_op ra_op_scan_log =
    ROW("scan.log",
        "log-space scan: log_coeffs [B,T,D], log_values [B,T+1,D] -> h = exp(lc) h + exp(lv), "
        "h_0 = exp(lv_0) [B,T,D] (docs/scan.md)",
        log_tensors, no_items, ra_scan_log_regimes, NULL, log, "B=2,T=64,D=8", "B=1,T=1024,D=64",
        "B=1,T=6,D=2", "B=2,T=48,D=3", ra_ref_op_scan_log, ra_gc_op_scan_log);
