/* The bidirectional frame GDN family in MPFR: whole runs (heads, then the RMSNorm backward). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/bigdn.h"
#include "ref/pool.h"

/*
 * Pass 1: every (b, h) head of every precision (src/ref/bigdn.c), either
 * through ra_pool_run_multi, one head per thread (many small heads), or
 * one after the other, highest precision first, each head on a team of
 * all the threads (few heads for the threads, or large heads: a pool of
 * 2 H B tasks on T threads leaves threads idle at its end, p = 256 taking
 * longer than 128; a team splits each head's frames, rows and tokens
 * instead).  For bigdn with gradients, pass 2: every token (b, n) of every
 * precision, the full-channel RMSNorm backward (the norm couples all heads
 * of a token, so it waits for pass 1):
 *
 *     dx_c = inv w_c dy_c - inv^3 / C x_c sum_c' (w_c' dy_c' x_c')
 *
 * then pass 3, the weight gradients dw_c = sum_{b,n} dy_c x_c inv, one
 * channel c per task, each sum in increasing (b, n).  Every pass writes
 * disjoint elements, each with the same MPFR calls whoever runs it, so
 * every result is bit-identical for any thread count and either mode.
 */

/* Heads at or above this many MPFR calls (about 0.6 s on one core) run on a team of all the
   threads unless there are at least 4 tasks per thread (a pool's tail is then short). */
#define TEAM_MIN_OPS 1e7

typedef struct multi_ctx {
    const ra_bigdn_in *in;
    ra_bigdn_out *outs;
    const mpfr_prec_t *precs;
    int grads;
    int team; /* threads per head */
} multi_ctx;

static ra_status head_ws_new(void **ws, void *ctx, mpfr_prec_t prec)
{
    const multi_ctx *m = ctx;
    return ra_bigdn_ws_new((ra_bigdn_ws **)ws, m->in, prec, m->grads, m->team);
}

static void head_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    ra_bigdn_ws_free(ws);
}

static ra_status head_unit(void *ws, void *ctx, int k, int64_t u, char *msg, size_t msglen)
{
    const multi_ctx *m = ctx;
    const ra_bigdn_shape *s = &m->in->s;
    return ra_bigdn_head(ws, m->in, u / s->H, u % s->H, &m->outs[k], NULL, m->grads, msg, msglen);
}

static ra_status tok_ws_new(void **ws, void *ctx, mpfr_prec_t prec)
{
    (void)ctx;
    ra_mparr *a = calloc(1, sizeof *a);
    if (!a)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = ra_mparr_init(a, 6, prec);
    if (st != RA_OK) {
        free(a);
        return st;
    }
    *ws = a;
    return RA_OK;
}

static void tok_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    ra_mparr_free(ws);
    free(ws);
}

/* Token u = b N + n: q_inv, k_inv, and dqkv's q and k slots. */
static ra_status tok_unit(void *ws, void *ctx, int k, int64_t u, char *msg, size_t msglen)
{
    const multi_ctx *m = ctx;
    const ra_bigdn_in *in = m->in;
    const ra_bigdn_shape *s = &in->s;
    const ra_bigdn_out *o = &m->outs[k];
    const int64_t N = s->F * s->S, C = s->H * s->D, b = u / N, n = u % N;
    mpfr_ptr x = ((ra_mparr *)ws)->x, w = x + 1, acc = x + 2, inv = x + 3, c3 = x + 4, t = x + 5;
    mpfr_clear_flags();
    for (int j = 0; j < 2; j++) {
        const ra_mparr *dy = j ? &o->dkn : &o->dqn;
        const int64_t y0 = ra_bigdn_tok(s, b, n, 0, 0);
        mpfr_set_zero(acc, 1);
        for (int64_t c = 0; c < C; c++) {
            ra_bigdn_get(x, in, RA_BIGDN_QKV, ra_bigdn_qkv(s, b, n, j, 0, c));
            mpfr_fma(acc, x, x, acc, MPFR_RNDN);
        }
        mpfr_div_si(acc, acc, C, MPFR_RNDN);
        mpfr_set_d(t, in->norm_eps, MPFR_RNDN);
        mpfr_add(acc, acc, t, MPFR_RNDN);
        mpfr_rec_sqrt(inv, acc, MPFR_RNDN);
        mpfr_set(o->inv.x + 2 * u + j, inv, MPFR_RNDN);
        /* corr = sum_c w dy x */
        mpfr_set_zero(acc, 1);
        for (int64_t c = 0; c < C; c++) {
            ra_bigdn_get(x, in, RA_BIGDN_QKV, ra_bigdn_qkv(s, b, n, j, 0, c));
            ra_bigdn_get(w, in, j ? RA_BIGDN_KNW : RA_BIGDN_QNW, c);
            mpfr_mul(t, w, dy->x + y0 + c, MPFR_RNDN);
            mpfr_fma(acc, t, x, acc, MPFR_RNDN);
        }
        /* c3 = inv^3 / C corr */
        mpfr_mul(c3, inv, inv, MPFR_RNDN);
        mpfr_mul(c3, c3, inv, MPFR_RNDN);
        mpfr_div_si(c3, c3, C, MPFR_RNDN);
        mpfr_mul(c3, c3, acc, MPFR_RNDN);
        for (int64_t c = 0; c < C; c++) {
            mpfr_ptr dx = o->g[RA_BIGDN_QKV].x + ra_bigdn_qkv(s, b, n, j, 0, c);
            ra_bigdn_get(x, in, RA_BIGDN_QKV, ra_bigdn_qkv(s, b, n, j, 0, c));
            ra_bigdn_get(w, in, j ? RA_BIGDN_KNW : RA_BIGDN_QNW, c);
            mpfr_mul(t, inv, w, MPFR_RNDN);
            mpfr_mul(t, t, dy->x + y0 + c, MPFR_RNDN);
            mpfr_mul(dx, c3, x, MPFR_RNDN);
            mpfr_sub(dx, t, dx, MPFR_RNDN);
        }
    }
    if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p() || mpfr_divby0_p()) {
        snprintf(msg, msglen,
                 "bigdn reference at %ld bits: the RMSNorm backward left MPFR's exponent range "
                 "(token b=%lld n=%lld)",
                 (long)o->prec, (long long)b, (long long)n);
        return RA_ENUMERIC;
    }
    return RA_OK;
}

