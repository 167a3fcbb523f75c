/* The gated delta rule in MPFR: one (b, hv) head, forward and reverse-time backward. */
#include "ref/gdn.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"

/*
 * Evaluates docs/gdn.md per head, rearranged by exact identities so that
 * each K x V sweep costs few MPFR calls: a scaled state within segments of
 * C steps, the stored keys in the sweeps (norms folded into scalars), a
 * backward from checkpoints plus low-rank terms, and a scalar recursion for
 * dg.  Only the rounding points differ from the docs/gdn.md listing; the
 * certificate (two precisions) measures the result.
 *
 * Errors: a value leaving MPFR's widest exponent range (overflow, underflow
 * or NaN flag at the end) fails the head with RA_ENUMERIC, never a flushed
 * or infinite value; a zero norm under l2norm with l2eps = 0 fails with
 * RA_EINVAL.  Heads run in worker threads: the reason goes back in a buffer.
 *
 * Derivation: docs/gdn-reference.md (§Scaled state, §Backward, §The dg
 * recursion, §Exact zeros).
 */

const char *const ra_gdn_arr_names[RA_GDN_NARR] = {"q", "k", "v", "g", "beta", "h0", "do", "dht"};

struct ra_gdn_ws {
    ra_gdn_shape s;
    mpfr_prec_t prec, pin;
    int bwd;
    int64_t C, nck;
    ra_mparr S, ck, R, UU, alpha, kseg, vin, vec;
    unsigned char *zero; /* bwd: zero[t] = 1 when the state before step t is exactly 0 */
    /* inputs at pin: K-vectors, V-vectors */
    mpfr_ptr q, k, kn, v, dov;
    /* K-vectors */
    mpfr_ptr xh, yh, mh;
    /* V-vectors */
    mpfr_ptr w, wn, op, u, uu, duh, du, sdo, cdu, rt;
    /* scalars */
    mpfr_ptr a, al, beta, scale, l2eps, n2, nq, nk, nkn, den, f, f2, tmp, udo, dg, lr;
    ra_status st;
    char msg[400];
};

enum { WS_IN_K = 3, WS_IN_V = 2, WS_KVECS = 3, WS_VVECS = 10, WS_SCALARS = 16 };

static void ws_fail(ra_gdn_ws *w, ra_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ws_fail(ra_gdn_ws *w, ra_status st, const char *fmt, ...)
{
    if (w->st != RA_OK)
        return;
    w->st = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof w->msg, fmt, ap);
    va_end(ap);
}

int64_t ra_gdn_segment_length(const ra_gdn_shape *s)
{
    /* The backward pays (C - 1)(K + V) multiply-adds per step for the
       low-rank part of the state and a checkpoint costs K V numbers: C - 1
       = K V / (4 (K + V)) keeps the first at a quarter of one K x V sweep
       (C = 17 at K = V = 128), and at most 512 checkpoints bound the
       memory for long sequences. */
    const int64_t K = s->K, V = s->V, T = s->T;
    int64_t c = 1 + K * V / (4 * (K + V));
    if (c < (T + 511) / 512)
        c = (T + 511) / 512;
    return c > T ? T : c < 1 ? 1 : c;
}

static void carve(mpfr_ptr *p, mpfr_ptr **dst, int n, int64_t len)
{
    for (int i = 0; i < n; i++, *p += len)
        *dst[i] = *p;
}

