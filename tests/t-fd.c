/* Check suite for the finite-difference engine (src/gradcheck/fd.c) through a toy operation. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "gradcheck/gradcheck.h"
#include "ref-testutil.h"

/*
 * The toy operation, defined here with its hooks, has a gradient known in
 * closed form.  Inputs a [n], b [n], M [m, n] and scalars s0 .. s{P-1};
 * outputs and cotangents
 *     y_i = a_i b_i                                   (dy, required)
 *     z_r = sum_j M_rj exp(a_j) + (r + 1) sum_p s_p^2  (dz, optional)
 * so with L = <dy, y> + <dz, z>:
 *     dL/da_j  = dy_j b_j + exp(a_j) sum_r dz_r M_rj
 *     dL/db_j  = dy_j a_j
 *     dL/dM_rj = dz_r exp(a_j)
 *     dL/ds_p  = 2 s_p sum_r (r + 1) dz_r.
 * The hooks evaluate it in MPFR (the element-wise loss only over the terms
 * the element feeds, as the contract allows); the expected values of the
 * tests come from the closed forms above in double, and the directions
 * and random cotangents from the documented streams, drawn here.  A second
 * op row has a deliberately wrong backward (dL/dM_rj = dz_r, the exp(a_j)
 * forgotten), which must score near 0 digits on M.  An element equal to
 * 999 is "poisoned": its element-wise loss fails, to test error reports.
 */

#define MAXP 16
enum { TA, TB, TM, TS }; /* layout indices; s_p is TS + p */

typedef struct toy {
    int64_t n, m;
    int P;
    double *x[TS + MAXP];
    const double *dy, *dz;
    int wrong;
} toy;

static void toy_release(void *state)
{
    toy *s = state;
    for (int a = 0; a < TS + MAXP; a++)
        free(s->x[a]);
    free((void *)s->dy);
    free((void *)s->dz);
    free(s);
}

