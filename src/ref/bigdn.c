/* The bidirectional frame GDN family in MPFR: one head's forward and exact adjoint, whole runs. */
#include "ref/bigdn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "ref/bigdn_head.h"

/*
 * Per head (b, h), docs/bigdn.md: the features of frame f's tokens
 * (RMSNorm with the token's q_inv/k_inv over all H*D channels, ReLU,
 * k_scale, RoPE; or the core's inputs), the phase-A products P_f, A_f,
 * Pz_f, Bz_f of every frame, the forward stream M_f, z_f and the reverse
 * stream M'_f, z'_f (all F of each kept: F is small, memory 8 F D^2 per
 * head), then per token num, den and out = num / (den + eps).
 *
 * The backward is the exact reverse-mode adjoint of that forward (derived
 * in docs/bigdn.md, proved by the gradient checks), NOT the seed's phase
 * formulas, which src/gradcheck/bigdn_derive.c checks against it:
 * division VJP and readout adjoints per token (dQr, dQ, and dMt, dzt per
 * frame), the two stream adjoints Lf (reverse in time) and Lr (forward in
 * time), then per frame dA, dP, dPz, dBz and ddecay from them and the
 * stored states, then per token dKr, dK, dV, dbeta.  For bigdn the token
 * gradients go back through RoPE (transpose rotation), the ReLU mask
 * (Qn > 0) and k_scale to the RMSNorm outputs (dqn, dkn), and a second
 * pass per token (the norm couples all heads of a token) gives dqkv's q
 * and k slots; the weight gradients are sums over (b, n) in increasing
 * order.  Frame features are recomputed from the inputs where a pass needs
 * them again (cheap: O(S D) against the O(S D^2) products).
 *
 * Every sum runs in increasing index with mpfr_fma; nothing depends on
 * the thread that ran a head.  A value leaving MPFR's (widened) exponent
 * range, or den + eps = 0, is a numeric failure naming the head.
 */

static const char *const pert_names[] = {"Qn", "Kn", "P",  "A",  "Pz",  "Bz",  "Mf", "Mr",
                                         "zf", "zr", "Mt", "zt", "num", "den", "M0", "dout"};

const char *ra_bigdn_arr_name(ra_bigdn_kind kind, int a)
{
    return a < RA_BIGDN_NIN ? ra_bigdn_in_name(kind, a) : pert_names[a - RA_BIGDN_NIN];
}

int ra_bigdn_arr_exists(ra_bigdn_kind kind, int a)
{
    return kind == RA_BIGDN_FULL || (a != RA_BIGDN_P_QN && a != RA_BIGDN_P_KN);
}

int ra_bigdn_ndiff(ra_bigdn_kind kind) { return kind == RA_BIGDN_FULL ? 5 : 7; }

int64_t ra_bigdn_arr_numel(const ra_bigdn_shape *s, ra_bigdn_kind kind, int a)
{
    const int64_t N = s->F * s->S, tok = s->B * N * s->H * s->D, bhf = s->B * s->H * s->F;
    const int64_t DD = s->D * s->D;
    if (a < RA_BIGDN_NIN && kind == RA_BIGDN_FULL)
        switch (a) {
        case RA_BIGDN_QKV:
            return 3 * tok;
        case RA_BIGDN_BETA:
            return bhf * s->S;
        case RA_BIGDN_DECAY:
            return bhf;
        case RA_BIGDN_QNW:
        case RA_BIGDN_KNW:
            return s->H * s->D;
        default: /* tables */
            return N * s->D;
        }
    if (a < RA_BIGDN_NIN)
        return a == RA_BIGDN_CBETA ? bhf * s->S : a == RA_BIGDN_CDECAY ? bhf : tok;
    switch (a) {
    case RA_BIGDN_P_QN:
    case RA_BIGDN_P_KN:
    case RA_BIGDN_P_NUM:
    case RA_BIGDN_DOUT:
        return tok;
    case RA_BIGDN_P_DEN:
        return s->B * N * s->H;
    case RA_BIGDN_P_M0:
        return s->B * s->H * DD;
    case RA_BIGDN_P_BZ:
    case RA_BIGDN_P_ZF:
    case RA_BIGDN_P_ZR:
    case RA_BIGDN_P_ZT:
        return bhf * s->D;
    default:
        return bhf * DD;
    }
}