ra_status ra_gdn_ws_new(ra_gdn_ws **out, const ra_gdn_shape *s, mpfr_prec_t prec, int bwd,
                        int exact_inputs, int64_t segment)
{
    *out = NULL;
    ra_gdn_ws *w = calloc(1, sizeof *w);
    if (!w)
        RA_ERROR("out of memory", RA_ENOMEM);
    w->s = *s;
    w->prec = prec;
    w->pin = exact_inputs && prec > 53 ? 53 : prec;
    w->bwd = bwd;
    const int64_t K = s->K, V = s->V, T = s->T, KV = K * V;
    w->C = segment > 0 ? (segment < T ? segment : T) : ra_gdn_segment_length(s);
    w->nck = (T + w->C - 1) / w->C;
    ra_status st = ra_mparr_init(&w->S, (size_t)KV, prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->vin, (size_t)(WS_IN_K * K + WS_IN_V * V), w->pin);
    if (st == RA_OK)
        st = ra_mparr_init(&w->vec, (size_t)(WS_KVECS * K + WS_VVECS * V + WS_SCALARS), prec);
    if (st == RA_OK && bwd) {
        st = ra_mparr_init(&w->ck, (size_t)(w->nck * KV), prec);
        if (st == RA_OK)
            st = ra_mparr_init(&w->R, (size_t)(T * V), prec);
        if (st == RA_OK)
            st = ra_mparr_init(&w->UU, (size_t)(T * V), prec);
        if (st == RA_OK)
            st = ra_mparr_init(&w->alpha, (size_t)w->C, prec);
        if (st == RA_OK)
            st = ra_mparr_init(&w->kseg, (size_t)(w->C * K), w->pin);
        if (st == RA_OK && !(w->zero = malloc((size_t)T))) {
            ra_error("out of memory", __FILE__, __LINE__, RA_ENOMEM);
            st = RA_ENOMEM;
        }
    }
    if (st != RA_OK) {
        ra_gdn_ws_free(w);
        return st;
    }
    mpfr_ptr p = w->vin.x;
    carve(&p, (mpfr_ptr *[]){&w->q, &w->k, &w->kn}, WS_IN_K, K);
    carve(&p, (mpfr_ptr *[]){&w->v, &w->dov}, WS_IN_V, V);
    p = w->vec.x;
    carve(&p, (mpfr_ptr *[]){&w->xh, &w->yh, &w->mh}, WS_KVECS, K);
    carve(&p,
          (mpfr_ptr *[]){&w->w, &w->wn, &w->op, &w->u, &w->uu, &w->duh, &w->du, &w->sdo, &w->cdu,
                         &w->rt},
          WS_VVECS, V);
    carve(&p,
          (mpfr_ptr *[]){&w->a, &w->al, &w->beta, &w->scale, &w->l2eps, &w->n2, &w->nq, &w->nk,
                         &w->nkn, &w->den, &w->f, &w->f2, &w->tmp, &w->udo, &w->dg, &w->lr},
          WS_SCALARS, 1);
    *out = w;
    return RA_OK;
}

void ra_gdn_ws_free(ra_gdn_ws *w)
{
    if (!w)
        return;
    ra_mparr *arrs[] = {&w->S, &w->ck, &w->R, &w->UU, &w->alpha, &w->kseg, &w->vin, &w->vec};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        ra_mparr_free(arrs[i]);
    free(w->zero);
    free(w);
}

int64_t ra_gdn_ws_segment(const ra_gdn_ws *w) { return w->C; }

/* --- inputs --------------------------------------------------------------------------- */

int ra_gdn_in_perturbed(const ra_gdn_in *in)
{
    if (in->one_arr >= 0)
        return 1;
    for (int a = 0; in->step && a < RA_GDN_NDIFF; a++)
        if (in->dir[a])
            return 1;
    return 0;
}

void ra_gdn_get(mpfr_ptr out, const ra_gdn_in *in, int a, int64_t i)
{
    mpfr_set_d(out, in->x[a][i], MPFR_RNDN);
    if (a >= RA_GDN_NDIFF)
        return;
    if (in->step && in->dir[a]) {
        MPFR_DECL_INIT(d, 53);
        mpfr_set_d(d, in->dir[a][i], MPFR_RNDN);
        mpfr_fma(out, in->step, d, out, MPFR_RNDN);
    }
    if (a == in->one_arr && i == in->one_idx)
        mpfr_add(out, out, in->one_delta, MPFR_RNDN);
}

static void load_span(mpfr_ptr dst, const ra_gdn_in *in, int a, int64_t base, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        ra_gdn_get(dst + i, in, a, base + i);
}

static void copy_span(mpfr_ptr dst, mpfr_srcptr src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        mpfr_set(dst + i, src + i, MPFR_RNDN);
}

static void scale_span(mpfr_ptr dst, mpfr_srcptr f, mpfr_srcptr src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        mpfr_mul(dst + i, f, src + i, MPFR_RNDN);
}

