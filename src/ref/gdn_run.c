/* The gated delta rule in MPFR: inputs, whole-problem runs, group sums, op counts. */
#include "ref/gdn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/pool.h"

/*
 * ra_gdn_run spreads the B*Hv independent heads, at each precision asked
 * for, over OpenMP threads (dynamic schedule, one head at a time, the
 * highest precision first: heads of one precision cost the same, but
 * threads may not run at the same speed, and one pool for both precisions
 * of a certified reference leaves at most one task's imbalance at the end
 * instead of one per precision).  Each head writes only its own slices of
 * the outputs, and dq/dk go to per-value-head arrays; after the parallel
 * loop, every (b, t, hk) sums its group's value heads in increasing hv and
 * applies the l2norm chain rule
 *
 *     dx = dx^/n - x (x . dx^)/n^3 = (n^2 dx^ - x (x . dx^)) / n^3,
 *     n = sqrt(|x|^2 + l2eps)
 *
 * (one fmms and one division per element).  No result depends on which
 * thread ran what, so the bytes are identical for any thread count.
 *
 * Both loops run on the task pool (src/ref/pool.h): workspaces made
 * before the parallel region (an allocation failure is reported once), the
 * failure of the lowest task index reported (the same message for any
 * thread count), one thread when MPFR is not built thread-safe.
 */

int ra_gdn_shape_equal(const ra_gdn_shape *a, const ra_gdn_shape *b)
{
    return a->B == b->B && a->T == b->T && a->Hk == b->Hk && a->Hv == b->Hv && a->K == b->K &&
           a->V == b->V;
}

int64_t ra_gdn_arr_numel(const ra_gdn_shape *s, int a)
{
    switch (a) {
    case RA_GDN_Q:
    case RA_GDN_K:
        return s->B * s->T * s->Hk * s->K;
    case RA_GDN_V:
    case RA_GDN_DO:
        return s->B * s->T * s->Hv * s->V;
    case RA_GDN_G:
    case RA_GDN_BETA:
        return s->B * s->T * s->Hv;
    default:
        return s->B * s->Hv * s->K * s->V; /* h0, dht */
    }
}

