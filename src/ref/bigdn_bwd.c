/* The bigdn reference: one head's readout and exact adjoint, on the head's team. */
#include <mpfr.h>

#include "ref/bigdn_head.h"

/*
 * docs/bigdn.md: per token num, den and out = num / (den + eps), the
 * division VJP and readout adjoints (dQr, dQ, and dMt, dzt per frame),
 * the two stream adjoints Lf (reverse in time) and Lr (forward in time),
 * then per frame dA, dP, dPz, dBz and ddecay from them and the stored
 * states, then per token dKr, dK, dV, dbeta (for bigdn back through RoPE,
 * the ReLU mask and k_scale to the RMSNorm outputs).
 *
 * Parallel structure (bigdn_head.h): tokens are independent in the
 * readout and the token gradients; the frame sums dMt = sum_t Qr_t dnum_t^T
 * and dzt = sum_t dden_t Q_t run by rows of dMt, each element over t in
 * increasing order (the order a team of one used when it interleaved them
 * with the tokens); the adjoint scans by rows of the state.  The loss
 * (a sum over every token and channel) is one thread's, in the same order.
 */

/* A token's feature gradient through RoPE and the ReLU: out[d] = dF[d] +
   dFr[d] cos[d] + dFr[d^1] sin[d^1] (times scale when given), 0 where the
   pre-activation pre[d] <= 0; out indexed as the token-major norm buffers. */
static void unrope_relu(const head *k, thr *p, mpfr_ptr out, mpfr_srcptr pre, mpfr_srcptr dF,
                        mpfr_srcptr dFr, int64_t n, mpfr_srcptr scale)
{
    const int64_t D = k->D;
    for (int64_t d = 0; d < D; d++) {
        mpfr_ptr r = out + ra_bigdn_tok(k->s, k->b, n, k->h, d);
        if (mpfr_sgn(pre + d) <= 0) {
            mpfr_set_zero(r, 1);
            continue;
        }
        ra_bigdn_get(p->x, k->in, RA_BIGDN_COS, n * D + d);
        mpfr_fma(r, dFr + d, p->x, dF + d, MPFR_RNDN);
        ra_bigdn_get(p->x, k->in, RA_BIGDN_SIN, n * D + (d ^ 1));
        mpfr_fma(r, dFr + (d ^ 1), p->x, r, MPFR_RNDN);
        if (scale)
            mpfr_mul(r, r, scale, MPFR_RNDN);
    }
}

