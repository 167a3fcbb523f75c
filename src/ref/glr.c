/* The gated linear recurrence in MPFR: one head's forward and reverse-time backward, whole runs. */
#include "ref/glr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/pool.h"

/*
 * Per head (b, h) the state is S x D (docs/glr.md):
 *
 *     h_t[s,d] = alpha_t[s] h_{t-1}[s,d] + b_t[s] v_t[d],   o_t[d] = sum_s c_t[s] h_t[s,d]
 *     alpha_t[s] = exp(-g_t exp(A_log[s]))  (expneg)   or   exp(g_t A_log[s])  (linear)
 *
 * Backward, lambda = dL/dh_t carried in reverse time (derived in docs/glr.md):
 *
 *     lambda += c_t do_t^T;   dc_t = h_t do_t;   dv_t = lambda^T b_t;   db_t = lambda v_t
 *     P[s] = sum_d lambda[s,d] h_{t-1}[s,d]
 *     dg_t = sum_s P[s] dalpha_t[s]/dg_t;   dA_log[s] += P[s] dalpha_t[s]/dA_log[s]
 *     lambda = alpha_t lambda
 *
 * The backward needs h_{t-1} and h_t at every step.  The forward keeps a
 * checkpoint of the state every C steps; the backward recomputes each
 * segment's C states from its checkpoint with the same step function
 * (bit-identical to the forward's) and walks it backwards: memory
 * O((T/C + C) S D) per head, C = ceil(sqrt(T)).  It never reconstructs a
 * state by dividing by alpha (which is 0 in floating point at strong decay).
 *
 * Every sum runs in increasing index with mpfr_fma (one rounding per
 * term); no result depends on the thread that ran a head.  A run widens
 * MPFR's exponent range (exp(-g e^A) of a strong decay underflows a
 * double long before MPFR's range); leaving it is a numeric failure
 * naming the head, never a silent 0.
 */

const char *const ra_glr_arr_names[RA_GLR_NARR] = {"v", "b", "c", "g", "A_log", "hs", "do"};

int64_t ra_glr_arr_numel(const ra_glr_shape *s, int a)
{
    switch (a) {
    case RA_GLR_V:
    case RA_GLR_DO:
        return s->B * s->T * s->H * s->D;
    case RA_GLR_B:
    case RA_GLR_C:
        return s->B * s->T * s->H * s->S;
    case RA_GLR_G:
        return s->B * s->T * s->H;
    case RA_GLR_ALOG:
        return s->H * s->S;
    default: /* hs */
        return s->B * s->T * s->H * s->S * s->D;
    }
}

int64_t ra_glr_segment_length(const ra_glr_shape *s)
{
    int64_t c = 1;
    while (c * c < s->T)
        c++;
    return c;
}

ra_status ra_glr_data_init(ra_glr_data *d, const ra_glr_problem *p)
{
    memset(d, 0, sizeof *d);
    d->in.s = p->s;
    d->in.decay = p->decay;
    d->in.one_arr = -1;
    const ra_tensor *src[RA_GLR_NARR] = {p->v, p->b, p->c, p->g, p->A_log, NULL, p->do_};
    for (int a = 0; a < RA_GLR_NARR; a++) {
        if (!src[a])
            continue;
        d->buf[a] = malloc((size_t)src[a]->numel * sizeof(double) + 1);
        if (!d->buf[a]) {
            ra_glr_data_clear(d);
            RA_ERRORF(RA_ENOMEM, "cannot allocate a copy of tensor '%s'", src[a]->name);
        }
        ra_tensor_to_doubles(d->buf[a], src[a]);
        d->in.x[a] = d->buf[a];
    }
    return RA_OK;
}

void ra_glr_data_clear(ra_glr_data *d)
{
    for (int a = 0; a < RA_GLR_NARR; a++)
        free(d->buf[a]);
    memset(d, 0, sizeof *d);
    d->in.one_arr = -1;
}

void ra_glr_out_clear(ra_glr_out *out)
{
    ra_mparr *arrs[] = {&out->o, &out->dv, &out->db, &out->dc, &out->dg, &out->dA_log, &out->dAp};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        ra_mparr_free(arrs[i]);
}