static double *copy(const ra_tensor *t)
{
    double *d = malloc((size_t)t->numel * sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = ra_tensor_get(t, i);
    return d;
}

static ra_status prepare(void **state, ra_gc_layout *io, const ra_case *c, int wrong,
                         const char *what)
{
    ra_tensor *a, *b, *M, *dy;
    RA_TRY(ra_tensors_require(&a, &c->tensors, "a", what));
    RA_TRY(ra_tensors_require(&b, &c->tensors, "b", what));
    RA_TRY(ra_tensors_require(&M, &c->tensors, "M", what));
    RA_TRY(ra_tensors_require(&dy, &c->tensors, "dy", what));
    const ra_tensor *dz = ra_tensors_find(&c->tensors, "dz");
    const int64_t n = a->numel, m = M->ndim == 2 ? M->shape[0] : 0;
    if (b->numel != n || dy->numel != n || M->numel != m * n || (dz && dz->numel != m))
        RA_ERRORF(RA_EINVAL, "%s: toy shapes disagree", what);
    toy *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->n = n;
    s->m = m;
    s->wrong = wrong;
    s->x[TA] = copy(a);
    s->x[TB] = copy(b);
    s->x[TM] = copy(M);
    s->dy = copy(dy);
    s->dz = dz ? copy(dz) : NULL;
    memset(io, 0, sizeof *io);
    const char *names[] = {"a", "b", "M"};
    for (int i = 0; i < 3; i++) {
        strcpy(io->in[i].name, names[i]);
        io->in[i].n = i == TM ? m * n : n;
    }
    io->nin = 3;
    for (; s->P < MAXP; s->P++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", s->P);
        const ra_tensor *t = ra_tensors_find(&c->tensors, name);
        if (!t)
            break;
        s->x[TS + s->P] = copy(t);
        strcpy(io->in[io->nin].name, name);
        io->in[io->nin++].n = 1;
    }
    strcpy(io->out[0].name, "y");
    io->out[0].n = n;
    io->out[0].cot = s->dy;
    strcpy(io->out[1].name, "z");
    io->out[1].n = m;
    io->out[1].cot = s->dz;
    io->nout = 2;
    *state = s;
    return RA_OK;
}

static ra_status toy_prepare(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                             const char *what)
{
    (void)prec;
    return prepare(state, io, c, 0, what);
}

static ra_status toy_prepare_wrong(void **state, ra_gc_layout *io, const ra_case *c,
                                   mpfr_prec_t prec, const char *what)
{
    (void)prec;
    return prepare(state, io, c, 1, what);
}

static ra_status toy_set_cotangents(void *state, const double *const *cot)
{
    toy *s = state;
    free((void *)s->dy);
    free((void *)s->dz);
    s->dy = s->dz = NULL;
    /* keep copies: the toy owns what it frees */
    double *dy = malloc((size_t)s->n * sizeof *dy), *dz = malloc((size_t)s->m * sizeof *dz);
    ck_assert(dy && dz);
    memcpy(dy, cot[0], (size_t)s->n * sizeof *dy);
    memcpy(dz, cot[1], (size_t)s->m * sizeof *dz);
    s->dy = dy;
    s->dz = dz;
    return RA_OK;
}

/* v = x_a[i] + t dir_a[i] (+ delta when (a, i) is the perturbed element). */
typedef struct pert {
    const double *const *dir;
    mpfr_srcptr t;
    int a;
    int64_t i;
    mpfr_srcptr delta;
} pert;

static void get(mpfr_ptr v, const toy *s, int a, int64_t i, const pert *p)
{
    mpfr_set_d(v, s->x[a][i], MPFR_RNDN);
    if (p && p->dir && p->dir[a]) {
        MPFR_DECL_INIT(d, 53);
        mpfr_set_d(d, p->dir[a][i], MPFR_RNDN);
        mpfr_fma(v, p->t, d, v, MPFR_RNDN);
    }
    if (p && p->delta && a == p->a && i == p->i)
        mpfr_add(v, v, p->delta, MPFR_RNDN);
}

/* sum_r (r + 1) dz_r (0 without dz) */
static void zweight(mpfr_ptr w, const toy *s)
{
    mpfr_set_zero(w, 1);
    for (int64_t r = 0; s->dz && r < s->m; r++)
        mpfr_add_d(w, w, (double)(r + 1) * s->dz[r], MPFR_RNDN);
}

static ra_status toy_backward(ra_mparr *g, const void *state, mpfr_prec_t prec, int threads)
{
    (void)threads;
    const toy *s = state;
    for (int a = 0; a < TS + s->P; a++)
        RA_TRY(ra_mparr_init(&g[a], (size_t)(a == TM ? s->m * s->n : a >= TS ? 1 : s->n), prec));
    mpfr_t e, v, w, acc;
    mpfr_inits2(prec, e, v, w, acc, (mpfr_ptr)0);
    for (int64_t j = 0; j < s->n; j++) {
        get(e, s, TA, j, NULL);
        mpfr_mul_d(g[TB].x + j, e, s->dy[j], MPFR_RNDN);
        mpfr_exp(e, e, MPFR_RNDN);
        mpfr_set_zero(acc, 1);
        for (int64_t r = 0; s->dz && r < s->m; r++) {
            get(v, s, TM, r * s->n + j, NULL);
            mpfr_mul_d(v, v, s->dz[r], MPFR_RNDN);
            mpfr_add(acc, acc, v, MPFR_RNDN);
            if (s->wrong)
                mpfr_set_d(g[TM].x + r * s->n + j, s->dz[r], MPFR_RNDN);
            else
                mpfr_mul_d(g[TM].x + r * s->n + j, e, s->dz[r], MPFR_RNDN);
        }
        mpfr_mul(acc, acc, e, MPFR_RNDN);
        get(v, s, TB, j, NULL);
        mpfr_mul_d(v, v, s->dy[j], MPFR_RNDN);
        mpfr_add(g[TA].x + j, acc, v, MPFR_RNDN);
    }
    zweight(w, s);
    for (int p = 0; p < s->P; p++) {
        get(v, s, TS + p, 0, NULL);
        mpfr_mul(v, v, w, MPFR_RNDN);
        mpfr_mul_2ui(g[TS + p].x, v, 1, MPFR_RNDN);
    }
    mpfr_clears(e, v, w, acc, (mpfr_ptr)0);
    return RA_OK;
}

/* The whole forward, perturbed as p says, into y and z. */
static void forward(mpfr_ptr y, mpfr_ptr z, const toy *s, const pert *p, mpfr_prec_t prec)
{
    mpfr_t u, v, sq;
    mpfr_inits2(prec, u, v, sq, (mpfr_ptr)0);
    for (int64_t i = 0; i < s->n; i++) {
        get(u, s, TA, i, p);
        get(v, s, TB, i, p);
        mpfr_mul(y + i, u, v, MPFR_RNDN);
    }
    mpfr_set_zero(sq, 1);
    for (int q = 0; q < s->P; q++) {
        get(u, s, TS + q, 0, p);
        mpfr_fma(sq, u, u, sq, MPFR_RNDN);
    }
    for (int64_t r = 0; r < s->m; r++) {
        mpfr_mul_ui(z + r, sq, (unsigned long)(r + 1), MPFR_RNDN);
        for (int64_t j = 0; j < s->n; j++) {
            get(u, s, TA, j, p);
            mpfr_exp(u, u, MPFR_RNDN);
            get(v, s, TM, r * s->n + j, p);
            mpfr_fma(z + r, u, v, z + r, MPFR_RNDN);
        }
    }
    mpfr_clears(u, v, sq, (mpfr_ptr)0);
}

static ra_status toy_along(ra_mparr *outs, const void *state, const double *const *dir,
                           mpfr_srcptr t, mpfr_prec_t prec, int threads)
{
    (void)threads;
    const toy *s = state;
    RA_TRY(ra_mparr_init(&outs[0], (size_t)s->n, prec));
    RA_TRY(ra_mparr_init(&outs[1], (size_t)s->m, prec));
    const pert p = {.dir = dir, .t = t, .a = -1};
    forward(outs[0].x, outs[1].x, s, &p, prec);
    return RA_OK;
}

typedef struct toy_ws {
    mpfr_t u, v;
} toy_ws;

static ra_status toy_ws_new(void **ws, const void *state, mpfr_prec_t prec)
{
    (void)state;
    toy_ws *w = malloc(sizeof *w);
    ck_assert_ptr_nonnull(w);
    mpfr_inits2(prec, w->u, w->v, (mpfr_ptr)0);
    *ws = w;
    return RA_OK;
}

static void toy_ws_free(void *ws)
{
    toy_ws *w = ws;
    mpfr_clears(w->u, w->v, (mpfr_ptr)0);
    free(w);
}

/* Only the terms of L that element (a, i) feeds. */
static ra_status toy_loss_one(mpfr_ptr L, void *ws, const void *state, int a, int64_t i,
                              mpfr_srcptr delta, char *msg, size_t msglen)
{
    const toy *s = state;
    toy_ws *w = ws;
    if (s->x[a][i] == 999) {
        snprintf(msg, msglen, "toy: element %lld of input %d is poisoned", (long long)i, a);
        return RA_ENUMERIC;
    }
    const pert p = {.a = a, .i = i, .delta = delta};
    mpfr_set_zero(L, 1);
    if (a == TA || a == TB) { /* dy_i a_i b_i, and for a the z terms of column i */
        get(w->u, s, TA, i, &p);
        get(w->v, s, TB, i, &p);
        mpfr_mul(w->v, w->v, w->u, MPFR_RNDN);
        mpfr_mul_d(L, w->v, s->dy[i], MPFR_RNDN);
        if (a == TA && s->dz) {
            mpfr_exp(w->u, w->u, MPFR_RNDN);
            for (int64_t r = 0; r < s->m; r++) {
                get(w->v, s, TM, r * s->n + i, &p);
                mpfr_mul(w->v, w->v, w->u, MPFR_RNDN);
                mpfr_mul_d(w->v, w->v, s->dz[r], MPFR_RNDN);
                mpfr_add(L, L, w->v, MPFR_RNDN);
            }
        }
    } else if (a == TM && s->dz) { /* dz_r M_rj exp(a_j) */
        get(w->u, s, TA, i % s->n, &p);
        mpfr_exp(w->u, w->u, MPFR_RNDN);
        get(w->v, s, TM, i, &p);
        mpfr_mul(w->v, w->v, w->u, MPFR_RNDN);
        mpfr_mul_d(L, w->v, s->dz[i / s->n], MPFR_RNDN);
    } else if (a >= TS) { /* sum_r (r + 1) dz_r s_p^2 */
        get(w->u, s, a, 0, &p);
        mpfr_sqr(w->u, w->u, MPFR_RNDN);
        zweight(w->v, s);
        mpfr_mul(L, w->u, w->v, MPFR_RNDN);
    }
    return RA_OK;
}

static const ra_gc_op toy_op = {.name = "toy",
                                .prepare = toy_prepare,
                                .set_cotangents = toy_set_cotangents,
                                .backward = toy_backward,
                                .along = toy_along,
                                .ws_new = toy_ws_new,
                                .ws_free = toy_ws_free,
                                .loss_one = toy_loss_one,
                                .release = toy_release};

static const ra_gc_op toy_wrong_op = {.name = "toy",
                                      .prepare = toy_prepare_wrong,
                                      .set_cotangents = toy_set_cotangents,
                                      .backward = toy_backward,
                                      .along = toy_along,
                                      .ws_new = toy_ws_new,
                                      .ws_free = toy_ws_free,
                                      .loss_one = toy_loss_one,
                                      .release = toy_release};

/* --- cases and closed forms ----------------------------------------------------------------- */

/* a in [0.5, 1.5) (so exp(a) is far from 1), everything else in [-1, 1). */
static void toy_case(ra_case *c, int64_t n, int64_t m, int P, int with_dz, uint64_t seed)
{
    uint64_t r = seed;
    tu_case_init(c, "toy");
    tu_fill(tu_add(&c->tensors, "a", RA_F64, 1, (const int64_t[]){n}, NULL), &r, 0.5, 1.5);
    tu_fill(tu_add(&c->tensors, "b", RA_F64, 1, (const int64_t[]){n}, NULL), &r, -1, 1);
    tu_fill(tu_add(&c->tensors, "M", RA_F64, 2, (const int64_t[]){m, n}, NULL), &r, -1, 1);
    for (int p = 0; p < P; p++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", p);
        tu_fill(tu_add(&c->tensors, name, RA_F64, 1, (const int64_t[]){1}, NULL), &r, -1, 1);
    }
    tu_fill(tu_add(&c->tensors, "dy", RA_F64, 1, (const int64_t[]){n}, NULL), &r, -1, 1);
    if (with_dz)
        tu_fill(tu_add(&c->tensors, "dz", RA_F64, 1, (const int64_t[]){m}, NULL), &r, -1, 1);
}

/* The closed-form gradient of input `name` at element i, in double, with
   cotangents dy, dz (dz NULL: 0). */
static double closed(const ra_case *c, const char *name, int64_t i, const double *dy,
                     const double *dz)
{
    const ra_tensors *ts = &c->tensors;
    const int64_t n = tu_tensor(ts, "a")->numel, m = tu_tensor(ts, "M")->shape[0];
    if (strcmp(name, "a") == 0) {
        double acc = 0;
        for (int64_t r = 0; dz && r < m; r++)
            acc += dz[r] * tu_at(ts, "M", r * n + i);
        return dy[i] * tu_at(ts, "b", i) + exp(tu_at(ts, "a", i)) * acc;
    }
    if (strcmp(name, "b") == 0)
        return dy[i] * tu_at(ts, "a", i);
    if (strcmp(name, "M") == 0)
        return dz ? dz[i / n] * exp(tu_at(ts, "a", i % n)) : 0;
    double w = 0;
    for (int64_t r = 0; dz && r < m; r++)
        w += (double)(r + 1) * dz[r];
    return 2 * tu_at(ts, name, 0) * w;
}

/* The stream "gradcheck.<name>", n normal doubles, as gradcheck.h documents. */
static double *stream(const char *name, int64_t n, uint64_t seed)
{
    ra_rng *g;
    ck_assert_int_eq(ra_rng_new(&g, seed, name), RA_OK);
    double *x = malloc((size_t)n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    ra_gen_normal(x, (size_t)n, g, 0.0, 1.0);
    ra_rng_free(g);
    return x;
}

/* <closed-form gradient of input `name`, u_name> with cotangents dy, dz. */
static double closed_dir(const ra_case *c, const char *name, const double *dy, const double *dz,
                         uint64_t seed)
{
    const int64_t n = tu_tensor(&c->tensors, name)->numel;
    char sname[64];
    snprintf(sname, sizeof sname, "gradcheck.u.%s", name);
    double *u = stream(sname, n, seed), acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += closed(c, name, i, dy, dz) * u[i];
    free(u);
    return acc;
}

static ra_gc_opts gopts(ra_gc_mode mode)
{
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.mode = mode;
    o.seed = 11;
    return o;
}

static const ra_gc_row *row(const ra_gc_result *r, const char *name)
{
    const ra_gc_row *w = ra_gc_row_find(r, name);
    ck_assert_msg(w != NULL, "no row %s", name);
    return w;
}

/* |got - want| <= 1e-12 max(|want|, 1e-300): double closed forms. */
static void near(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-12 * fmax(fabs(want), 1e-300),
                  "%s: %.17g, closed form %.17g", what, got, want);
}

static const double *f64(const ra_case *c, const char *name)
{
    const ra_tensor *t = tu_t(c, name);
    ck_assert_int_eq(t->dtype, RA_F64);
    return (const double *)t->data;
}

/* Every mode against the closed forms: n = 3, m = 2, two scalars. */
START_TEST(random_modes)
{
    ra_case c;
    toy_case(&c, 3, 2, 2, 1, 301);
    const char *const names[] = {"a", "b", "M", "s0", "s1"};
    const int64_t sizes[] = {3, 3, 6, 1, 1};
    const double *dy = f64(&c, "dy"), *dz = f64(&c, "dz");
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert_uint_eq(r.n, 5);
    for (int k = 0; k < 5; k++) {
        const ra_gc_row *w = &r.rows[k];
        ck_assert_str_eq(w->tensor, names[k]);
        ck_assert_int_eq(w->n, sizes[k]);
        ck_assert_msg(w->digits > 30, "%s: %.1f digits", names[k], w->digits);
        ck_assert(w->worst >= 0 && w->worst < sizes[k]);
        near(w->fd, closed(&c, names[k], w->worst, dy, dz), names[k]);
        near(w->an, closed(&c, names[k], w->worst, dy, dz), names[k]);
    }
    /* directional: <grad X, u_X> per input, then their sum */
    o.mode = RA_GC_DIRECTIONAL;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert_uint_eq(r.n, 6);
    double all = 0;
    for (int k = 0; k < 5; k++) {
        const double want = closed_dir(&c, names[k], dy, dz, o.seed);
        all += want;
        ck_assert_str_eq(r.rows[k].tensor, names[k]);
        ck_assert_msg(r.rows[k].digits > 30, "%s: %.1f digits", names[k], r.rows[k].digits);
        near(r.rows[k].fd, want, names[k]);
    }
    ck_assert_str_eq(r.rows[5].tensor, "all");
    ck_assert(r.rows[5].digits > 30);
    near(r.rows[5].fd, all, "all");
    /* dot: the same with the cotangents of the streams w.y, w.z */
    o.mode = RA_GC_DOT;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert_uint_eq(r.n, 6);
    double *wy = stream("gradcheck.w.y", 3, o.seed), *wz = stream("gradcheck.w.z", 2, o.seed);
    all = 0;
    for (int k = 0; k < 5; k++) {
        const double want = closed_dir(&c, names[k], wy, wz, o.seed);
        all += want;
        ck_assert_msg(r.rows[k].digits > 30, "dot %s: %.1f digits", names[k], r.rows[k].digits);
        near(r.rows[k].fd, want, names[k]);
        near(r.rows[k].an, want, names[k]);
    }
    near(r.rows[5].fd, all, "dot all");
    free(wy);
    free(wz);
    ra_case_clear(&c);
}
END_TEST

/* The truncation error of the Richardson step, measured.  Along a_j the
   loss holds exp(a_j) (times c_j = sum_r dz_r M_rj) and otherwise terms
   linear in a_j, which central differences take exactly; for exp the
   central quotient is exp(a) sinh(h)/h, so the engine's
   R = (4 D(h/2) - D(h)) / 3 = exp(a) (1 - h^4/480 - h^6/16128 - ...).  At
   h = 2^-12 (prec 256: rounding near 2^-244) the row's error is therefore
   h^4/480 max_j |c_j exp(a_j)| / max_j |dL/da_j| to 1e-8 relative, about
   17 digits, where a plain central quotient, D(h) or D(h/2), has
   h^2/6 or h^2/24 (9 digits); and going from 2^-10 to 2^-12 divides it
   by 2^8 (by 2^4 for a central quotient).  The directional mode (the
   direction on a alone) shows the same order. */
START_TEST(data_richardson_order)
{
    ra_case c;
    toy_case(&c, 4, 3, 0, 1, 308);
    const double *dy = f64(&c, "dy"), *dz = f64(&c, "dz");
    double top = 0, scale = 0;
    for (int64_t j = 0; j < 4; j++) {
        double cj = 0;
        for (int64_t r = 0; r < 3; r++)
            cj += dz[r] * tu_at(&c.tensors, "M", r * 4 + j);
        top = fmax(top, fabs(cj * exp(tu_at(&c.tensors, "a", j))));
        scale = fmax(scale, fabs(closed(&c, "a", j, dy, dz)));
    }
    const double want = ldexp(1.0, -48) / 480 * top / scale;
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    o.h_log2 = 12;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    const double rel12 = row(&r, "a")->rel;
    ck_assert_msg(fabs(rel12 / want - 1) < 1e-6, "h = 2^-12: rel %.6g, h^4/480 predicts %.6g",
                  rel12, want);
    ck_assert_msg(row(&r, "a")->digits > 15, "%.1f digits", row(&r, "a")->digits);
    o.h_log2 = 10;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    const double ratio = row(&r, "a")->rel / rel12;
    ck_assert_msg(fabs(ratio / 256 - 1) < 1e-3, "error ratio 2^-10 / 2^-12: %.4g, h^4 gives 256",
                  ratio);
    o.mode = RA_GC_DIRECTIONAL;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    const double drel10 = row(&r, "a")->rel;
    o.h_log2 = 12;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert_msg(fabs(drel10 / row(&r, "a")->rel / 256 - 1) < 1e-2,
                  "directional error ratio %.4g, h^4 gives 256", drel10 / row(&r, "a")->rel);
    ck_assert(row(&r, "a")->digits > 14);
    ra_case_clear(&c);
}
END_TEST

/* Without dz, z is not in L: M and the scalars have gradient 0 exactly. */
START_TEST(special_optional_cotangent)
{
    ra_case c;
    toy_case(&c, 4, 3, 1, 0, 302);
    const double *dy = f64(&c, "dy");
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert(row(&r, "a")->digits > 30 && row(&r, "b")->digits > 30);
    ck_assert(row(&r, "M")->digits == RA_GC_MAX_DIGITS && row(&r, "M")->rel == 0);
    ck_assert(row(&r, "s0")->digits == RA_GC_MAX_DIGITS && row(&r, "s0")->fd == 0);
    o.mode = RA_GC_DIRECTIONAL;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert(row(&r, "M")->fd == 0 && row(&r, "M")->an == 0);
    near(row(&r, "a")->fd, closed_dir(&c, "a", dy, NULL, o.seed), "a");
    /* the dot mode draws both cotangents: M is in L again */
    o.mode = RA_GC_DOT;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    double *wy = stream("gradcheck.w.y", 4, o.seed), *wz = stream("gradcheck.w.z", 3, o.seed);
    ck_assert(row(&r, "M")->digits > 30);
    near(row(&r, "M")->fd, closed_dir(&c, "M", wy, wz, o.seed), "M");
    free(wy);
    free(wz);
    ra_case_clear(&c);
}
END_TEST

/* More inputs than the gdn reference has: 3 tensors and 14 scalars. */
START_TEST(random_many_inputs)
{
    ra_case c;
    toy_case(&c, 2, 3, 14, 1, 303);
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_DIRECTIONAL);
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert_uint_eq(r.n, 18);
    ck_assert_str_eq(r.rows[16].tensor, "s13");
    ck_assert_str_eq(r.rows[17].tensor, "all");
    ck_assert_msg(ra_gc_min_digits(&r) > 30, "%.1f digits", ra_gc_min_digits(&r));
    near(r.rows[16].fd, closed_dir(&c, "s13", f64(&c, "dy"), f64(&c, "dz"), o.seed), "s13");
    o.mode = RA_GC_ELEMENTWISE;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_OK);
    ck_assert_uint_eq(r.n, 17);
    ck_assert(ra_gc_min_digits(&r) > 30);
    ra_case_clear(&c);
}
END_TEST

