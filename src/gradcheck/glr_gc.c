/* The gated linear recurrence's gradient-check hooks: its MPFR reference seen by the FD engine. */
#include "gradcheck/glr_gc.h"

#include <stdlib.h>
#include <string.h>

#include "core/glr_case.h"
#include "ref/glr.h"

/*
 * Inputs, in row order: v, b, c, g, A_log (the first RA_GLR_NDIFF arrays
 * of src/ref/glr.h, so a layout index is the array index), and for
 * ra_gc_op_glr_state also hs; output o with cotangent do: L = <do, o>.
 * Element-wise: an element of A_log[h, s] feeds the heads (b, h) of every
 * batch, any other element one head; the loss of a perturbed element is
 * summed over those heads in increasing b, each run by ra_glr_head with
 * the single-element offset of ra_glr_in.  Directions use ra_glr_in's
 * step/dir and the whole forward (ra_glr_run).
 */

typedef struct glr_gc {
    ra_glr_data d;
    int nin;
} glr_gc;

typedef struct glr_gc_ws {
    ra_glr_ws *w;
    mpfr_t lh;
} glr_gc_ws;

static void glr_gc_release(void *state)
{
    glr_gc *g = state;
    if (!g)
        return;
    ra_glr_data_clear(&g->d);
    free(g);
}

static ra_status prepare(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                         const char *what, int nin)
{
    *state = NULL;
    if (prec < 53)
        RA_ERRORF(RA_EINVAL, "gradcheck glr: precision %ld bits is below 53", (long)prec);
    ra_glr_problem p;
    RA_TRY(ra_glr_problem_init(&p, c, RA_GLR_NEED_COTANGENTS, what));
    glr_gc *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    g->nin = nin;
    ra_status st = ra_glr_data_init(&g->d, &p);
    if (st != RA_OK) {
        glr_gc_release(g);
        return st;
    }
    memset(io, 0, sizeof *io);
    for (int a = 0; a < nin; a++) {
        ra_gc_tensor *t = &io->in[io->nin++];
        strcpy(t->name, ra_glr_arr_names[a]);
        t->n = ra_glr_arr_numel(&p.s, a);
    }
    ra_gc_tensor *o = &io->out[io->nout++];
    strcpy(o->name, "o");
    o->n = ra_glr_arr_numel(&p.s, RA_GLR_V);
    o->cot = g->d.in.x[RA_GLR_DO];
    *state = g;
    return RA_OK;
}

static ra_status glr_gc_prepare(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                                const char *what)
{
    return prepare(state, io, c, prec, what, RA_GLR_NDIFF);
}

static ra_status glr_gc_prepare_state(void **state, ra_gc_layout *io, const ra_case *c,
                                      mpfr_prec_t prec, const char *what)
{
    return prepare(state, io, c, prec, what, RA_GLR_NPERT);
}

static ra_status glr_gc_set_cotangents(void *state, const double *const *cot)
{
    glr_gc *g = state;
    g->d.in.x[RA_GLR_DO] = cot[0]; /* the case's copy stays owned by g->d.buf */
    return RA_OK;
}

static ra_status glr_gc_backward(ra_mparr *grads, const void *state, mpfr_prec_t prec, int threads)
{
    const glr_gc *g = state;
    ra_glr_out out;
    RA_TRY(ra_glr_run(&out, &g->d.in, prec, 1, threads, NULL));
    ra_mparr *src[RA_GLR_NDIFF] = {&out.dv, &out.db, &out.dc, &out.dg, &out.dA_log};
    for (int a = 0; a < RA_GLR_NDIFF; a++) {
        grads[a] = *src[a];
        memset(src[a], 0, sizeof *src[a]); /* moved */
    }
    ra_glr_out_clear(&out);
    return RA_OK;
}

static ra_status glr_gc_along(ra_mparr *outs, const void *state, const double *const *dir,
                              mpfr_srcptr t, mpfr_prec_t prec, int threads)
{
    const glr_gc *g = state;
    ra_glr_in in = g->d.in;
    for (int a = 0; a < g->nin; a++)
        in.dir[a] = dir[a];
    in.step = t;
    ra_glr_out out;
    RA_TRY(ra_glr_run(&out, &in, prec, 0, threads, NULL));
    outs[0] = out.o;
    memset(&out.o, 0, sizeof out.o);
    ra_glr_out_clear(&out);
    return RA_OK;
}

static void glr_gc_ws_free(void *ws)
{
    glr_gc_ws *e = ws;
    ra_glr_ws_free(e->w);
    mpfr_clear(e->lh);
    free(e);
}

static ra_status glr_gc_ws_new(void **ws, const void *state, mpfr_prec_t prec)
{
    const glr_gc *g = state;
    glr_gc_ws *e = calloc(1, sizeof *e);
    if (!e)
        RA_ERROR("out of memory", RA_ENOMEM);
    mpfr_init2(e->lh, prec);
    ra_status st = ra_glr_ws_new(&e->w, &g->d.in.s, prec, 0, 0);
    if (st != RA_OK) {
        glr_gc_ws_free(e);
        return st;
    }
    *ws = e;
    return RA_OK;
}

static ra_status glr_gc_loss_one(mpfr_ptr loss, void *ws, const void *state, int a, int64_t i,
                                 mpfr_srcptr delta, char *msg, size_t msglen)
{
    const glr_gc *g = state;
    const ra_glr_shape *s = &g->d.in.s;
    glr_gc_ws *e = ws;
    ra_glr_in pin = g->d.in;
    pin.one_arr = a;
    pin.one_idx = i;
    pin.one_delta = delta;
    int64_t b0, b1, h;
    switch (a) {
    case RA_GLR_ALOG:
        b0 = 0, b1 = s->B, h = i / s->S;
        break;
    case RA_GLR_V:
        b0 = i / (s->T * s->H * s->D), h = i / s->D % s->H, b1 = b0 + 1;
        break;
    case RA_GLR_B:
    case RA_GLR_C:
        b0 = i / (s->T * s->H * s->S), h = i / s->S % s->H, b1 = b0 + 1;
        break;
    case RA_GLR_G:
        b0 = i / (s->T * s->H), h = i % s->H, b1 = b0 + 1;
        break;
    default: /* hs */
        b0 = i / (s->T * s->H * s->S * s->D), h = i / (s->S * s->D) % s->H, b1 = b0 + 1;
    }
    mpfr_set_zero(loss, 1);
    for (int64_t b = b0; b < b1; b++) {
        RA_TRY(ra_glr_head(e->w, &pin, b, h, NULL, e->lh, 0, msg, msglen));
        mpfr_add(loss, loss, e->lh, MPFR_RNDN);
    }
    return RA_OK;
}

const ra_gc_op ra_gc_op_glr = {.name = "glr",
                               .prepare = glr_gc_prepare,
                               .set_cotangents = glr_gc_set_cotangents,
                               .backward = glr_gc_backward,
                               .along = glr_gc_along,
                               .ws_new = glr_gc_ws_new,
                               .ws_free = glr_gc_ws_free,
                               .loss_one = glr_gc_loss_one,
                               .release = glr_gc_release};

const ra_gc_op ra_gc_op_glr_state = {.name = "glr",
                                     .prepare = glr_gc_prepare_state,
                                     .set_cotangents = glr_gc_set_cotangents,
                                     .along = glr_gc_along,
                                     .ws_new = glr_gc_ws_new,
                                     .ws_free = glr_gc_ws_free,
                                     .loss_one = glr_gc_loss_one,
                                     .release = glr_gc_release};
