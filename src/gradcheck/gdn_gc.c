/* The gated delta rule's gradient-check hooks: its MPFR reference seen by the FD engine. */
#include "gradcheck/gdn_gc.h"

#include <stdlib.h>
#include <string.h>

#include "core/gdn_case.h"
#include "ref/gdn.h"

/*
 * Inputs, in row order: q, k, v, g, beta, and h0 when the case has it (the
 * first RA_GDN_NDIFF arrays of src/ref/gdn.h, so a layout index is the
 * array index); outputs o (cotangent do) and ht (cotangent dht, optional):
 * L = <do, o> + <dht, ht>.
 *
 * Element-wise: an element of q or k feeds the Hv/Hk value heads of its
 * group, any other element one head, and L is additive over heads, so the
 * loss of a perturbed element is summed over those heads only (in
 * increasing hv, a fixed order), each run by ra_gdn_head on the
 * workspace's head state with the single-element offset of ra_gdn_in.
 * Directions use ra_gdn_in's step/dir fields and the whole forward
 * (ra_gdn_run, parallel over heads).  Both form x + t u in MPFR where a
 * time step reads the input (ra_gdn_get).
 */

typedef struct gdn_gc {
    ra_gdn_data d; /* in.x[RA_GDN_DO], in.x[RA_GDN_DHT]: the current cotangents */
} gdn_gc;

typedef struct gdn_gc_ws {
    ra_gdn_ws *w;
    mpfr_t lh; /* one head's share of L */
} gdn_gc_ws;

static void gdn_gc_release(void *state)
{
    gdn_gc *g = state;
    if (!g)
        return;
    ra_gdn_data_clear(&g->d);
    free(g);
}

static ra_status gdn_gc_prepare(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                                const char *what)
{
    *state = NULL;
    ra_gdn_problem prob;
    RA_TRY(ra_gdn_problem_init(&prob, c, RA_GDN_NEED_COTANGENTS, what));
    gdn_gc *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = ra_gdn_data_init(&g->d, &prob);
    if (st == RA_OK)
        st = ra_gdn_in_check(&g->d.in, prec, 1);
    if (st != RA_OK) {
        gdn_gc_release(g);
        return st;
    }
    const ra_gdn_in *in = &g->d.in;
    memset(io, 0, sizeof *io);
    /* only h0, the last, may be absent: layout index == array index */
    for (int a = 0; a < RA_GDN_NDIFF && in->x[a]; a++) {
        ra_gc_tensor *t = &io->in[io->nin++];
        strcpy(t->name, ra_gdn_arr_names[a]);
        t->n = ra_gdn_arr_numel(&in->s, a);
    }
    const int outs[2][2] = {{RA_GDN_V, RA_GDN_DO}, {RA_GDN_H0, RA_GDN_DHT}}; /* shape, cotangent */
    const char *const names[2] = {"o", "ht"};
    for (int j = 0; j < 2; j++) {
        ra_gc_tensor *t = &io->out[io->nout++];
        strcpy(t->name, names[j]);
        t->n = ra_gdn_arr_numel(&in->s, outs[j][0]);
        t->cot = in->x[outs[j][1]];
    }
    *state = g;
    return RA_OK;
}

static ra_status gdn_gc_set_cotangents(void *state, const double *const *cot)
{
    gdn_gc *g = state;
    g->d.in.x[RA_GDN_DO] = cot[0]; /* the case's copies stay owned by g->d.buf */
    g->d.in.x[RA_GDN_DHT] = cot[1];
    return RA_OK;
}

static ra_status gdn_gc_backward(ra_mparr *grads, const void *state, mpfr_prec_t prec, int threads)
{
    const gdn_gc *g = state;
    ra_gdn_out out;
    RA_TRY(ra_gdn_run(&out, &g->d.in, prec, 1, threads, NULL));
    ra_mparr *src[RA_GDN_NDIFF] = {&out.dq, &out.dk, &out.dv, &out.dg, &out.dbeta, &out.dh0};
    for (int a = 0; a < RA_GDN_NDIFF && g->d.in.x[a]; a++) {
        grads[a] = *src[a];
        memset(src[a], 0, sizeof *src[a]); /* moved */
    }
    ra_gdn_out_clear(&out);
    return RA_OK;
}

