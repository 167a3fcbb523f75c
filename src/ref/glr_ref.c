/* The glr row of the reference table: validation, layout and runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/glr_case.h"
#include "ref/glr.h"
#include "ref/refop.h"

/*
 * Inputs are validated by ra_glr_problem_init and widened once to doubles.
 * Outputs, in this order: o, then with gradients (the case has `do` and
 * grads is asked for) dv, db, dc, dg, dA_log.
 */

typedef struct glr_state {
    ra_glr_data d;
    int grads;
} glr_state;

static void set_out(ra_ref_out *o, const char *name, int ndim, const int64_t *shape)
{
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        o->shape[i] = shape[i];
}

static void glr_layout(ra_ref_outs *l, const ra_glr_shape *s, int grads)
{
    memset(l, 0, sizeof *l);
    const int64_t vd[4] = {s->B, s->T, s->H, s->D}, bs[4] = {s->B, s->T, s->H, s->S},
                  gate[3] = {s->B, s->T, s->H}, aa[2] = {s->H, s->S};
    set_out(&l->t[l->n++], "o", 4, vd);
    if (!grads)
        return;
    set_out(&l->t[l->n++], "dv", 4, vd);
    set_out(&l->t[l->n++], "db", 4, bs);
    set_out(&l->t[l->n++], "dc", 4, bs);
    set_out(&l->t[l->n++], "dg", 3, gate);
    set_out(&l->t[l->n++], "dA_log", 2, aa);
}

static void glr_release(void *state)
{
    glr_state *g = state;
    if (!g)
        return;
    ra_glr_data_clear(&g->d);
    free(g);
}

static ra_status glr_prepare(void **state, ra_ref_outs *layout, const ra_case *c, int grads,
                             const char *what)
{
    *state = NULL;
    ra_glr_problem p;
    RA_TRY(ra_glr_problem_init(&p, c, 0, what));
    glr_state *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    g->grads = grads && p.do_ != NULL;
    ra_status st = ra_glr_data_init(&g->d, &p);
    if (st != RA_OK) {
        glr_release(g);
        return st;
    }
    glr_layout(layout, &p.s, g->grads);
    *state = g;
    return RA_OK;
}

static int64_t glr_units(const void *state)
{
    const glr_state *g = state;
    return g->d.in.s.B * g->d.in.s.H;
}

static ra_status glr_run_op(ra_ref_outs *outs, const mpfr_prec_t *precs, int nprec,
                            const void *state, int threads, ra_progress *prog)
{
    const glr_state *g = state;
    ra_glr_out r[RA_REF_MAX_PRECS];
    if (nprec < 1 || nprec > RA_REF_MAX_PRECS)
        RA_ERRORF(RA_EINTERNAL, "glr reference: %d precisions in one run", nprec);
    RA_TRY(ra_glr_run_multi(r, precs, nprec, &g->d.in, g->grads, threads, prog));
    for (int k = 0; k < nprec; k++) {
        glr_layout(&outs[k], &g->d.in.s, g->grads);
        ra_mparr *src[] = {&r[k].o, &r[k].dv, &r[k].db, &r[k].dc, &r[k].dg, &r[k].dA_log};
        for (size_t i = 0; i < outs[k].n; i++) {
            outs[k].t[i].a = *src[i];
            memset(src[i], 0, sizeof *src[i]); /* moved */
        }
        ra_glr_out_clear(&r[k]);
    }
    return RA_OK;
}

static void glr_op_count(const void *state, double *fwd, double *bwd)
{
    const glr_state *g = state;
    ra_glr_op_count(&g->d.in.s, g->d.in.decay, fwd, bwd);
    if (!g->grads)
        *bwd = 0;
}

const ra_ref_op ra_ref_op_glr = {"glr",      glr_prepare, glr_units,
                                 glr_run_op, glr_release, glr_op_count};