/* acc += x . y over n elements (mul, then add). */
static void dot_acc(mpfr_ptr acc, mpfr_srcptr x, mpfr_srcptr y, int64_t n, mpfr_ptr tmp)
{
    for (int64_t i = 0; i < n; i++) {
        mpfr_mul(tmp, x + i, y + i, MPFR_RNDN);
        mpfr_add(acc, acc, tmp, MPFR_RNDN);
    }
}

void ra_gdn_l2norm(mpfr_ptr n2, mpfr_ptr nrm, mpfr_srcptr x, int64_t n, mpfr_srcptr eps)
{
    mpfr_set_zero(n2, 1);
    for (int64_t i = 0; i < n; i++)
        mpfr_fma(n2, x + i, x + i, n2, MPFR_RNDN);
    mpfr_add(n2, n2, eps, MPFR_RNDN);
    mpfr_sqrt(nrm, n2, MPFR_RNDN);
}

void ra_gdn_params(mpfr_ptr scale, mpfr_ptr l2eps, const ra_gdn_in *in)
{
    if (in->scale_text)
        mpfr_set_str(scale, in->scale_text, 0, MPFR_RNDN);
    else {
        mpfr_set_si(scale, (long)in->s.K, MPFR_RNDN); /* exact: K < 2^31 */
        mpfr_rec_sqrt(scale, scale, MPFR_RNDN);
    }
    mpfr_set_str(l2eps, in->l2eps_text ? in->l2eps_text : "1e-6", 0, MPFR_RNDN);
}

/* Raw q_t or k_t of key head hk into dst, and its norm into nrm (exactly 1
   without l2norm). */
static void load_qk(ra_gdn_ws *w, mpfr_ptr dst, mpfr_ptr nrm, const ra_gdn_in *in, int a, int64_t b,
                    int64_t t, int64_t hk)
{
    const int64_t K = in->s.K;
    load_span(dst, in, a, ra_gdn_qk_index(&in->s, b, t, hk, 0), K);
    if (!in->l2norm) {
        mpfr_set_ui(nrm, 1, MPFR_RNDN);
        return;
    }
    ra_gdn_l2norm(w->n2, nrm, dst, K, w->l2eps);
    if (mpfr_zero_p(nrm))
        ws_fail(w, RA_EINVAL,
                "l2norm of %s[%lld, %lld, %lld, :] is zero and l2eps = 0: the normalisation "
                "divides by zero",
                ra_gdn_arr_names[a], (long long)b, (long long)t, (long long)hk);
}

/* a = exp(g_t), beta = beta_t for gate index gi.  A decay that leaves
   MPFR's exponent range is named here (the flags would only say that
   something did). */
static void load_gates(ra_gdn_ws *w, const ra_gdn_in *in, int64_t gi)
{
    ra_gdn_get(w->a, in, RA_GDN_G, gi);
    mpfr_exp(w->a, w->a, MPFR_RNDN);
    if (mpfr_zero_p(w->a) || mpfr_inf_p(w->a)) {
        const int64_t shape[3] = {in->s.B, in->s.T, in->s.Hv};
        char idx[96];
        ra_index_format(idx, sizeof idx, gi, 3, shape);
        ws_fail(w, RA_ENUMERIC,
                "gate g%s = %g: exp(g) %s MPFR's exponent range, so the reference cannot "
                "represent the decay",
                idx, in->x[RA_GDN_G][gi], mpfr_zero_p(w->a) ? "underflows" : "overflows");
    }
    ra_gdn_get(w->beta, in, RA_GDN_BETA, gi);
}

/* uu = beta r / (alpha n_k): the rank-1 factor of step t in segment scale
   (kept for the backward's low-rank state). */
static void update_factor(ra_gdn_ws *w, mpfr_srcptr r, mpfr_srcptr nk)
{
    const int64_t V = w->s.V;
    mpfr_mul(w->den, w->al, nk, MPFR_RNDN);
    for (int64_t j = 0; j < V; j++) {
        mpfr_mul(w->u + j, w->beta, r + j, MPFR_RNDN);
        mpfr_div(w->uu + j, w->u + j, w->den, MPFR_RNDN);
    }
}

