/* Gradient checks of the gated delta rule: element-wise, directional, dot test. */
#include "gradcheck/gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gdn_case.h"
#include "core/rng.h"
#include "ref/pool.h"
#include "ref/gdn.h"

/*
 * Every loss evaluation is the MPFR forward of src/ref/gdn.h on perturbed
 * inputs (ra_gdn_in's perturbation fields), at opts->prec.  Element-wise:
 * an element of q or k feeds the Hv/Hk value heads of its group, any other
 * element one head, and L is additive over heads, so each quotient re-runs
 * only those heads (in increasing hv, a fixed order); elements are spread
 * over OpenMP threads, each with its own workspace, and each result
 * depends on its element alone, so the outcome is thread-count independent.
 * The directional and dot modes re-run the whole forward (ra_gdn_run,
 * itself parallel over heads) at x +- t u.
 *
 * The perturbed inputs x + t u are formed in MPFR at prec; with t a power of
 * two and u a double they are exact whenever |x| / |t u| < 2^(prec - 53),
 * and otherwise rounded identically on both sides, which moves the quotient
 * by about 2^-prec |x| / h, still far below the digits that matter.
 * Directions and cotangents come from the suite's seeded streams
 * (src/core/rng.h), named "gradcheck.u.<tensor>", "gradcheck.w.o",
 * "gradcheck.w.ht", so a run is reproducible from its seed.
 */

void ra_gc_opts_init(ra_gc_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = RA_GC_ELEMENTWISE;
    o->prec = 256;
    o->h_log2 = 80;
    o->seed = 1;
    o->threads = 0;
}

static const char *const mode_names[] = {"elementwise", "directional", "dot"};

const char *ra_gc_mode_name(ra_gc_mode m) { return mode_names[m]; }

ra_status ra_gc_mode_parse(ra_gc_mode *out, const char *s)
{
    for (int m = 0; m < 3; m++)
        if (s && strcmp(s, mode_names[m]) == 0) {
            *out = (ra_gc_mode)m;
            return RA_OK;
        }
    RA_ERRORF(RA_EINVAL, "gradcheck mode '%s': elementwise, directional or dot", s ? s : "");
}

double ra_gc_min_digits(const ra_gc_result *r)
{
    double m = RA_GC_MAX_DIGITS;
    for (size_t i = 0; i < r->n; i++)
        if (r->rows[i].digits < m)
            m = r->rows[i].digits;
    return m;
}

/* --- shared state ------------------------------------------------------------------------ */

typedef struct fd_ctx {
    ra_gdn_data d;
    const ra_gc_opts *o;
    mpfr_t step[4];            /* +h, -h, +h/2, -h/2 */
    ra_mparr an[RA_GDN_NDIFF]; /* analytic gradient per input (n == 0: absent) */
} fd_ctx;

static void ctx_clear(fd_ctx *x)
{
    for (int a = 0; a < RA_GDN_NDIFF; a++)
        ra_mparr_free(&x->an[a]);
    for (int s = 0; s < 4; s++)
        mpfr_clear(x->step[s]);
    ra_gdn_data_clear(&x->d);
}

/* R = (4 D(h/2) - D(h)) / 3 from the four losses, D(h) = (L+ - L-) / (2h). */
static void richardson(mpfr_ptr r, mpfr_srcptr *L, long h_log2, mpfr_ptr t)
{
    mpfr_sub(t, L[0], L[1], MPFR_RNDN);
    mpfr_mul_2si(t, t, h_log2 - 1, MPFR_RNDN); /* D(h) */
    mpfr_sub(r, L[2], L[3], MPFR_RNDN);
    mpfr_mul_2si(r, r, h_log2 + 2, MPFR_RNDN); /* 4 D(h/2) */
    mpfr_sub(r, r, t, MPFR_RNDN);
    mpfr_div_ui(r, r, 3, MPFR_RNDN);
}

