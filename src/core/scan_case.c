/* The affine scan family as cases: names, shape syntax, the one validator. */
#include "core/scan_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/case_check.h"

/*
 * One table of names per kind (scan_case.h lists them), one shape parser
 * for the three syntaxes, and ra_scan_problem_init, which every reader
 * calls.  Everything refused is refused here, with the tensor and the axis
 * or the element named: k or v outside {1,2,4,8,16}, wrong lengths
 * (T of log_values must be T+1), non-finite values.
 */

static const char *const names[3][9] = {
    /* op, in0, in1, out0, out1, cot0, cot1, grad0, grad1 */
    {"scan.linear", "a", "x", "P", "h", "dP", "dh", "da", "dx"},
    {"scan.affine", "A", "Bm", "Abar", "Bbar", "dAbar", "dBbar", "dA", "dBm"},
    {"scan.log", "log_coeffs", "log_values", NULL, "h", NULL, "dh", "dlog_coeffs", "dlog_values"},
};

const char *ra_scan_op_name(ra_scan_kind kind) { return names[kind][0]; }
const char *ra_scan_in_name(ra_scan_kind kind, int j) { return names[kind][1 + j]; }
const char *ra_scan_out_name(ra_scan_kind kind, int j) { return names[kind][3 + j]; }
const char *ra_scan_cot_name(ra_scan_kind kind, int j) { return names[kind][5 + j]; }
const char *ra_scan_grad_name(ra_scan_kind kind, int j) { return names[kind][7 + j]; }

int ra_scan_kind_of(const char *op)
{
    for (int k = 0; op && k < 3; k++)
        if (strcmp(op, names[k][0]) == 0)
            return k;
    return -1;
}

static int in_envelope(int64_t x) { return x == 1 || x == 2 || x == 4 || x == 8 || x == 16; }


ra_status ra_scan_shape_parse(ra_scan_shape *s, ra_scan_kind kind, const char *text)
{
    const int affine = kind == RA_SCAN_AFFINE;
    static const char *const keys_aff[] = {"B", "T", "N", "k", "v"};
    static const char *const keys_ew[] = {"B", "T", "D"};
    const char *const *keys = affine ? keys_aff : keys_ew;
    const int nkeys = affine ? 5 : 3;
    const char *example = affine ? "B=2,T=64,N=4,k=2,v=1" : "B=2,T=64,D=8";
    int64_t val[5];
    int seen[5];
    RA_TRY(ra_shape_kv_parse(val, seen, text, keys, nkeys, example));
    for (int i = 0; i < nkeys; i++)
        if (!seen[i])
            RA_ERRORF(RA_EINVAL, "--shape '%s': missing %s (e.g. %s)", text, keys[i], example);
    for (int i = 3; affine && i < 5; i++)
        if (!in_envelope(val[i]))
            RA_ERRORF(RA_EINVAL, "--shape '%s': %s=%lld is outside the envelope {1,2,4,8,16}", text,
                      keys[i], (long long)val[i]);
    *s = (ra_scan_shape){kind, val[0], val[1], val[2], affine ? val[3] : 1, affine ? val[4] : 1};
    return RA_OK;
}

void ra_scan_shape_format(char *buf, size_t len, const ra_scan_shape *s)
{
    if (s->kind == RA_SCAN_AFFINE)
        snprintf(buf, len, "B=%lld,T=%lld,N=%lld,k=%lld,v=%lld", (long long)s->B, (long long)s->T,
                 (long long)s->N, (long long)s->k, (long long)s->v);
    else
        snprintf(buf, len, "B=%lld,T=%lld,D=%lld", (long long)s->B, (long long)s->T,
                 (long long)s->N);
}

/* dims of [B,T,N,r,c] (affine) or [B,T',D] (element-wise) */
static int dims_of(int64_t *d, const ra_scan_shape *s, int64_t T, int64_t r, int64_t c)
{
    d[0] = s->B, d[1] = T, d[2] = s->N;
    if (s->kind != RA_SCAN_AFFINE)
        return 3;
    d[3] = r, d[4] = c;
    return 5;
}

int ra_scan_in_shape(int64_t *dims, const ra_scan_shape *s, int j)
{
    if (j == 0)
        return dims_of(dims, s, s->T, s->k, s->k);
    return dims_of(dims, s, s->kind == RA_SCAN_LOG ? s->T + 1 : s->T, s->k, s->v);
}

int ra_scan_out_shape(int64_t *dims, const ra_scan_shape *s, int j)
{
    return dims_of(dims, s, s->T, s->k, j == 0 ? s->k : s->v);
}

