/* The bidirectional frame GDN family's gradient-check hooks: its MPFR reference seen by the FD
 * engine. */
#include "gradcheck/bigdn_gc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigdn_case.h"
#include "ref/bigdn.h"

/*
 * Inputs, in row order: the member's differentiable inputs (bigdn: qkv,
 * beta, decay, q_norm_w, k_norm_w, the RoPE tables being constants;
 * bigdn.core: all seven), and for the *_state ops the perturbation arrays
 * of src/ref/bigdn.h; output out with cotangent dout: L = <dout, out>.
 *
 * Element-wise: the loss of a perturbed element is summed over the heads
 * it feeds, in increasing (b, h): one head for most elements; every head
 * of its batch for a q or k element of qkv (the RMSNorm runs over all
 * channels of a token); head h of every batch for a norm weight.
 * Directions use the whole forward (ra_bigdn_run).
 *
 * ReLU kinks (bigdn): the pre-activation y = x inv w of channel c' moves
 * by at most h inv |w_c'| (delta_cc' + |x_c'| |x_c| inv^2 / C) when q_raw
 * (or k_raw) element c of the same token moves by h, and by h |x| inv when
 * the weight w_c' moves by h.  An element is near a kink when some
 * pre-activation it feeds is within 2^10 times that bound of 0 (strictly:
 * a pre-activation that stays exactly 0, because its x is 0, is no kink):
 * 2^10 covers the Richardson steps and leaves room for the directional
 * modes, where every element moves at once.  The bound is evaluated in
 * double on the stored inputs, whose products carry a relative error of
 * about 1e-16, far inside the factor 2^10.
 */

typedef struct bigdn_gc {
    ra_bigdn_data d;
    int state;
    int nin;
    int map[RA_GC_MAX_INPUTS];
    double *y[2]; /* bigdn: Qn, Kn [B,N,H,D] in double */
    double *inv;  /* bigdn: q_inv, k_inv per token */
} bigdn_gc;

typedef struct bigdn_gc_ws {
    ra_bigdn_ws *w;
    mpfr_t lh;
} bigdn_gc_ws;

int ra_bigdn_gc_arr(int kind, int state, int a)
{
    const int nd = ra_bigdn_ndiff((ra_bigdn_kind)kind);
    if (a < nd)
        return a;
    if (!state)
        return -1;
    int k = nd;
    for (int arr = RA_BIGDN_P_QN; arr < RA_BIGDN_DOUT; arr++)
        if (ra_bigdn_arr_exists((ra_bigdn_kind)kind, arr) && k++ == a)
            return arr;
    return -1;
}

static void release(void *state)
{
    bigdn_gc *g = state;
    if (!g)
        return;
    ra_bigdn_data_clear(&g->d);
    free(g->y[0]);
    free(g->y[1]);
    free(g->inv);
    free(g);
}

/* The pre-activations and norms in double, for near_kink. */
static ra_status preacts(bigdn_gc *g)
{
    const ra_bigdn_in *in = &g->d.in;
    const ra_bigdn_shape *s = &in->s;
    const int64_t N = s->F * s->S, C = s->H * s->D;
    const size_t tok = (size_t)(s->B * N * C);
    g->y[0] = malloc(tok * sizeof(double) + 1);
    g->y[1] = malloc(tok * sizeof(double) + 1);
    g->inv = malloc((size_t)(2 * s->B * N) * sizeof(double) + 1);
    if (!g->y[0] || !g->y[1] || !g->inv)
        RA_ERROR("out of memory", RA_ENOMEM);
    const double *x = in->x[RA_BIGDN_QKV];
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int j = 0; j < 2; j++) {
                double ss = 0;
                for (int64_t c = 0; c < C; c++) {
                    const double v = x[ra_bigdn_qkv(s, b, n, j, 0, c)];
                    ss += v * v;
                }
                const double inv = 1 / sqrt(ss / (double)C + in->norm_eps);
                g->inv[2 * (b * N + n) + j] = inv;
                for (int64_t c = 0; c < C; c++)
                    g->y[j][ra_bigdn_tok(s, b, n, 0, c)] =
                        x[ra_bigdn_qkv(s, b, n, j, 0, c)] * inv *
                        in->x[j ? RA_BIGDN_KNW : RA_BIGDN_QNW][c];
            }
    return RA_OK;
}