ra_status ra_bigdn_data_init(ra_bigdn_data *d, const ra_bigdn_problem *p)
{
    memset(d, 0, sizeof *d);
    d->in.kind = p->kind;
    d->in.s = p->s;
    d->in.k_scale = p->k_scale, d->in.norm_eps = p->norm_eps, d->in.eps = p->eps;
    d->in.one_arr = -1;
    for (int a = 0; a < RA_BIGDN_NARR; a++) {
        const ra_tensor *t = a < RA_BIGDN_NIN ? p->in[a] : a == RA_BIGDN_DOUT ? p->dout : NULL;
        if (!t)
            continue;
        d->buf[a] = malloc((size_t)t->numel * sizeof(double) + 1);
        if (!d->buf[a]) {
            ra_bigdn_data_clear(d);
            RA_ERRORF(RA_ENOMEM, "cannot allocate a copy of tensor '%s'", t->name);
        }
        ra_tensor_to_doubles(d->buf[a], t);
        d->in.x[a] = d->buf[a];
    }
    return RA_OK;
}

void ra_bigdn_data_clear(ra_bigdn_data *d)
{
    for (int a = 0; a < RA_BIGDN_NARR; a++)
        free(d->buf[a]);
    memset(d, 0, sizeof *d);
    d->in.one_arr = -1;
}

void ra_bigdn_out_clear(ra_bigdn_out *o)
{
    ra_mparr_free(&o->out);
    for (int j = 0; j < RA_BIGDN_NIN; j++)
        ra_mparr_free(&o->g[j]);
    ra_mparr_free(&o->dqn);
    ra_mparr_free(&o->dkn);
    ra_mparr_free(&o->inv);
}

void ra_bigdn_get(mpfr_ptr out, const ra_bigdn_in *in, int a, int64_t i)
{
    if (in->x[a])
        mpfr_set_d(out, in->x[a][i], MPFR_RNDN); /* exact: prec >= 53 */
    else
        mpfr_set_zero(out, 1);
    if (a != RA_BIGDN_DOUT && in->step && in->dir[a]) {
        MPFR_DECL_INIT(u, 53);
        mpfr_set_d(u, in->dir[a][i], MPFR_RNDN);
        mpfr_fma(out, u, in->step, out, MPFR_RNDN);
    }
    if (a == in->one_arr && i == in->one_idx)
        mpfr_add(out, out, in->one_delta, MPFR_RNDN);
}

/* --- workspace ------------------------------------------------------------------------------- */

ra_status ra_bigdn_ws_new(ra_bigdn_ws **out, const ra_bigdn_in *in, mpfr_prec_t prec, int bwd,
                          int threads)
{
    const ra_bigdn_shape *s = &in->s;
    if (threads < 1)
        RA_ERRORF(RA_EINTERNAL, "bigdn reference: a team of %d threads", threads);
    ra_bigdn_ws *w = calloc(1, sizeof *w);
    if (!w)
        RA_ERROR("out of memory", RA_ENOMEM);
    w->prec = prec;
    w->threads = threads;
    const size_t N = (size_t)(s->F * s->S), SD = (size_t)(s->S * s->D), DD = (size_t)(s->D * s->D);
    w->nmat = bwd ? ST_NM : ST_DMT;
    ra_status st = ra_mparr_init(&w->inv, in->kind == RA_BIGDN_FULL ? 2 * N : 0, prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->fr, FR_N * SD + 2 * (size_t)s->S, prec);
    if (st == RA_OK)
        st = ra_mparr_init(
            &w->st, (size_t)w->nmat * (size_t)s->F * DD + SV_NV * (size_t)(s->F * s->D), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->tm, T_N * DD + V_N * (size_t)s->D, prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->th, (size_t)threads * (P_N * (size_t)s->D + 5), prec);
    if (st != RA_OK) {
        ra_bigdn_ws_free(w);
        return st;
    }
    *out = w;
    return RA_OK;
}