static int64_t numel(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= d[i];
    return p;
}

int64_t ra_scan_in_numel(const ra_scan_shape *s, int j)
{
    int64_t d[5];
    return numel(d, ra_scan_in_shape(d, s, j));
}

int64_t ra_scan_out_numel(const ra_scan_shape *s, int j)
{
    int64_t d[5];
    return numel(d, ra_scan_out_shape(d, s, j));
}

ra_status ra_scan_problem_init(ra_scan_problem *p, const ra_case *c, unsigned flags,
                               const char *what)
{
    memset(p, 0, sizeof *p);
    if (!what)
        what = "case";
    int kind = ra_scan_kind_of(c->op);
    if (kind < 0)
        RA_ERRORF(RA_EINVAL, "%s: op is '%s', expected scan.linear, scan.affine or scan.log", what,
                  c->op ? c->op : "(none)");
    ra_tensor *in[2];
    for (int j = 0; j < 2; j++)
        RA_TRY(ra_tensors_require(&in[j], &c->tensors, names[kind][1 + j], what));
    const int nd = kind == RA_SCAN_AFFINE ? 5 : 3;
    static const char *const axes5[] = {"B", "T", "N", "k", "k"}, *const axes5v[] = {"B", "T", "N",
                                                                                     "k", "v"};
    static const char *const axes3[] = {"B", "T", "D"}, *const axes3s[] = {"B", "T+1", "D"};
    if (in[0]->ndim != nd)
        RA_ERRORF(RA_EINVAL, "%s: tensor '%s' has %d dims, expected %d %s", what, in[0]->name,
                  in[0]->ndim, nd, nd == 5 ? "[B,T,N,k,k]" : "[B,T,D]");
    if (in[1]->ndim != nd)
        RA_ERRORF(RA_EINVAL, "%s: tensor '%s' has %d dims, expected %d %s", what, in[1]->name,
                  in[1]->ndim, nd, nd == 5 ? "[B,T,N,k,v]" : "[B,T(+1),D]");
    for (int i = 0; i < nd; i++)
        if (in[0]->shape[i] <= 0 || in[1]->shape[i] <= 0)
            RA_ERRORF(RA_EINVAL, "%s: tensors '%s' and '%s' must have no empty axis", what,
                      in[0]->name, in[1]->name);
    ra_scan_shape s = {kind, in[0]->shape[0], in[0]->shape[1], in[0]->shape[2], 1, 1};
    if (kind == RA_SCAN_AFFINE) {
        s.k = in[0]->shape[3], s.v = in[1]->shape[4];
        if (!in_envelope(s.k))
            RA_ERRORF(RA_EINVAL,
                      "%s: tensor '%s' axis 3 (k) is %lld, outside the envelope "
                      "{1,2,4,8,16}",
                      what, in[0]->name, (long long)s.k);
        if (!in_envelope(s.v))
            RA_ERRORF(RA_EINVAL,
                      "%s: tensor '%s' axis 4 (v) is %lld, outside the envelope "
                      "{1,2,4,8,16}",
                      what, in[1]->name, (long long)s.v);
    }
    int64_t d[5];
    ra_scan_in_shape(d, &s, 0);
    RA_TRY(ra_case_check_shape(in[0], nd, d, nd == 5 ? axes5 : axes3, what));
    ra_scan_in_shape(d, &s, 1);
    RA_TRY(ra_case_check_shape(in[1], nd, d,
                               nd == 5 ? axes5v : (kind == RA_SCAN_LOG ? axes3s : axes3), what));
    for (int j = 0; j < 2; j++) {
        const char *name = names[kind][5 + j];
        p->cot[j] = name ? ra_tensors_find(&c->tensors, name) : NULL;
        if (p->cot[j]) {
            ra_scan_out_shape(d, &s, j);
            RA_TRY(ra_case_check_shape(p->cot[j], nd, d, nd == 5 ? (j ? axes5v : axes5) : axes3,
                                       what));
        }
    }
    if ((flags & RA_SCAN_NEED_COTANGENTS) && !p->cot[1])
        RA_ERRORF(RA_ENOTFOUND,
                  "%s: missing tensor '%s' (the output cotangent the backward "
                  "needs)",
                  what, names[kind][6]);
    const ra_tensor *all[] = {in[0], in[1], p->cot[0], p->cot[1]};
    for (size_t i = 0; i < 4; i++)
        if (all[i])
            RA_TRY(ra_case_check_finite(all[i], what));
    p->s = s;
    p->in[0] = in[0], p->in[1] = in[1];
    return RA_OK;
}