static int all_zero(mpfr_srcptr x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!mpfr_zero_p(x + i))
            return 0;
    return 1;
}

/* --- forward ---------------------------------------------------------------------------- */

static void head_forward(ra_gdn_ws *w, const ra_gdn_in *in, int64_t b, int64_t hv,
                         const ra_gdn_out *out, mpfr_ptr loss, int bwd)
{
    const ra_gdn_shape *s = &in->s;
    const int64_t K = s->K, V = s->V, T = s->T, KV = K * V, hk = ra_gdn_key_head(s, hv);
    const int64_t sbase = ra_gdn_state_index(s, b, hv, 0, 0);
    const mpfr_rnd_t rn = MPFR_RNDN;
    mpfr_ptr P = w->S.x, k = w->k, kn = w->kn, wv = w->w, wn = w->wn, op = w->op, tmp = w->tmp;
    mpfr_ptr nk = w->nk, nkn = w->nkn;
    mpfr_srcptr q = w->q, uu = w->uu;

    if (in->x[RA_GDN_H0])
        load_span(P, in, RA_GDN_H0, sbase, KV);
    else
        ra_mp_zero(P, (size_t)KV);
    if (bwd)
        copy_span(w->ck.x, P, KV);
    int zero = all_zero(P, KV); /* the state is exactly 0 so far */
    load_qk(w, k, nk, in, RA_GDN_K, b, 0, hk);
    ra_mp_zero(wv, (size_t)V);
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < V; j++) {
            mpfr_mul(tmp, P + i * V + j, k + i, rn);
            mpfr_add(wv + j, wv + j, tmp, rn);
        }
    if (loss)
        mpfr_set_zero(loss, 1);
    mpfr_set_ui(w->al, 1, rn);

    for (int64_t t = 0; t < T; t++) {
        load_qk(w, w->q, w->nq, in, RA_GDN_Q, b, t, hk);
        load_span(w->v, in, RA_GDN_V, ra_gdn_v_index(s, b, t, hv, 0), V);
        load_gates(w, in, ra_gdn_gate_index(s, b, t, hv));
        mpfr_mul(w->al, w->al, w->a, rn);
        mpfr_div(w->f, w->al, nk, rn);
        mpfr_ptr r = bwd ? w->R.x + t * V : w->rt;
        for (int64_t j = 0; j < V; j++) {
            mpfr_mul(tmp, w->f, wv + j, rn);
            mpfr_sub(r + j, w->v + j, tmp, rn);
        }
        update_factor(w, r, nk);
        if (bwd) {
            copy_span(w->UU.x + t * V, uu, V);
            w->zero[t] = (unsigned char)zero;
        }
        zero = zero && (all_zero(uu, V) || all_zero(k, K));
        const int next = t + 1 < T;
        if (next) {
            load_qk(w, kn, nkn, in, RA_GDN_K, b, t + 1, hk);
            ra_mp_zero(wn, (size_t)V);
        }
        ra_mp_zero(op, (size_t)V);
        for (int64_t i = 0; i < K; i++) {
            mpfr_ptr Pi = P + i * V;
            mpfr_srcptr ki = k + i, qi = q + i, kni = kn + i;
            for (int64_t j = 0; j < V; j++) {
                mpfr_mul(tmp, ki, uu + j, rn);
                mpfr_add(Pi + j, Pi + j, tmp, rn);
                mpfr_mul(tmp, Pi + j, qi, rn);
                mpfr_add(op + j, op + j, tmp, rn);
                if (next) {
                    mpfr_mul(tmp, Pi + j, kni, rn);
                    mpfr_add(wn + j, wn + j, tmp, rn);
                }
            }
        }
        mpfr_mul(w->f, w->scale, w->al, rn);
        mpfr_div(w->f, w->f, w->nq, rn);
        mpfr_ptr od = out ? out->o.x + ra_gdn_v_index(s, b, t, hv, 0) : w->rt;
        scale_span(od, w->f, op, V);
        if (loss) {
            load_span(w->dov, in, RA_GDN_DO, ra_gdn_v_index(s, b, t, hv, 0), V);
            dot_acc(loss, w->dov, od, V, tmp);
        }
        mpfr_ptr sw = k;
        k = kn, kn = sw;
        sw = nk, nk = nkn, nkn = sw;
        sw = wv, wv = wn, wn = sw;
        if (next && (t + 1) % w->C == 0) { /* segment boundary: back to S */
            scale_span(P, w->al, P, KV);
            scale_span(wv, w->al, wv, V);
            mpfr_set_ui(w->al, 1, rn);
            if (bwd)
                copy_span(w->ck.x + (t + 1) / w->C * KV, P, KV);
        }
    }
    /* ht = alpha P; into the output, or back into P for the loss */
    mpfr_ptr ht = out ? out->ht.x + sbase : P;
    scale_span(ht, w->al, P, KV);
    if (loss && in->x[RA_GDN_DHT])
        for (int64_t e = 0; e < KV; e++) {
            ra_gdn_get(w->f2, in, RA_GDN_DHT, sbase + e);
            mpfr_mul(tmp, w->f2, ht + e, rn);
            mpfr_add(loss, loss, tmp, rn);
        }
}

