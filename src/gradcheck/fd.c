/* The finite-difference engine: element-wise, directional and dot-product gradient checks. */
#include "gradcheck/gradcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "ref/pool.h"

/*
 * Every loss evaluation is the operation's MPFR forward on perturbed
 * inputs, through its hooks (gradcheck.h), at opts->prec.  Element-wise:
 * one task per element of every input (the task pool, src/ref/pool.h),
 * each worker with its own op workspace; a result depends on its element
 * alone, so the outcome is thread-count independent.  The directional and
 * dot modes ask the op for whole outputs at x +- t u (the op's forward is
 * itself parallel) and form L, or <w, J u>, here.
 *
 * The perturbed inputs x + t u are formed by the op in MPFR at prec; with t
 * a power of two and u a double they are exact whenever
 * |x| / |t u| < 2^(prec - 53), and otherwise rounded identically on both
 * sides, which moves the quotient by about 2^-prec |x| / h, still far below
 * the digits that matter.  Directions and cotangents come from the suite's
 * seeded streams (src/core/rng.h), named "gradcheck.u.<input>" and
 * "gradcheck.w.<output>", so a run is reproducible from its seed.
 *
 * A forward with kinks (ReLU) has no derivative where a pre-activation is
 * 0, and a central quotient whose stencil straddles one measures half of
 * each side.  An op that says which input elements sit within a few steps
 * of a kink (ra_gc_op.near_kink) has them left out of the element-wise
 * comparison and out of the random directions, and every row counts what
 * it left out (`excluded`): never silently dropped.
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

const ra_gc_row *ra_gc_row_find(const ra_gc_result *r, const char *name)
{
    for (size_t i = 0; name && i < r->n; i++)
        if (strcmp(r->rows[i].tensor, name) == 0)
            return &r->rows[i];
    return NULL;
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
    const ra_gc_op *op;
    const ra_gc_opts *o;
    void *state;
    ra_gc_layout io;
    mpfr_t step[4];                /* +h, -h, +h/2, -h/2 */
    ra_mparr an[RA_GC_MAX_INPUTS]; /* analytic gradient per input */
    double *w[RA_GC_MAX_OUTPUTS];  /* dot mode: the drawn cotangents */
    /* per input: elements near a kink (op->near_kink), or NULL; their count */
    unsigned char *skip[RA_GC_MAX_INPUTS];
    int64_t nskip[RA_GC_MAX_INPUTS];
} fd_ctx;

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

/* acc += <x, d> in MPFR (d: doubles, entered exactly). */
static void dot_d(mpfr_ptr acc, mpfr_srcptr x, const double *d, int64_t n, mpfr_ptr t, mpfr_ptr v)
{
    for (int64_t i = 0; i < n; i++) {
        mpfr_set_d(v, d[i], MPFR_RNDN);
        mpfr_mul(t, x + i, v, MPFR_RNDN);
        mpfr_add(acc, acc, t, MPFR_RNDN);
    }
}

/* Seeded standard normal doubles of the stream "gradcheck.<name>". */
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

/* Analytic gradients: the op's backward, a formula evaluated by the
   caller (fn), or the given tensors d<input>. */