void ra_bigdn_ws_free(ra_bigdn_ws *w)
{
    if (!w)
        return;
    ra_mparr_free(&w->inv);
    ra_mparr_free(&w->fr);
    ra_mparr_free(&w->st);
    ra_mparr_free(&w->tm);
    ra_mparr_free(&w->th);
    free(w);
}

/* q_inv, k_inv of every token of batch b (bigdn). */
static void norms(const head *k, thr *p)
{
    const ra_bigdn_shape *s = k->s;
    const int64_t C = s->H * s->D;
#pragma omp for schedule(dynamic, 8)
    for (int64_t n = 0; n < k->N; n++)
        for (int j = 0; j < 2; j++) {
            mpfr_ptr inv = k->w->inv.x + 2 * n + j;
            mpfr_set_zero(p->acc, 1);
            for (int64_t c = 0; c < C; c++) {
                ra_bigdn_get(p->x, k->in, RA_BIGDN_QKV, ra_bigdn_qkv(s, k->b, n, j, 0, c));
                mpfr_fma(p->acc, p->x, p->x, p->acc, MPFR_RNDN);
            }
            mpfr_div_si(p->acc, p->acc, C, MPFR_RNDN);
            mpfr_set_d(p->x, k->in->norm_eps, MPFR_RNDN);
            mpfr_add(p->acc, p->acc, p->x, MPFR_RNDN);
            mpfr_rec_sqrt(inv, p->acc, MPFR_RNDN);
        }
}

void ra_bigdn_load_frame(const head *k, thr *p, int64_t f)
{
    const ra_bigdn_in *in = k->in;
    const ra_bigdn_shape *s = k->s;
    const int64_t D = k->D;
    const int full = in->kind == RA_BIGDN_FULL;
#pragma omp for schedule(dynamic, 4)
    for (int64_t t = 0; t < k->S; t++) {
        const int64_t n = f * k->S + t;
        mpfr_ptr Qn = k->fr[FR_QN] + t * D, Kn = k->fr[FR_KN] + t * D, Q = k->fr[FR_Q] + t * D,
                 K = k->fr[FR_K] + t * D, Qr = k->fr[FR_QR] + t * D, Kr = k->fr[FR_KR] + t * D,
                 V = k->fr[FR_V] + t * D;
        ra_bigdn_get(k->beta + t, in, full ? RA_BIGDN_BETA : RA_BIGDN_CBETA,
                     ra_bigdn_beta(s, k->b, k->h, f, t));
        if (full) {
            for (int64_t d = 0; d < D; d++) {
                const int64_t o = ra_bigdn_tok(s, k->b, n, k->h, d);
                for (int j = 0; j < 2; j++) {
                    mpfr_ptr yn = j ? Kn + d : Qn + d, y = j ? K + d : Q + d;
                    ra_bigdn_get(yn, in, RA_BIGDN_QKV, ra_bigdn_qkv(s, k->b, n, j, k->h, d));
                    mpfr_mul(yn, yn, k->w->inv.x + 2 * n + j, MPFR_RNDN);
                    ra_bigdn_get(p->x, in, j ? RA_BIGDN_KNW : RA_BIGDN_QNW, k->h * D + d);
                    mpfr_mul(yn, yn, p->x, MPFR_RNDN);
                    ra_bigdn_pert_add(yn, in, j ? RA_BIGDN_P_KN : RA_BIGDN_P_QN, o, p->x);
                    if (mpfr_sgn(yn) > 0)
                        mpfr_set(y, yn, MPFR_RNDN);
                    else
                        mpfr_set_zero(y, 1);
                    if (j) {
                        mpfr_set_d(p->x, in->k_scale, MPFR_RNDN);
                        mpfr_mul(y, y, p->x, MPFR_RNDN);
                    }
                }
                ra_bigdn_get(V + d, in, RA_BIGDN_QKV, ra_bigdn_qkv(s, k->b, n, 2, k->h, d));
            }
            for (int64_t d = 0; d < D; d++) {
                /* y[d] = x[d] cos[n,d] + x[d^1] sin[n,d] */
                ra_bigdn_get(p->x, in, RA_BIGDN_COS, n * D + d);
                ra_bigdn_get(p->y, in, RA_BIGDN_SIN, n * D + d);
                mpfr_mul(Qr + d, Q + d, p->x, MPFR_RNDN);
                mpfr_fma(Qr + d, Q + (d ^ 1), p->y, Qr + d, MPFR_RNDN);
                mpfr_mul(Kr + d, K + d, p->x, MPFR_RNDN);
                mpfr_fma(Kr + d, K + (d ^ 1), p->y, Kr + d, MPFR_RNDN);
            }
        } else {
            for (int64_t d = 0; d < D; d++) {
                const int64_t o = ra_bigdn_tok(s, k->b, n, k->h, d);
                ra_bigdn_get(Q + d, in, RA_BIGDN_Q, o);
                ra_bigdn_get(K + d, in, RA_BIGDN_K, o);
                ra_bigdn_get(Qr + d, in, RA_BIGDN_QR, o);
                ra_bigdn_get(Kr + d, in, RA_BIGDN_KR, o);
                ra_bigdn_get(V + d, in, RA_BIGDN_V, o);
            }
        }
        for (int64_t d = 0; d < D; d++) {
            mpfr_mul(k->fr[FR_BKR] + t * D + d, Kr + d, k->beta + t, MPFR_RNDN);
            mpfr_mul(k->fr[FR_BK] + t * D + d, K + d, k->beta + t, MPFR_RNDN);
        }
    }
}