/* Unit u = j C + c: dq_norm_w[c] (j = 0) or dk_norm_w[c] (j = 1), the sum over (b, n) in
   increasing order. */
static ra_status wgrad_unit(void *ws, void *ctx, int k, int64_t u, char *msg, size_t msglen)
{
    const multi_ctx *m = ctx;
    const ra_bigdn_in *in = m->in;
    const ra_bigdn_shape *s = &in->s;
    const ra_bigdn_out *o = &m->outs[k];
    const int64_t N = s->F * s->S, C = s->H * s->D, j = u / C, c = u % C;
    const ra_mparr *dy = j ? &o->dkn : &o->dqn;
    mpfr_ptr x = ((ra_mparr *)ws)->x, t = x + 1;
    mpfr_ptr dw = o->g[j ? RA_BIGDN_KNW : RA_BIGDN_QNW].x + c;
    mpfr_clear_flags();
    mpfr_set_zero(dw, 1);
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t n = 0; n < N; n++) {
            ra_bigdn_get(x, in, RA_BIGDN_QKV, ra_bigdn_qkv(s, b, n, (int)j, 0, c));
            mpfr_mul(t, x, o->inv.x + 2 * (b * N + n) + j, MPFR_RNDN);
            mpfr_fma(dw, t, dy->x + ra_bigdn_tok(s, b, n, 0, c), dw, MPFR_RNDN);
        }
    if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p()) {
        snprintf(msg, msglen,
                 "bigdn reference at %ld bits: the norm weights' gradient left MPFR's exponent "
                 "range",
                 (long)o->prec);
        return RA_ENUMERIC;
    }
    return RA_OK;
}

static ra_status alloc_outputs(ra_bigdn_out *o, const ra_bigdn_in *in, mpfr_prec_t prec, int grads)
{
    const ra_bigdn_shape *s = &in->s;
    RA_TRY(ra_mparr_init(&o->out, (size_t)ra_bigdn_arr_numel(s, in->kind, RA_BIGDN_DOUT), prec));
    if (!grads)
        return RA_OK;
    for (int j = 0; j < ra_bigdn_ndiff(in->kind); j++)
        RA_TRY(ra_mparr_init(&o->g[j], (size_t)ra_bigdn_arr_numel(s, in->kind, j), prec));
    if (in->kind == RA_BIGDN_FULL) {
        const size_t tok = (size_t)ra_bigdn_arr_numel(s, in->kind, RA_BIGDN_DOUT);
        RA_TRY(ra_mparr_init(&o->dqn, tok, prec));
        RA_TRY(ra_mparr_init(&o->dkn, tok, prec));
        RA_TRY(ra_mparr_init(&o->inv, (size_t)(2 * s->B * s->F * s->S), prec));
    }
    return RA_OK;
}