/* Analytic gradients: the reference backward, or the given tensors. */
static ra_status analytic(fd_ctx *x, const ra_gdn_in *in, const ra_tensors *grads, const char *what)
{
    const mpfr_prec_t p = x->o->prec;
    if (!grads) {
        ra_gdn_out g;
        RA_TRY(ra_gdn_run(&g, in, p, 1, x->o->threads, NULL));
        ra_mparr *src[RA_GDN_NDIFF] = {&g.dq, &g.dk, &g.dv, &g.dg, &g.dbeta, &g.dh0};
        for (int a = 0; a < RA_GDN_NDIFF; a++) {
            x->an[a] = *src[a];
            memset(src[a], 0, sizeof *src[a]);
        }
        ra_gdn_out_clear(&g);
        return RA_OK;
    }
    for (int a = 0; a < RA_GDN_NDIFF; a++) {
        if (!in->x[a])
            continue;
        char name[16];
        snprintf(name, sizeof name, "d%s", ra_gdn_arr_names[a]);
        ra_tensor *t;
        RA_TRY(ra_tensors_require(&t, grads, name, what));
        int64_t n = ra_gdn_arr_numel(&in->s, a);
        if (t->numel != n)
            RA_ERRORF(RA_EINVAL, "%s: gradient '%s' has %lld elements, its input %lld", what, name,
                      (long long)t->numel, (long long)n);
        int64_t bad = ra_tensor_find_nonfinite(t);
        if (bad >= 0)
            RA_ERRORF(RA_EINVAL, "%s: gradient '%s' element %lld is not finite", what, name,
                      (long long)bad);
        RA_TRY(ra_mparr_init(&x->an[a], (size_t)n, p));
        for (int64_t i = 0; i < n; i++)
            ra_tensor_get_mpfr(x->an[a].x + i, t, i); /* exact: p >= 53 */
    }
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

/* Compares fd with an over n elements into row. */
static void compare(ra_gc_row *row, const char *name, mpfr_srcptr fd, mpfr_srcptr an, int64_t n)
{
    mpfr_t d, err, scale;
    mpfr_inits2(64, d, err, scale, (mpfr_ptr)0);
    mpfr_set_zero(err, 1);
    mpfr_set_zero(scale, 1);
    memset(row, 0, sizeof *row);
    snprintf(row->tensor, sizeof row->tensor, "%s", name);
    row->n = n;
    row->worst = -1;
    for (int64_t i = 0; i < n; i++) {
        mpfr_sub(d, fd + i, an + i, MPFR_RNDN);
        mpfr_abs(d, d, MPFR_RNDN);
        if (row->worst < 0 || mpfr_greater_p(d, err)) {
            mpfr_set(err, d, MPFR_RNDN);
            row->worst = i;
        }
        if (mpfr_cmpabs(an + i, scale) > 0)
            mpfr_abs(scale, an + i, MPFR_RNDN);
        if (mpfr_cmpabs(fd + i, scale) > 0)
            mpfr_abs(scale, fd + i, MPFR_RNDN);
    }
    if (row->worst >= 0) {
        row->fd = mpfr_get_d(fd + row->worst, MPFR_RNDN);
        row->an = mpfr_get_d(an + row->worst, MPFR_RNDN);
    }
    if (mpfr_zero_p(err) || mpfr_zero_p(scale)) {
        row->rel = mpfr_zero_p(err) ? 0 : 1;
        row->digits = mpfr_zero_p(err) ? RA_GC_MAX_DIGITS : 0;
    } else {
        mpfr_div(d, err, scale, MPFR_RNDN);
        row->rel = mpfr_get_d(d, MPFR_RNDN);
        mpfr_log10(d, d, MPFR_RNDN);
        row->digits = -mpfr_get_d(d, MPFR_RNDN);
        if (row->digits > RA_GC_MAX_DIGITS)
            row->digits = RA_GC_MAX_DIGITS;
        if (!(row->digits > 0)) /* also turns -0 into +0 */
            row->digits = 0;
    }
    mpfr_clears(d, err, scale, (mpfr_ptr)0);
}

/* --- element-wise ------------------------------------------------------------------------------
 */

/* One task per element of every differentiable input, in input order. */
typedef struct elem_ctx {
    const fd_ctx *x;
    int64_t start[RA_GDN_NDIFF + 1]; /* first task of each input */
    ra_mparr *fd;
} elem_ctx;

typedef struct elem_ws {
    ra_gdn_ws *w;
    mpfr_t L[4], lh, t;
} elem_ws;

static void elem_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    elem_ws *e = ws;
    ra_gdn_ws_free(e->w);
    for (int k = 0; k < 4; k++)
        mpfr_clear(e->L[k]);
    mpfr_clears(e->lh, e->t, (mpfr_ptr)0);
    free(e);
}