ra_status ra_gdn_data_init(ra_gdn_data *d, const ra_gdn_problem *p)
{
    memset(d, 0, sizeof *d);
    d->in.s = p->s;
    d->in.l2norm = p->l2norm;
    d->in.one_arr = -1;
    const ra_tensor *src[RA_GDN_NARR] = {p->q, p->k, p->v, p->g, p->beta, p->h0, p->do_, p->dht};
    for (int a = 0; a < RA_GDN_NARR; a++) {
        if (!src[a])
            continue;
        d->buf[a] = malloc((size_t)src[a]->numel * sizeof(double) + 1);
        if (!d->buf[a]) {
            ra_gdn_data_clear(d);
            RA_ERRORF(RA_ENOMEM, "cannot allocate a copy of tensor '%s'", src[a]->name);
        }
        ra_tensor_to_doubles(d->buf[a], src[a]);
        d->in.x[a] = d->buf[a];
    }
    if ((p->scale_text && !(d->in.scale_text = strdup(p->scale_text))) ||
        (p->l2eps_text && !(d->in.l2eps_text = strdup(p->l2eps_text)))) {
        ra_gdn_data_clear(d);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    return RA_OK;
}

void ra_gdn_data_clear(ra_gdn_data *d)
{
    for (int a = 0; a < RA_GDN_NARR; a++)
        free(d->buf[a]);
    free((char *)d->in.scale_text);
    free((char *)d->in.l2eps_text);
    memset(d, 0, sizeof *d);
    d->in.one_arr = -1;
}

static ra_status check_param_text(const char *name, const char *text, int nonneg)
{
    MPFR_DECL_INIT(x, 64);
    if (mpfr_set_str(x, text, 0, MPFR_RNDN) != 0 || !mpfr_number_p(x))
        RA_ERRORF(RA_EINVAL, "parameter '%s': '%s' is not a finite number MPFR can read", name,
                  text);
    if (nonneg && mpfr_sgn(x) < 0)
        RA_ERRORF(RA_EINVAL, "parameter '%s' must be >= 0, got '%s'", name, text);
    return RA_OK;
}

ra_status ra_gdn_in_check(const ra_gdn_in *in, mpfr_prec_t prec, int need_do)
{
    RA_TRY(ra_pool_check_precs(&prec, 1, 1, "gdn"));
    if (in->scale_text)
        RA_TRY(check_param_text("scale", in->scale_text, 0));
    if (in->l2eps_text)
        RA_TRY(check_param_text("l2eps", in->l2eps_text, 1));
    for (int a = 0; a < RA_GDN_NARR; a++)
        if (!in->x[a] && (a < RA_GDN_H0 || (a == RA_GDN_DO && need_do)))
            RA_ERRORF(RA_ENOTFOUND, "gdn reference: missing tensor '%s'", ra_gdn_arr_names[a]);
    return RA_OK;
}

void ra_gdn_out_clear(ra_gdn_out *out)
{
    ra_mparr *arrs[] = {&out->o,  &out->ht,    &out->dq,  &out->dk,  &out->dv,
                        &out->dg, &out->dbeta, &out->dh0, &out->dqv, &out->dkv};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        ra_mparr_free(arrs[i]);
}

/* dq/dk from the per-value-head arrays: group sum, then the l2norm chain.
   One task per (b, t, hk); a workspace holds a K-vector and five scalars. */
typedef struct group_ctx {
    ra_gdn_out *out;
    const ra_gdn_in *in;
} group_ctx;

enum { GROUP_SCALARS = 6 };

static ra_status group_ws_new(void **ws, void *ctx, int worker)
{
    (void)worker;
    const group_ctx *g = ctx;
    const int64_t K = g->in->s.K;
    ra_mparr *tmp = calloc(1, sizeof *tmp);
    if (!tmp)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = ra_mparr_init(tmp, (size_t)K + GROUP_SCALARS, g->out->prec);
    if (st != RA_OK) {
        free(tmp);
        return st;
    }
    /* scale and l2eps once per workspace, under the range the workers use */
    ra_mp_range range;
    ra_mp_range_widen(&range);
    ra_gdn_params(tmp->x + K + 5, tmp->x + K + 4, g->in);
    ra_mp_range_restore(&range);
    *ws = tmp;
    return RA_OK;
}

static void group_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    ra_mparr_free(ws);
    free(ws);
}

static ra_status group_task(void *ws, void *ctx, int64_t it, char *msg, size_t msglen)
{
    const group_ctx *g = ctx;
    const ra_gdn_in *in = g->in;
    const ra_gdn_shape *s = &in->s;
    ra_gdn_out *out = g->out;
    const int64_t K = s->K, G = s->Hv / s->Hk;
    mpfr_ptr xr = ((ra_mparr *)ws)->x, n2 = xr + K, nrm = n2 + 1, dot = n2 + 2, n3 = n2 + 3,
             eps = n2 + 4;
    mpfr_clear_flags();
    const int64_t b = it / (s->T * s->Hk), t = it / s->Hk % s->T, hk = it % s->Hk;
    const int64_t base = ra_gdn_qk_index(s, b, t, hk, 0);
    const int64_t vbase = ((b * s->T + t) * s->Hv + hk * G) * K;
    for (int which = 0; which < 2; which++) {
        mpfr_ptr dst = (which ? out->dk.x : out->dq.x) + base;
        mpfr_srcptr src = (which ? out->dkv.x : out->dqv.x) + vbase;
        for (int64_t i = 0; i < K; i++)
            mpfr_set(dst + i, src + i, MPFR_RNDN);
        for (int64_t gi = 1; gi < G; gi++)
            for (int64_t i = 0; i < K; i++)
                mpfr_add(dst + i, dst + i, src + gi * K + i, MPFR_RNDN);
        if (!in->l2norm)
            continue;
        for (int64_t i = 0; i < K; i++)
            ra_gdn_get(xr + i, in, which ? RA_GDN_K : RA_GDN_Q, base + i);
        ra_gdn_l2norm(n2, nrm, xr, K, eps);
        mpfr_mul(n3, n2, nrm, MPFR_RNDN);
        mpfr_set_zero(dot, 1);
        for (int64_t i = 0; i < K; i++)
            mpfr_fma(dot, xr + i, dst + i, dot, MPFR_RNDN);
        for (int64_t i = 0; i < K; i++) {
            mpfr_fmms(dst + i, dst + i, n2, xr + i, dot, MPFR_RNDN);
            mpfr_div(dst + i, dst + i, n3, MPFR_RNDN);
        }
    }
    if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p()) {
        snprintf(msg, msglen,
                 "gdn reference at %ld bits: the group sums or the l2norm chain rule of dq/dk "
                 "left MPFR's exponent range (b=%lld t=%lld hk=%lld)",
                 (long)out->prec, (long long)b, (long long)t, (long long)hk);
        return RA_ENUMERIC;
    }
    return RA_OK;
}