void ra_glr_get(mpfr_ptr out, const ra_glr_in *in, int a, int64_t i)
{
    if (in->x[a])
        mpfr_set_d(out, in->x[a][i], MPFR_RNDN); /* exact: prec >= 53 */
    else
        mpfr_set_zero(out, 1);
    if (a < RA_GLR_NPERT && in->step && in->dir[a]) {
        MPFR_DECL_INIT(u, 53);
        mpfr_set_d(u, in->dir[a][i], MPFR_RNDN);
        mpfr_fma(out, u, in->step, out, MPFR_RNDN);
    }
    if (a == in->one_arr && i == in->one_idx)
        mpfr_add(out, out, in->one_delta, MPFR_RNDN);
}

void ra_glr_alpha(mpfr_ptr alpha, mpfr_ptr da_dg, mpfr_ptr da_dA, mpfr_srcptr g, mpfr_srcptr A,
                  ra_glr_decay decay, mpfr_ptr tmp)
{
    if (decay == RA_GLR_LINEAR) {
        /* alpha = exp(g A): dalpha/dg = A alpha, dalpha/dA = g alpha */
        mpfr_mul(tmp, g, A, MPFR_RNDN);
        mpfr_exp(alpha, tmp, MPFR_RNDN);
        if (da_dg)
            mpfr_mul(da_dg, A, alpha, MPFR_RNDN);
        if (da_dA)
            mpfr_mul(da_dA, g, alpha, MPFR_RNDN);
        return;
    }
    /* alpha = exp(-g e^A): dalpha/dg = -e^A alpha, dalpha/dA = -g e^A alpha */
    mpfr_exp(tmp, A, MPFR_RNDN);
    mpfr_mul(alpha, g, tmp, MPFR_RNDN);
    mpfr_neg(alpha, alpha, MPFR_RNDN);
    mpfr_exp(alpha, alpha, MPFR_RNDN);
    if (da_dg) {
        mpfr_mul(da_dg, tmp, alpha, MPFR_RNDN);
        mpfr_neg(da_dg, da_dg, MPFR_RNDN);
    }
    if (da_dA) {
        mpfr_mul(da_dA, tmp, alpha, MPFR_RNDN);
        mpfr_mul(da_dA, da_dA, g, MPFR_RNDN);
        mpfr_neg(da_dA, da_dA, MPFR_RNDN);
    }
}

/* --- one head ------------------------------------------------------------------------------ */

struct ra_glr_ws {
    mpfr_prec_t prec;
    int64_t C, nck;
    ra_mparr h;   /* S D: the running state */
    ra_mparr ck;  /* nck S D: checkpoints, state before steps 0, C, 2C, ... */
    ra_mparr seg; /* C S D: a recomputed segment, state after each of its steps */
    ra_mparr lam; /* S D */
    ra_mparr vec; /* A[S], alpha[S], fg[S], fa[S], P[S], b[S], c[S], dA[S], v[D], do[D] */
    ra_mparr sc;  /* scalars: g, tmp, acc, lh */
};

enum { V_A, V_ALPHA, V_FG, V_FA, V_P, V_B, V_C, V_DA, V_NS }; /* S-vectors, then v[D], do[D] */

ra_status ra_glr_ws_new(ra_glr_ws **out, const ra_glr_shape *s, mpfr_prec_t prec, int bwd,
                        int64_t segment)
{
    ra_glr_ws *w = calloc(1, sizeof *w);
    if (!w)
        RA_ERROR("out of memory", RA_ENOMEM);
    w->prec = prec;
    w->C = segment > 0 ? segment : ra_glr_segment_length(s);
    if (w->C > s->T)
        w->C = s->T;
    w->nck = (s->T + w->C - 1) / w->C;
    const size_t SD = (size_t)(s->S * s->D);
    ra_status st = ra_mparr_init(&w->h, SD, prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->vec, (size_t)(V_NS * s->S + 2 * s->D), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->sc, 4, prec);
    if (st == RA_OK && bwd)
        st = ra_mparr_init(&w->ck, (size_t)w->nck * SD, prec);
    if (st == RA_OK && bwd)
        st = ra_mparr_init(&w->seg, (size_t)w->C * SD, prec);
    if (st == RA_OK && bwd)
        st = ra_mparr_init(&w->lam, SD, prec);
    if (st != RA_OK) {
        ra_glr_ws_free(w);
        return st;
    }
    *out = w;
    return RA_OK;
}

