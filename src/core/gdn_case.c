/* The gated delta rule as a case: dimensions, parameters, validation. */
#include "core/gdn_case.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/case_check.h"

/*
 * One validation routine for every consumer: a reference, a CPU variant and
 * the audit must agree on which files are gdn cases, and report the first
 * inconsistency in the same words.
 */

#define SHAPE_MAX_DIM ((int64_t)1 << 31)

ra_status ra_gdn_shape_parse(ra_gdn_shape *s, const char *text)
{
    static const char *keys[] = {"B", "T", "Hk", "Hv", "K", "V", "H", "D"};
    int64_t val[8] = {0};
    int seen[8] = {0};
    if (!text || !*text)
        RA_ERROR("--shape: empty (expected e.g. B=1,T=64,Hk=1,Hv=2,K=16,V=16)", RA_EINVAL);
    const char *p = text;
    while (*p) {
        const char *eq = strchr(p, '=');
        const char *comma = strchr(p, ',');
        if (!comma)
            comma = p + strlen(p);
        if (!eq || eq > comma)
            RA_ERRORF(RA_EINVAL, "--shape '%s': field '%.*s' is not KEY=VALUE", text,
                      (int)(comma - p), p);
        int k = -1;
        for (int i = 0; i < 8; i++)
            if ((size_t)(eq - p) == strlen(keys[i]) && strncmp(p, keys[i], (size_t)(eq - p)) == 0)
                k = i;
        if (k < 0)
            RA_ERRORF(RA_EINVAL, "--shape '%s': unknown key '%.*s' (B, T, Hk, Hv, H, K, V, D)",
                      text, (int)(eq - p), p);
        if (seen[k])
            RA_ERRORF(RA_EINVAL, "--shape '%s': key '%s' given twice", text, keys[k]);
        seen[k] = 1;
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || end != comma || errno == ERANGE || v <= 0 || v > SHAPE_MAX_DIM)
            RA_ERRORF(RA_EINVAL, "--shape '%s': %s must be a positive integer, got '%.*s'", text,
                      keys[k], (int)(comma - eq - 1), eq + 1);
        val[k] = v;
        p = *comma ? comma + 1 : comma;
        if (*comma && !*p)
            RA_ERRORF(RA_EINVAL, "--shape '%s': trailing comma", text);
    }
    if (seen[6] && (seen[2] || seen[3]))
        RA_ERRORF(RA_EINVAL, "--shape '%s': give H or Hk/Hv, not both", text);
    if (seen[7] && (seen[4] || seen[5]))
        RA_ERRORF(RA_EINVAL, "--shape '%s': give D or K/V, not both", text);
    if (seen[6])
        val[2] = val[3] = val[6], seen[2] = seen[3] = 1;
    if (seen[7])
        val[4] = val[5] = val[7], seen[4] = seen[5] = 1;
    for (int i = 0; i < 6; i++)
        if (!seen[i])
            RA_ERRORF(RA_EINVAL, "--shape '%s': missing %s", text, keys[i]);
    if (val[3] % val[2] != 0)
        RA_ERRORF(RA_EINVAL, "--shape '%s': Hv=%lld is not a multiple of Hk=%lld", text,
                  (long long)val[3], (long long)val[2]);
    s->B = val[0], s->T = val[1], s->Hk = val[2], s->Hv = val[3], s->K = val[4], s->V = val[5];
    return RA_OK;
}

void ra_gdn_shape_format(char *buf, size_t len, const ra_gdn_shape *s)
{
    snprintf(buf, len, "B=%lld,T=%lld,Hk=%lld,Hv=%lld,K=%lld,V=%lld", (long long)s->B,
             (long long)s->T, (long long)s->Hk, (long long)s->Hv, (long long)s->K,
             (long long)s->V);
}