/* --- backward --------------------------------------------------------------------------- */

/* acc_i += sum_{s = t0 .. t-1} k_s,i (uu_s . x): the low-rank part of
   P_{t-1} = P_{t0-1} + sum_s k_s uu_s^T applied to x (K-vector acc). */
static void low_rank_apply(ra_gdn_ws *w, mpfr_ptr acc, mpfr_srcptr x, int64_t t0, int64_t t)
{
    const int64_t K = w->s.K, V = w->s.V;
    for (int64_t s = t0; s < t; s++) {
        mpfr_set_zero(w->lr, 1);
        dot_acc(w->lr, w->UU.x + s * V, x, V, w->tmp);
        mpfr_srcptr ks = w->kseg.x + (s - t0) * K;
        for (int64_t i = 0; i < K; i++) {
            mpfr_mul(w->tmp, ks + i, w->lr, MPFR_RNDN);
            mpfr_add(acc + i, acc + i, w->tmp, MPFR_RNDN);
        }
    }
}

/* One reverse step at time t of the segment starting at t0, whose
   checkpoint is P (segment scale, alpha = alpha_t in w->al): the state
   before step t is P + sum_{s=t0..t-1} k_s uu_s^T.  Lam = dL/dP_t without
   the o_t term on entry and dL/dP_{t-1} on exit. */