void ra_glr_ws_free(ra_glr_ws *w)
{
    if (!w)
        return;
    ra_mparr *arrs[] = {&w->h, &w->ck, &w->seg, &w->lam, &w->vec, &w->sc};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        ra_mparr_free(arrs[i]);
    free(w);
}

typedef struct head {
    ra_glr_ws *w;
    const ra_glr_in *in;
    const ra_glr_shape *s;
    int64_t b, h;
    int hs; /* the state perturbation is in use */
    mpfr_ptr A, alpha, fg, fa, P, bv, cv, dA, v, dov, g, tmp, acc, lh;
} head;

/* Loads step t's b, c, v, g (and do when want_do) and alpha (with its
   partials when partials). */
static void load_step(head *k, int64_t t, int want_do, int partials)
{
    const ra_glr_shape *s = k->s;
    const int64_t bs = ra_glr_bs_index(s, k->b, t, k->h, 0),
                  vd = ra_glr_vd_index(s, k->b, t, k->h, 0);
    for (int64_t i = 0; i < s->S; i++) {
        ra_glr_get(k->bv + i, k->in, RA_GLR_B, bs + i);
        ra_glr_get(k->cv + i, k->in, RA_GLR_C, bs + i);
    }
    for (int64_t d = 0; d < s->D; d++) {
        ra_glr_get(k->v + d, k->in, RA_GLR_V, vd + d);
        if (want_do)
            ra_glr_get(k->dov + d, k->in, RA_GLR_DO, vd + d);
    }
    ra_glr_get(k->g, k->in, RA_GLR_G, ra_glr_gate_index(s, k->b, t, k->h));
    for (int64_t i = 0; i < s->S; i++)
        ra_glr_alpha(k->alpha + i, partials ? k->fg + i : NULL, partials ? k->fa + i : NULL, k->g,
                     k->A + i, k->in->decay, k->tmp);
}

/* st = alpha st + b v^T (+ hs[t]); the step function of forward and recompute. */
static void advance(head *k, mpfr_ptr st, int64_t t)
{
    const ra_glr_shape *s = k->s;
    for (int64_t i = 0; i < s->S; i++)
        for (int64_t d = 0; d < s->D; d++) {
            mpfr_ptr x = st + i * s->D + d;
            mpfr_mul(x, x, k->alpha + i, MPFR_RNDN);
            mpfr_fma(x, k->bv + i, k->v + d, x, MPFR_RNDN);
        }
    if (!k->hs)
        return;
    const int64_t base = ((k->b * s->T + t) * s->H + k->h) * s->S * s->D;
    for (int64_t j = 0; j < s->S * s->D; j++) {
        ra_glr_get(k->tmp, k->in, RA_GLR_HS, base + j);
        mpfr_add(st + j, st + j, k->tmp, MPFR_RNDN);
    }
}

static int range_failed(void)
{
    return mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p();
}

