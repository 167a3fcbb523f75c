/* The bigdn and bigdn.core rows of the reference table: validation, layout and runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigdn_case.h"
#include "ref/bigdn.h"
#include "ref/refop.h"

/*
 * Inputs are validated by ra_bigdn_problem_init and widened once to
 * doubles.  Outputs, in this order: out, then with gradients (the case
 * has dout and grads is asked for) "d" + every differentiable input in
 * input order (docs/bigdn.md).  One set of hooks serves both rows: the
 * member is the case's op.
 */

typedef struct bigdn_state {
    ra_bigdn_data d;
    int grads;
} bigdn_state;

static void set_out(ra_ref_out *o, const char *name, int ndim, const int64_t *shape)
{
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        o->shape[i] = shape[i];
}

static void layout(ra_ref_outs *l, ra_bigdn_kind kind, const ra_bigdn_shape *s, int grads)
{
    memset(l, 0, sizeof *l);
    const int64_t N = s->F * s->S;
    const int64_t tok[4] = {s->B, N, s->H, s->D}, qkv[5] = {s->B, N, 3, s->H, s->D},
                  bsh[4] = {s->B, s->H, s->F, s->S}, gsh[3] = {s->B, s->H, s->F},
                  wsh[1] = {s->H * s->D};
    set_out(&l->t[l->n++], "out", 4, tok);
    if (!grads)
        return;
    for (int j = 0; j < ra_bigdn_ndiff(kind); j++) {
        char name[32];
        snprintf(name, sizeof name, "d%s", ra_bigdn_in_name(kind, j));
        if (kind == RA_BIGDN_FULL) {
            const int64_t *sh[] = {qkv, bsh, gsh, wsh, wsh};
            static const int nd[] = {5, 4, 3, 1, 1};
            set_out(&l->t[l->n++], name, nd[j], sh[j]);
        } else {
            const int64_t *sh = j == RA_BIGDN_CBETA ? bsh : j == RA_BIGDN_CDECAY ? gsh : tok;
            set_out(&l->t[l->n++], name,
                    j == RA_BIGDN_CBETA    ? 4
                    : j == RA_BIGDN_CDECAY ? 3
                                           : 4,
                    sh);
        }
    }
}

static void release(void *state)
{
    bigdn_state *g = state;
    if (!g)
        return;
    ra_bigdn_data_clear(&g->d);
    free(g);
}

static ra_status prepare(void **state, ra_ref_outs *l, const ra_case *c, int grads,
                         const char *what)
{
    *state = NULL;
    ra_bigdn_problem p;
    RA_TRY(ra_bigdn_problem_init(&p, c, 0, what));
    bigdn_state *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    g->grads = grads && p.dout != NULL;
    ra_status st = ra_bigdn_data_init(&g->d, &p);
    if (st != RA_OK) {
        release(g);
        return st;
    }
    layout(l, p.kind, &p.s, g->grads);
    *state = g;
    return RA_OK;
}

static int64_t units(const void *state)
{
    const bigdn_state *g = state;
    return g->d.in.s.B * g->d.in.s.H;
}

static ra_status run(ra_ref_outs *outs, const mpfr_prec_t *precs, int nprec, const void *state,
                     int threads, ra_progress *prog)
{
    const bigdn_state *g = state;
    ra_bigdn_out r[RA_REF_MAX_PRECS];
    if (nprec < 1 || nprec > RA_REF_MAX_PRECS)
        RA_ERRORF(RA_EINTERNAL, "bigdn reference: %d precisions in one run", nprec);
    RA_TRY(ra_bigdn_run_multi(r, precs, nprec, &g->d.in, g->grads, threads, prog));
    for (int k = 0; k < nprec; k++) {
        layout(&outs[k], g->d.in.kind, &g->d.in.s, g->grads);
        for (size_t i = 0; i < outs[k].n; i++) {
            ra_mparr *src = i == 0 ? &r[k].out : &r[k].g[i - 1];
            outs[k].t[i].a = *src;
            memset(src, 0, sizeof *src); /* moved */
        }
        ra_bigdn_out_clear(&r[k]);
    }
    return RA_OK;
}

static void op_count(const void *state, double *fwd, double *bwd)
{
    const bigdn_state *g = state;
    ra_bigdn_op_count(&g->d.in, fwd, bwd);
    if (!g->grads)
        *bwd = 0;
}

const ra_ref_op ra_ref_op_bigdn = {"bigdn", prepare, units, run, release, op_count};
const ra_ref_op ra_ref_op_bigdn_core = {"bigdn.core", prepare, units, run, release, op_count};
