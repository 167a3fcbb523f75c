/* The bigdn reference's per-head internals, shared by bigdn.c and bigdn_bwd.c. */
#ifndef RA_REF_BIGDN_HEAD_H
#define RA_REF_BIGDN_HEAD_H

#include <stdint.h>

#include <mpfr.h>

#include "ref/bigdn.h"

/*
 * One head runs on a team of w->threads OpenMP threads (1: the calling
 * thread alone).  Every function below is called by every thread of the
 * team (SPMD); the loops over independent outputs (tokens, rows of a
 * D x D product, elements) are orphaned `omp for` loops, the few serial
 * steps `omp single`.  Outside a parallel region (a team of one) both
 * run in the calling thread as plain loops.  Each output element is
 * computed by exactly one thread with the same MPFR calls in the same
 * order as by a team of one, so the result is bit-identical for any team
 * size.  Shared arrays (frame features, per-frame stores, the D x D
 * temporaries) are written in disjoint parts between barriers; scalar and
 * per-token temporaries are per thread (thr).
 */

/* frame features, S x D each: the features, beta*Kr, beta*K, dout, out, dnum */
enum { FR_QN, FR_KN, FR_Q, FR_K, FR_QR, FR_KR, FR_V, FR_BKR, FR_BK, FR_DOV, FR_Y, FR_DNUM, FR_N };
/* per-frame stores: F x D x D each (from ST_DMT on only with the backward), then F x D vectors.
   ST_TF, ST_TR (SV_TF, SV_TR): the products (I - P_f) M_{f-1} and (I - P_f) M'_f the stream
   steps form, kept for the backward's ddecay instead of being formed again. */
enum { ST_P, ST_A, ST_PZ, ST_MF, ST_MR, ST_DMT, ST_LF, ST_LR, ST_TF, ST_TR, ST_NM };
enum { SV_BZ, SV_ZF, SV_ZR, SV_DZT, SV_LF, SV_LR, SV_TF, SV_TR, SV_NV };
/* shared D x D temporaries and D vectors */
enum { T_0, T_1, T_2, T_3, T_N };
enum { V_0, V_1, V_2, V_N };
/* per-thread D vectors (then 5 scalars) */
enum { P_NUM, P_DQR, P_DQ, P_U, P_DK, P_DKR, P_N };

struct ra_bigdn_ws {
    mpfr_prec_t prec;
    int threads;  /* the team that runs a head */
    ra_mparr inv; /* 2N: q_inv, k_inv (bigdn) */
    ra_mparr fr;  /* FR_N S D, then beta[S], dden[S] */
    ra_mparr st;  /* ST_NM F DD (the backward ones only with bwd), SV_NV F D */
    ra_mparr tm;  /* T_N DD, V_N D */
    ra_mparr th;  /* per thread: P_N D + 5 */
    int64_t nmat; /* matrices allocated in st */
};

typedef struct head {
    const ra_bigdn_in *in;
    const ra_bigdn_shape *s;
    ra_bigdn_ws *w;
    int64_t b, h, D, S, F, N, DD;
    mpfr_ptr fr[FR_N], beta, dden, t[T_N], v[V_N];
} head;

/* A thread's temporaries. */
typedef struct thr {
    mpfr_ptr v[P_N], x, y, z, acc, g;
} thr;

static inline mpfr_ptr ra_bigdn_mat(const head *k, int which, int64_t f)
{
    return k->w->st.x + (which * k->F + f) * k->DD;
}

static inline mpfr_ptr ra_bigdn_vec(const head *k, int which, int64_t f)
{
    return k->w->st.x + k->w->nmat * k->F * k->DD + (which * k->F + f) * k->D;
}

/* Flat index of frame f's D x D (or D) block of a [B,H,F,D,D] ([B,H,F,D]) array. */
static inline int64_t ra_bigdn_mat_idx(const head *k, int64_t f)
{
    return ((k->b * k->s->H + k->h) * k->F + f) * k->DD;
}
static inline int64_t ra_bigdn_vec_idx(const head *k, int64_t f)
{
    return ((k->b * k->s->H + k->h) * k->F + f) * k->D;
}

/* x += perturbation array a at i, when a is in use. */
static inline void ra_bigdn_pert_add(mpfr_ptr x, const ra_bigdn_in *in, int a, int64_t i,
                                     mpfr_ptr tmp)
{
    if (in->one_arr != a && !(in->step && in->dir[a]))
        return;
    ra_bigdn_get(tmp, in, a, i);
    mpfr_add(x, x, tmp, MPFR_RNDN);
}

/* p->g = g_f of this head. */
static inline void ra_bigdn_head_gate(const head *k, thr *p, int64_t f)
{
    ra_bigdn_get(p->g, k->in, k->in->kind == RA_BIGDN_FULL ? RA_BIGDN_DECAY : RA_BIGDN_CDECAY,
                 ra_bigdn_gate(k->s, k->b, k->h, f));
}

/* Row i of X - P X (trans = 0) or X - P^T X (trans = 1) into out's row i; X has ncol
   columns; out must not alias X. */
void ra_bigdn_imp_row(const head *k, mpfr_ptr out, mpfr_srcptr P, mpfr_srcptr X, int64_t ncol,
                      int trans, int64_t i);

/* The features of frame f's tokens into k->fr (and beta, beta*Kr, beta*K); team-wide. */
void ra_bigdn_load_frame(const head *k, thr *p, int64_t f);

/* Readout of frame f (features loaded): out, the loss, and with bwd the division and
   readout adjoints; team-wide. */
void ra_bigdn_readout(const head *k, thr *p, int64_t f, const ra_bigdn_out *o, mpfr_ptr loss,
                      int bwd);

/* The stream adjoints, the per-frame gradients and the token gradients; team-wide. */
void ra_bigdn_backward(const head *k, thr *p, const ra_bigdn_out *o);

#endif