static ra_status analytic(fd_ctx *x, const ra_tensors *grads, const ra_case *c,
                          ra_gc_formula_fn fn, void *fctx, const char *what)
{
    /* Faults in given gradients belong to their file, not to the case. */
    if (x->o->grads_what)
        what = x->o->grads_what;
    const mpfr_prec_t p = x->o->prec;
    if (!grads) {
        if (fn)
            RA_TRY(fn(x->an, &x->io, c, fctx, p));
        else
            RA_TRY(x->op->backward(x->an, x->state, p, x->o->threads));
        for (int a = 0; a < x->io.nin; a++)
            if ((int64_t)x->an[a].n != x->io.in[a].n || (x->an[a].n && x->an[a].prec != p))
                RA_ERRORF(RA_EINTERNAL, "gradcheck %s: %s gave %zu numbers of gradient '%s'",
                          x->op->name, fn ? "the formula" : "backward", x->an[a].n,
                          x->io.in[a].name);
        return RA_OK;
    }
    for (int a = 0; a < x->io.nin; a++) {
        char name[RA_GC_NAME + 1];
        snprintf(name, sizeof name, "d%s", x->io.in[a].name);
        ra_tensor *t;
        RA_TRY(ra_tensors_require(&t, grads, name, what));
        const int64_t n = x->io.in[a].n;
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

/* Compares fd with an over n elements into row, leaving out those skip
   marks (skip may be NULL). */
static void compare(ra_gc_row *row, const char *name, mpfr_srcptr fd, mpfr_srcptr an, int64_t n,
                    const unsigned char *skip)
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
        if (skip && skip[i]) {
            row->excluded++;
            continue;
        }
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

/* --- element-wise ------------------------------------------------------------------------ */

/* One task per element of every input, in input order. */
typedef struct elem_ctx {
    const fd_ctx *x;
    int64_t start[RA_GC_MAX_INPUTS + 1]; /* first task of each input */
    ra_mparr *fd;
} elem_ctx;

typedef struct elem_ws {
    void *opws;
    mpfr_t L[4], t;
} elem_ws;

static void elem_ws_free(void *ws, void *ctx)
{
    const elem_ctx *c = ctx;
    elem_ws *e = ws;
    if (e->opws)
        c->x->op->ws_free(e->opws);
    for (int k = 0; k < 4; k++)
        mpfr_clear(e->L[k]);
    mpfr_clear(e->t);
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
    mpfr_init2(e->t, p);
    ra_status st = c->x->op->ws_new(&e->opws, c->x->state, p);
    if (st != RA_OK) {
        e->opws = NULL;
        elem_ws_free(e, ctx);
        return st;
    }
    *ws = e;
    return RA_OK;
}

static ra_status elem_task(void *ws, void *ctx, int64_t task, char *msg, size_t msglen)
{
    const elem_ctx *c = ctx;
    const fd_ctx *x = c->x;
    elem_ws *e = ws;
    int a = 0;
    while (task >= c->start[a + 1])
        a++;
    const int64_t i = task - c->start[a];
    if (x->skip[a] && x->skip[a][i])
        return RA_OK; /* left out of the comparison */
    for (int k = 0; k < 4; k++)
        RA_TRY(x->op->loss_one(e->L[k], e->opws, x->state, a, i, x->step[k], msg, msglen));
    mpfr_srcptr Ls[4] = {e->L[0], e->L[1], e->L[2], e->L[3]};
    richardson(c->fd[a].x + i, Ls, x->o->h_log2, e->t);
    return RA_OK;
}

static ra_status elementwise(ra_gc_result *r, fd_ctx *x)
{
    const int nin = x->io.nin;
    ra_mparr fd[RA_GC_MAX_INPUTS];
    memset(fd, 0, sizeof fd);
    elem_ctx c = {.x = x, .fd = fd};
    ra_status st = RA_OK;
    for (int a = 0; a < nin; a++) {
        c.start[a + 1] = c.start[a] + x->io.in[a].n;
        if (st == RA_OK)
            st = ra_mparr_init(&fd[a], (size_t)x->io.in[a].n, x->o->prec);
    }
    const ra_pool pool = {.ntasks = c.start[nin],
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
        for (int a = 0; a < nin; a++)
            compare(&r->rows[r->n++], x->io.in[a].name, fd[a].x, x->an[a].x, (int64_t)fd[a].n,
                    x->skip[a]);
        ra_mp_range_restore(&range);
    }
    for (int a = 0; a < nin; a++)
        ra_mparr_free(&fd[a]);
    return st;
}

/* --- directional and dot ----------------------------------------------------------------- */

/* Directional derivative along dir of L = sum_j <w_j, y_j> (dot == 0), or
   of every output element, then dotted with the cotangents (dot). */
static ra_status fd_along(mpfr_ptr res, fd_ctx *x, const double *const *dir, int dot)
{
    const mpfr_prec_t p = x->o->prec;
    const int nout = x->io.nout;
    ra_mparr out[4][RA_GC_MAX_OUTPUTS];
    memset(out, 0, sizeof out);
    mpfr_t L[4], t, v;
    for (int k = 0; k < 4; k++)
        mpfr_init2(L[k], p);
    mpfr_inits2(p, t, v, (mpfr_ptr)0);
    ra_status st = RA_OK;
    for (int k = 0; k < 4 && st == RA_OK; k++) {
        st = x->op->along(out[k], x->state, dir, x->step[k], p, x->o->threads);
        for (int j = 0; j < nout && st == RA_OK; j++)
            if ((int64_t)out[k][j].n != x->io.out[j].n || (out[k][j].n && out[k][j].prec != p))
                RA_REPORTF(st = RA_EINTERNAL, "gradcheck %s: forward gave %zu numbers of '%s'",
                           x->op->name, out[k][j].n, x->io.out[j].name);
    }
    if (st == RA_OK) {
        ra_mp_range range;
        ra_mp_range_widen(&range);
        if (!dot) {
            for (int k = 0; k < 4; k++) {
                mpfr_set_zero(L[k], 1);
                for (int j = 0; j < nout; j++)
                    if (x->io.out[j].cot)
                        dot_d(L[k], out[k][j].x, x->io.out[j].cot, x->io.out[j].n, t, v);
            }
            mpfr_srcptr Ls[4] = {L[0], L[1], L[2], L[3]};
            richardson(res, Ls, x->o->h_log2, t);
        } else {
            /* J u element by element, then <w, J u> */
            mpfr_set_zero(res, 1);
            for (int j = 0; j < nout; j++)
                for (int64_t i = 0; i < x->io.out[j].n; i++) {
                    mpfr_srcptr Ls[4] = {out[0][j].x + i, out[1][j].x + i, out[2][j].x + i,
                                         out[3][j].x + i};
                    richardson(L[0], Ls, x->o->h_log2, t);
                    mpfr_set_d(v, x->io.out[j].cot[i], MPFR_RNDN);
                    mpfr_mul(L[0], L[0], v, MPFR_RNDN);
                    mpfr_add(res, res, L[0], MPFR_RNDN);
                }
        }
        ra_mp_range_restore(&range);
    }
    for (int k = 0; k < 4; k++) {
        for (int j = 0; j < nout; j++)
            ra_mparr_free(&out[k][j]);
        mpfr_clear(L[k]);
    }
    mpfr_clears(t, v, (mpfr_ptr)0);
    return st;
}

static ra_status directional(ra_gc_result *r, fd_ctx *x, int dot)
{
    const int nin = x->io.nin;
    const mpfr_prec_t p = x->o->prec;
    double *u[RA_GC_MAX_INPUTS] = {NULL};
    ra_status st = RA_OK;
    for (int a = 0; a < nin && st == RA_OK; a++) {
        char name[RA_GC_NAME + 2];
        snprintf(name, sizeof name, "u.%s", x->io.in[a].name);
        st = draw(&u[a], x->io.in[a].n, x->o->seed, name);
        for (int64_t i = 0; st == RA_OK && x->skip[a] && i < x->io.in[a].n; i++)
            if (x->skip[a][i])
                u[a][i] = 0; /* not moved: near a kink */
    }
    mpfr_t fd, an, part, t, v;
    mpfr_inits2(p, fd, an, part, t, v, (mpfr_ptr)0);
    ra_mp_range range;
    ra_mp_range_widen(&range);
    /* rows: each input alone, then all at once (row nin) */
    for (int row = 0; row <= nin && st == RA_OK; row++) {
        const double *dir[RA_GC_MAX_INPUTS] = {NULL};
        mpfr_set_zero(an, 1);
        for (int a = 0; a < nin; a++) {
            if (row < nin && a != row)
                continue;
            dir[a] = u[a];
            mpfr_set_zero(part, 1); /* <an_a, u_a> */
            dot_d(part, x->an[a].x, u[a], x->io.in[a].n, t, v);
            mpfr_add(an, an, part, MPFR_RNDN);
        }
        st = fd_along(fd, x, dir, dot);
        if (st == RA_OK) {
            ra_gc_row *w = &r->rows[r->n++];
            compare(w, row < nin ? x->io.in[row].name : "all", fd, an, 1, NULL);
            for (int a = 0; a < nin; a++)
                if (row == nin || a == row)
                    w->excluded += x->nskip[a];
        }
    }
    ra_mp_range_restore(&range);
    mpfr_clears(fd, an, part, t, v, (mpfr_ptr)0);
    for (int a = 0; a < nin; a++)
        free(u[a]);
    return st;
}

/* --- entry ------------------------------------------------------------------------------- */

/* Marks the input elements the op says are near a kink. */
static ra_status mark_kinks(fd_ctx *x)
{
    if (!x->op->near_kink)
        return RA_OK;
    for (int a = 0; a < x->io.nin; a++) {
        const int64_t n = x->io.in[a].n;
        for (int64_t i = 0; i < n; i++) {
            if (!x->op->near_kink(x->state, a, i, x->o->h_log2))
                continue;
            if (!x->skip[a] && !(x->skip[a] = calloc((size_t)n, 1)))
                RA_ERROR("out of memory", RA_ENOMEM);
            x->skip[a][i] = 1;
            x->nskip[a]++;
        }
    }
    return RA_OK;
}

/* The layout an op's prepare filled is one the engine can hold. */
static ra_status check_layout(const ra_gc_op *op, const ra_gc_layout *io)
{
    if (io->nin < 1 || io->nin > RA_GC_MAX_INPUTS || io->nout < 1 || io->nout > RA_GC_MAX_OUTPUTS)
        RA_ERRORF(RA_EINTERNAL, "gradcheck %s: %d inputs and %d outputs (1..%d and 1..%d)",
                  op->name, io->nin, io->nout, RA_GC_MAX_INPUTS, RA_GC_MAX_OUTPUTS);
    for (int a = 0; a < io->nin + io->nout; a++) {
        const ra_gc_tensor *t = a < io->nin ? &io->in[a] : &io->out[a - io->nin];
        if (!memchr(t->name, '\0', sizeof t->name) || !t->name[0] || t->n < 0)
            RA_ERRORF(RA_EINTERNAL, "gradcheck %s: tensor %d of the layout has no name or size",
                      op->name, a);
    }
    return RA_OK;
}

/* The hooks the mode needs. */
static ra_status check_hooks(const ra_gc_op *op, const ra_gc_opts *o, int given)
{
    int ok = op->prepare && op->release && (given || op->backward);
    if (o->mode == RA_GC_ELEMENTWISE)
        ok = ok && op->ws_new && op->ws_free && op->loss_one;
    else
        ok = ok && op->along && (o->mode != RA_GC_DOT || op->set_cotangents);
    if (!ok)
        RA_ERRORF(RA_EUNSUPPORTED, "gradcheck: operation '%s' has no %s gradient check%s", op->name,
                  ra_gc_mode_name(o->mode), given ? "" : " of its reference backward");
    return RA_OK;
}

static ra_status gradcheck_any(ra_gc_result *r, const ra_gc_op *op, const ra_case *c,
                               const ra_gc_opts *o, const ra_tensors *grads, ra_gc_formula_fn fn,
                               void *fctx, const char *what)
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
    if (o->mode == RA_GC_DOT && (grads || fn))
        RA_ERROR("gradcheck: the dot mode draws its own cotangents and checks the reference "
                 "backward; given gradients need the elementwise or directional mode",
                 RA_EINVAL);
    RA_TRY(check_hooks(op, o, grads != NULL || fn != NULL));
    fd_ctx *x = calloc(1, sizeof *x); /* large: the layout and per-input arrays */
    if (!x)
        RA_ERROR("out of memory", RA_ENOMEM);
    x->op = op;
    x->o = o;
    ra_status st = op->prepare(&x->state, &x->io, c, o->prec, what);
    if (st == RA_OK)
        st = check_layout(op, &x->io);
    for (int s = 0; s < 4; s++) {
        mpfr_init2(x->step[s], 64);
        mpfr_set_si_2exp(x->step[s], s % 2 ? -1 : 1, -o->h_log2 - (s >= 2), MPFR_RNDN);
    }
    if (st == RA_OK)
        st = mark_kinks(x);
    if (st == RA_OK && o->mode == RA_GC_DOT) {
        /* random output cotangents replace the case's */
        for (int j = 0; j < x->io.nout && st == RA_OK; j++) {
            char name[RA_GC_NAME + 2];
            snprintf(name, sizeof name, "w.%s", x->io.out[j].name);
            st = draw(&x->w[j], x->io.out[j].n, o->seed, name);
            x->io.out[j].cot = x->w[j];
        }
        if (st == RA_OK)
            st = op->set_cotangents(x->state, (const double *const *)x->w);
    }
    if (st == RA_OK)
        st = analytic(x, grads, c, fn, fctx, what);
    if (st == RA_OK)
        st = o->mode == RA_GC_ELEMENTWISE ? elementwise(r, x)
                                          : directional(r, x, o->mode == RA_GC_DOT);
    if (x->state)
        op->release(x->state);
    for (int a = 0; a < RA_GC_MAX_INPUTS; a++)
        ra_mparr_free(&x->an[a]);
    for (int j = 0; j < RA_GC_MAX_OUTPUTS; j++)
        free(x->w[j]);
    for (int a = 0; a < RA_GC_MAX_INPUTS; a++)
        free(x->skip[a]);
    for (int s = 0; s < 4; s++)
        mpfr_clear(x->step[s]);
    free(x);
    return st;
}

ra_status ra_gradcheck(ra_gc_result *r, const ra_gc_op *op, const ra_case *c, const ra_gc_opts *o,
                       const ra_tensors *grads, const char *what)
{
    return gradcheck_any(r, op, c, o, grads, NULL, NULL, what);
}

ra_status ra_gradcheck_formula(ra_gc_result *r, const ra_gc_op *op, const ra_case *c,
                               const ra_gc_opts *o, ra_gc_formula_fn fn, void *ctx,
                               const char *what)
{
    return gradcheck_any(r, op, c, o, NULL, fn, ctx, what);
}
