/* The scan family's rows of the reference table: validation, layout and runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scan_case.h"
#include "ref/refop.h"
#include "ref/scan.h"

/*
 * Inputs are validated by ra_scan_problem_init and widened once to
 * doubles.  Outputs, in this order: out[0] (not for scan.log), out[1], and
 * with gradients (the case has the cotangent of out[1] and grads is asked
 * for) the gradients of both inputs.  One implementation serves the three
 * rows; each row fixes the kind it accepts.
 */

typedef struct scan_state {
    ra_scan_in in;
    double *buf[4];
    int grads;
} scan_state;

static void set_out(ra_ref_out *o, const char *name, int ndim, const int64_t *d)
{
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        o->shape[i] = d[i];
}

static void scan_layout(ra_ref_outs *l, const ra_scan_shape *s, int grads)
{
    int64_t d[5];
    memset(l, 0, sizeof *l);
    for (int j = 0; j < 2; j++)
        if (ra_scan_out_name(s->kind, j)) {
            int nd = ra_scan_out_shape(d, s, j);
            set_out(&l->t[l->n++], ra_scan_out_name(s->kind, j), nd, d);
        }
    for (int j = 0; grads && j < 2; j++) {
        int nd = ra_scan_in_shape(d, s, j);
        set_out(&l->t[l->n++], ra_scan_grad_name(s->kind, j), nd, d);
    }
}

static ra_status scan_prepare(void **state, ra_ref_outs *layout, const ra_case *c, int grads,
                              const char *what)
{
    *state = NULL;
    ra_scan_problem p;
    RA_TRY(ra_scan_problem_init(&p, c, 0, what));
    scan_state *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    g->grads = grads && p.cot[1] != NULL;
    ra_status st = ra_scan_in_init(&g->in, g->buf, &p);
    if (st != RA_OK) {
        free(g);
        return st;
    }
    scan_layout(layout, &p.s, g->grads);
    *state = g;
    return RA_OK;
}

static int64_t scan_units(const void *state)
{
    const scan_state *g = state;
    return g->in.s.B * g->in.s.N;
}

static ra_status scan_run_op(ra_ref_outs *outs, const mpfr_prec_t *precs, int nprec,
                             const void *state, int threads, ra_progress *prog)
{
    const scan_state *g = state;
    ra_scan_out r[RA_SCAN_MAX_PRECS];
    RA_TRY(ra_scan_run_multi(r, precs, nprec, &g->in, g->grads, threads, prog));
    for (int k = 0; k < nprec; k++) {
        scan_layout(&outs[k], &g->in.s, g->grads);
        ra_mparr *src[4] = {&r[k].y[0], &r[k].y[1], &r[k].g[0], &r[k].g[1]};
        size_t i = 0;
        for (int a = g->in.s.kind == RA_SCAN_LOG ? 1 : 0; a < 4 && i < outs[k].n; a++, i++) {
            outs[k].t[i].a = *src[a];
            memset(src[a], 0, sizeof *src[a]); /* moved */
        }
        ra_scan_out_clear(&r[k]);
    }
    return RA_OK;
}

static void scan_release(void *state)
{
    scan_state *g = state;
    if (!g)
        return;
    ra_scan_in_free(g->buf);
    free(g);
}

static void scan_op_count(const void *state, double *fwd, double *bwd)
{
    const scan_state *g = state;
    ra_scan_op_count(&g->in.s, fwd, bwd);
    if (!g->grads)
        *bwd = 0;
}

const ra_ref_op ra_ref_op_scan_linear = {"scan.linear", scan_prepare, scan_units,
                                         scan_run_op,   scan_release, scan_op_count};
const ra_ref_op ra_ref_op_scan_affine = {"scan.affine", scan_prepare, scan_units,
                                         scan_run_op,   scan_release, scan_op_count};
const ra_ref_op ra_ref_op_scan_log = {"scan.log",  scan_prepare, scan_units,
                                      scan_run_op, scan_release, scan_op_count};