ra_status ra_gdn_problem_init(ra_gdn_problem *p, const ra_case *c, unsigned flags,
                              const char *what)
{
    memset(p, 0, sizeof *p);
    if (!what)
        what = "case";
    if (!c->op || strcmp(c->op, "gdn") != 0)
        RA_ERRORF(RA_EINVAL, "%s: op is '%s', expected 'gdn'", what, c->op ? c->op : "(none)");
    ra_tensor *q, *k, *v, *g, *beta;
    RA_TRY(ra_tensors_require(&q, &c->tensors, "q", what));
    RA_TRY(ra_tensors_require(&k, &c->tensors, "k", what));
    RA_TRY(ra_tensors_require(&v, &c->tensors, "v", what));
    RA_TRY(ra_tensors_require(&g, &c->tensors, "g", what));
    RA_TRY(ra_tensors_require(&beta, &c->tensors, "beta", what));
    if (q->ndim != 4)
        RA_ERRORF(RA_EINVAL, "%s: tensor 'q' has %d dims, expected 4 [B,T,Hk,K]", what, q->ndim);
    if (v->ndim != 4)
        RA_ERRORF(RA_EINVAL, "%s: tensor 'v' has %d dims, expected 4 [B,T,Hv,V]", what, v->ndim);
    ra_gdn_shape s = {q->shape[0], q->shape[1], q->shape[2], v->shape[2], q->shape[3], v->shape[3]};
    for (int i = 0; i < 4; i++)
        if (q->shape[i] <= 0 || v->shape[i] <= 0)
            RA_ERRORF(RA_EINVAL, "%s: tensors 'q' and 'v' must have no empty axis", what);
    static const char *qk_axes[] = {"B", "T", "Hk", "K"}, *v_axes[] = {"B", "T", "Hv", "V"},
                      *gate_axes[] = {"B", "T", "Hv"}, *state_axes[] = {"B", "Hv", "K", "V"};
    const int64_t qk[4] = {s.B, s.T, s.Hk, s.K}, vv[4] = {s.B, s.T, s.Hv, s.V},
                  gate[3] = {s.B, s.T, s.Hv}, state[4] = {s.B, s.Hv, s.K, s.V};
    RA_TRY(ra_case_check_shape(k, 4, qk, qk_axes, what));
    RA_TRY(ra_case_check_shape(v, 4, vv, v_axes, what));
    if (s.Hv % s.Hk != 0)
        RA_ERRORF(RA_EINVAL, "%s: Hv=%lld (tensor 'v' axis 2) is not a multiple of Hk=%lld (tensor 'q' axis 2)",
                  what, (long long)s.Hv, (long long)s.Hk);
    RA_TRY(ra_case_check_shape(g, 3, gate, gate_axes, what));
    RA_TRY(ra_case_check_shape(beta, 3, gate, gate_axes, what));
    p->h0 = ra_tensors_find(&c->tensors, "h0");
    if (p->h0)
        RA_TRY(ra_case_check_shape(p->h0, 4, state, state_axes, what));
    p->do_ = ra_tensors_find(&c->tensors, "do");
    p->dht = ra_tensors_find(&c->tensors, "dht");
    if ((flags & RA_GDN_NEED_COTANGENTS) && !p->do_)
        RA_ERRORF(RA_ENOTFOUND, "%s: missing tensor 'do' (the output cotangent the backward needs)",
                  what);
    if (p->do_)
        RA_TRY(ra_case_check_shape(p->do_, 4, vv, v_axes, what));
    if (p->dht)
        RA_TRY(ra_case_check_shape(p->dht, 4, state, state_axes, what));
    const ra_tensor *all[] = {q, k, v, g, beta, p->h0, p->do_, p->dht};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            RA_TRY(ra_case_check_finite(all[i], what));

    RA_TRY(ra_case_param_bool(&p->l2norm, c, "l2norm", 0));
    RA_TRY(ra_case_param_double(&p->scale, c, "scale", 1.0 / sqrt((double)s.K)));
    RA_TRY(ra_case_param_double(&p->l2eps, c, "l2eps", 1e-6));
    if (p->l2eps < 0)
        RA_ERRORF(RA_EINVAL, "%s: parameter 'l2eps' must be >= 0, got %g", what, p->l2eps);
    p->scale_text = ra_case_param(c, "scale");
    p->l2eps_text = ra_case_param(c, "l2eps");
    p->s = s;
    p->q = q, p->k = k, p->v = v, p->g = g, p->beta = beta;
    return RA_OK;
}