void ra_bigdn_readout(const head *k, thr *p, int64_t f, const ra_bigdn_out *o, mpfr_ptr loss,
                      int bwd)
{
    const ra_bigdn_in *in = k->in;
    const ra_bigdn_shape *s = k->s;
    const int64_t D = k->D, DD = k->DD;
    const int full = in->kind == RA_BIGDN_FULL;
    mpfr_ptr Mt = k->t[T_2], zt = k->v[V_2], num = p->v[P_NUM], dQr = p->v[P_DQR], dQ = p->v[P_DQ];
    mpfr_ptr dMt = bwd ? ra_bigdn_mat(k, ST_DMT, f) : NULL;
    mpfr_ptr dzt = bwd ? ra_bigdn_vec(k, SV_DZT, f) : NULL;
#pragma omp for schedule(static)
    for (int64_t j = 0; j < DD; j++) {
        mpfr_add(Mt + j, ra_bigdn_mat(k, ST_MF, f) + j, ra_bigdn_mat(k, ST_MR, f) + j, MPFR_RNDN);
        ra_bigdn_pert_add(Mt + j, in, RA_BIGDN_P_MT, ra_bigdn_mat_idx(k, f) + j, p->x);
    }
#pragma omp for schedule(static)
    for (int64_t j = 0; j < D; j++) {
        mpfr_add(zt + j, ra_bigdn_vec(k, SV_ZF, f) + j, ra_bigdn_vec(k, SV_ZR, f) + j, MPFR_RNDN);
        ra_bigdn_pert_add(zt + j, in, RA_BIGDN_P_ZT, ra_bigdn_vec_idx(k, f) + j, p->x);
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < k->S; t++) {
        const int64_t n = f * k->S + t;
        mpfr_srcptr Q = k->fr[FR_Q] + t * D, Qr = k->fr[FR_QR] + t * D;
        mpfr_ptr dov = k->fr[FR_DOV] + t * D, y = k->fr[FR_Y] + t * D,
                 dnum = k->fr[FR_DNUM] + t * D, dden = k->dden + t;
        for (int64_t e = 0; e < D; e++) {
            mpfr_set_zero(num + e, 1);
            for (int64_t d = 0; d < D; d++)
                mpfr_fma(num + e, Qr + d, Mt + d * D + e, num + e, MPFR_RNDN);
            ra_bigdn_pert_add(num + e, in, RA_BIGDN_P_NUM, ra_bigdn_tok(s, k->b, n, k->h, e), p->x);
        }
        mpfr_set_zero(p->z, 1); /* den */
        for (int64_t d = 0; d < D; d++)
            mpfr_fma(p->z, Q + d, zt + d, p->z, MPFR_RNDN);
        ra_bigdn_pert_add(p->z, in, RA_BIGDN_P_DEN, (k->b * k->N + n) * s->H + k->h, p->x);
        mpfr_set_d(p->x, in->eps, MPFR_RNDN);
        mpfr_add(p->z, p->z, p->x, MPFR_RNDN); /* r = den + eps */
        if (mpfr_zero_p(p->z))
            mpfr_set_divby0();
        for (int64_t e = 0; e < D; e++) {
            const int64_t oi = ra_bigdn_tok(s, k->b, n, k->h, e);
            mpfr_div(y + e, num + e, p->z, MPFR_RNDN);
            if (o && o->out.n)
                mpfr_set(o->out.x + oi, y + e, MPFR_RNDN);
            if (loss || bwd)
                ra_bigdn_get(dov + e, in, RA_BIGDN_DOUT, oi);
        }
        if (!bwd)
            continue;
        /* dnum = dout / r;  dden = -(dout . num) / r^2 */
        mpfr_set_zero(dden, 1);
        for (int64_t e = 0; e < D; e++) {
            mpfr_div(dnum + e, dov + e, p->z, MPFR_RNDN);
            mpfr_fma(dden, dov + e, num + e, dden, MPFR_RNDN);
        }
        mpfr_div(dden, dden, p->z, MPFR_RNDN);
        mpfr_div(dden, dden, p->z, MPFR_RNDN);
        mpfr_neg(dden, dden, MPFR_RNDN);
        if (!o)
            continue;
        for (int64_t d = 0; d < D; d++) {
            mpfr_set_zero(dQr + d, 1);
            for (int64_t e = 0; e < D; e++)
                mpfr_fma(dQr + d, Mt + d * D + e, dnum + e, dQr + d, MPFR_RNDN);
            mpfr_mul(dQ + d, dden, zt + d, MPFR_RNDN);
        }
        if (!full) {
            for (int64_t d = 0; d < D; d++) {
                const int64_t oi = ra_bigdn_tok(s, k->b, n, k->h, d);
                mpfr_set(o->g[RA_BIGDN_Q].x + oi, dQ + d, MPFR_RNDN);
                mpfr_set(o->g[RA_BIGDN_QR].x + oi, dQr + d, MPFR_RNDN);
            }
            continue;
        }
        /* unrope (dQ[d] += dQr[d] cos[d] + dQr[d^1] sin[d^1]), ReLU mask */
        unrope_relu(k, p, o->dqn.x, k->fr[FR_QN] + t * D, dQ, dQr, n, NULL);
    }
    if (loss) {
#pragma omp single
        for (int64_t j = 0; j < k->S * D; j++)
            mpfr_fma(loss, k->fr[FR_DOV] + j, k->fr[FR_Y] + j, loss, MPFR_RNDN);
    }
    /* with bwd: dMt = sum_t Qr_t dnum_t^T, dzt = sum_t dden_t Q_t, by rows */
    if (!bwd)
        return;
#pragma omp for schedule(dynamic, 1)
    for (int64_t d = 0; d < D; d++) {
        for (int64_t e = 0; e < D; e++) {
            mpfr_ptr m = dMt + d * D + e;
            mpfr_set_zero(m, 1);
            for (int64_t t = 0; t < k->S; t++)
                mpfr_fma(m, k->fr[FR_QR] + t * D + d, k->fr[FR_DNUM] + t * D + e, m, MPFR_RNDN);
        }
        mpfr_set_zero(dzt + d, 1);
        for (int64_t t = 0; t < k->S; t++)
            mpfr_fma(dzt + d, k->dden + t, k->fr[FR_Q] + t * D + d, dzt + d, MPFR_RNDN);
    }
}

/* One adjoint step: L = dMt_f + g (I - P)^T X by rows (p->g holds g); ncol columns. */
static void adj_step(const head *k, thr *p, mpfr_ptr L, mpfr_srcptr P, mpfr_srcptr X,
                     mpfr_srcptr dMt, int64_t ncol)
{
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < k->D; i++) {
        ra_bigdn_imp_row(k, L, P, X, ncol, 1, i);
        for (int64_t j = i * ncol; j < (i + 1) * ncol; j++)
            mpfr_fma(L + j, p->g, L + j, dMt + j, MPFR_RNDN);
    }
}