static ra_status group_finish(ra_gdn_out *out, const ra_gdn_in *in, int threads)
{
    group_ctx g = {out, in};
    /* tasks of a few K-vector operations: taken 16 at a time */
    const ra_pool pool = {.ntasks = in->s.B * in->s.T * in->s.Hk,
                          .threads = threads,
                          .chunk = 16,
                          .widen_range = 1,
                          .ctx = &g,
                          .ws_new = group_ws_new,
                          .ws_free = group_ws_free,
                          .task = group_task};
    ra_status st = ra_pool_run(&pool);
    ra_mparr_free(&out->dqv);
    ra_mparr_free(&out->dkv);
    return st;
}

static ra_status alloc_outputs(ra_gdn_out *out, const ra_gdn_in *in, mpfr_prec_t prec, int grads)
{
    const ra_gdn_shape *s = &in->s;
    const size_t nO = (size_t)ra_gdn_arr_numel(s, RA_GDN_V),
                 nS = (size_t)ra_gdn_arr_numel(s, RA_GDN_H0),
                 nQ = (size_t)ra_gdn_arr_numel(s, RA_GDN_Q),
                 nG = (size_t)ra_gdn_arr_numel(s, RA_GDN_G), nQv = nG * (size_t)s->K;
    RA_TRY(ra_mparr_init(&out->o, nO, prec));
    RA_TRY(ra_mparr_init(&out->ht, nS, prec));
    if (!grads)
        return RA_OK;
    RA_TRY(ra_mparr_init(&out->dqv, nQv, prec));
    RA_TRY(ra_mparr_init(&out->dkv, nQv, prec));
    RA_TRY(ra_mparr_init(&out->dq, nQ, prec));
    RA_TRY(ra_mparr_init(&out->dk, nQ, prec));
    RA_TRY(ra_mparr_init(&out->dv, nO, prec));
    RA_TRY(ra_mparr_init(&out->dg, nG, prec));
    RA_TRY(ra_mparr_init(&out->dbeta, nG, prec));
    if (in->x[RA_GDN_H0])
        RA_TRY(ra_mparr_init(&out->dh0, nS, prec));
    return RA_OK;
}

/* Heads of every precision through ra_pool_run_multi. */
typedef struct multi_ctx {
    const ra_gdn_in *in;
    ra_gdn_out *outs;
    int grads;
} multi_ctx;

static ra_status multi_ws_new(void **ws, void *ctx, mpfr_prec_t prec)
{
    const multi_ctx *m = ctx;
    return ra_gdn_ws_new((ra_gdn_ws **)ws, &m->in->s, prec, m->grads, !ra_gdn_in_perturbed(m->in),
                         m->in->segment);
}

static void multi_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    ra_gdn_ws_free(ws);
}

static ra_status multi_head(void *ws, void *ctx, int k, int64_t h, char *msg, size_t msglen)
{
    const multi_ctx *m = ctx;
    const ra_gdn_shape *s = &m->in->s;
    return ra_gdn_head(ws, m->in, h / s->Hv, h % s->Hv, &m->outs[k], NULL, m->grads, msg, msglen);
}