static ra_status prepare(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                         const char *what, int with_state)
{
    *state = NULL;
    if (prec < 53)
        RA_ERRORF(RA_EINVAL, "gradcheck bigdn: precision %ld bits is below 53", (long)prec);
    ra_bigdn_problem p;
    RA_TRY(ra_bigdn_problem_init(&p, c, RA_BIGDN_NEED_COTANGENTS, what));
    bigdn_gc *g = calloc(1, sizeof *g);
    if (!g)
        RA_ERROR("out of memory", RA_ENOMEM);
    g->state = with_state;
    ra_status st = ra_bigdn_data_init(&g->d, &p);
    if (st == RA_OK && p.kind == RA_BIGDN_FULL)
        st = preacts(g);
    if (st != RA_OK) {
        release(g);
        return st;
    }
    memset(io, 0, sizeof *io);
    for (int a = 0; a < RA_GC_MAX_INPUTS; a++) {
        const int arr = ra_bigdn_gc_arr(p.kind, with_state, a);
        if (arr < 0)
            break;
        g->map[a] = arr;
        ra_gc_tensor *t = &io->in[io->nin++];
        strcpy(t->name, ra_bigdn_arr_name(p.kind, arr));
        t->n = ra_bigdn_arr_numel(&p.s, p.kind, arr);
    }
    g->nin = io->nin;
    ra_gc_tensor *o = &io->out[io->nout++];
    strcpy(o->name, "out");
    o->n = ra_bigdn_arr_numel(&p.s, p.kind, RA_BIGDN_DOUT);
    o->cot = g->d.in.x[RA_BIGDN_DOUT];
    *state = g;
    return RA_OK;
}

static ra_status prepare_plain(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                               const char *what)
{
    return prepare(state, io, c, prec, what, 0);
}

static ra_status prepare_state(void **state, ra_gc_layout *io, const ra_case *c, mpfr_prec_t prec,
                               const char *what)
{
    return prepare(state, io, c, prec, what, 1);
}

static ra_status set_cotangents(void *state, const double *const *cot)
{
    bigdn_gc *g = state;
    g->d.in.x[RA_BIGDN_DOUT] = cot[0]; /* the case's copy stays owned by g->d.buf */
    return RA_OK;
}

static ra_status backward(ra_mparr *grads, const void *state, mpfr_prec_t prec, int threads)
{
    const bigdn_gc *g = state;
    ra_bigdn_out out;
    RA_TRY(ra_bigdn_run(&out, &g->d.in, prec, 1, threads, NULL));
    for (int a = 0; a < g->nin; a++) {
        grads[a] = out.g[g->map[a]];
        memset(&out.g[g->map[a]], 0, sizeof out.g[0]); /* moved */
    }
    ra_bigdn_out_clear(&out);
    return RA_OK;
}

static ra_status along(ra_mparr *outs, const void *state, const double *const *dir, mpfr_srcptr t,
                       mpfr_prec_t prec, int threads)
{
    const bigdn_gc *g = state;
    ra_bigdn_in in = g->d.in;
    for (int a = 0; a < g->nin; a++)
        in.dir[g->map[a]] = dir[a];
    in.step = t;
    ra_bigdn_out out;
    RA_TRY(ra_bigdn_run(&out, &in, prec, 0, threads, NULL));
    outs[0] = out.out;
    memset(&out.out, 0, sizeof out.out);
    ra_bigdn_out_clear(&out);
    return RA_OK;
}

static void ws_free(void *ws)
{
    bigdn_gc_ws *e = ws;
    ra_bigdn_ws_free(e->w);
    mpfr_clear(e->lh);
    free(e);
}

static ra_status ws_new(void **ws, const void *state, mpfr_prec_t prec)
{
    const bigdn_gc *g = state;
    bigdn_gc_ws *e = calloc(1, sizeof *e);
    if (!e)
        RA_ERROR("out of memory", RA_ENOMEM);
    mpfr_init2(e->lh, prec);
    ra_status st = ra_bigdn_ws_new(&e->w, &g->d.in, prec, 0, 1);
    if (st != RA_OK) {
        ws_free(e);
        return st;
    }
    *ws = e;
    return RA_OK;
}

/* The heads element i of array arr feeds: batches [b0, b1), heads [h0, h1). */
static void heads_of(const ra_bigdn_in *in, int arr, int64_t i, int64_t *b0, int64_t *b1,
                     int64_t *h0, int64_t *h1)
{
    const ra_bigdn_shape *s = &in->s;
    const int64_t N = s->F * s->S, D = s->D, H = s->H, F = s->F;
    const int full = in->kind == RA_BIGDN_FULL;
    int64_t blk = 0; /* elements per (b, h) of a [B,H,...] array; 0: token layout */
    if (full && arr == RA_BIGDN_QKV) {
        const int64_t j = i / (H * D) % 3;
        *b0 = i / (N * 3 * H * D), *b1 = *b0 + 1;
        *h0 = j < 2 ? 0 : i / D % H, *h1 = j < 2 ? H : *h0 + 1;
        return;
    }
    if (full && (arr == RA_BIGDN_QNW || arr == RA_BIGDN_KNW)) {
        *b0 = 0, *b1 = s->B, *h0 = i / D, *h1 = *h0 + 1;
        return;
    }
    if ((full && arr == RA_BIGDN_BETA) || (!full && arr == RA_BIGDN_CBETA))
        blk = F * s->S;
    else if ((full && arr == RA_BIGDN_DECAY) || (!full && arr == RA_BIGDN_CDECAY))
        blk = F;
    else if (arr == RA_BIGDN_P_BZ || arr == RA_BIGDN_P_ZF || arr == RA_BIGDN_P_ZR ||
             arr == RA_BIGDN_P_ZT)
        blk = F * D;
    else if (arr >= RA_BIGDN_P_P && arr <= RA_BIGDN_P_MT)
        blk = F * D * D;
    else if (arr == RA_BIGDN_P_M0)
        blk = D * D;
    if (arr == RA_BIGDN_P_DEN) {
        *b0 = i / (N * H), *h0 = i % H;
    } else if (blk) {
        *b0 = i / (H * blk), *h0 = i / blk % H;
    } else { /* [B,N,H,D] */
        *b0 = i / (N * H * D), *h0 = i / D % H;
    }
    *b1 = *b0 + 1, *h1 = *h0 + 1;
}