/* A backward that forgets exp(a) in dM scores near 0 digits on M in
   every mode, and the right rows stay right. */
START_TEST(data_wrong_backward)
{
    ra_case c;
    toy_case(&c, 3, 2, 1, 1, 304);
    const ra_gc_mode modes[] = {RA_GC_ELEMENTWISE, RA_GC_DIRECTIONAL, RA_GC_DOT};
    for (int k = 0; k < 3; k++) {
        ra_gc_result r;
        ra_gc_opts o = gopts(modes[k]);
        ck_assert_int_eq(ra_gradcheck(&r, &toy_wrong_op, &c, &o, NULL, "toy"), RA_OK);
        ck_assert_msg(row(&r, "M")->digits < 1.5, "%s: M %.1f digits", ra_gc_mode_name(modes[k]),
                      row(&r, "M")->digits);
        ck_assert(row(&r, "a")->digits > 30 && row(&r, "b")->digits > 30 &&
                  row(&r, "s0")->digits > 30);
        ck_assert(ra_gc_min_digits(&r) < 1.5);
    }
    ra_case_clear(&c);
}
END_TEST

/* Given gradients d<input>, right to f64 rounding or wrong, and refused. */
START_TEST(data_given_gradients)
{
    ra_case c;
    toy_case(&c, 3, 2, 1, 1, 305);
    const double *dy = f64(&c, "dy"), *dz = f64(&c, "dz");
    const char *const names[] = {"a", "b", "M", "s0"};
    ra_tensors g;
    ra_tensors_init(&g);
    for (int k = 0; k < 4; k++) {
        const ra_tensor *x = tu_t(&c, names[k]);
        char dname[8];
        snprintf(dname, sizeof dname, "d%s", names[k]);
        ra_tensor *d = tu_add(&g, dname, RA_F64, x->ndim, x->shape, NULL);
        for (int64_t i = 0; i < x->numel; i++)
            ra_tensor_set(d, i, closed(&c, names[k], i, dy, dz));
    }
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, &g, "given"), RA_OK);
    for (int k = 0; k < 4; k++)
        ck_assert_msg(r.rows[k].digits > 14.5 && r.rows[k].digits < 17.5, "%s: %.1f digits",
                      names[k], r.rows[k].digits);
    /* db = dy b instead of dy a */
    ra_tensor *db = tu_tensor(&g, "db");
    for (int64_t i = 0; i < db->numel; i++)
        ra_tensor_set(db, i, dy[i] * tu_at(&c.tensors, "b", i));
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, &g, "given"), RA_OK);
    ck_assert_msg(row(&r, "b")->digits < 1.5, "wrong db: %.1f digits", row(&r, "b")->digits);
    ck_assert(row(&r, "a")->digits > 14.5);
    o.mode = RA_GC_DIRECTIONAL;
    ck_assert_int_eq(ra_gradcheck(&r, &toy_op, &c, &o, &g, "given"), RA_OK);
    ck_assert_msg(row(&r, "b")->digits < 1.5, "wrong db: %.1f digits", row(&r, "b")->digits);
    /* refused: a gradient of the wrong size, a missing one, the dot mode */
    o.mode = RA_GC_ELEMENTWISE;
    tu_add(&g, "dM", RA_F64, 1, (const int64_t[]){5}, NULL);
    tu_reset();
    tu_expect_error(ra_gradcheck(&r, &toy_op, &c, &o, &g, "given.safetensors"), RA_EINVAL,
                    "given.safetensors", "'dM' has 5 elements, its input 6");
    ra_tensor *dm = ra_tensors_take(&g, "dM");
    ra_tensor_free(dm);
    tu_expect_error(ra_gradcheck(&r, &toy_op, &c, &o, &g, "given.safetensors"), RA_ENOTFOUND,
                    "given.safetensors", "'dM'");
    o.mode = RA_GC_DOT;
    tu_expect_error(ra_gradcheck(&r, &toy_op, &c, &o, &g, "given"), RA_EINVAL, "dot mode");
    ra_tensors_clear(&g);
    ra_case_clear(&c);
}
END_TEST