static void step_backward(ra_gdn_ws *w, const ra_gdn_in *in, int64_t b, int64_t hv, int64_t t,
                          int64_t t0, mpfr_srcptr P, const ra_gdn_out *out)
{
    const ra_gdn_shape *s = &in->s;
    const int64_t K = s->K, V = s->V, hk = ra_gdn_key_head(s, hv);
    const int64_t gi = ra_gdn_gate_index(s, b, t, hv), vi = ra_gdn_v_index(s, b, t, hv, 0);
    const int64_t kvi = vi / V * K; /* [B,T,Hv,K] layout of dqv/dkv */
    const mpfr_rnd_t rn = MPFR_RNDN;
    mpfr_ptr Lam = w->S.x, k = w->k, q = w->q, u = w->u, duh = w->duh, du = w->du, xh = w->xh;
    mpfr_ptr yh = w->yh, mh = w->mh, dov = w->dov, sdo = w->sdo, cdu = w->cdu, tmp = w->tmp;
    mpfr_ptr al = w->al, f = w->f, f2 = w->f2;
    mpfr_srcptr r = w->R.x + t * V;

    load_qk(w, q, w->nq, in, RA_GDN_Q, b, t, hk);
    load_qk(w, k, w->nk, in, RA_GDN_K, b, t, hk);
    load_span(dov, in, RA_GDN_DO, vi, V);
    load_span(w->v, in, RA_GDN_V, vi, V);
    ra_gdn_get(w->beta, in, RA_GDN_BETA, gi);
    for (int64_t j = 0; j < V; j++)
        mpfr_mul(u + j, w->beta, r + j, rn);
    mpfr_mul(f, w->scale, al, rn);
    mpfr_div(f, f, w->nq, rn);
    scale_span(sdo, f, dov, V);
    ra_mp_zero(duh, (size_t)V);
    ra_mp_zero(xh, (size_t)K);
    ra_mp_zero(yh, (size_t)K);
    for (int64_t i = 0; i < K; i++) {
        mpfr_ptr Li = Lam + i * V, xi = xh + i, yi = yh + i;
        mpfr_srcptr Pi = P + i * V, qi = q + i, ki = k + i;
        for (int64_t j = 0; j < V; j++) {
            mpfr_mul(tmp, qi, sdo + j, rn);
            mpfr_add(Li + j, Li + j, tmp, rn);
            mpfr_mul(tmp, Li + j, ki, rn);
            mpfr_add(duh + j, duh + j, tmp, rn);
            mpfr_mul(tmp, Li + j, u + j, rn);
            mpfr_add(xi, xi, tmp, rn);
            mpfr_mul(tmp, Pi + j, dov + j, rn);
            mpfr_add(yi, yi, tmp, rn);
        }
    }
    low_rank_apply(w, yh, dov, t0, t);
    /* du, dv, dbeta */
    mpfr_mul(w->den, al, w->nk, rn);
    for (int64_t j = 0; j < V; j++) {
        mpfr_div(du + j, duh + j, w->den, rn);
        mpfr_mul(out->dv.x + vi + j, w->beta, du + j, rn);
    }
    mpfr_set_zero(f2, 1);
    dot_acc(f2, du, r, V, tmp);
    mpfr_set(out->dbeta.x + gi, f2, rn);
    /* dq^ = scale (alpha yh + k (u . do) / n_k) */
    mpfr_set_zero(w->udo, 1);
    dot_acc(w->udo, u, dov, V, tmp);
    mpfr_div(w->udo, w->udo, w->nk, rn);
    mpfr_ptr dq = out->dqv.x + kvi;
    for (int64_t i = 0; i < K; i++) {
        mpfr_fmma(tmp, al, yh + i, k + i, w->udo, rn);
        mpfr_mul(dq + i, w->scale, tmp, rn);
    }
    /* dg_t = dg_{t+1} + q^ . dq^ - v . dv */
    mpfr_set_zero(f, 1);
    dot_acc(f, q, dq, K, tmp);
    mpfr_div(f, f, w->nq, rn);
    mpfr_set_zero(f2, 1);
    dot_acc(f2, w->v, out->dv.x + vi, V, tmp);
    mpfr_sub(f, f, f2, rn);
    mpfr_add(w->dg, w->dg, f, rn);
    if (w->zero[t]) /* S~ = 0: dg = <dS~, S~> is exactly 0, not a rounding residue */
        mpfr_set_zero(w->dg, 1);
    mpfr_set(out->dg.x + gi, w->dg, rn);
    /* pass 2 */
    mpfr_mul(f, w->nk, w->nk, rn);
    mpfr_div(f, w->beta, f, rn);
    mpfr_neg(f, f, rn);
    scale_span(cdu, f, duh, V);
    ra_mp_zero(mh, (size_t)K);
    for (int64_t i = 0; i < K; i++) {
        mpfr_ptr Li = Lam + i * V, mi = mh + i;
        mpfr_srcptr Pi = P + i * V, ki = k + i;
        for (int64_t j = 0; j < V; j++) {
            mpfr_mul(tmp, Pi + j, duh + j, rn);
            mpfr_add(mi, mi, tmp, rn);
            mpfr_mul(tmp, ki, cdu + j, rn);
            mpfr_add(Li + j, Li + j, tmp, rn);
        }
    }
    low_rank_apply(w, mh, duh, t0, t);
    /* dk^ = xh / alpha - (beta / n_k) mh */
    mpfr_ui_div(f, 1, al, rn);
    mpfr_div(f2, w->beta, w->nk, rn);
    mpfr_ptr dk = out->dkv.x + kvi;
    for (int64_t i = 0; i < K; i++)
        mpfr_fmms(dk + i, f, xh + i, f2, mh + i, rn);
}