ra_status ra_glr_head(ra_glr_ws *w, const ra_glr_in *in, int64_t b, int64_t h,
                      const ra_glr_out *out, mpfr_ptr loss, int bwd, char *msg, size_t msglen)
{
    const ra_glr_shape *s = &in->s;
    const int64_t S = s->S, D = s->D, SD = S * D, T = s->T;
    mpfr_ptr vec = w->vec.x;
    head k = {.w = w, .in = in, .s = s, .b = b, .h = h};
    k.hs = in->one_arr == RA_GLR_HS || (in->step && in->dir[RA_GLR_HS]);
    k.A = vec + V_A * S, k.alpha = vec + V_ALPHA * S, k.fg = vec + V_FG * S;
    k.fa = vec + V_FA * S, k.P = vec + V_P * S, k.bv = vec + V_B * S, k.cv = vec + V_C * S;
    k.dA = vec + V_DA * S, k.v = vec + V_NS * S, k.dov = k.v + D;
    k.g = w->sc.x, k.tmp = w->sc.x + 1, k.acc = w->sc.x + 2, k.lh = w->sc.x + 3;
    mpfr_clear_flags();
    for (int64_t i = 0; i < S; i++)
        ra_glr_get(k.A + i, in, RA_GLR_ALOG, h * S + i);
    const int want_do = loss != NULL || bwd;
    ra_mp_zero(w->h.x, (size_t)SD);
    mpfr_set_zero(k.lh, 1);
    for (int64_t t = 0; t < T; t++) {
        if (bwd && t % w->C == 0)
            for (int64_t j = 0; j < SD; j++)
                mpfr_set(w->ck.x + t / w->C * SD + j, w->h.x + j, MPFR_RNDN);
        load_step(&k, t, want_do, 0);
        advance(&k, w->h.x, t);
        if (!out && !loss)
            continue;
        for (int64_t d = 0; d < D; d++) {
            mpfr_set_zero(k.acc, 1);
            for (int64_t i = 0; i < S; i++)
                mpfr_fma(k.acc, k.cv + i, w->h.x + i * D + d, k.acc, MPFR_RNDN);
            if (out && out->o.n)
                mpfr_set(out->o.x + ra_glr_vd_index(s, b, t, h, d), k.acc, MPFR_RNDN);
            if (loss)
                mpfr_fma(k.lh, k.dov + d, k.acc, k.lh, MPFR_RNDN);
        }
    }
    if (loss)
        mpfr_set(loss, k.lh, MPFR_RNDN);
    if (bwd && out) {
        ra_mp_zero(w->lam.x, (size_t)SD);
        ra_mp_zero(k.dA, (size_t)S);
        for (int64_t seg = w->nck - 1; seg >= 0; seg--) {
            const int64_t t0 = seg * w->C, n = T - t0 < w->C ? T - t0 : w->C;
            /* recompute the segment's states from its checkpoint */
            for (int64_t j = 0; j < SD; j++)
                mpfr_set(w->seg.x + j, w->ck.x + seg * SD + j, MPFR_RNDN);
            for (int64_t u = 0; u < n; u++) {
                mpfr_ptr cur = w->seg.x + u * SD;
                if (u > 0)
                    for (int64_t j = 0; j < SD; j++)
                        mpfr_set(cur + j, cur - SD + j, MPFR_RNDN);
                load_step(&k, t0 + u, 0, 0);
                advance(&k, cur, t0 + u);
            }
            for (int64_t u = n - 1; u >= 0; u--) {
                const int64_t t = t0 + u;
                mpfr_srcptr cur = w->seg.x + u * SD;
                mpfr_srcptr prev = u > 0 ? w->seg.x + (u - 1) * SD : w->ck.x + seg * SD;
                load_step(&k, t, 1, 1);
                mpfr_ptr lam = w->lam.x;
                for (int64_t i = 0; i < S; i++)
                    for (int64_t d = 0; d < D; d++)
                        mpfr_fma(lam + i * D + d, k.cv + i, k.dov + d, lam + i * D + d, MPFR_RNDN);
                const int64_t bs = ra_glr_bs_index(s, b, t, h, 0),
                              vd = ra_glr_vd_index(s, b, t, h, 0);
                for (int64_t i = 0; i < S; i++) {
                    /* dc, db, P: sums over d */
                    mpfr_ptr dc = out->dc.x + bs + i, db = out->db.x + bs + i;
                    mpfr_set_zero(dc, 1);
                    mpfr_set_zero(db, 1);
                    mpfr_set_zero(k.P + i, 1);
                    for (int64_t d = 0; d < D; d++) {
                        mpfr_fma(dc, cur + i * D + d, k.dov + d, dc, MPFR_RNDN);
                        mpfr_fma(db, lam + i * D + d, k.v + d, db, MPFR_RNDN);
                        mpfr_fma(k.P + i, lam + i * D + d, prev + i * D + d, k.P + i, MPFR_RNDN);
                    }
                }
                for (int64_t d = 0; d < D; d++) {
                    mpfr_ptr dv = out->dv.x + vd + d;
                    mpfr_set_zero(dv, 1);
                    for (int64_t i = 0; i < S; i++)
                        mpfr_fma(dv, k.bv + i, lam + i * D + d, dv, MPFR_RNDN);
                }
                mpfr_ptr dg = out->dg.x + ra_glr_gate_index(s, b, t, h);
                mpfr_set_zero(dg, 1);
                for (int64_t i = 0; i < S; i++) {
                    mpfr_fma(dg, k.P + i, k.fg + i, dg, MPFR_RNDN);
                    mpfr_fma(k.dA + i, k.P + i, k.fa + i, k.dA + i, MPFR_RNDN);
                }
                for (int64_t i = 0; i < S; i++)
                    for (int64_t d = 0; d < D; d++)
                        mpfr_mul(lam + i * D + d, lam + i * D + d, k.alpha + i, MPFR_RNDN);
            }
        }
        for (int64_t i = 0; i < S; i++)
            mpfr_set(out->dAp.x + (b * s->H + h) * S + i, k.dA + i, MPFR_RNDN);
    }
    if (range_failed()) {
        snprintf(msg, msglen,
                 "glr reference at %ld bits: a value left MPFR's exponent range (head b=%lld "
                 "h=%lld)",
                 (long)w->prec, (long long)b, (long long)h);
        return RA_ENUMERIC;
    }
    return RA_OK;
}