/* dst = src, n numbers, team-wide. */
static void copy(mpfr_ptr dst, mpfr_srcptr src, int64_t n)
{
#pragma omp for schedule(static)
    for (int64_t j = 0; j < n; j++)
        mpfr_set(dst + j, src + j, MPFR_RNDN);
}

/* The key/value token gradients of frame f (features loaded) from dA, dP, dPz, dBz. */
static void token_grads(const head *k, thr *p, const ra_bigdn_out *o, int64_t f)
{
    const ra_bigdn_in *in = k->in;
    const ra_bigdn_shape *s = k->s;
    const int64_t D = k->D;
    const int full = in->kind == RA_BIGDN_FULL;
    mpfr_srcptr dA = k->t[T_1], dP = k->t[T_2], dPz = k->t[T_3], dBz = k->v[V_0];
    mpfr_ptr u = p->v[P_U], dK = p->v[P_DK], dKr = p->v[P_DKR];
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < k->S; t++) {
        const int64_t n = f * k->S + t;
        mpfr_srcptr K = k->fr[FR_K] + t * D, Kr = k->fr[FR_KR] + t * D, V = k->fr[FR_V] + t * D,
                    bt = k->beta + t;
        mpfr_set_zero(p->acc, 1); /* dbeta */
        for (int64_t a = 0; a < D; a++) {
            /* u = (dP + dP^T) Kr + dA V;  dKr = beta u;  dbeta += Kr . (dP Kr + dA V) */
            mpfr_set_zero(u + a, 1);
            mpfr_set_zero(p->y, 1);
            for (int64_t m = 0; m < D; m++) {
                mpfr_fma(u + a, dP + a * D + m, Kr + m, u + a, MPFR_RNDN);
                mpfr_fma(p->y, dA + a * D + m, V + m, p->y, MPFR_RNDN);
            }
            mpfr_fma(p->acc, Kr + a, u + a, p->acc, MPFR_RNDN);
            mpfr_fma(p->acc, Kr + a, p->y, p->acc, MPFR_RNDN);
            mpfr_add(u + a, u + a, p->y, MPFR_RNDN);
            for (int64_t m = 0; m < D; m++)
                mpfr_fma(u + a, dP + m * D + a, Kr + m, u + a, MPFR_RNDN);
            mpfr_mul(dKr + a, u + a, bt, MPFR_RNDN);
            /* z stream: dK = beta ((dPz + dPz^T) K + dBz); dbeta += K . (dPz K + dBz) */
            mpfr_set_zero(p->y, 1);
            for (int64_t m = 0; m < D; m++)
                mpfr_fma(p->y, dPz + a * D + m, K + m, p->y, MPFR_RNDN);
            mpfr_add(p->x, p->y, dBz + a, MPFR_RNDN);
            mpfr_fma(p->acc, K + a, p->x, p->acc, MPFR_RNDN);
            for (int64_t m = 0; m < D; m++)
                mpfr_fma(p->x, dPz + m * D + a, K + m, p->x, MPFR_RNDN);
            mpfr_mul(dK + a, p->x, bt, MPFR_RNDN);
        }
        mpfr_set(o->g[full ? RA_BIGDN_BETA : RA_BIGDN_CBETA].x + ra_bigdn_beta(s, k->b, k->h, f, t),
                 p->acc, MPFR_RNDN);
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
        mpfr_set_d(p->z, in->k_scale, MPFR_RNDN);
        unrope_relu(k, p, o->dkn.x, k->fr[FR_KN] + t * D, dK, dKr, n, p->z);
    }
}