/* The same bytes for any thread count; a failing element reported once,
   the lowest task (b[1] before M[4]) for any thread count. */
START_TEST(regress_threads_and_errors)
{
    ra_case c;
    toy_case(&c, 5, 3, 2, 1, 306);
    const ra_gc_mode modes[] = {RA_GC_ELEMENTWISE, RA_GC_DOT};
    for (int k = 0; k < 2; k++) {
        ra_gc_result r1, r4;
        ra_gc_opts o = gopts(modes[k]);
        o.threads = 1;
        ck_assert_int_eq(ra_gradcheck(&r1, &toy_op, &c, &o, NULL, "toy"), RA_OK);
        o.threads = 4;
        ck_assert_int_eq(ra_gradcheck(&r4, &toy_op, &c, &o, NULL, "toy"), RA_OK);
        ck_assert(memcmp(&r1, &r4, sizeof r1) == 0);
    }
    ra_tensor_set(tu_t(&c, "M"), 4, 999);
    ra_tensor_set(tu_t(&c, "b"), 1, 999);
    for (int nt = 1; nt <= 4; nt++) {
        ra_gc_result r;
        ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
        o.threads = nt;
        tu_reset();
        tu_expect_error(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "toy"), RA_ENUMERIC,
                        "element 1 of input 1 is poisoned");
    }
    ra_case_clear(&c);
}
END_TEST