/* --- whole runs ------------------------------------------------------------------------------ */

/* Heads of every precision through ra_pool_run_multi. */
typedef struct multi_ctx {
    const ra_glr_in *in;
    ra_glr_out *outs;
    int grads;
} multi_ctx;

static ra_status multi_ws_new(void **ws, void *ctx, mpfr_prec_t prec)
{
    const multi_ctx *m = ctx;
    return ra_glr_ws_new((ra_glr_ws **)ws, &m->in->s, prec, m->grads, m->in->segment);
}

static void multi_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    ra_glr_ws_free(ws);
}

static ra_status multi_head(void *ws, void *ctx, int k, int64_t hh, char *msg, size_t msglen)
{
    const multi_ctx *m = ctx;
    const ra_glr_shape *s = &m->in->s;
    return ra_glr_head(ws, m->in, hh / s->H, hh % s->H, &m->outs[k], NULL, m->grads, msg, msglen);
}

static ra_status alloc_outputs(ra_glr_out *out, const ra_glr_in *in, mpfr_prec_t prec, int grads)
{
    const ra_glr_shape *s = &in->s;
    RA_TRY(ra_mparr_init(&out->o, (size_t)ra_glr_arr_numel(s, RA_GLR_V), prec));
    if (!grads)
        return RA_OK;
    RA_TRY(ra_mparr_init(&out->dv, (size_t)ra_glr_arr_numel(s, RA_GLR_V), prec));
    RA_TRY(ra_mparr_init(&out->db, (size_t)ra_glr_arr_numel(s, RA_GLR_B), prec));
    RA_TRY(ra_mparr_init(&out->dc, (size_t)ra_glr_arr_numel(s, RA_GLR_C), prec));
    RA_TRY(ra_mparr_init(&out->dg, (size_t)ra_glr_arr_numel(s, RA_GLR_G), prec));
    RA_TRY(ra_mparr_init(&out->dA_log, (size_t)ra_glr_arr_numel(s, RA_GLR_ALOG), prec));
    RA_TRY(ra_mparr_init(&out->dAp, (size_t)(s->B * s->H * s->S), prec));
    return RA_OK;
}

