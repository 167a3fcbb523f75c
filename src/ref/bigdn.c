/* The bidirectional frame GDN family in MPFR: one head's forward and exact adjoint, whole runs. */
#include "ref/bigdn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/pool.h"

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

static int pert_on(const ra_bigdn_in *in, int a)
{
    return in->one_arr == a || (in->step && in->dir[a]);
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

/* x += perturbation array a at i, when a is in use. */
static void pert_add(mpfr_ptr x, const ra_bigdn_in *in, int a, int64_t i, mpfr_ptr tmp)
{
    if (!pert_on(in, a))
        return;
    ra_bigdn_get(tmp, in, a, i);
    mpfr_add(x, x, tmp, MPFR_RNDN);
}

/* --- workspace ------------------------------------------------------------------------------- */

/* frame features, S x D each */
enum { FR_QN, FR_KN, FR_Q, FR_K, FR_QR, FR_KR, FR_V, FR_BKR, FR_BK, FR_N };
/* per-frame stores: F x D x D each, then F x D vectors */
enum { ST_P, ST_A, ST_PZ, ST_MF, ST_MR, ST_DMT, ST_LF, ST_LR, ST_NM };
enum { SV_BZ, SV_ZF, SV_ZR, SV_DZT, SV_LF, SV_LR, SV_NV };
/* D x D temporaries and D vectors */
enum { T_0, T_1, T_2, T_3, T_N };
enum { V_0, V_1, V_2, V_3, V_4, V_5, V_NUM, V_DNUM, V_N };

struct ra_bigdn_ws {
    mpfr_prec_t prec;
    ra_mparr inv; /* 2N: q_inv, k_inv (bigdn) */
    ra_mparr fr;  /* FR_N S D, then beta[S] */
    ra_mparr st;  /* ST_NM F DD (the backward ones only with bwd), SV_NV F D */
    ra_mparr tm;  /* T_N DD, V_N D, 8 scalars */
    int64_t nmat; /* matrices allocated in st */
};

ra_status ra_bigdn_ws_new(ra_bigdn_ws **out, const ra_bigdn_in *in, mpfr_prec_t prec, int bwd)
{
    const ra_bigdn_shape *s = &in->s;
    ra_bigdn_ws *w = calloc(1, sizeof *w);
    if (!w)
        RA_ERROR("out of memory", RA_ENOMEM);
    w->prec = prec;
    const size_t N = (size_t)(s->F * s->S), SD = (size_t)(s->S * s->D), DD = (size_t)(s->D * s->D);
    w->nmat = bwd ? ST_NM : ST_DMT;
    ra_status st = ra_mparr_init(&w->inv, in->kind == RA_BIGDN_FULL ? 2 * N : 0, prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->fr, FR_N * SD + (size_t)s->S, prec);
    if (st == RA_OK)
        st = ra_mparr_init(
            &w->st, (size_t)w->nmat * (size_t)s->F * DD + SV_NV * (size_t)(s->F * s->D), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w->tm, T_N * DD + V_N * (size_t)s->D + 8, prec);
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
    free(w);
}

typedef struct head {
    const ra_bigdn_in *in;
    const ra_bigdn_shape *s;
    ra_bigdn_ws *w;
    int64_t b, h, D, S, F, N, DD;
    mpfr_ptr fr[FR_N], beta, t[T_N], v[V_N], x, y, z, acc, g;
} head;

static mpfr_ptr mat(const head *k, int which, int64_t f)
{
    return k->w->st.x + (which * k->F + f) * k->DD;
}

static mpfr_ptr vec(const head *k, int which, int64_t f)
{
    return k->w->st.x + k->w->nmat * k->F * k->DD + (which * k->F + f) * k->D;
}

/* q_inv, k_inv of every token of batch b (bigdn). */
static void norms(head *k)
{
    const ra_bigdn_shape *s = k->s;
    const int64_t C = s->H * s->D;
    for (int64_t n = 0; n < k->N; n++)
        for (int j = 0; j < 2; j++) {
            mpfr_ptr inv = k->w->inv.x + 2 * n + j;
            mpfr_set_zero(k->acc, 1);
            for (int64_t c = 0; c < C; c++) {
                ra_bigdn_get(k->x, k->in, RA_BIGDN_QKV, ra_bigdn_qkv(s, k->b, n, j, 0, c));
                mpfr_fma(k->acc, k->x, k->x, k->acc, MPFR_RNDN);
            }
            mpfr_div_si(k->acc, k->acc, C, MPFR_RNDN);
            mpfr_set_d(k->x, k->in->norm_eps, MPFR_RNDN);
            mpfr_add(k->acc, k->acc, k->x, MPFR_RNDN);
            mpfr_rec_sqrt(inv, k->acc, MPFR_RNDN);
        }
}

/* The features of frame f's tokens into k->fr (and beta, beta*Kr, beta*K). */
static void load_frame(head *k, int64_t f)
{
    const ra_bigdn_in *in = k->in;
    const ra_bigdn_shape *s = k->s;
    const int64_t D = k->D;
    const int full = in->kind == RA_BIGDN_FULL;
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
                    ra_bigdn_get(k->x, in, j ? RA_BIGDN_KNW : RA_BIGDN_QNW, k->h * D + d);
                    mpfr_mul(yn, yn, k->x, MPFR_RNDN);
                    pert_add(yn, in, j ? RA_BIGDN_P_KN : RA_BIGDN_P_QN, o, k->x);
                    if (mpfr_sgn(yn) > 0)
                        mpfr_set(y, yn, MPFR_RNDN);
                    else
                        mpfr_set_zero(y, 1);
                    if (j) {
                        mpfr_set_d(k->x, in->k_scale, MPFR_RNDN);
                        mpfr_mul(y, y, k->x, MPFR_RNDN);
                    }
                }
                ra_bigdn_get(V + d, in, RA_BIGDN_QKV, ra_bigdn_qkv(s, k->b, n, 2, k->h, d));
            }
            for (int64_t d = 0; d < D; d++) {
                /* y[d] = x[d] cos[n,d] + x[d^1] sin[n,d] */
                ra_bigdn_get(k->x, in, RA_BIGDN_COS, n * D + d);
                ra_bigdn_get(k->y, in, RA_BIGDN_SIN, n * D + d);
                mpfr_mul(Qr + d, Q + d, k->x, MPFR_RNDN);
                mpfr_fma(Qr + d, Q + (d ^ 1), k->y, Qr + d, MPFR_RNDN);
                mpfr_mul(Kr + d, K + d, k->x, MPFR_RNDN);
                mpfr_fma(Kr + d, K + (d ^ 1), k->y, Kr + d, MPFR_RNDN);
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

static int64_t mat_idx(const head *k, int64_t f)
{
    return ((k->b * k->s->H + k->h) * k->F + f) * k->DD;
}
static int64_t vec_idx(const head *k, int64_t f)
{
    return ((k->b * k->s->H + k->h) * k->F + f) * k->D;
}

/* out = sum_t X[t,i] Y[t,j] over the frame (D x D), + perturbation a. */
static void gram(head *k, mpfr_ptr out, mpfr_srcptr X, mpfr_srcptr Y, int a, int64_t f)
{
    const int64_t D = k->D;
    for (int64_t i = 0; i < D; i++)
        for (int64_t j = 0; j < D; j++) {
            mpfr_ptr o = out + i * D + j;
            mpfr_set_zero(o, 1);
            for (int64_t t = 0; t < k->S; t++)
                mpfr_fma(o, X + t * D + i, Y + t * D + j, o, MPFR_RNDN);
            pert_add(o, k->in, a, mat_idx(k, f) + i * D + j, k->x);
        }
}

/* out = X - P X (trans = 0) or X - P^T X (trans = 1); X has ncol columns.
   out must not alias X. */
static void imp(head *k, mpfr_ptr out, mpfr_srcptr P, mpfr_srcptr X, int64_t ncol, int trans)
{
    const int64_t D = k->D;
    for (int64_t i = 0; i < D; i++)
        for (int64_t j = 0; j < ncol; j++) {
            mpfr_ptr o = out + i * ncol + j;
            mpfr_set_zero(o, 1);
            for (int64_t m = 0; m < D; m++)
                mpfr_fma(o, trans ? P + m * D + i : P + i * D + m, X + m * ncol + j, o, MPFR_RNDN);
            mpfr_sub(o, X + i * ncol + j, o, MPFR_RNDN);
        }
}

/* g_f of this head. */
static void gate(head *k, int64_t f)
{
    ra_bigdn_get(k->g, k->in, k->in->kind == RA_BIGDN_FULL ? RA_BIGDN_DECAY : RA_BIGDN_CDECAY,
                 ra_bigdn_gate(k->s, k->b, k->h, f));
}

/* One stream step: out = g_f (I - P_f) X + A (+ perturbation a); n columns. */
static void step(head *k, mpfr_ptr out, mpfr_srcptr P, mpfr_srcptr X, mpfr_srcptr A, int64_t ncol,
                 int64_t f, int a, int64_t pidx)
{
    mpfr_ptr T = k->t[T_0];
    imp(k, T, P, X, ncol, 0);
    for (int64_t j = 0; j < k->D * ncol; j++) {
        mpfr_fma(out + j, k->g, T + j, A + j, MPFR_RNDN);
        pert_add(out + j, k->in, a, pidx + j, k->x);
    }
    (void)f;
}

static int failed(void)
{
    return mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p() || mpfr_divby0_p();
}

/* The forward of every frame: products and both streams. */
static void forward_streams(head *k)
{
    const int64_t D = k->D, DD = k->DD, F = k->F;
    for (int64_t f = 0; f < F; f++) {
        load_frame(k, f);
        gram(k, mat(k, ST_P, f), k->fr[FR_BKR], k->fr[FR_KR], RA_BIGDN_P_P, f);
        gram(k, mat(k, ST_A, f), k->fr[FR_BKR], k->fr[FR_V], RA_BIGDN_P_A, f);
        gram(k, mat(k, ST_PZ, f), k->fr[FR_BK], k->fr[FR_K], RA_BIGDN_P_PZ, f);
        mpfr_ptr bz = vec(k, SV_BZ, f);
        for (int64_t i = 0; i < D; i++) {
            mpfr_set_zero(bz + i, 1);
            for (int64_t t = 0; t < k->S; t++)
                mpfr_add(bz + i, bz + i, k->fr[FR_BK] + t * D + i, MPFR_RNDN);
            pert_add(bz + i, k->in, RA_BIGDN_P_BZ, vec_idx(k, f) + i, k->x);
        }
    }
    /* forward: M_f = g_f (I - P_f) M_{f-1} + A_f, M_{-1} = 0 */
    for (int64_t f = 0; f < F; f++) {
        gate(k, f);
        if (f == 0) {
            ra_mp_zero(k->t[T_1], (size_t)DD);
            for (int64_t j = 0; j < DD; j++)
                pert_add(k->t[T_1] + j, k->in, RA_BIGDN_P_M0, (k->b * k->s->H + k->h) * DD + j,
                         k->x);
            ra_mp_zero(k->v[V_1], (size_t)D);
        }
        step(k, mat(k, ST_MF, f), mat(k, ST_P, f), f ? mat(k, ST_MF, f - 1) : k->t[T_1],
             mat(k, ST_A, f), D, f, RA_BIGDN_P_MF, mat_idx(k, f));
        step(k, vec(k, SV_ZF, f), mat(k, ST_PZ, f), f ? vec(k, SV_ZF, f - 1) : k->v[V_1],
             vec(k, SV_BZ, f), 1, f, RA_BIGDN_P_ZF, vec_idx(k, f));
    }
    /* reverse: M'_{F-1} = 0, M'_f = g_{f+1} (I - P_{f+1}) M'_{f+1} + A_{f+1} */
    ra_mp_zero(mat(k, ST_MR, F - 1), (size_t)DD);
    ra_mp_zero(vec(k, SV_ZR, F - 1), (size_t)D);
    for (int64_t j = 0; j < DD; j++)
        pert_add(mat(k, ST_MR, F - 1) + j, k->in, RA_BIGDN_P_MR, mat_idx(k, F - 1) + j, k->x);
    for (int64_t j = 0; j < D; j++)
        pert_add(vec(k, SV_ZR, F - 1) + j, k->in, RA_BIGDN_P_ZR, vec_idx(k, F - 1) + j, k->x);
    for (int64_t f = F - 2; f >= 0; f--) {
        gate(k, f + 1);
        step(k, mat(k, ST_MR, f), mat(k, ST_P, f + 1), mat(k, ST_MR, f + 1), mat(k, ST_A, f + 1), D,
             f, RA_BIGDN_P_MR, mat_idx(k, f));
        step(k, vec(k, SV_ZR, f), mat(k, ST_PZ, f + 1), vec(k, SV_ZR, f + 1), vec(k, SV_BZ, f + 1),
             1, f, RA_BIGDN_P_ZR, vec_idx(k, f));
    }
}

/* Readout of frame f (features loaded): out, the loss, and with bwd the
   division and readout adjoints. */
static void readout(head *k, int64_t f, const ra_bigdn_out *o, mpfr_ptr loss, int bwd)
{
    const ra_bigdn_in *in = k->in;
    const ra_bigdn_shape *s = k->s;
    const int64_t D = k->D, DD = k->DD;
    const int full = in->kind == RA_BIGDN_FULL;
    mpfr_ptr Mt = k->t[T_2], zt = k->v[V_2], num = k->v[V_NUM], dnum = k->v[V_DNUM],
             dov = k->v[V_3], dQr = k->v[V_4], dQ = k->v[V_5];
    for (int64_t j = 0; j < DD; j++) {
        mpfr_add(Mt + j, mat(k, ST_MF, f) + j, mat(k, ST_MR, f) + j, MPFR_RNDN);
        pert_add(Mt + j, in, RA_BIGDN_P_MT, mat_idx(k, f) + j, k->x);
    }
    for (int64_t j = 0; j < D; j++) {
        mpfr_add(zt + j, vec(k, SV_ZF, f) + j, vec(k, SV_ZR, f) + j, MPFR_RNDN);
        pert_add(zt + j, in, RA_BIGDN_P_ZT, vec_idx(k, f) + j, k->x);
    }
    if (bwd) {
        ra_mp_zero(mat(k, ST_DMT, f), (size_t)DD);
        ra_mp_zero(vec(k, SV_DZT, f), (size_t)D);
    }
    for (int64_t t = 0; t < k->S; t++) {
        const int64_t n = f * k->S + t;
        mpfr_srcptr Q = k->fr[FR_Q] + t * D, Qr = k->fr[FR_QR] + t * D;
        for (int64_t e = 0; e < D; e++) {
            mpfr_set_zero(num + e, 1);
            for (int64_t d = 0; d < D; d++)
                mpfr_fma(num + e, Qr + d, Mt + d * D + e, num + e, MPFR_RNDN);
            pert_add(num + e, in, RA_BIGDN_P_NUM, ra_bigdn_tok(s, k->b, n, k->h, e), k->x);
        }
        mpfr_set_zero(k->z, 1); /* den */
        for (int64_t d = 0; d < D; d++)
            mpfr_fma(k->z, Q + d, zt + d, k->z, MPFR_RNDN);
        pert_add(k->z, in, RA_BIGDN_P_DEN, (k->b * k->N + n) * s->H + k->h, k->x);
        mpfr_set_d(k->x, in->eps, MPFR_RNDN);
        mpfr_add(k->z, k->z, k->x, MPFR_RNDN); /* r = den + eps */
        if (mpfr_zero_p(k->z))
            mpfr_set_divby0();
        for (int64_t e = 0; e < D; e++) {
            const int64_t oi = ra_bigdn_tok(s, k->b, n, k->h, e);
            mpfr_div(k->y, num + e, k->z, MPFR_RNDN);
            if (o && o->out.n)
                mpfr_set(o->out.x + oi, k->y, MPFR_RNDN);
            if (loss || bwd)
                ra_bigdn_get(dov + e, in, RA_BIGDN_DOUT, oi);
            if (loss)
                mpfr_fma(loss, dov + e, k->y, loss, MPFR_RNDN);
        }
        if (!bwd)
            continue;
        /* dnum = dout / r;  dden = -(dout . num) / r^2 */
        mpfr_set_zero(k->acc, 1);
        for (int64_t e = 0; e < D; e++) {
            mpfr_div(dnum + e, dov + e, k->z, MPFR_RNDN);
            mpfr_fma(k->acc, dov + e, num + e, k->acc, MPFR_RNDN);
        }
        mpfr_div(k->acc, k->acc, k->z, MPFR_RNDN);
        mpfr_div(k->acc, k->acc, k->z, MPFR_RNDN);
        mpfr_neg(k->acc, k->acc, MPFR_RNDN); /* dden */
        mpfr_ptr dMt = mat(k, ST_DMT, f), dzt = vec(k, SV_DZT, f);
        for (int64_t d = 0; d < D; d++) {
            mpfr_set_zero(dQr + d, 1);
            for (int64_t e = 0; e < D; e++) {
                mpfr_fma(dQr + d, Mt + d * D + e, dnum + e, dQr + d, MPFR_RNDN);
                mpfr_fma(dMt + d * D + e, Qr + d, dnum + e, dMt + d * D + e, MPFR_RNDN);
            }
            mpfr_mul(dQ + d, k->acc, zt + d, MPFR_RNDN);
            mpfr_fma(dzt + d, k->acc, Q + d, dzt + d, MPFR_RNDN);
        }
        if (!o)
            continue;
        if (!full) {
            for (int64_t d = 0; d < D; d++) {
                const int64_t oi = ra_bigdn_tok(s, k->b, n, k->h, d);
                mpfr_set(o->g[RA_BIGDN_Q].x + oi, dQ + d, MPFR_RNDN);
                mpfr_set(o->g[RA_BIGDN_QR].x + oi, dQr + d, MPFR_RNDN);
            }
            continue;
        }
        /* unrope (dQ[d] += dQr[d] cos[d] + dQr[d^1] sin[d^1]), ReLU mask */
        for (int64_t d = 0; d < D; d++) {
            const int64_t oi = ra_bigdn_tok(s, k->b, n, k->h, d);
            mpfr_ptr r = o->dqn.x + oi;
            if (mpfr_sgn(k->fr[FR_QN] + t * D + d) <= 0) {
                mpfr_set_zero(r, 1);
                continue;
            }
            ra_bigdn_get(k->x, in, RA_BIGDN_COS, n * D + d);
            mpfr_fma(r, dQr + d, k->x, dQ + d, MPFR_RNDN);
            ra_bigdn_get(k->x, in, RA_BIGDN_SIN, n * D + (d ^ 1));
            mpfr_fma(r, dQr + (d ^ 1), k->x, r, MPFR_RNDN);
        }
    }
}

/* The stream adjoints and the per-frame gradients dA, dP, dPz, dBz,
   ddecay, then the key/value token gradients. */
static void backward_streams(head *k, const ra_bigdn_out *o)
{
    const ra_bigdn_in *in = k->in;
    const ra_bigdn_shape *s = k->s;
    const int64_t D = k->D, DD = k->DD, F = k->F;
    const int full = in->kind == RA_BIGDN_FULL;
    /* Lf_{F-1} = dMt_{F-1};  Lf_f = dMt_f + g_{f+1} (I - P_{f+1})^T Lf_{f+1} */
    for (int64_t f = F - 1; f >= 0; f--) {
        mpfr_ptr L = mat(k, ST_LF, f), l = vec(k, SV_LF, f);
        if (f == F - 1) {
            for (int64_t j = 0; j < DD; j++)
                mpfr_set(L + j, mat(k, ST_DMT, f) + j, MPFR_RNDN);
            for (int64_t j = 0; j < D; j++)
                mpfr_set(l + j, vec(k, SV_DZT, f) + j, MPFR_RNDN);
            continue;
        }
        gate(k, f + 1);
        imp(k, L, mat(k, ST_P, f + 1), mat(k, ST_LF, f + 1), D, 1);
        for (int64_t j = 0; j < DD; j++)
            mpfr_fma(L + j, k->g, L + j, mat(k, ST_DMT, f) + j, MPFR_RNDN);
        imp(k, l, mat(k, ST_PZ, f + 1), vec(k, SV_LF, f + 1), 1, 1);
        for (int64_t j = 0; j < D; j++)
            mpfr_fma(l + j, k->g, l + j, vec(k, SV_DZT, f) + j, MPFR_RNDN);
    }
    /* Lr_0 = dMt_0;  Lr_f = dMt_f + g_f (I - P_f)^T Lr_{f-1} */
    for (int64_t f = 0; f < F; f++) {
        mpfr_ptr L = mat(k, ST_LR, f), l = vec(k, SV_LR, f);
        if (f == 0) {
            for (int64_t j = 0; j < DD; j++)
                mpfr_set(L + j, mat(k, ST_DMT, f) + j, MPFR_RNDN);
            for (int64_t j = 0; j < D; j++)
                mpfr_set(l + j, vec(k, SV_DZT, f) + j, MPFR_RNDN);
            continue;
        }
        gate(k, f);
        imp(k, L, mat(k, ST_P, f), mat(k, ST_LR, f - 1), D, 1);
        for (int64_t j = 0; j < DD; j++)
            mpfr_fma(L + j, k->g, L + j, mat(k, ST_DMT, f) + j, MPFR_RNDN);
        imp(k, l, mat(k, ST_PZ, f), vec(k, SV_LR, f - 1), 1, 1);
        for (int64_t j = 0; j < D; j++)
            mpfr_fma(l + j, k->g, l + j, vec(k, SV_DZT, f) + j, MPFR_RNDN);
    }
    mpfr_ptr dA = k->t[T_1], dP = k->t[T_2], dPz = k->t[T_3], T = k->t[T_0];
    mpfr_ptr dBz = k->v[V_0], u = k->v[V_1], dK = k->v[V_2], dKr = k->v[V_3], tv = k->v[V_4];
    for (int64_t f = 0; f < F; f++) {
        gate(k, f);
        /* the states the frame's step read: M_{f-1} (forward), M'_f (reverse, f >= 1) */
        mpfr_srcptr Mp = f ? mat(k, ST_MF, f - 1) : NULL, zp = f ? vec(k, SV_ZF, f - 1) : NULL;
        mpfr_srcptr Lf = mat(k, ST_LF, f), lf = vec(k, SV_LF, f);
        mpfr_srcptr Lr = f ? mat(k, ST_LR, f - 1) : NULL, lr = f ? vec(k, SV_LR, f - 1) : NULL;
        mpfr_srcptr Mr = mat(k, ST_MR, f), zr = vec(k, SV_ZR, f);
        mpfr_ptr dg = NULL;
        if (o)
            dg = o->g[full ? RA_BIGDN_DECAY : RA_BIGDN_CDECAY].x + ra_bigdn_gate(s, k->b, k->h, f);
        mpfr_set_zero(k->acc, 1); /* dg */
        for (int64_t i = 0; i < D; i++)
            for (int64_t j = 0; j < D; j++) {
                const int64_t ij = i * D + j;
                mpfr_set(dA + ij, Lf + ij, MPFR_RNDN);
                mpfr_set_zero(dP + ij, 1);
                mpfr_set_zero(dPz + ij, 1);
                for (int64_t m = 0; m < D && f; m++) {
                    mpfr_fma(dP + ij, Lf + i * D + m, Mp + j * D + m, dP + ij, MPFR_RNDN);
                    mpfr_fma(dP + ij, Lr + i * D + m, Mr + j * D + m, dP + ij, MPFR_RNDN);
                }
                if (f) {
                    mpfr_add(dA + ij, dA + ij, Lr + ij, MPFR_RNDN);
                    mpfr_fma(dPz + ij, lf + i, zp + j, dPz + ij, MPFR_RNDN);
                    mpfr_fma(dPz + ij, lr + i, zr + j, dPz + ij, MPFR_RNDN);
                }
                mpfr_mul(dP + ij, dP + ij, k->g, MPFR_RNDN);
                mpfr_neg(dP + ij, dP + ij, MPFR_RNDN);
                mpfr_mul(dPz + ij, dPz + ij, k->g, MPFR_RNDN);
                mpfr_neg(dPz + ij, dPz + ij, MPFR_RNDN);
            }
        for (int64_t i = 0; i < D; i++) {
            mpfr_set(dBz + i, lf + i, MPFR_RNDN);
            if (f)
                mpfr_add(dBz + i, dBz + i, lr + i, MPFR_RNDN);
        }
        if (f) {
            /* dg_f = <Lf_f, (I-P_f) M_{f-1}> + <Lr_{f-1}, (I-P_f) M'_f> (and z) */
            imp(k, T, mat(k, ST_P, f), Mp, D, 0);
            for (int64_t j = 0; j < DD; j++)
                mpfr_fma(k->acc, Lf + j, T + j, k->acc, MPFR_RNDN);
            imp(k, T, mat(k, ST_P, f), Mr, D, 0);
            for (int64_t j = 0; j < DD; j++)
                mpfr_fma(k->acc, Lr + j, T + j, k->acc, MPFR_RNDN);
            imp(k, tv, mat(k, ST_PZ, f), zp, 1, 0);
            for (int64_t j = 0; j < D; j++)
                mpfr_fma(k->acc, lf + j, tv + j, k->acc, MPFR_RNDN);
            imp(k, tv, mat(k, ST_PZ, f), zr, 1, 0);
            for (int64_t j = 0; j < D; j++)
                mpfr_fma(k->acc, lr + j, tv + j, k->acc, MPFR_RNDN);
        }
        if (!o)
            continue;
        mpfr_set(dg, k->acc, MPFR_RNDN);
        /* token gradients of the frame */
        load_frame(k, f);
        for (int64_t t = 0; t < k->S; t++) {
            const int64_t n = f * k->S + t;
            mpfr_srcptr K = k->fr[FR_K] + t * D, Kr = k->fr[FR_KR] + t * D, V = k->fr[FR_V] + t * D,
                        bt = k->beta + t;
            mpfr_set_zero(k->acc, 1); /* dbeta */
            for (int64_t a = 0; a < D; a++) {
                /* u = (dP + dP^T) Kr + dA V;  dKr = beta u;  dbeta += Kr . (dP Kr + dA V) */
                mpfr_set_zero(u + a, 1);
                mpfr_set_zero(k->y, 1);
                for (int64_t m = 0; m < D; m++) {
                    mpfr_fma(u + a, dP + a * D + m, Kr + m, u + a, MPFR_RNDN);
                    mpfr_fma(k->y, dA + a * D + m, V + m, k->y, MPFR_RNDN);
                }
                mpfr_fma(k->acc, Kr + a, u + a, k->acc, MPFR_RNDN);
                mpfr_fma(k->acc, Kr + a, k->y, k->acc, MPFR_RNDN);
                mpfr_add(u + a, u + a, k->y, MPFR_RNDN);
                for (int64_t m = 0; m < D; m++)
                    mpfr_fma(u + a, dP + m * D + a, Kr + m, u + a, MPFR_RNDN);
                mpfr_mul(dKr + a, u + a, bt, MPFR_RNDN);
                /* z stream: dK = beta ((dPz + dPz^T) K + dBz); dbeta += K . (dPz K + dBz) */
                mpfr_set_zero(k->y, 1);
                for (int64_t m = 0; m < D; m++)
                    mpfr_fma(k->y, dPz + a * D + m, K + m, k->y, MPFR_RNDN);
                mpfr_add(k->x, k->y, dBz + a, MPFR_RNDN);
                mpfr_fma(k->acc, K + a, k->x, k->acc, MPFR_RNDN);
                for (int64_t m = 0; m < D; m++)
                    mpfr_fma(k->x, dPz + m * D + a, K + m, k->x, MPFR_RNDN);
                mpfr_mul(dK + a, k->x, bt, MPFR_RNDN);
            }
            mpfr_set(o->g[full ? RA_BIGDN_BETA : RA_BIGDN_CBETA].x +
                         ra_bigdn_beta(s, k->b, k->h, f, t),
                     k->acc, MPFR_RNDN);
            for (int64_t e = 0; e < D; e++) {
                /* dV = beta dA^T Kr */
                mpfr_ptr dv = full ? o->g[RA_BIGDN_QKV].x + ra_bigdn_qkv(s, k->b, n, 2, k->h, e)
                                   : o->g[RA_BIGDN_V].x + ra_bigdn_tok(s, k->b, n, k->h, e);
                mpfr_set_zero(dv, 1);
                for (int64_t m = 0; m < D; m++)
                    mpfr_fma(dv, dA + m * D + e, Kr + m, dv, MPFR_RNDN);
                mpfr_mul(dv, dv, bt, MPFR_RNDN);
            }
            if (!full) {
                for (int64_t d = 0; d < D; d++) {
                    const int64_t oi = ra_bigdn_tok(s, k->b, n, k->h, d);
                    mpfr_set(o->g[RA_BIGDN_K].x + oi, dK + d, MPFR_RNDN);
                    mpfr_set(o->g[RA_BIGDN_KR].x + oi, dKr + d, MPFR_RNDN);
                }
                continue;
            }
            mpfr_set_d(k->z, in->k_scale, MPFR_RNDN);
            for (int64_t d = 0; d < D; d++) {
                mpfr_ptr r = o->dkn.x + ra_bigdn_tok(s, k->b, n, k->h, d);
                if (mpfr_sgn(k->fr[FR_KN] + t * D + d) <= 0) {
                    mpfr_set_zero(r, 1);
                    continue;
                }
                ra_bigdn_get(k->x, in, RA_BIGDN_COS, n * D + d);
                mpfr_fma(r, dKr + d, k->x, dK + d, MPFR_RNDN);
                ra_bigdn_get(k->x, in, RA_BIGDN_SIN, n * D + (d ^ 1));
                mpfr_fma(r, dKr + (d ^ 1), k->x, r, MPFR_RNDN);
                mpfr_mul(r, r, k->z, MPFR_RNDN);
            }
        }
    }
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
    for (int j = 0; j < T_N; j++)
        k.t[j] = w->tm.x + j * k.DD;
    for (int j = 0; j < V_N; j++)
        k.v[j] = w->tm.x + T_N * k.DD + j * s->D;
    mpfr_ptr sc = w->tm.x + T_N * k.DD + V_N * s->D;
    k.x = sc, k.y = sc + 1, k.z = sc + 2, k.acc = sc + 3, k.g = sc + 4;
    if (bwd && w->nmat != ST_NM) {
        snprintf(msg, msglen, "bigdn reference: a forward-only workspace asked for a backward");
        return RA_EINTERNAL;
    }
    mpfr_clear_flags();
    if (in->kind == RA_BIGDN_FULL)
        norms(&k);
    forward_streams(&k);
    if (loss)
        mpfr_set_zero(loss, 1);
    for (int64_t f = 0; f < s->F; f++) {
        load_frame(&k, f);
        readout(&k, f, o, loss, bwd);
    }
    if (bwd)
        backward_streams(&k, o);
    if (failed()) {
        snprintf(msg, msglen,
                 "bigdn reference at %ld bits: a value left MPFR's exponent range or den + eps "
                 "is 0 (head b=%lld h=%lld)",
                 (long)w->prec, (long long)b, (long long)h);
        return RA_ENUMERIC;
    }
    return RA_OK;
}