static ra_status elem_ws_new(void **ws, void *ctx, int worker)
{
    (void)worker;
    const elem_ctx *c = ctx;
    const mpfr_prec_t p = c->x->o->prec;
    elem_ws *e = calloc(1, sizeof *e);
    if (!e)
        RA_ERROR("out of memory", RA_ENOMEM);
    for (int k = 0; k < 4; k++)
        mpfr_init2(e->L[k], p);
    mpfr_inits2(p, e->lh, e->t, (mpfr_ptr)0);
    const ra_gdn_in *in = &c->x->d.in;
    ra_status st = ra_gdn_ws_new(&e->w, &in->s, p, 0, 0, in->segment);
    if (st != RA_OK) {
        elem_ws_free(e, ctx);
        return st;
    }
    *ws = e;
    return RA_OK;
}

static ra_status elem_task(void *ws, void *ctx, int64_t task, char *msg, size_t msglen)
{
    const elem_ctx *c = ctx;
    elem_ws *e = ws;
    const ra_gdn_in *in = &c->x->d.in;
    int a = 0;
    while (task >= c->start[a + 1])
        a++;
    const int64_t i = task - c->start[a];
    int64_t b, h0, h1;
    element_heads(&in->s, a, i, &b, &h0, &h1);
    ra_gdn_in pin = *in;
    pin.one_arr = a;
    pin.one_idx = i;
    for (int k = 0; k < 4; k++) {
        pin.one_delta = c->x->step[k];
        mpfr_set_zero(e->L[k], 1);
        for (int64_t hv = h0; hv < h1; hv++) {
            RA_TRY(ra_gdn_head(e->w, &pin, b, hv, NULL, e->lh, 0, msg, msglen));
            mpfr_add(e->L[k], e->L[k], e->lh, MPFR_RNDN);
        }
    }
    mpfr_srcptr Ls[4] = {e->L[0], e->L[1], e->L[2], e->L[3]};
    richardson(c->fd[a].x + i, Ls, c->x->o->h_log2, e->t);
    return RA_OK;
}

static ra_status elementwise(ra_gc_result *r, fd_ctx *x)
{
    const ra_gdn_in *in = &x->d.in;
    const mpfr_prec_t p = x->o->prec;
    ra_mparr fd[RA_GDN_NDIFF];
    memset(fd, 0, sizeof fd);
    elem_ctx c = {.x = x, .fd = fd};
    ra_status st = RA_OK;
    for (int a = 0; a < RA_GDN_NDIFF; a++) {
        int64_t n = in->x[a] ? ra_gdn_arr_numel(&in->s, a) : 0;
        c.start[a + 1] = c.start[a] + n;
        if (st == RA_OK)
            st = ra_mparr_init(&fd[a], (size_t)n, p);
    }
    const ra_pool pool = {.ntasks = c.start[RA_GDN_NDIFF],
                          .threads = x->o->threads,
                          .widen_range = 1,
                          .ctx = &c,
                          .ws_new = elem_ws_new,
                          .ws_free = elem_ws_free,
                          .task = elem_task};
    if (st == RA_OK)
        st = ra_pool_run(&pool);
    if (st == RA_OK) {
        ra_mp_range range;
        ra_mp_range_widen(&range);
        for (int a = 0; a < RA_GDN_NDIFF; a++)
            if (in->x[a])
                compare(&r->rows[r->n++], ra_gdn_arr_names[a], fd[a].x, x->an[a].x,
                        (int64_t)fd[a].n);
        ra_mp_range_restore(&range);
    }
    for (int a = 0; a < RA_GDN_NDIFF; a++)
        ra_mparr_free(&fd[a]);
    return st;
}

/* --- directional and dot ---------------------------------------------------------------------- */