static void head_backward(ra_gdn_ws *w, const ra_gdn_in *in, int64_t b, int64_t hv,
                          const ra_gdn_out *out)
{
    const ra_gdn_shape *s = &in->s;
    const int64_t K = s->K, V = s->V, T = s->T, KV = K * V, hk = ra_gdn_key_head(s, hv);
    const int64_t sbase = ra_gdn_state_index(s, b, hv, 0, 0);
    const mpfr_rnd_t rn = MPFR_RNDN;
    mpfr_ptr Lam = w->S.x, tmp = w->tmp; /* the forward is done with S */

    /* lambda = dht; dg_{T+1} = <dht, S_T> */
    mpfr_set_zero(w->dg, 1);
    if (in->x[RA_GDN_DHT]) {
        load_span(Lam, in, RA_GDN_DHT, sbase, KV);
        dot_acc(w->dg, Lam, out->ht.x + sbase, KV, tmp);
    } else
        ra_mp_zero(Lam, (size_t)KV);
    for (int64_t seg = w->nck - 1; seg >= 0; seg--) {
        const int64_t t0 = seg * w->C, t1 = t0 + w->C < T ? t0 + w->C : T;
        /* alphas and raw keys of the segment */
        mpfr_set_ui(w->al, 1, rn);
        for (int64_t t = t0; t < t1; t++) {
            load_gates(w, in, ra_gdn_gate_index(s, b, t, hv));
            mpfr_mul(w->al, w->al, w->a, rn);
            mpfr_set(w->alpha.x + (t - t0), w->al, rn);
            load_span(w->kseg.x + (t - t0) * K, in, RA_GDN_K, ra_gdn_qk_index(s, b, t, hk, 0), K);
        }
        /* lambda -> Lam = alpha_{t1-1} lambda */
        scale_span(Lam, w->al, Lam, KV);
        for (int64_t t = t1 - 1; t >= t0; t--) {
            mpfr_set(w->al, w->alpha.x + (t - t0), rn);
            step_backward(w, in, b, hv, t, t0, w->ck.x + seg * KV, out);
        }
        /* alpha before t0 is 1: Lam is lambda again */
    }
    if (out->dh0.n)
        copy_span(out->dh0.x + sbase, Lam, KV);
}

ra_status ra_gdn_head(ra_gdn_ws *w, const ra_gdn_in *in, int64_t b, int64_t hv,
                      const ra_gdn_out *out, mpfr_ptr loss, int bwd, char *msg, size_t msglen)
{
    w->st = RA_OK;
    w->msg[0] = '\0';
    if (bwd && (!w->bwd || !out || !in->x[RA_GDN_DO] || !out->dqv.n))
        ws_fail(w, RA_EINTERNAL, "gdn head backward without its workspace, outputs or do");
    else if (loss && !in->x[RA_GDN_DO])
        ws_fail(w, RA_EINTERNAL, "gdn head loss without do");
    else if (!ra_gdn_shape_equal(&w->s, &in->s) || (out && out->prec != w->prec))
        ws_fail(w, RA_EINTERNAL, "gdn head workspace made for another shape or precision");
    else if (w->pin < w->prec && ra_gdn_in_perturbed(in))
        ws_fail(w, RA_EINTERNAL, "gdn head: perturbed inputs in a workspace for exact inputs");
    if (w->st == RA_OK) {
        ra_mp_range range;
        ra_mp_range_widen(&range);
        mpfr_clear_flags();
        ra_gdn_params(w->scale, w->l2eps, in);
        head_forward(w, in, b, hv, out, loss, bwd);
        if (bwd)
            head_backward(w, in, b, hv, out);
        if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p())
            ws_fail(w, RA_ENUMERIC,
                    "gdn reference, head b=%lld hv=%lld at %ld bits: %s; the inputs drive "
                    "values outside what MPFR represents",
                    (long long)b, (long long)hv, (long)w->prec,
                    mpfr_nanflag_p()    ? "an invalid operation produced NaN"
                    : mpfr_overflow_p() ? "a value overflowed MPFR's exponent range"
                                        : "a value underflowed MPFR's exponent range");
        ra_mp_range_restore(&range);
    }
    if (msg && msglen)
        snprintf(msg, msglen, "%s", w->msg);
    return w->st;
}