/* dA_log[h,s] = sum over b, in increasing b. */
static ra_status batch_sum(ra_glr_out *out, const ra_glr_shape *s)
{
    ra_mp_range range;
    ra_mp_range_widen(&range);
    mpfr_clear_flags();
    const int64_t HS = s->H * s->S;
    for (int64_t j = 0; j < HS; j++) {
        mpfr_set(out->dA_log.x + j, out->dAp.x + j, MPFR_RNDN);
        for (int64_t b = 1; b < s->B; b++)
            mpfr_add(out->dA_log.x + j, out->dA_log.x + j, out->dAp.x + b * HS + j, MPFR_RNDN);
    }
    int bad = range_failed();
    ra_mp_range_restore(&range);
    ra_mparr_free(&out->dAp);
    if (bad)
        RA_ERRORF(RA_ENUMERIC,
                  "glr reference at %ld bits: the batch sum of dA_log left MPFR's "
                  "exponent range",
                  (long)out->prec);
    return RA_OK;
}

ra_status ra_glr_run_multi(ra_glr_out *outs, const mpfr_prec_t *precs, int nprec,
                           const ra_glr_in *in, int grads, int threads, ra_progress *prog)
{
    for (int k = 0; k < nprec && k < RA_GLR_MAX_PRECS; k++) {
        memset(&outs[k], 0, sizeof outs[k]);
        outs[k].prec = precs[k];
    }
    RA_TRY(ra_pool_check_precs(precs, nprec, RA_GLR_MAX_PRECS, "glr"));
    for (int a = 0; a < RA_GLR_NARR; a++)
        if (a != RA_GLR_HS && !in->x[a] && (a != RA_GLR_DO || grads))
            RA_ERRORF(RA_ENOTFOUND, "glr reference: missing tensor '%s'", ra_glr_arr_names[a]);
    multi_ctx m = {.in = in, .outs = outs, .grads = grads};
    ra_status st = RA_OK;
    for (int k = 0; k < nprec && st == RA_OK; k++)
        st = alloc_outputs(&outs[k], in, precs[k], grads);
    const ra_pool_multi pool = {.nunits = in->s.B * in->s.H,
                                .nprec = nprec,
                                .precs = precs,
                                .threads = threads,
                                .widen_range = 1,
                                .prog = prog,
                                .ctx = &m,
                                .ws_new = multi_ws_new,
                                .ws_free = multi_ws_free,
                                .unit = multi_head};
    if (st == RA_OK)
        st = ra_pool_run_multi(&pool);
    for (int k = 0; k < nprec && st == RA_OK && grads; k++)
        st = batch_sum(&outs[k], &in->s);
    if (st != RA_OK)
        for (int k = 0; k < nprec; k++)
            ra_glr_out_clear(&outs[k]);
    return st;
}

ra_status ra_glr_run(ra_glr_out *out, const ra_glr_in *in, mpfr_prec_t prec, int grads, int threads,
                     ra_progress *prog)
{
    return ra_glr_run_multi(out, &prec, 1, in, grads, threads, prog);
}

void ra_glr_op_count(const ra_glr_shape *s, ra_glr_decay decay, double *fwd, double *bwd)
{
    /* Mirrors the loops above (mul, fma, exp, neg each one call; loads and
       copies not counted).  alpha: linear mul, exp (2 calls), its partials
       2 muls; expneg exp, mul, neg, exp (4), partials mul, neg, mul, mul,
       neg (5). */
    const double S = (double)s->S, D = (double)s->D, T = (double)s->T, SD = S * D;
    const double heads = (double)(s->B * s->H);
    const double alpha = decay == RA_GLR_LINEAR ? 2 : 4, partials = decay == RA_GLR_LINEAR ? 2 : 5;
    /* per step: alpha, the update (mul + fma per element), o (fma per element) */
    *fwd = heads * T * (S * alpha + 2 * SD + SD);
    /* recompute (alpha, update), then per step: alpha and partials, lambda
       += c do (SD), dc/db/P (3 SD), dv (SD), dg/dA (2 S), lambda *= alpha
       (SD); the batch sum of dA_log */
    *bwd =
        heads * T * (S * alpha + 2 * SD + S * (alpha + partials) + SD + 3 * SD + SD + 2 * S + SD) +
        (double)((s->B - 1) * s->H * s->S);
}
