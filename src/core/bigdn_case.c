/* The bidirectional frame GDN family as cases: names, shape syntax, the one validator. */
#include "core/bigdn_case.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/case_check.h"

/*
 * Everything refused is refused here, with the tensor and the axis or the
 * element named (src/core/case_check.h): N != F*S (qkv's N against beta's
 * F and S), tables of the wrong shape, an odd D for bigdn (RoPE rotates
 * the pairs (d, d^1)), NaN or Inf anywhere, parameters out of range.
 */

static const char *const names[2][1 + RA_BIGDN_NIN] = {
    {"bigdn", "qkv", "beta", "decay", "q_norm_w", "k_norm_w", "rope_cos", "rope_sin"},
    {"bigdn.core", "Q", "K", "Qr", "Kr", "V", "beta", "decay"},
};

int ra_bigdn_kind_of(const char *op)
{
    for (int k = 0; op && k < 2; k++)
        if (strcmp(op, names[k][0]) == 0)
            return k;
    return -1;
}

const char *ra_bigdn_op_name(ra_bigdn_kind kind) { return names[kind][0]; }
const char *ra_bigdn_in_name(ra_bigdn_kind kind, int j) { return names[kind][1 + j]; }

static const char *const shape_keys[] = {"B", "F", "S", "H", "D"};
#define SHAPE_EXAMPLE "B=1,F=4,S=16,H=2,D=8"

ra_status ra_bigdn_shape_parse(ra_bigdn_shape *s, ra_bigdn_kind kind, const char *text)
{
    int64_t val[5];
    int seen[5];
    RA_TRY(ra_shape_kv_parse(val, seen, text, shape_keys, 5, SHAPE_EXAMPLE));
    for (int i = 0; i < 5; i++)
        if (!seen[i])
            RA_ERRORF(RA_EINVAL, "--shape '%s': missing %s (expected e.g. " SHAPE_EXAMPLE ")", text,
                      shape_keys[i]);
    if (kind == RA_BIGDN_FULL && val[4] % 2)
        RA_ERRORF(RA_EINVAL, "--shape '%s': D=%lld is odd (RoPE rotates the pairs (d, d^1))", text,
                  (long long)val[4]);
    if (val[1] * val[2] >= ((int64_t)1 << 31))
        RA_ERRORF(RA_EINVAL, "--shape '%s': F*S = %lld tokens is too many", text,
                  (long long)(val[1] * val[2]));
    s->B = val[0], s->F = val[1], s->S = val[2], s->H = val[3], s->D = val[4];
    return RA_OK;
}

void ra_bigdn_shape_format(char *buf, size_t len, const ra_bigdn_shape *s)
{
    snprintf(buf, len, "B=%lld,F=%lld,S=%lld,H=%lld,D=%lld", (long long)s->B, (long long)s->F,
             (long long)s->S, (long long)s->H, (long long)s->D);
}

double ra_bigdn_default_k_scale(const ra_bigdn_shape *s)
{
    return 1.0 / sqrt((double)s->D * (double)s->S);
}

static ra_status param(double *out, const ra_case *c, const char *key, double dflt, int positive,
                       const char *what)
{
    RA_TRY(ra_case_param_double(out, c, key, dflt));
    if (positive ? !(*out > 0) : !(*out >= 0))
        RA_ERRORF(RA_EINVAL, "%s: parameter '%s' must be %s, got %g", what, key,
                  positive ? "> 0" : ">= 0", *out);
    return RA_OK;
}