/* Seeded standard normal doubles for input a (or an output name). */
static ra_status draw(double **out, int64_t n, uint64_t seed, const char *name)
{
    *out = malloc((size_t)n * sizeof **out + 1);
    if (!*out)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_rng *g;
    char stream[64];
    snprintf(stream, sizeof stream, "gradcheck.%s", name);
    ra_status st = ra_rng_new(&g, seed, stream);
    if (st != RA_OK) {
        free(*out);
        *out = NULL;
        return st;
    }
    ra_gen_normal(*out, (size_t)n, g, 0.0, 1.0);
    ra_rng_free(g);
    return RA_OK;
}

/* acc += <x, values of input arr of in> in MPFR. */
static void dot_input(mpfr_ptr acc, const ra_mparr *x, const ra_gdn_in *in, int arr, mpfr_ptr t,
                      mpfr_ptr v)
{
    for (size_t i = 0; i < x->n; i++) {
        ra_gdn_get(v, in, arr, (int64_t)i);
        mpfr_mul(t, x->x + i, v, MPFR_RNDN);
        mpfr_add(acc, acc, t, MPFR_RNDN);
    }
}

/* Directional derivative along in->dir of L = <do, o> + <dht, ht>
   (dot == 0), or of every output then dotted with the cotangents (dot). */
static ra_status fd_along(mpfr_ptr res, const ra_gdn_in *base, fd_ctx *x, int dot)
{
    const mpfr_prec_t p = x->o->prec;
    ra_gdn_out out[4];
    memset(out, 0, sizeof out);
    mpfr_t L[4], t, v;
    for (int k = 0; k < 4; k++)
        mpfr_init2(L[k], p);
    mpfr_inits2(p, t, v, (mpfr_ptr)0);
    ra_status st = RA_OK;
    ra_gdn_in in = *base;
    for (int k = 0; k < 4 && st == RA_OK; k++) {
        in.step = x->step[k];
        st = ra_gdn_run(&out[k], &in, p, 0, x->o->threads, NULL);
    }
    if (st == RA_OK) {
        ra_mp_range range;
        ra_mp_range_widen(&range);
        mpfr_srcptr Ls[4] = {L[0], L[1], L[2], L[3]};
        if (!dot) {
            for (int k = 0; k < 4; k++) {
                mpfr_set_zero(L[k], 1);
                dot_input(L[k], &out[k].o, base, RA_GDN_DO, t, v);
                if (base->x[RA_GDN_DHT])
                    dot_input(L[k], &out[k].ht, base, RA_GDN_DHT, t, v);
            }
            richardson(res, Ls, x->o->h_log2, t);
        } else {
            /* J u element by element, then <w, J u> */
            mpfr_t r;
            mpfr_init2(r, p);
            mpfr_set_zero(res, 1);
            for (int which = 0; which < 2; which++) {
                const int64_t n = (int64_t)(which ? out[0].ht.n : out[0].o.n);
                for (int64_t i = 0; i < n; i++) {
                    for (int k = 0; k < 4; k++)
                        mpfr_set(L[k], (which ? out[k].ht.x : out[k].o.x) + i, MPFR_RNDN);
                    richardson(r, Ls, x->o->h_log2, t);
                    ra_gdn_get(v, base, which ? RA_GDN_DHT : RA_GDN_DO, i);
                    mpfr_mul(r, r, v, MPFR_RNDN);
                    mpfr_add(res, res, r, MPFR_RNDN);
                }
            }
            mpfr_clear(r);
        }
        ra_mp_range_restore(&range);
    }
    for (int k = 0; k < 4; k++) {
        ra_gdn_out_clear(&out[k]);
        mpfr_clear(L[k]);
    }
    mpfr_clears(t, v, (mpfr_ptr)0);
    return st;
}

