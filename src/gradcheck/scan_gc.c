/* The scan family's gradient-check hooks: its MPFR reference seen by the FD engine. */
#include "gradcheck/scan_gc.h"

#include <stdlib.h>
#include <string.h>

#include "core/scan_case.h"
#include "ref/scan.h"

/*
 * Inputs, in row order: the two inputs of the kind (a, x / A, Bm /
 * log_coeffs, log_values); outputs out[0] (not for scan.log) and out[1]
 * with their cotangents: L = <dP, P> + <dh, h> (and likewise).
 *
 * Element-wise: an input element feeds one lane, and L is additive over
 * lanes, so the loss of a perturbed element is that lane's share
 * (ra_scan_lane_loss with the single-element offset of ra_scan_in).
 * Directions use ra_scan_in's step/dir and the whole forward.
 */

typedef struct scan_gc {
    ra_scan_in in;
    double *buf[4];
    int nout;
    int out_slot[2]; /* layout output -> y index */
} scan_gc;

typedef struct scan_gc_ws {
    ra_scan_ws *w;
} scan_gc_ws;

static void scan_gc_release(void *state)
{
    scan_gc *g = state;
    if (!g)
        return;
    ra_scan_in_free(g->buf);
    free(g);
}

static ra_status scan_gc_prepare(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                                 const char *what)
{
    *state = NULL;
    ra_scan_problem p;
    RA_TRY(ra_scan_problem_init(&p, c, RA_SCAN_NEED_COTANGENTS, what));
    if (prec < 53)
        RA_ERRORF(RA_EINVAL, "precision %ld bits: the scan reference needs at least 53",
                  (long)prec);
    scan_gc *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = ra_scan_in_init(&g->in, g->buf, &p);
    if (st != RA_OK) {
        free(g);
        return st;
    }
    const ra_scan_shape *s = &p.s;
    memset(io, 0, sizeof *io);
    for (int j = 0; j < 2; j++) {
        ra_gc_tensor *t = &io->in[io->nin++];
        strcpy(t->name, ra_scan_in_name(s->kind, j));
        t->n = ra_scan_in_numel(s, j);
    }
    for (int j = 0; j < 2; j++) {
        if (!ra_scan_out_name(s->kind, j))
            continue;
        ra_gc_tensor *t = &io->out[io->nout];
        g->out_slot[io->nout++] = j;
        strcpy(t->name, ra_scan_out_name(s->kind, j));
        t->n = ra_scan_out_numel(s, j);
        t->cot = g->in.x[2 + j];
    }
    g->nout = io->nout;
    *state = g;
    return RA_OK;
}

static ra_status scan_gc_set_cotangents(void *state, const double *const *cot)
{
    scan_gc *g = state;
    for (int o = 0; o < g->nout; o++)
        g->in.x[2 + g->out_slot[o]] = cot[o]; /* the case's copies stay owned by g->buf */
    return RA_OK;
}

static ra_status scan_gc_backward(ra_mparr *grads, const void *state, mpfr_prec_t prec, int threads)
{
    const scan_gc *g = state;
    ra_scan_out out;
    RA_TRY(ra_scan_run(&out, &g->in, prec, 1, threads, NULL));
    for (int j = 0; j < 2; j++) {
        grads[j] = out.g[j];
        memset(&out.g[j], 0, sizeof out.g[j]); /* moved */
    }
    ra_scan_out_clear(&out);
    return RA_OK;
}

static ra_status scan_gc_along(ra_mparr *outs, const void *state, const double *const *dir,
                               mpfr_srcptr t, mpfr_prec_t prec, int threads)
{
    const scan_gc *g = state;
    ra_scan_in in = g->in;
    in.dir[0] = dir[0], in.dir[1] = dir[1];
    in.step = t;
    ra_scan_out out;
    RA_TRY(ra_scan_run(&out, &in, prec, 0, threads, NULL));
    for (int o = 0; o < g->nout; o++) {
        outs[o] = out.y[g->out_slot[o]];
        memset(&out.y[g->out_slot[o]], 0, sizeof out.y[0]);
    }
    ra_scan_out_clear(&out);
    return RA_OK;
}

static void scan_gc_ws_free(void *ws)
{
    scan_gc_ws *e = ws;
    ra_scan_ws_free(e->w);
    free(e);
}

static ra_status scan_gc_ws_new(void **ws, const void *state, mpfr_prec_t prec)
{
    const scan_gc *g = state;
    scan_gc_ws *e = calloc(1, sizeof *e);
    if (!e)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = ra_scan_ws_new(&e->w, &g->in.s, prec);
    if (st != RA_OK) {
        free(e);
        return st;
    }
    *ws = e;
    return RA_OK;
}

static ra_status scan_gc_loss_one(mpfr_ptr loss, void *ws, const void *state, int a, int64_t i,
                                  mpfr_srcptr delta, char *msg, size_t msglen)
{
    const scan_gc *g = state;
    scan_gc_ws *e = ws;
    ra_scan_in pin = g->in;
    pin.one_arr = a;
    pin.one_idx = i;
    pin.one_delta = delta;
    return ra_scan_lane_loss(loss, e->w, &pin, ra_scan_element_lane(&pin.s, a, i), msg, msglen);
}

#define GC_ROW(op)                                                                                 \
    {                                                                                              \
        .name = op, .prepare = scan_gc_prepare, .set_cotangents = scan_gc_set_cotangents,          \
        .backward = scan_gc_backward, .along = scan_gc_along, .ws_new = scan_gc_ws_new,            \
        .ws_free = scan_gc_ws_free, .loss_one = scan_gc_loss_one, .release = scan_gc_release       \
    }

const ra_gc_op ra_gc_op_scan_linear = GC_ROW("scan.linear");
const ra_gc_op ra_gc_op_scan_affine = GC_ROW("scan.affine");
const ra_gc_op ra_gc_op_scan_log = GC_ROW("scan.log");