void ra_bigdn_backward(const head *k, thr *p, const ra_bigdn_out *o)
{
    const ra_bigdn_in *in = k->in;
    const ra_bigdn_shape *s = k->s;
    const int64_t D = k->D, DD = k->DD, F = k->F;
    const int full = in->kind == RA_BIGDN_FULL;
    /* Lf_{F-1} = dMt_{F-1};  Lf_f = dMt_f + g_{f+1} (I - P_{f+1})^T Lf_{f+1} */
    copy(ra_bigdn_mat(k, ST_LF, F - 1), ra_bigdn_mat(k, ST_DMT, F - 1), DD);
    copy(ra_bigdn_vec(k, SV_LF, F - 1), ra_bigdn_vec(k, SV_DZT, F - 1), D);
    for (int64_t f = F - 2; f >= 0; f--) {
        ra_bigdn_head_gate(k, p, f + 1);
        adj_step(k, p, ra_bigdn_mat(k, ST_LF, f), ra_bigdn_mat(k, ST_P, f + 1),
                 ra_bigdn_mat(k, ST_LF, f + 1), ra_bigdn_mat(k, ST_DMT, f), D);
        adj_step(k, p, ra_bigdn_vec(k, SV_LF, f), ra_bigdn_mat(k, ST_PZ, f + 1),
                 ra_bigdn_vec(k, SV_LF, f + 1), ra_bigdn_vec(k, SV_DZT, f), 1);
    }
    /* Lr_0 = dMt_0;  Lr_f = dMt_f + g_f (I - P_f)^T Lr_{f-1} */
    copy(ra_bigdn_mat(k, ST_LR, 0), ra_bigdn_mat(k, ST_DMT, 0), DD);
    copy(ra_bigdn_vec(k, SV_LR, 0), ra_bigdn_vec(k, SV_DZT, 0), D);
    for (int64_t f = 1; f < F; f++) {
        ra_bigdn_head_gate(k, p, f);
        adj_step(k, p, ra_bigdn_mat(k, ST_LR, f), ra_bigdn_mat(k, ST_P, f),
                 ra_bigdn_mat(k, ST_LR, f - 1), ra_bigdn_mat(k, ST_DMT, f), D);
        adj_step(k, p, ra_bigdn_vec(k, SV_LR, f), ra_bigdn_mat(k, ST_PZ, f),
                 ra_bigdn_vec(k, SV_LR, f - 1), ra_bigdn_vec(k, SV_DZT, f), 1);
    }
    mpfr_ptr dA = k->t[T_1], dP = k->t[T_2], dPz = k->t[T_3], dBz = k->v[V_0];
    for (int64_t f = 0; f < F; f++) {
        ra_bigdn_head_gate(k, p, f);
        /* the states the frame's step read: M_{f-1} (forward), M'_f (reverse, f >= 1) */
        mpfr_srcptr Mp = f ? ra_bigdn_mat(k, ST_MF, f - 1) : NULL;
        mpfr_srcptr zp = f ? ra_bigdn_vec(k, SV_ZF, f - 1) : NULL;
        mpfr_srcptr Lf = ra_bigdn_mat(k, ST_LF, f), lf = ra_bigdn_vec(k, SV_LF, f);
        mpfr_srcptr Lr = f ? ra_bigdn_mat(k, ST_LR, f - 1) : NULL;
        mpfr_srcptr lr = f ? ra_bigdn_vec(k, SV_LR, f - 1) : NULL;
        mpfr_srcptr Mr = ra_bigdn_mat(k, ST_MR, f), zr = ra_bigdn_vec(k, SV_ZR, f);
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < D; i++) {
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
                mpfr_mul(dP + ij, dP + ij, p->g, MPFR_RNDN);
                mpfr_neg(dP + ij, dP + ij, MPFR_RNDN);
                mpfr_mul(dPz + ij, dPz + ij, p->g, MPFR_RNDN);
                mpfr_neg(dPz + ij, dPz + ij, MPFR_RNDN);
            }
            mpfr_set(dBz + i, lf + i, MPFR_RNDN);
            if (f)
                mpfr_add(dBz + i, dBz + i, lr + i, MPFR_RNDN);
        }
        if (o) {
            /* dg_f = <Lf_f, (I-P_f) M_{f-1}> + <Lr_{f-1}, (I-P_f) M'_f> (and z), from the
               products the stream steps formed */
#pragma omp single
            {
                mpfr_ptr dg = o->g[full ? RA_BIGDN_DECAY : RA_BIGDN_CDECAY].x +
                              ra_bigdn_gate(s, k->b, k->h, f);
                mpfr_set_zero(dg, 1);
                if (f) {
                    mpfr_srcptr TF = ra_bigdn_mat(k, ST_TF, f), TR = ra_bigdn_mat(k, ST_TR, f);
                    mpfr_srcptr tf = ra_bigdn_vec(k, SV_TF, f), tr = ra_bigdn_vec(k, SV_TR, f);
                    for (int64_t j = 0; j < DD; j++)
                        mpfr_fma(dg, Lf + j, TF + j, dg, MPFR_RNDN);
                    for (int64_t j = 0; j < DD; j++)
                        mpfr_fma(dg, Lr + j, TR + j, dg, MPFR_RNDN);
                    for (int64_t j = 0; j < D; j++)
                        mpfr_fma(dg, lf + j, tf + j, dg, MPFR_RNDN);
                    for (int64_t j = 0; j < D; j++)
                        mpfr_fma(dg, lr + j, tr + j, dg, MPFR_RNDN);
                }
            }
            /* token gradients of the frame */
            ra_bigdn_load_frame(k, p, f);
            token_grads(k, p, o, f);
        }
    }
}
