/* The gated delta rule's row of the operation table: layout, flags, capabilities, hooks. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/capture.h"
#include "core/gdn_case.h"
#include "core/gen_gdn.h"
#include "core/op.h"
#include "gradcheck/gdn_gc.h"
#include "recaudit/gdn.h"
#include "ref/refop.h"

/*
 * docs/gdn.md defines the tensors; this file says it once for the generic
 * code (list ops, the audit's expected tensors, gradient names, caps).
 * The generator and the validator live in gen_gdn.c and gdn_case.c, the
 * reference in src/ref/gdn*.c.
 */

static const ra_op_tensor tensors[] = {
    {"q", RA_ROLE_INPUT, "B,T,Hk,K", 0, 0},
    {"k", RA_ROLE_INPUT, "B,T,Hk,K", 0, 0},
    {"v", RA_ROLE_INPUT, "B,T,Hv,V", 0, 0},
    {"g", RA_ROLE_INPUT, "B,T,Hv", 0, 1},
    {"beta", RA_ROLE_INPUT, "B,T,Hv", 0, 1},
    {"h0", RA_ROLE_INPUT, "B,Hv,K,V", 1, 1},
    {"do", RA_ROLE_COTANGENT, "B,T,Hv,V", 0, 0},
    {"dht", RA_ROLE_COTANGENT, "B,Hv,K,V", 1, 1},
    {"o", RA_ROLE_OUTPUT, "B,T,Hv,V", 0, 0},
    {"ht", RA_ROLE_OUTPUT, "B,Hv,K,V", 0, 1},
    {"dq", RA_ROLE_GRADIENT, "B,T,Hk,K", 0, 0},
    {"dk", RA_ROLE_GRADIENT, "B,T,Hk,K", 0, 0},
    {"dv", RA_ROLE_GRADIENT, "B,T,Hv,V", 0, 0},
    {"dg", RA_ROLE_GRADIENT, "B,T,Hv", 0, 1},
    {"dbeta", RA_ROLE_GRADIENT, "B,T,Hv", 0, 1},
    {"dh0", RA_ROLE_GRADIENT, "B,Hv,K,V", 1, 1},
    {NULL, 0, NULL, 0, 0},
};

static const ra_op_item params[] = {
    {"scale", "output scale (default K^-1/2)"},
    {"l2norm", "L2-normalise q and k per token and key head first (default false)"},
    {"l2eps", "epsilon inside that norm's square root (default 1e-6)"},
    {NULL, NULL},
};

static const ra_op_cap caps[] = {
    {RA_GDN_CAP_H0, "h0", "accepts an initial state h0"},
    {RA_GDN_CAP_GQA, "gqa", "grouped value heads (Hv > Hk)"},
    {RA_GDN_CAP_L2NORM, "l2norm", "in-kernel L2 normalisation of q and k"},
    {RA_GDN_CAP_TAIL, "tail", "T not a multiple of 64"},
    {RA_GDN_NEEDS_UNIT_KEYS, "unit-keys", "requirement: defined for |k|^2 <= 1.01 only"},
    {RA_GDN_NEEDS_STABLE_STEPS, "stable-steps",
     "requirement: defined where every step's inverse amplifies by <= 4/3 "
     "(exp(g) min(1, |1 - beta |k|^2|) >= 3/4)"},
    {0, NULL, NULL},
};

/* |k|^2 of a normalised key stored in bf16 is within about 2^-8 of 1. */
#define UNIT_KEYS_MAX_NORM2 1.01

static ra_status shape_canon(char *buf, size_t len, const char *text)
{
    ra_gdn_shape s;
    RA_TRY(ra_gdn_shape_parse(&s, text));
    ra_gdn_shape_format(buf, len, &s);
    return RA_OK;
}

static ra_status unit_shape(char *buf, size_t len, const char *text)
{
    ra_gdn_shape s;
    RA_TRY(ra_gdn_shape_parse(&s, text));
    s.B = s.Hk = s.Hv = 1;
    ra_gdn_shape_format(buf, len, &s);
    return RA_OK;
}

/* The case's l2norm parameter with the spellings ra_case_param_bool
   accepts; a malformed value counts as false here, and the variant's own
   validation refuses the case with its message. */