ra_status ra_gdn_run_multi(ra_gdn_out *outs, const mpfr_prec_t *precs, int nprec,
                           const ra_gdn_in *in, int grads, int threads, ra_progress *prog)
{
    for (int k = 0; k < nprec && k < RA_GDN_MAX_PRECS; k++) {
        memset(&outs[k], 0, sizeof outs[k]);
        outs[k].prec = precs[k];
    }
    if (nprec < 1 || nprec > RA_GDN_MAX_PRECS)
        RA_ERRORF(RA_EINTERNAL, "gdn reference: %d precisions in one run", nprec);
    for (int k = 0; k < nprec; k++)
        RA_TRY(ra_gdn_in_check(in, precs[k], grads));
    multi_ctx m = {.in = in, .outs = outs, .grads = grads};
    ra_status st = RA_OK;
    for (int k = 0; k < nprec && st == RA_OK; k++)
        st = alloc_outputs(&outs[k], in, precs[k], grads);
    const ra_pool_multi pool = {.nunits = in->s.B * in->s.Hv,
                                .nprec = nprec,
                                .precs = precs,
                                .threads = threads,
                                .prog = prog,
                                .ctx = &m,
                                .ws_new = multi_ws_new,
                                .ws_free = multi_ws_free,
                                .unit = multi_head};
    if (st == RA_OK)
        st = ra_pool_run_multi(&pool);
    for (int k = 0; k < nprec && st == RA_OK && grads; k++)
        st = group_finish(&outs[k], in, threads);
    if (st != RA_OK)
        for (int k = 0; k < nprec; k++)
            ra_gdn_out_clear(&outs[k]);
    return st;
}
ra_status ra_gdn_run(ra_gdn_out *out, const ra_gdn_in *in, mpfr_prec_t prec, int grads, int threads,
                     ra_progress *prog)
{
    return ra_gdn_run_multi(out, &prec, 1, in, grads, threads, prog);
}

void ra_gdn_op_count(const ra_gdn_shape *s, int l2norm, int dht, int64_t segment, double *fwd,
                     double *bwd)
{
    /* Mirrors the loops of gdn.c and group_finish above, call by call
       (each multiply-add is two calls: mpfr_mul and mpfr_add). */
    const double K = (double)s->K, V = (double)s->V, T = (double)s->T, KV = K * V;
    const double heads = (double)(s->B * s->Hv);
    int64_t C = segment > 0 ? segment : ra_gdn_segment_length(s);
    if (C > s->T)
        C = s->T;
    const int64_t nfull = s->T / C, rest = s->T % C;
    const double nck = (double)(nfull + (rest > 0));
    const double l2 = l2norm ? K + 2 : 0; /* one norm: K fma, add, sqrt */
    /* w = P^T k_0; 2T loads of q/k (k_0, then q_t and k_{t+1}); per step
       exp, alpha, z/r, the update factor, the sweep (4 KV, 6 KV but at the
       last step), o; rescaling at the nck - 1 boundaries; ht.  (Checked
       call by call against a build with counting wrappers.) */
    const double f = 2 * KV + 2 * T * l2 + T * (3 + 2 * V + 1 + 2 * V + 4 * KV + 2 + V) +
                     (T - 1) * 2 * KV + (nck - 1) * (KV + V) + KV;
    /* <dht, S_T>; per segment exp and alpha per step and Lam rescaled;
       reverse steps: q and k, u, f, sdo, pass 1 (8 KV), du/dv, dbeta,
       u . do, dq, dg, pass-2 factors, pass 2 (4 KV), dk; the low-rank
       terms: a segment of n steps has n (n - 1) / 2 of them, each a V dot
       and a K update, for yh and for mh. */
    const double pairs =
        (double)nfull * (double)(C * (C - 1) / 2) + (double)(rest * (rest - 1) / 2);
    const double rc = (dht ? 2 * KV : 0) + 2 * T + nck * KV + pairs * 2 * (2 * V + 2 * K);
    const double st = T * (2 * l2 + V + 2 + V + 8 * KV + 1 + 2 * V + 2 * V + 2 * V + 1 + 2 * K +
                           2 * K + 1 + 2 * V + 1 + 1 + 3 + V + 4 * KV + 2 + K);
    /* group sums per (b, t, hk): (G - 1) K adds for dq and dk; l2norm
       chain: norm, n^3, x . dx^, fmms and div per element. */
    const double G = (double)(s->Hv / s->Hk), items = (double)(s->B * s->T * s->Hk);
    const double gsum = items * 2 * ((G - 1) * K + (l2norm ? l2 + 1 + K + 2 * K : 0));
    *fwd = heads * f;
    *bwd = heads * (rc + st) + gsum;
}