static ra_status gdn_gc_along(ra_mparr *outs, const void *state, const double *const *dir,
                              mpfr_srcptr t, mpfr_prec_t prec, int threads)
{
    const gdn_gc *g = state;
    ra_gdn_in in = g->d.in;
    for (int a = 0; a < RA_GDN_NDIFF && in.x[a]; a++)
        in.dir[a] = dir[a];
    in.step = t;
    ra_gdn_out out;
    RA_TRY(ra_gdn_run(&out, &in, prec, 0, threads, NULL));
    outs[0] = out.o;
    outs[1] = out.ht;
    memset(&out.o, 0, sizeof out.o);
    memset(&out.ht, 0, sizeof out.ht);
    ra_gdn_out_clear(&out);
    return RA_OK;
}

static void gdn_gc_ws_free(void *ws)
{
    gdn_gc_ws *e = ws;
    ra_gdn_ws_free(e->w);
    mpfr_clear(e->lh);
    free(e);
}

static ra_status gdn_gc_ws_new(void **ws, const void *state, mpfr_prec_t prec)
{
    const gdn_gc *g = state;
    gdn_gc_ws *e = calloc(1, sizeof *e);
    if (!e)
        RA_ERROR("out of memory", RA_ENOMEM);
    mpfr_init2(e->lh, prec);
    ra_status st = ra_gdn_ws_new(&e->w, &g->d.in.s, prec, 0, 0, g->d.in.segment);
    if (st != RA_OK) {
        gdn_gc_ws_free(e);
        return st;
    }
    *ws = e;
    return RA_OK;
}

/* Heads fed by element i of input a: batch *b, value heads [*h0, *h1). */
static void element_heads(const ra_gdn_shape *s, int a, int64_t i, int64_t *b, int64_t *h0,
                          int64_t *h1)
{
    const int64_t G = s->Hv / s->Hk;
    switch (a) {
    case RA_GDN_Q:
    case RA_GDN_K: {
        int64_t hk = i / s->K % s->Hk;
        *b = i / (s->T * s->Hk * s->K);
        *h0 = hk * G;
        *h1 = *h0 + G;
        return;
    }
    case RA_GDN_V:
        *b = i / (s->T * s->Hv * s->V);
        *h0 = i / s->V % s->Hv;
        break;
    case RA_GDN_G:
    case RA_GDN_BETA:
        *b = i / (s->T * s->Hv);
        *h0 = i % s->Hv;
        break;
    default: /* h0 */
        *b = i / (s->Hv * s->K * s->V);
        *h0 = i / (s->K * s->V) % s->Hv;
    }
    *h1 = *h0 + 1;
}

static ra_status gdn_gc_loss_one(mpfr_ptr loss, void *ws, const void *state, int a, int64_t i,
                                 mpfr_srcptr delta, char *msg, size_t msglen)
{
    const gdn_gc *g = state;
    gdn_gc_ws *e = ws;
    int64_t b, h0, h1;
    element_heads(&g->d.in.s, a, i, &b, &h0, &h1);
    ra_gdn_in pin = g->d.in;
    pin.one_arr = a;
    pin.one_idx = i;
    pin.one_delta = delta;
    mpfr_set_zero(loss, 1);
    for (int64_t hv = h0; hv < h1; hv++) {
        RA_TRY(ra_gdn_head(e->w, &pin, b, hv, NULL, e->lh, 0, msg, msglen));
        mpfr_add(loss, loss, e->lh, MPFR_RNDN);
    }
    return RA_OK;
}

const ra_gc_op ra_gc_op_gdn = {.name = "gdn",
                               .prepare = gdn_gc_prepare,
                               .set_cotangents = gdn_gc_set_cotangents,
                               .backward = gdn_gc_backward,
                               .along = gdn_gc_along,
                               .ws_new = gdn_gc_ws_new,
                               .ws_free = gdn_gc_ws_free,
                               .loss_one = gdn_gc_loss_one,
                               .release = gdn_gc_release};