ra_status ra_bigdn_problem_init(ra_bigdn_problem *p, const ra_case *c, unsigned flags,
                                const char *what)
{
    memset(p, 0, sizeof *p);
    if (!what)
        what = "case";
    const int kind = ra_bigdn_kind_of(c->op);
    if (kind < 0)
        RA_ERRORF(RA_EINVAL, "%s: op is '%s', expected 'bigdn' or 'bigdn.core'", what,
                  c->op ? c->op : "(none)");
    p->kind = (ra_bigdn_kind)kind;
    ra_tensor *t[RA_BIGDN_NIN];
    for (int j = 0; j < RA_BIGDN_NIN; j++)
        RA_TRY(ra_tensors_require(&t[j], &c->tensors, names[kind][1 + j], what));
    const ra_tensor *x = t[0], *beta = t[kind == RA_BIGDN_FULL ? RA_BIGDN_BETA : RA_BIGDN_CBETA];
    const int xdim = kind == RA_BIGDN_FULL ? 5 : 4;
    if (x->ndim != xdim)
        RA_ERRORF(RA_EINVAL, "%s: tensor '%s' has %d dims, expected %d %s", what, x->name, x->ndim,
                  xdim, kind == RA_BIGDN_FULL ? "[B,N,3,H,D]" : "[B,N,H,D]");
    if (beta->ndim != 4)
        RA_ERRORF(RA_EINVAL, "%s: tensor 'beta' has %d dims, expected 4 [B,H,F,S]", what,
                  beta->ndim);
    for (int i = 0; i < xdim; i++)
        if (x->shape[i] <= 0)
            RA_ERRORF(RA_EINVAL, "%s: tensor '%s' has an empty axis", what, x->name);
    for (int i = 0; i < 4; i++)
        if (beta->shape[i] <= 0)
            RA_ERRORF(RA_EINVAL, "%s: tensor 'beta' has an empty axis", what);
    ra_bigdn_shape s = {x->shape[0], beta->shape[2], beta->shape[3], x->shape[xdim - 2],
                        x->shape[xdim - 1]};
    const int64_t N = x->shape[1];
    if (N != s.F * s.S)
        RA_ERRORF(RA_EINVAL,
                  "%s: tensor '%s' has N = %lld tokens, but tensor 'beta' [B,H,F,S] gives "
                  "F*S = %lld*%lld = %lld (N must equal F*S)",
                  what, x->name, (long long)N, (long long)s.F, (long long)s.S,
                  (long long)(s.F * s.S));
    if (kind == RA_BIGDN_FULL && x->shape[2] != 3)
        RA_ERRORF(RA_EINVAL, "%s: tensor 'qkv' axis 2 has size %lld, expected 3 (q, k, v)", what,
                  (long long)x->shape[2]);
    if (kind == RA_BIGDN_FULL && s.D % 2)
        RA_ERRORF(RA_EINVAL,
                  "%s: tensor 'qkv' axis D has odd size %lld (RoPE rotates the pairs (d, d^1))",
                  what, (long long)s.D);
    static const char *const tok_axes[] = {"B", "N", "H", "D"},
                             *const qkv_axes[] = {"B", "N", "3", "H", "D"},
                             *const beta_axes[] = {"B", "H", "F", "S"},
                             *const gate_axes[] = {"B", "H", "F"}, *const w_axes[] = {"H*D"},
                             *const tab_axes[] = {"N", "D"};
    const int64_t tok[4] = {s.B, N, s.H, s.D}, qkv[5] = {s.B, N, 3, s.H, s.D},
                  bsh[4] = {s.B, s.H, s.F, s.S}, gsh[3] = {s.B, s.H, s.F}, wsh[1] = {s.H * s.D},
                  tab[2] = {N, s.D};
    if (kind == RA_BIGDN_FULL) {
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_QKV], 5, qkv, qkv_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_BETA], 4, bsh, beta_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_DECAY], 3, gsh, gate_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_QNW], 1, wsh, w_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_KNW], 1, wsh, w_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_COS], 2, tab, tab_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_SIN], 2, tab, tab_axes, what));
    } else {
        for (int j = RA_BIGDN_Q; j <= RA_BIGDN_V; j++)
            RA_TRY(ra_case_check_shape(t[j], 4, tok, tok_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_CBETA], 4, bsh, beta_axes, what));
        RA_TRY(ra_case_check_shape(t[RA_BIGDN_CDECAY], 3, gsh, gate_axes, what));
    }
    p->dout = ra_tensors_find(&c->tensors, "dout");
    if ((flags & RA_BIGDN_NEED_COTANGENTS) && !p->dout)
        RA_ERRORF(RA_ENOTFOUND,
                  "%s: missing tensor 'dout' (the output cotangent the backward needs)", what);
    if (p->dout)
        RA_TRY(ra_case_check_shape(p->dout, 4, tok, tok_axes, what));
    for (int j = 0; j < RA_BIGDN_NIN; j++)
        RA_TRY(ra_case_check_finite(t[j], what));
    if (p->dout)
        RA_TRY(ra_case_check_finite(p->dout, what));
    RA_TRY(param(&p->eps, c, "eps", 1e-6, 0, what));
    if (kind == RA_BIGDN_FULL) {
        RA_TRY(param(&p->k_scale, c, "k_scale", ra_bigdn_default_k_scale(&s), 1, what));
        RA_TRY(param(&p->norm_eps, c, "norm_eps", 1e-5, 1, what));
    } else {
        p->k_scale = 1, p->norm_eps = 0;
    }
    p->s = s;
    for (int j = 0; j < RA_BIGDN_NIN; j++)
        p->in[j] = t[j];
    return RA_OK;
}