/* Hooks a mode needs but the op lacks, and the op's own validation. */
START_TEST(special_unsupported)
{
    ra_case c;
    toy_case(&c, 2, 2, 0, 1, 307);
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_DIRECTIONAL);
    ra_gc_op op = toy_op;
    op.along = NULL;
    tu_reset();
    tu_expect_error(ra_gradcheck(&r, &op, &c, &o, NULL, "toy"), RA_EUNSUPPORTED, "'toy'",
                    "directional");
    o.mode = RA_GC_ELEMENTWISE;
    ck_assert_int_eq(ra_gradcheck(&r, &op, &c, &o, NULL, "toy"), RA_OK);
    op = toy_op;
    op.set_cotangents = NULL;
    o.mode = RA_GC_DOT;
    tu_expect_error(ra_gradcheck(&r, &op, &c, &o, NULL, "toy"), RA_EUNSUPPORTED, "dot");
    op = toy_op;
    op.loss_one = NULL;
    o.mode = RA_GC_ELEMENTWISE;
    tu_expect_error(ra_gradcheck(&r, &op, &c, &o, NULL, "toy"), RA_EUNSUPPORTED, "elementwise");
    ra_tensor_free(ra_tensors_take(&c.tensors, "dy"));
    tu_expect_error(ra_gradcheck(&r, &toy_op, &c, &o, NULL, "nody.safetensors"), RA_ENOTFOUND,
                    "'dy'", "nody.safetensors");
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fd");
    tu_tcase(s, "special", tu_capture, NULL, special_optional_cotangent, special_unsupported);
    tu_tcase(s, "random", tu_capture, NULL, random_modes, random_many_inputs);
    tu_tcase(s, "data", tu_capture, NULL, data_wrong_backward, data_given_gradients,
             data_richardson_order);
    tu_tcase(s, "regress", tu_capture, NULL, regress_threads_and_errors);
    return s;
}

int main(void) { return tu_run(suite()); }