static int case_l2norm(const ra_case *c)
{
    int on = 0;
    ra_error_handler_t *prev = ra_capture_begin();
    if (ra_case_param_bool(&on, c, "l2norm", 0) != RA_OK)
        on = 0;
    ra_capture_end(prev);
    return on;
}

static void identify(ra_case_spec *spec, const ra_case *c)
{
    const ra_tensor *q = ra_tensors_find(&c->tensors, "q");
    const ra_tensor *v = ra_tensors_find(&c->tensors, "v");
    if (q && v && q->ndim == 4 && v->ndim == 4) {
        ra_gdn_shape s = {q->shape[0], q->shape[1], q->shape[2],
                          v->shape[2], q->shape[3], v->shape[3]};
        ra_gdn_shape_format(spec->shape, sizeof spec->shape, &s);
    } else {
        const char *shape = ra_case_param(c, "shape");
        snprintf(spec->shape, sizeof spec->shape, "%s", shape && *shape ? shape : "-");
    }
    spec->flags = 0;
    if (ra_tensors_find(&c->tensors, "h0"))
        spec->flags |= RA_GDN_FLAG_H0;
    if (case_l2norm(c))
        spec->flags |= RA_GDN_FLAG_L2NORM;
    if (ra_tensors_find(&c->tensors, "do") && !ra_tensors_find(&c->tensors, "dht"))
        spec->flags |= RA_GDN_FLAG_NO_DHT;
}

/* Largest squared L2 norm over the last axis of t (a key tensor
   [B,T,Hk,K]); NaN propagates, so a NaN key is never "unit". */
static double max_row_norm2(const ra_tensor *t)
{
    const int64_t n = t->shape[t->ndim - 1];
    double worst = 0;
    for (int64_t r = 0; n > 0 && r < t->numel / n; r++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = ra_tensor_get(t, r * n + i);
            s += x * x;
        }
        if (isnan(s))
            return s;
        if (s > worst)
            worst = s;
    }
    return worst;
}

/* The largest per-step error amplification of inverting the gdn step,
   1 / (exp(g) min(1, |1 - beta |k|^2|)) over every (b, t, hv), with
   |k|^2 = 1 under l2norm; NaN when a tensor is missing or malformed
   (then the variant's own validation refuses the case). */
static double max_inverse_gain(const ra_case *c, int l2norm)
{
    const ra_tensor *k = ra_tensors_find(&c->tensors, "k");
    const ra_tensor *g = ra_tensors_find(&c->tensors, "g");
    const ra_tensor *b = ra_tensors_find(&c->tensors, "beta");
    if (!k || !g || !b || k->ndim != 4 || g->ndim != 3 || b->numel != g->numel ||
        g->shape[0] != k->shape[0] || g->shape[1] != k->shape[1] || k->shape[2] < 1 ||
        g->shape[2] % k->shape[2] != 0)
        return NAN;
    const int64_t Hk = k->shape[2], K = k->shape[3], Hv = g->shape[2], grp = Hv / Hk;
    double worst = 0;
    for (int64_t i = 0; i < g->numel; i++) {
        const int64_t bt = i / Hv, hv = i % Hv, row = bt * Hk + hv / grp;
        double n2 = 0;
        for (int64_t d = 0; !l2norm && d < K; d++) {
            double x = ra_tensor_get(k, row * K + d);
            n2 += x * x;
        }
        if (l2norm)
            n2 = 1;
        double m = fabs(1 - ra_tensor_get(b, i) * n2);
        double gain = 1 / (exp(ra_tensor_get(g, i)) * (m < 1 ? m : 1));
        if (!(gain <= worst)) /* NaN propagates */
            worst = gain;
    }
    return worst;
}