/* out = sum_t X[t,i] Y[t,j] over the frame (D x D), + perturbation a; by rows. */
static void gram(const head *k, thr *p, mpfr_ptr out, mpfr_srcptr X, mpfr_srcptr Y, int a,
                 int64_t f)
{
    const int64_t D = k->D;
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < D; i++)
        for (int64_t j = 0; j < D; j++) {
            mpfr_ptr o = out + i * D + j;
            mpfr_set_zero(o, 1);
            for (int64_t t = 0; t < k->S; t++)
                mpfr_fma(o, X + t * D + i, Y + t * D + j, o, MPFR_RNDN);
            ra_bigdn_pert_add(o, k->in, a, ra_bigdn_mat_idx(k, f) + i * D + j, p->x);
        }
}

void ra_bigdn_imp_row(const head *k, mpfr_ptr out, mpfr_srcptr P, mpfr_srcptr X, int64_t ncol,
                      int trans, int64_t i)
{
    const int64_t D = k->D;
    for (int64_t j = 0; j < ncol; j++) {
        mpfr_ptr o = out + i * ncol + j;
        mpfr_set_zero(o, 1);
        for (int64_t m = 0; m < D; m++)
            mpfr_fma(o, trans ? P + m * D + i : P + i * D + m, X + m * ncol + j, o, MPFR_RNDN);
        mpfr_sub(o, X + i * ncol + j, o, MPFR_RNDN);
    }
}

/* One stream step: T = (I - P_f) X, out = g_f T + A (+ perturbation a); ncol columns, by
   rows (p->g holds g_f). */
static void step(const head *k, thr *p, mpfr_ptr out, mpfr_ptr T, mpfr_srcptr P, mpfr_srcptr X,
                 mpfr_srcptr A, int64_t ncol, int a, int64_t pidx)
{
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < k->D; i++) {
        ra_bigdn_imp_row(k, T, P, X, ncol, 0, i);
        for (int64_t j = i * ncol; j < (i + 1) * ncol; j++) {
            mpfr_fma(out + j, p->g, T + j, A + j, MPFR_RNDN);
            ra_bigdn_pert_add(out + j, k->in, a, pidx + j, p->x);
        }
    }
}