ra_status ra_bigdn_run_multi(ra_bigdn_out *outs, const mpfr_prec_t *precs, int nprec,
                             const ra_bigdn_in *in, int grads, int threads, ra_progress *prog)
{
    for (int k = 0; k < nprec && k < RA_BIGDN_MAX_PRECS; k++) {
        memset(&outs[k], 0, sizeof outs[k]);
        outs[k].prec = precs[k];
    }
    RA_TRY(ra_pool_check_precs(precs, nprec, RA_BIGDN_MAX_PRECS, "bigdn"));
    for (int a = 0; a < RA_BIGDN_NIN; a++)
        if (!in->x[a])
            RA_ERRORF(RA_ENOTFOUND, "bigdn reference: missing tensor '%s'",
                      ra_bigdn_arr_name(in->kind, a));
    if (grads && !in->x[RA_BIGDN_DOUT])
        RA_ERROR("bigdn reference: missing tensor 'dout'", RA_ENOTFOUND);
    /* team mode: a pool of one thread runs the (precision, head) tasks in the pool's order,
       each head opening a team of all the threads (a region nested in an inactive one) */
    const int team = ra_bigdn_team(in, nprec, threads);
    multi_ctx m = {.in = in, .outs = outs, .precs = precs, .grads = grads, .team = team};
    ra_status st = RA_OK;
    for (int k = 0; k < nprec && st == RA_OK; k++)
        st = alloc_outputs(&outs[k], in, precs[k], grads);
    const ra_pool_multi heads = {.nunits = in->s.B * in->s.H,
                                 .nprec = nprec,
                                 .precs = precs,
                                 .threads = team > 1 ? 1 : threads,
                                 .widen_range = 1,
                                 .prog = prog,
                                 .ctx = &m,
                                 .ws_new = head_ws_new,
                                 .ws_free = head_ws_free,
                                 .unit = head_unit};
    if (st == RA_OK)
        st = ra_pool_run_multi(&heads);
    if (st == RA_OK && grads && in->kind == RA_BIGDN_FULL) {
        /* the token pass, then the weight gradients (same pool, other units) */
        ra_pool_multi toks = {.nunits = in->s.B * in->s.F * in->s.S,
                              .nprec = nprec,
                              .precs = precs,
                              .threads = threads,
                              .widen_range = 1,
                              .ctx = &m,
                              .ws_new = tok_ws_new,
                              .ws_free = tok_ws_free,
                              .unit = tok_unit};
        ra_pool_multi wgrads = toks;
        wgrads.nunits = 2 * in->s.H * in->s.D, wgrads.unit = wgrad_unit;
        st = ra_pool_run_multi(&toks);
        if (st == RA_OK)
            st = ra_pool_run_multi(&wgrads);
    }
    for (int k = 0; k < nprec; k++) {
        ra_mparr_free(&outs[k].dqn);
        ra_mparr_free(&outs[k].dkn);
        ra_mparr_free(&outs[k].inv);
        if (st != RA_OK)
            ra_bigdn_out_clear(&outs[k]);
    }
    return st;
}

int ra_bigdn_team(const ra_bigdn_in *in, int nprec, int threads)
{
    const int T = ra_pool_threads(threads);
    const int64_t tasks = in->s.B * in->s.H * (int64_t)nprec;
    if (T <= 1)
        return 1;
    if (tasks < T)
        return T;
    double fwd, bwd;
    ra_bigdn_op_count(in, &fwd, &bwd);
    return (fwd + bwd) / (double)(in->s.B * in->s.H) >= TEAM_MIN_OPS && tasks < 4 * (int64_t)T
               ? T
               : 1;
}

ra_status ra_bigdn_run(ra_bigdn_out *out, const ra_bigdn_in *in, mpfr_prec_t prec, int grads,
                       int threads, ra_progress *prog)
{
    return ra_bigdn_run_multi(out, &prec, 1, in, grads, threads, prog);
}

void ra_bigdn_op_count(const ra_bigdn_in *in, double *fwd, double *bwd)
{
    /* Leading terms of the loops of src/ref/bigdn.c, per head: the
       features (about 12 calls per token and channel, three loads), the
       norms (2 C per token), the three D x D products (3 S D^2 per frame),
       the streams (D^3 + 2 D^2 per step, two streams), the readout (2 D^2
       per token).  The backward adds the readout adjoints (3 D^2 per
       token), the two adjoint scans (2 D^3 per frame), dP (2 D^3 per
       frame; ddecay reuses the products the stream steps formed) and the
       token gradients (about 8 D^2 per token); the RMSNorm backward 8 C
       per token. */
    const ra_bigdn_shape *s = &in->s;
    const double D = (double)s->D, S = (double)s->S, F = (double)s->F, N = F * S;
    const double heads = (double)(s->B * s->H), C = (double)(s->H * s->D);
    const int full = in->kind == RA_BIGDN_FULL;
    const double feat = N * D * 12 * 3 + (full ? 2 * N * C : 0);
    *fwd = heads * (feat + F * 3 * S * D * D + 2 * F * (D * D * D + 2 * D * D) + N * 2 * D * D);
    *bwd = heads * (N * D * 12 + N * 3 * D * D + F * 4 * D * D * D + N * 8 * D * D) +
           (full ? (double)s->B * N * 8 * C : 0);
}