static int supports(const ra_variant *v, const ra_case *c, char *why, size_t len)
{
    const ra_tensor *q = ra_tensors_find(&c->tensors, "q");
    const ra_tensor *vv = ra_tensors_find(&c->tensors, "v");
    if (ra_tensors_find(&c->tensors, "h0") && !(v->caps & RA_GDN_CAP_H0)) {
        snprintf(why, len, "no initial state (capability h0)");
        return 0;
    }
    if (q && vv && q->ndim == 4 && vv->ndim == 4) {
        if (vv->shape[2] != q->shape[2] && !(v->caps & RA_GDN_CAP_GQA)) {
            snprintf(why, len, "no grouped value heads (capability gqa)");
            return 0;
        }
        if (q->shape[1] % 64 != 0 && !(v->caps & RA_GDN_CAP_TAIL)) {
            snprintf(why, len, "T=%lld is not a multiple of 64 (capability tail)",
                     (long long)q->shape[1]);
            return 0;
        }
    }
    int l2norm = case_l2norm(c);
    if (l2norm && !(v->caps & RA_GDN_CAP_L2NORM)) {
        snprintf(why, len, "no in-kernel L2 normalisation (capability l2norm)");
        return 0;
    }
    const ra_tensor *k = ra_tensors_find(&c->tensors, "k");
    if ((v->caps & RA_GDN_NEEDS_UNIT_KEYS) && !l2norm && k && k->ndim == 4) {
        double worst = max_row_norm2(k);
        if (!(worst <= UNIT_KEYS_MAX_NORM2)) {
            snprintf(why, len, "needs unit-norm keys (requirement unit-keys): max |k|^2 = %.3g",
                     worst);
            return 0;
        }
    }
    if (v->caps & RA_GDN_NEEDS_STABLE_STEPS) {
        double gain = max_inverse_gain(c, l2norm);
        if (!(gain <= 4.0 / 3.0)) {
            snprintf(why, len,
                     "needs stable steps (requirement stable-steps): a step's inverse "
                     "amplifies by up to %.3g > 4/3",
                     gain);
            return 0;
        }
    }
    return 1;
}

/* The chunked WY algorithm's products at the nominal chunk C = 64, per
   (b, hv) and chunk of C tokens (docs/gdn-chunked.md):
     A = beta k k^T            2 C^2 K      P = q k^T (masked)   2 C^2 K
     T = (I + A)^-1            C^3 / 3      (triangular inverse, LAPACK's count)
     W = T beta k              2 C^2 K      U = T beta v         2 C^2 V
     u = U - W h               2 C K V      o = q h + P u        2 C K V + 2 C^2 V
     h = decay h + k^T u       2 C K V
   so per token and value head 2C(3K + 2V) + 6KV + C^2/3; the forward is
   B T Hv times that, a partial last chunk counted pro rata.  The backward is
   counted as 3 forwards: the recomputed chunk states plus two products per
   forward product (the gradients of both operands). */
#define GDN_NOMINAL_CHUNK 64.0

static double flops(const ra_case *c, int bwd)
{
    const ra_tensor *q = ra_tensors_find(&c->tensors, "q");
    const ra_tensor *v = ra_tensors_find(&c->tensors, "v");
    if (!q || !v || q->ndim != 4 || v->ndim != 4)
        return NAN;
    const double C = GDN_NOMINAL_CHUNK, B = (double)q->shape[0], T = (double)q->shape[1],
                 K = (double)q->shape[3], Hv = (double)v->shape[2], V = (double)v->shape[3];
    const double fwd = B * T * Hv * (2 * C * (3 * K + 2 * V) + 6 * K * V + C * C / 3);
    return bwd ? 3 * fwd : fwd;
}

const ra_op ra_op_gdn = {
    .name = "gdn",
    .doc = "gated delta rule: q,k [B,T,Hk,K], v [B,T,Hv,V], g, beta [B,T,Hv], optional h0 -> "
           "o [B,T,Hv,V], ht [B,Hv,K,V] (docs/gdn.md)",
    .tensors = tensors,
    .params = params,
    .flags = ra_gdn_flags,
    .regimes = ra_gdn_regimes,
    .caps = caps,
    .shape_example = "B=1,T=64,Hk=1,Hv=2,K=16,V=16",
    .bench_shape = "B=1,T=64,Hk=1,Hv=2,K=128,V=128",
    .gradcheck_shapes = {"B=1,T=6,Hk=1,Hv=2,K=4,V=3", "B=1,T=32,Hk=2,Hv=4,K=8,V=8"},
    .shape_canon = shape_canon,
    .unit_shape = unit_shape,
    .spec_check = ra_gdn_spec_check,
    .generate = ra_gdn_generate,
    .identify = identify,
    .supports = supports,
    .flops = flops,
    .flops_doc = "forward B*T*Hv*(2C(3K+2V) + 6KV + C^2/3) at C = 64 (the chunked WY algorithm's "
                 "products); backward 3x the forward",
    .ref = &ra_ref_op_gdn,
    .gradcheck = &ra_gc_op_gdn,
    .derive = ra_gdn_derive_sets,
};