/* The forward of every frame: products and both streams. */
static void forward_streams(const head *k, thr *p)
{
    const int64_t D = k->D, DD = k->DD, F = k->F;
    const int keep = k->w->nmat == ST_NM; /* the backward reads the steps' products */
    for (int64_t f = 0; f < F; f++) {
        ra_bigdn_load_frame(k, p, f);
        gram(k, p, ra_bigdn_mat(k, ST_P, f), k->fr[FR_BKR], k->fr[FR_KR], RA_BIGDN_P_P, f);
        gram(k, p, ra_bigdn_mat(k, ST_A, f), k->fr[FR_BKR], k->fr[FR_V], RA_BIGDN_P_A, f);
        gram(k, p, ra_bigdn_mat(k, ST_PZ, f), k->fr[FR_BK], k->fr[FR_K], RA_BIGDN_P_PZ, f);
        mpfr_ptr bz = ra_bigdn_vec(k, SV_BZ, f);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < D; i++) {
            mpfr_set_zero(bz + i, 1);
            for (int64_t t = 0; t < k->S; t++)
                mpfr_add(bz + i, bz + i, k->fr[FR_BK] + t * D + i, MPFR_RNDN);
            ra_bigdn_pert_add(bz + i, k->in, RA_BIGDN_P_BZ, ra_bigdn_vec_idx(k, f) + i, p->x);
        }
    }
    /* forward: M_f = g_f (I - P_f) M_{f-1} + A_f, M_{-1} = 0 (+ perturbation M0) */
#pragma omp single
    {
        ra_mp_zero(k->t[T_1], (size_t)DD);
        for (int64_t j = 0; j < DD; j++)
            ra_bigdn_pert_add(k->t[T_1] + j, k->in, RA_BIGDN_P_M0,
                              (k->b * k->s->H + k->h) * DD + j, p->x);
        ra_mp_zero(k->v[V_1], (size_t)D);
    }
    for (int64_t f = 0; f < F; f++) {
        ra_bigdn_head_gate(k, p, f);
        step(k, p, ra_bigdn_mat(k, ST_MF, f), keep ? ra_bigdn_mat(k, ST_TF, f) : k->t[T_0],
             ra_bigdn_mat(k, ST_P, f), f ? ra_bigdn_mat(k, ST_MF, f - 1) : k->t[T_1],
             ra_bigdn_mat(k, ST_A, f), D, RA_BIGDN_P_MF, ra_bigdn_mat_idx(k, f));
        step(k, p, ra_bigdn_vec(k, SV_ZF, f), ra_bigdn_vec(k, SV_TF, f),
             ra_bigdn_mat(k, ST_PZ, f), f ? ra_bigdn_vec(k, SV_ZF, f - 1) : k->v[V_1],
             ra_bigdn_vec(k, SV_BZ, f), 1, RA_BIGDN_P_ZF, ra_bigdn_vec_idx(k, f));
    }
    /* reverse: M'_{F-1} = 0, M'_f = g_{f+1} (I - P_{f+1}) M'_{f+1} + A_{f+1} */
#pragma omp single
    {
        mpfr_ptr Mr = ra_bigdn_mat(k, ST_MR, F - 1), zr = ra_bigdn_vec(k, SV_ZR, F - 1);
        ra_mp_zero(Mr, (size_t)DD);
        ra_mp_zero(zr, (size_t)D);
        for (int64_t j = 0; j < DD; j++)
            ra_bigdn_pert_add(Mr + j, k->in, RA_BIGDN_P_MR, ra_bigdn_mat_idx(k, F - 1) + j, p->x);
        for (int64_t j = 0; j < D; j++)
            ra_bigdn_pert_add(zr + j, k->in, RA_BIGDN_P_ZR, ra_bigdn_vec_idx(k, F - 1) + j, p->x);
    }
    for (int64_t f = F - 2; f >= 0; f--) {
        ra_bigdn_head_gate(k, p, f + 1);
        step(k, p, ra_bigdn_mat(k, ST_MR, f), keep ? ra_bigdn_mat(k, ST_TR, f + 1) : k->t[T_0],
             ra_bigdn_mat(k, ST_P, f + 1), ra_bigdn_mat(k, ST_MR, f + 1),
             ra_bigdn_mat(k, ST_A, f + 1), D, RA_BIGDN_P_MR, ra_bigdn_mat_idx(k, f));
        step(k, p, ra_bigdn_vec(k, SV_ZR, f), ra_bigdn_vec(k, SV_TR, f + 1),
             ra_bigdn_mat(k, ST_PZ, f + 1), ra_bigdn_vec(k, SV_ZR, f + 1),
             ra_bigdn_vec(k, SV_BZ, f + 1), 1, RA_BIGDN_P_ZR, ra_bigdn_vec_idx(k, f));
    }
}

