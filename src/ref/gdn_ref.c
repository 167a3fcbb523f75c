/* The gdn row of the reference table: validation, layout and runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gdn_case.h"
#include "ref/gdn.h"
#include "ref/refop.h"

/*
 * Inputs are validated by ra_gdn_problem_init (the one validator every gdn
 * reader shares: shapes, Hv multiple of Hk, NaN/Inf named by tensor and
 * index, parameters) and widened once to doubles.  Outputs, in this order:
 * o, ht, then with gradients (the case has `do` and grads is asked for)
 * dq, dk, dv, dg, dbeta, and dh0 when the case has h0 (a variant's
 * backward gives dh0 only then, plugin.h).
 */

typedef struct gdn_state {
    ra_gdn_data d;
    int grads;
} gdn_state;

static void set_out(ra_ref_out *o, const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2,
                    int64_t d3)
{
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->ndim = ndim;
    const int64_t d[4] = {d0, d1, d2, d3};
    for (int i = 0; i < ndim; i++)
        o->shape[i] = d[i];
}

static void gdn_layout(ra_ref_outs *l, const ra_gdn_shape *s, int grads, int h0)
{
    memset(l, 0, sizeof *l);
    set_out(&l->t[l->n++], "o", 4, s->B, s->T, s->Hv, s->V);
    set_out(&l->t[l->n++], "ht", 4, s->B, s->Hv, s->K, s->V);
    if (!grads)
        return;
    set_out(&l->t[l->n++], "dq", 4, s->B, s->T, s->Hk, s->K);
    set_out(&l->t[l->n++], "dk", 4, s->B, s->T, s->Hk, s->K);
    set_out(&l->t[l->n++], "dv", 4, s->B, s->T, s->Hv, s->V);
    set_out(&l->t[l->n++], "dg", 3, s->B, s->T, s->Hv, 0);
    set_out(&l->t[l->n++], "dbeta", 3, s->B, s->T, s->Hv, 0);
    if (h0)
        set_out(&l->t[l->n++], "dh0", 4, s->B, s->Hv, s->K, s->V);
}

static ra_status gdn_prepare(void **state, ra_ref_outs *layout, const ra_case *c, int grads,
                             const char *what)
{
    *state = NULL;
    ra_gdn_problem p;
    RA_TRY(ra_gdn_problem_init(&p, c, 0, what));
    gdn_state *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    g->grads = grads && p.do_ != NULL;
    ra_status st = ra_gdn_data_init(&g->d, &p);
    if (st == RA_OK)
        st = ra_gdn_in_check(&g->d.in, 53, g->grads);
    if (st != RA_OK) {
        ra_gdn_data_clear(&g->d);
        free(g);
        return st;
    }
    gdn_layout(layout, &p.s, g->grads, p.h0 != NULL);
    *state = g;
    return RA_OK;
}

static int64_t gdn_units(const void *state)
{
    const gdn_state *g = state;
    return g->d.in.s.B * g->d.in.s.Hv;
}

static ra_status gdn_run_op(ra_ref_outs *outs, const mpfr_prec_t *precs, int nprec,
                            const void *state, int threads, ra_progress *prog)
{
    const gdn_state *g = state;
    ra_gdn_out r[RA_REF_MAX_PRECS];
    if (nprec < 1 || nprec > RA_REF_MAX_PRECS)
        RA_ERRORF(RA_EINTERNAL, "gdn reference: %d precisions in one run", nprec);
    RA_TRY(ra_gdn_run_multi(r, precs, nprec, &g->d.in, g->grads, threads, prog));
    for (int k = 0; k < nprec; k++) {
        gdn_layout(&outs[k], &g->d.in.s, g->grads, g->d.in.x[RA_GDN_H0] != NULL);
        ra_mparr *src[] = {&r[k].o,  &r[k].ht, &r[k].dq,    &r[k].dk,
                           &r[k].dv, &r[k].dg, &r[k].dbeta, &r[k].dh0};
        for (size_t i = 0; i < outs[k].n; i++) {
            outs[k].t[i].a = *src[i];
            memset(src[i], 0, sizeof *src[i]); /* moved */
        }
        ra_gdn_out_clear(&r[k]);
    }
    return RA_OK;
}

static void gdn_release(void *state)
{
    gdn_state *g = state;
    if (!g)
        return;
    ra_gdn_data_clear(&g->d);
    free(g);
}

static void gdn_op_count(const void *state, double *fwd, double *bwd)
{
    const gdn_state *g = state;
    ra_gdn_op_count(&g->d.in.s, g->d.in.l2norm, g->d.in.x[RA_GDN_DHT] != NULL, 0, fwd, bwd);
    if (!g->grads)
        *bwd = 0;
}

const ra_ref_op ra_ref_op_gdn = {"gdn",       gdn_prepare, gdn_units, gdn_run_op,
                                 gdn_release, gdn_op_count};
