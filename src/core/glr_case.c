/* The gated linear recurrence as a case: dimensions, decay parameter, validation. */
#include "core/glr_case.h"

#include <stdio.h>
#include <string.h>

#include "core/case_check.h"

/*
 * One validator for the reference, the gradient checks, the derivation
 * checks and the CPU variants, so that all of them accept and refuse the
 * same files in the same words (src/core/case_check.h).
 */

static const char *const shape_keys[] = {"B", "T", "H", "S", "D"};
#define SHAPE_EXAMPLE "B=1,T=64,H=2,S=8,D=8"

ra_status ra_glr_shape_parse(ra_glr_shape *s, const char *text)
{
    int64_t val[5];
    int seen[5];
    RA_TRY(ra_shape_kv_parse(val, seen, text, shape_keys, 5, SHAPE_EXAMPLE));
    for (int i = 0; i < 5; i++)
        if (!seen[i])
            RA_ERRORF(RA_EINVAL, "--shape '%s': missing %s (expected e.g. " SHAPE_EXAMPLE ")", text,
                      shape_keys[i]);
    s->B = val[0], s->T = val[1], s->H = val[2], s->S = val[3], s->D = val[4];
    return RA_OK;
}

void ra_glr_shape_format(char *buf, size_t len, const ra_glr_shape *s)
{
    snprintf(buf, len, "B=%lld,T=%lld,H=%lld,S=%lld,D=%lld", (long long)s->B, (long long)s->T,
             (long long)s->H, (long long)s->S, (long long)s->D);
}

static const char *const decay_names[] = {"expneg", "linear"};

ra_status ra_glr_decay_parse(ra_glr_decay *d, const char *text)
{
    for (int i = 0; i < 2; i++)
        if (text && strcmp(text, decay_names[i]) == 0) {
            *d = (ra_glr_decay)i;
            return RA_OK;
        }
    RA_ERRORF(RA_EINVAL, "parameter 'decay': '%s' is neither 'expneg' nor 'linear'",
              text ? text : "");
}

const char *ra_glr_decay_name(ra_glr_decay d) { return decay_names[d == RA_GLR_LINEAR]; }

ra_status ra_glr_problem_init(ra_glr_problem *p, const ra_case *c, unsigned flags, const char *what)
{
    memset(p, 0, sizeof *p);
    if (!what)
        what = "case";
    if (!c->op || strcmp(c->op, "glr") != 0)
        RA_ERRORF(RA_EINVAL, "%s: op is '%s', expected 'glr'", what, c->op ? c->op : "(none)");
    ra_tensor *v, *b, *cc, *g, *A;
    RA_TRY(ra_tensors_require(&v, &c->tensors, "v", what));
    RA_TRY(ra_tensors_require(&b, &c->tensors, "b", what));
    RA_TRY(ra_tensors_require(&cc, &c->tensors, "c", what));
    RA_TRY(ra_tensors_require(&g, &c->tensors, "g", what));
    RA_TRY(ra_tensors_require(&A, &c->tensors, "A_log", what));
    if (v->ndim != 4)
        RA_ERRORF(RA_EINVAL, "%s: tensor 'v' has %d dims, expected 4 [B,T,H,D]", what, v->ndim);
    if (b->ndim != 4)
        RA_ERRORF(RA_EINVAL, "%s: tensor 'b' has %d dims, expected 4 [B,T,H,S]", what, b->ndim);
    ra_glr_shape s = {v->shape[0], v->shape[1], v->shape[2], b->shape[3], v->shape[3]};
    for (int i = 0; i < 4; i++)
        if (v->shape[i] <= 0 || b->shape[i] <= 0)
            RA_ERRORF(RA_EINVAL, "%s: tensors 'v' and 'b' must have no empty axis", what);
    static const char *vd_axes[] = {"B", "T", "H", "D"}, *bs_axes[] = {"B", "T", "H", "S"},
                      *gate_axes[] = {"B", "T", "H"}, *a_axes[] = {"H", "S"};
    const int64_t vd[4] = {s.B, s.T, s.H, s.D}, bs[4] = {s.B, s.T, s.H, s.S},
                  gate[3] = {s.B, s.T, s.H}, aa[2] = {s.H, s.S};
    RA_TRY(ra_case_check_shape(b, 4, bs, bs_axes, what));
    RA_TRY(ra_case_check_shape(cc, 4, bs, bs_axes, what));
    RA_TRY(ra_case_check_shape(g, 3, gate, gate_axes, what));
    RA_TRY(ra_case_check_shape(A, 2, aa, a_axes, what));
    p->do_ = ra_tensors_find(&c->tensors, "do");
    if ((flags & RA_GLR_NEED_COTANGENTS) && !p->do_)
        RA_ERRORF(RA_ENOTFOUND, "%s: missing tensor 'do' (the output cotangent the backward needs)",
                  what);
    if (p->do_)
        RA_TRY(ra_case_check_shape(p->do_, 4, vd, vd_axes, what));
    const ra_tensor *all[] = {v, b, cc, g, A, p->do_};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            RA_TRY(ra_case_check_finite(all[i], what));
    const char *decay = ra_case_param(c, "decay");
    p->decay = RA_GLR_EXPNEG;
    if (decay && strcmp(decay, decay_names[0]) != 0) {
        if (strcmp(decay, decay_names[1]) != 0)
            RA_ERRORF(RA_EINVAL, "%s: parameter 'decay' is '%s', expected 'expneg' or 'linear'",
                      what, decay);
        p->decay = RA_GLR_LINEAR;
    }
    p->s = s;
    p->v = v, p->b = b, p->c = cc, p->g = g, p->A_log = A;
    return RA_OK;
}