static ra_status directional(ra_gc_result *r, fd_ctx *x, int dot)
{
    const ra_gdn_in *in = &x->d.in;
    const mpfr_prec_t p = x->o->prec;
    double *u[RA_GDN_NDIFF] = {NULL};
    ra_status st = RA_OK;
    for (int a = 0; a < RA_GDN_NDIFF && st == RA_OK; a++)
        if (in->x[a]) {
            char name[32];
            snprintf(name, sizeof name, "u.%s", ra_gdn_arr_names[a]);
            st = draw(&u[a], ra_gdn_arr_numel(&in->s, a), x->o->seed, name);
        }
    mpfr_t fd, an, part, t, v;
    mpfr_inits2(p, fd, an, part, t, v, (mpfr_ptr)0);
    ra_mp_range range;
    ra_mp_range_widen(&range);
    /* rows: each input alone, then all at once (row index RA_GDN_NDIFF) */
    for (int row = 0; row <= RA_GDN_NDIFF && st == RA_OK; row++) {
        if (row < RA_GDN_NDIFF && !in->x[row])
            continue;
        ra_gdn_in pin = *in;
        mpfr_set_zero(an, 1);
        for (int a = 0; a < RA_GDN_NDIFF; a++) {
            if (!in->x[a] || (row < RA_GDN_NDIFF && a != row))
                continue;
            pin.dir[a] = u[a];
            /* <an_a, u_a> */
            ra_gdn_in ui = *in;
            ui.x[a] = u[a];
            ui.step = NULL;
            mpfr_set_zero(part, 1);
            dot_input(part, &x->an[a], &ui, a, t, v);
            mpfr_add(an, an, part, MPFR_RNDN);
        }
        st = fd_along(fd, &pin, x, dot);
        if (st == RA_OK)
            compare(&r->rows[r->n++], row < RA_GDN_NDIFF ? ra_gdn_arr_names[row] : "all", fd, an,
                    1);
    }
    ra_mp_range_restore(&range);
    mpfr_clears(fd, an, part, t, v, (mpfr_ptr)0);
    for (int a = 0; a < RA_GDN_NDIFF; a++)
        free(u[a]);
    return st;
}

/* --- entry --------------------------------------------------------------------------------------
 */

ra_status ra_gradcheck_gdn(ra_gc_result *r, const ra_case *c, const ra_gc_opts *o,
                           const ra_tensors *grads, const char *what)
{
    memset(r, 0, sizeof *r);
    r->prec = o->prec;
    r->h_log2 = o->h_log2;
    if (!what)
        what = "case";
    if (o->prec < 64 || o->h_log2 < 1 || o->h_log2 >= o->prec - 8)
        RA_ERRORF(RA_EINVAL,
                  "gradcheck: precision %ld bits with step 2^-%ld: need prec >= 64 and a step "
                  "well inside the precision",
                  (long)o->prec, o->h_log2);
    if (o->mode == RA_GC_DOT && grads)
        RA_ERROR("gradcheck: the dot mode draws its own cotangents and checks the reference "
                 "backward; given gradients need the elementwise or directional mode",
                 RA_EINVAL);
    ra_gdn_problem prob;
    RA_TRY(ra_gdn_problem_init(&prob, c, RA_GDN_NEED_COTANGENTS, what));
    fd_ctx x;
    memset(&x, 0, sizeof x);
    x.o = o;
    for (int s = 0; s < 4; s++) {
        mpfr_init2(x.step[s], 64);
        mpfr_set_si_2exp(x.step[s], s % 2 ? -1 : 1, -o->h_log2 - (s >= 2), MPFR_RNDN);
    }
    ra_status st = ra_gdn_data_init(&x.d, &prob);
    if (st == RA_OK)
        st = ra_gdn_in_check(&x.d.in, o->prec, 1);
    double *w[2] = {NULL, NULL};
    ra_gdn_in in = x.d.in;
    if (st == RA_OK && o->mode == RA_GC_DOT) {
        /* random output cotangents replace do and dht */
        st = draw(&w[0], ra_gdn_arr_numel(&in.s, RA_GDN_DO), o->seed, "w.o");
        if (st == RA_OK)
            st = draw(&w[1], ra_gdn_arr_numel(&in.s, RA_GDN_DHT), o->seed, "w.ht");
        in.x[RA_GDN_DO] = w[0];
        in.x[RA_GDN_DHT] = w[1];
        x.d.in = in; /* the buffers stay owned by x.d.buf / w */
    }
    if (st == RA_OK)
        st = analytic(&x, &x.d.in, grads, what);
    if (st == RA_OK)
        st = o->mode == RA_GC_ELEMENTWISE ? elementwise(r, &x)
                                          : directional(r, &x, o->mode == RA_GC_DOT);
    free(w[0]);
    free(w[1]);
    ctx_clear(&x);
    return st;
}