static ra_status loss_one(mpfr_ptr loss, void *ws, const void *state, int a, int64_t i,
                          mpfr_srcptr delta, char *msg, size_t msglen)
{
    const bigdn_gc *g = state;
    bigdn_gc_ws *e = ws;
    ra_bigdn_in pin = g->d.in;
    pin.one_arr = g->map[a];
    pin.one_idx = i;
    pin.one_delta = delta;
    int64_t b0, b1, h0, h1;
    heads_of(&pin, pin.one_arr, i, &b0, &b1, &h0, &h1);
    mpfr_set_zero(loss, 1);
    for (int64_t b = b0; b < b1; b++)
        for (int64_t h = h0; h < h1; h++) {
            RA_TRY(ra_bigdn_head(e->w, &pin, b, h, NULL, e->lh, 0, msg, msglen));
            mpfr_add(loss, loss, e->lh, MPFR_RNDN);
        }
    return RA_OK;
}

static int near_kink(const void *state, int a, int64_t i, long h_log2)
{
    const bigdn_gc *g = state;
    const ra_bigdn_in *in = &g->d.in;
    if (in->kind != RA_BIGDN_FULL)
        return 0;
    const ra_bigdn_shape *s = &in->s;
    const int64_t N = s->F * s->S, C = s->H * s->D;
    const double step = ldexp(1.0, (int)-h_log2), far = 1024 * step;
    const int arr = g->map[a];
    if (arr == RA_BIGDN_P_QN || arr == RA_BIGDN_P_KN)
        return fabs(g->y[arr == RA_BIGDN_P_KN][i]) < far;
    if (arr == RA_BIGDN_QKV) {
        const int64_t c = i % C, j = i / C % 3, tok = i / (3 * C);
        if (j == 2)
            return 0;
        const double *x = in->x[RA_BIGDN_QKV], *w = in->x[j ? RA_BIGDN_KNW : RA_BIGDN_QNW];
        const double inv = g->inv[2 * tok + j], xc = fabs(x[(tok * 3 + j) * C + c]);
        for (int64_t c2 = 0; c2 < C; c2++) {
            const double x2 = fabs(x[(tok * 3 + j) * C + c2]);
            const double bound = inv * fabs(w[c2]) * ((c2 == c) + x2 * xc * inv * inv / (double)C);
            if (fabs(g->y[j][tok * C + c2]) < far * bound)
                return 1;
        }
        return 0;
    }
    if (arr == RA_BIGDN_QNW || arr == RA_BIGDN_KNW) {
        const int j = arr == RA_BIGDN_KNW;
        for (int64_t tok = 0; tok < s->B * N; tok++) {
            const double x = fabs(in->x[RA_BIGDN_QKV][(tok * 3 + j) * C + i]);
            if (fabs(g->y[j][tok * C + i]) < far * x * g->inv[2 * tok + j])
                return 1;
        }
    }
    return 0;
}

#define GC_ROW(var, opname, prep, bwd)                                                             \
    const ra_gc_op var = {.name = opname,                                                          \
                          .prepare = prep,                                                         \
                          .set_cotangents = set_cotangents,                                        \
                          .backward = bwd,                                                         \
                          .along = along,                                                          \
                          .ws_new = ws_new,                                                        \
                          .ws_free = ws_free,                                                      \
                          .loss_one = loss_one,                                                    \
                          .near_kink = near_kink,                                                  \
                          .release = release}

GC_ROW(ra_gc_op_bigdn, "bigdn", prepare_plain, backward);
GC_ROW(ra_gc_op_bigdn_core, "bigdn.core", prepare_plain, backward);
GC_ROW(ra_gc_op_bigdn_state, "bigdn", prepare_state, NULL);
GC_ROW(ra_gc_op_bigdn_core_state, "bigdn.core", prepare_state, NULL);