static int failed(void)
{
    return mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p() || mpfr_divby0_p();
}

/* The whole head in one thread of the team; returns the thread's failure. */
static int head_body(const head *k, mpfr_ptr loss, const ra_bigdn_out *o, int bwd)
{
    const ra_bigdn_ws *w = k->w;
    const int id = omp_get_thread_num();
    thr p;
    mpfr_ptr base = w->th.x + (size_t)id * (P_N * (size_t)k->D + 5);
    for (int j = 0; j < P_N; j++)
        p.v[j] = base + j * k->D;
    mpfr_ptr sc = base + P_N * k->D;
    p.x = sc, p.y = sc + 1, p.z = sc + 2, p.acc = sc + 3, p.g = sc + 4;
    mpfr_clear_flags();
    if (k->in->kind == RA_BIGDN_FULL)
        norms(k, &p);
    forward_streams(k, &p);
    if (loss) {
#pragma omp single
        mpfr_set_zero(loss, 1);
    }
    for (int64_t f = 0; f < k->F; f++) {
        ra_bigdn_load_frame(k, &p, f);
        ra_bigdn_readout(k, &p, f, o, loss, bwd);
    }
    if (bwd)
        ra_bigdn_backward(k, &p, o);
    return failed();
}

ra_status ra_bigdn_head(ra_bigdn_ws *w, const ra_bigdn_in *in, int64_t b, int64_t h,
                        const ra_bigdn_out *o, mpfr_ptr loss, int bwd, char *msg, size_t msglen)
{
    const ra_bigdn_shape *s = &in->s;
    head k = {.in = in, .s = s, .w = w, .b = b, .h = h, .D = s->D, .S = s->S, .F = s->F};
    k.N = s->F * s->S, k.DD = s->D * s->D;
    const int64_t SD = s->S * s->D;
    for (int j = 0; j < FR_N; j++)
        k.fr[j] = w->fr.x + j * SD;
    k.beta = w->fr.x + FR_N * SD;
    k.dden = k.beta + s->S;
    for (int j = 0; j < T_N; j++)
        k.t[j] = w->tm.x + j * k.DD;
    for (int j = 0; j < V_N; j++)
        k.v[j] = w->tm.x + T_N * k.DD + j * s->D;
    if (bwd && w->nmat != ST_NM) {
        snprintf(msg, msglen, "bigdn reference: a forward-only workspace asked for a backward");
        return RA_EINTERNAL;
    }
    /* Always a parallel region, a team of one included: the orphaned worksharing loops of
       the head must bind to the head's own team, never to an enclosing pool's.  Every thread
       widens its own (per-thread) exponent range, as the pool's workers do, and reports its
       own flags. */
    int bad = 0;
#pragma omp parallel num_threads(w->threads) reduction(|| : bad)
    {
        ra_mp_range range;
        ra_mp_range_widen(&range);
        bad = head_body(&k, loss, o, bwd);
        ra_mp_range_restore(&range);
        if (omp_get_thread_num() != 0)
            mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
    }
    if (bad) {
        snprintf(msg, msglen,
                 "bigdn reference at %ld bits: a value left MPFR's exponent range or den + eps "
                 "is 0 (head b=%lld h=%lld)",
                 (long)w->prec, (long long)b, (long long)h);
        return RA_ENUMERIC;
    }
    return RA_OK;
}
