/* The bidirectional frame GDN family's formula sets: seed 003's published phase formulas. */
#include <stdlib.h>
#include <string.h>

#include "core/bigdn_case.h"
#include "gradcheck/bigdn_gc.h"
#include "gradcheck/derive.h"
#include "ref/bigdn.h"

/*
 * Seed 003 (Sana's chunkwise BiGDN backward) writes its backward in
 * phases; eval implements each exactly as the seed's code computes it
 * (the PyTorch fallback of phase B-bar, which the seed says its Triton
 * kernel reproduces; the Triton kernels' formulas for C-bar, A-bar KV,
 * A-bar Z and the fused unrope), in MPFR, from a forward that follows
 * SPEC.md §4:
 *
 *   output_divide_bwd   dnum = dout / (den + eps),
 *                       dden = -sum_D(dout * num) / (den + eps)^2
 *   C-bar               dQ = dO M_f^T, dM_C = Q^T dO   (Q = Qr, M_f = M_fwd + M_rev)
 *                       dQ_z = dden (z_fwd + z_rev), dz_C = sum_s Q_for_den dden
 *   B-bar               total_dM_fwd[F-1] = dM_final + dM_C[F-1],
 *                       total_dM_fwd[f] = dM_C[f] + g[f+1] (I - P[f+1])^T total_dM_fwd[f+1];
 *                       dM_init = g[0] (I - P[0])^T total_dM_fwd[0];
 *                       total_dM_rev[0] = dM_C[0],
 *                       total_dM_rev[f+1] = dM_C[f+1] + g[f+1] (I - P[f+1])^T total_dM_rev[f]
 *                       (and the same scans for z with P_z)
 *   combine             dA = total_dM_fwd, dA[1:] += total_dM_rev[:F-1];
 *                       dP = -g total_dM_fwd M_fwd_prev^T,
 *                       dP[1:] += -g[1:] total_dM_rev[:F-1] M_rev_at[1:]^T;
 *                       dg = <total_dM_fwd, (I-P) M_fwd_prev>
 *                            + [f >= 1] <total_dM_rev[f-1], (I-P[f]) M_rev_at[f]>
 *                       (and dB_z, dP_z, dg_z for z); ddecay = dg_kv + dg_z
 *   A-bar KV            dK = beta (K dP + K dP^T) + beta V dA^T, dV = beta K dA,
 *                       dbeta = rowsum(K dP * K) + rowsum(K dA * V)
 *   A-bar Z             dK = beta (K dP_z + K dP_z^T) + beta dB_z,
 *                       dbeta = rowsum(K dP_z * K) + rowsum(K * dB_z)
 *   unrope + ReLU       dQ_normed = (dQ_kv cos + pair(dQ_kv) sin[d^1] + dQ_z) (Q_relu > 0),
 *                       dK_normed = (dK_kv cos + pair(dK_kv) sin[d^1] + dK_z) (K_relu > 0) k_scale
 *   RMSNorm             dx = irms w dy - irms^3 / C x sum(w dy x),
 *                       dw = sum_{B,N} dy x irms
 *
 * Each formula is checked as the gradient of the FD row it claims:
 * bigdn.core's inputs (Qr for C-bar's dQ, Kr for A-bar KV's dK, K for
 * A-bar Z's dK, ...) and the perturbation arrays of src/ref/bigdn.h for
 * the internal quantities (num, den, Mt = dM_C, Mf = total_dM_fwd, Mr =
 * total_dM_rev, M0 = dM_init, A = dA, P = dP, ...); bigdn's set checks the
 * unrope/ReLU and RMSNorm stages (Qn, Kn, qkv, the norm weights).  Every
 * later phase consumes the earlier phases' outputs as the seed chains
 * them, so a row also vouches for the chain up to it.
 */

static const ra_derive_formula core_formulas[] = {
    {"num", "output_divide_bwd: dnum = dout / (den + eps)", NULL},
    {"den", "output_divide_bwd: dden = -sum_D(dout * num) / (den + eps)^2", NULL},
    {"Mt", "C-bar: dM_C = Q^T dO  (Q = Q_for_num, dO = dnum)", NULL},
    {"Qr", "C-bar: dQ = dO M_f^T  (M_f = M_fwd + M_rev)", NULL},
    {"zt", "C-bar z: dz_C = sum_s Q_for_den * dden", NULL},
    {"Q", "C-bar z: dQ_z = dden * (z_fwd + z_rev)", NULL},
    {"Mf",
     "B-bar, forward direction, reverse scan: total_dM_fwd[F-1] = dM_final + dM_C[F-1]; "
     "total_dM_fwd[f] = dM_C[f] + g[f+1] (I - P[f+1])^T total_dM_fwd[f+1]",
     NULL},
    {"M0", "B-bar: dM_init = g[0] (I - P[0])^T total_dM_fwd[0]", NULL},
    {"Mr",
     "B-bar, reverse direction, forward scan: total_dM_rev[0] = dM_C[0]; "
     "total_dM_rev[f+1] = dM_C[f+1] + g[f+1] (I - P[f+1])^T total_dM_rev[f]",
     NULL},
    {"zf", "B-bar z: total_dz_fwd[f] = dz_C[f] + g[f+1] (I - P_z[f+1])^T total_dz_fwd[f+1]", NULL},
    {"zr", "B-bar z: total_dz_rev[f+1] = dz_C[f+1] + g[f+1] (I - P_z[f+1])^T total_dz_rev[f]",
     NULL},
    {"A", "combine: dA = total_dM_fwd; dA[1:] += total_dM_rev[:F-1]", NULL},
    {"P",
     "combine: dP = -g total_dM_fwd M_fwd_prev^T; "
     "dP[1:] += -g[1:] total_dM_rev[:F-1] M_rev_at[1:]^T",
     NULL},
    {"Bz", "combine z: dB_z = total_dz_fwd; dB_z[1:] += total_dz_rev[:F-1]", NULL},
    {"Pz",
     "combine z: dP_z = -g total_dz_fwd z_fwd_prev^T; "
     "dP_z[1:] += -g[1:] total_dz_rev[:F-1] z_rev_at[1:]^T",
     NULL},
    {"decay",
     "combine: dg = <total_dM_fwd, (I-P) M_fwd_prev> + <total_dM_rev[f-1], (I-P[f]) M_rev_at[f]> "
     "(f >= 1), plus the same for z; ddecay = dg_kv + dg_z",
     NULL},
    {"Kr", "A-bar KV: dK = beta (K dP + K dP^T) + beta V dA^T", NULL},
    {"V", "A-bar KV: dV = beta K dA", NULL},
    {"K", "A-bar Z: dK = beta (K dP_z + K dP_z^T) + beta dB_z", NULL},
    {"beta",
     "A-bar: dbeta = rowsum(K dP * K) + rowsum(K dA * V) + rowsum(K dP_z * K) + rowsum(K * dB_z)",
     NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_formula full_formulas[] = {
    {"Qn", "unrope + ReLU: dQ_normed = (dQ_kv cos + dQ_kv[d^1] sin[d^1] + dQ_z) * (Q_relu > 0)",
     NULL},
    {"Kn",
     "unrope + ReLU: dK_normed = (dK_kv cos + dK_kv[d^1] sin[d^1] + dK_z) * (K_relu > 0) * k_scale",
     NULL},
    {"qkv", "RMSNorm: dx = irms w dy - irms^3 / C x sum(w dy x) (q, k); dv = dV", NULL},
    {"q_norm_w", "RMSNorm: dq_nw = sum_{B,N} dQ_normed * q_raw * q_irms", NULL},
    {"k_norm_w", "RMSNorm: dk_nw = sum_{B,N} dK_normed * k_raw * k_irms", NULL},
    {"beta", "dbeta_total = dbeta_kv + dbeta_z", NULL},
    {"decay", "ddecay_total = dg_kv + dg_z", NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_case core_cases[] = {
    {"default", "B=1,F=3,S=2,H=1,D=4", "default", NULL},
    {"sana recipe, F=4", "B=1,F=4,S=3,H=1,D=2", "sana", NULL},
    {NULL, NULL, NULL, NULL},
};

static const ra_derive_case full_cases[] = {
    {"default, H=2 (RMSNorm over both heads)", "B=1,F=3,S=2,H=2,D=2", "default", NULL},
    {NULL, NULL, NULL, NULL},
};

/* Per-head storage: MPFR arrays at prec, by name. */
enum {
    A_QN,
    A_KN,
    A_Q,
    A_K,
    A_QR,
    A_KR,
    A_V,
    A_NUM,
    A_DNUM,
    A_DQKV,
    A_DQZ,
    A_DKKV,
    A_DKZ,
    A_DV,
    A_NTOK
};
enum { B_BETA, B_DEN, B_DDEN, B_DBKV, B_DBZ, B_NN };
enum { M_P, M_A, M_PZ, M_DMC, M_TF, M_TR, M_DA, M_DP, M_DPZ, M_NF };
enum { Z_BZ, Z_DZC, Z_TF, Z_TR, Z_DBZ, Z_NF };

typedef struct st {
    int64_t B, F, S, H, D, N, DD;
    ra_mparr tok, nn, mf, mfull, zf, zfull, fv, tmp;
    mpfr_ptr x, y, acc;
} st;

#define TOK(s, w, n) ((s)->tok.x + ((w) * (s)->N + (n)) * (s)->D)
#define NN(s, w, n) ((s)->nn.x + (w) * (s)->N + (n))
#define MF(s, w, f) ((s)->mf.x + ((w) * (s)->F + (f)) * (s)->DD)
#define ZF(s, w, f) ((s)->zf.x + ((w) * (s)->F + (f)) * (s)->D)
/* M_fwd_full (0: M_{-1}, f+1: M_f), M_rev_full (f: M'_f, F: 0) */
#define MFW(s, f) ((s)->mfull.x + (f) * (s)->DD)
#define MRV(s, f) ((s)->mfull.x + ((s)->F + 1 + (f)) * (s)->DD)
#define ZFW(s, f) ((s)->zfull.x + (f) * (s)->D)
#define ZRV(s, f) ((s)->zfull.x + ((s)->F + 1 + (f)) * (s)->D)

/* out = X - P X (trans 0) or X - P^T X (trans 1), X with ncol columns. */
static void imp(st *s, mpfr_ptr out, mpfr_srcptr P, mpfr_srcptr X, int64_t ncol, int trans)
{
    const int64_t D = s->D;
    for (int64_t i = 0; i < D; i++)
        for (int64_t j = 0; j < ncol; j++) {
            mpfr_ptr o = out + i * ncol + j;
            mpfr_set(o, X + i * ncol + j, MPFR_RNDN);
            for (int64_t m = 0; m < D; m++) {
                mpfr_mul(s->x, trans ? P + m * D + i : P + i * D + m, X + m * ncol + j, MPFR_RNDN);
                mpfr_sub(o, o, s->x, MPFR_RNDN);
            }
        }
}

/* Features of head (b, h) as SPEC.md §4 (the seed's forward), q_inv/k_inv
   of every token computed over all channels. */
static void features(st *s, const ra_bigdn_problem *p, int64_t b, int64_t h, mpfr_ptr inv)
{
    const int full = p->kind == RA_BIGDN_FULL;
    const int64_t D = s->D, C = s->H * s->D;
    for (int64_t n = 0; n < s->N; n++) {
        const int64_t f = n / s->S, t = n % s->S;
        ra_tensor_get_mpfr(NN(s, B_BETA, n), p->in[full ? RA_BIGDN_BETA : RA_BIGDN_CBETA],
                           ra_bigdn_beta(&p->s, b, h, f, t));
        if (!full) {
            const int map[5] = {A_Q, A_K, A_QR, A_KR, A_V};
            for (int j = 0; j < 5; j++)
                for (int64_t d = 0; d < D; d++)
                    ra_tensor_get_mpfr(TOK(s, map[j], n) + d, p->in[j],
                                       ra_bigdn_tok(&p->s, b, n, h, d));
            continue;
        }
        for (int j = 0; j < 2; j++) {
            mpfr_set_zero(s->acc, 1);
            for (int64_t c = 0; c < C; c++) {
                ra_tensor_get_mpfr(s->x, p->in[RA_BIGDN_QKV], ra_bigdn_qkv(&p->s, b, n, j, 0, c));
                mpfr_fma(s->acc, s->x, s->x, s->acc, MPFR_RNDN);
            }
            mpfr_div_si(s->acc, s->acc, C, MPFR_RNDN);
            mpfr_set_d(s->x, p->norm_eps, MPFR_RNDN);
            mpfr_add(s->acc, s->acc, s->x, MPFR_RNDN);
            mpfr_rec_sqrt(inv + 2 * n + j, s->acc, MPFR_RNDN);
            mpfr_ptr yn = TOK(s, j ? A_KN : A_QN, n), y = TOK(s, j ? A_K : A_Q, n),
                     yr = TOK(s, j ? A_KR : A_QR, n);
            for (int64_t d = 0; d < D; d++) {
                ra_tensor_get_mpfr(yn + d, p->in[RA_BIGDN_QKV], ra_bigdn_qkv(&p->s, b, n, j, h, d));
                mpfr_mul(yn + d, yn + d, inv + 2 * n + j, MPFR_RNDN);
                ra_tensor_get_mpfr(s->x, p->in[j ? RA_BIGDN_KNW : RA_BIGDN_QNW], h * D + d);
                mpfr_mul(yn + d, yn + d, s->x, MPFR_RNDN);
                mpfr_max(y + d, yn + d, s->nn.x + B_NN * s->N, MPFR_RNDN); /* relu (zero slot) */
                if (j) {
                    mpfr_set_d(s->x, p->k_scale, MPFR_RNDN);
                    mpfr_mul(y + d, y + d, s->x, MPFR_RNDN);
                }
            }
            for (int64_t d = 0; d < D; d++) {
                ra_tensor_get_mpfr(s->x, p->in[RA_BIGDN_COS], n * D + d);
                ra_tensor_get_mpfr(s->y, p->in[RA_BIGDN_SIN], n * D + d);
                mpfr_mul(yr + d, y + d, s->x, MPFR_RNDN);
                mpfr_fma(yr + d, y + (d ^ 1), s->y, yr + d, MPFR_RNDN);
            }
        }
        for (int64_t d = 0; d < D; d++)
            ra_tensor_get_mpfr(TOK(s, A_V, n) + d, p->in[RA_BIGDN_QKV],
                               ra_bigdn_qkv(&p->s, b, n, 2, h, d));
    }
}

/* The forward of SPEC.md §4 on the head's features: products, streams, num, den. */
static void forward(st *s, const ra_bigdn_problem *p, mpfr_srcptr g)
{
    const int64_t D = s->D, DD = s->DD, F = s->F, S = s->S;
    ra_mp_zero(s->mfull.x, s->mfull.n);
    ra_mp_zero(s->zfull.x, s->zfull.n);
    for (int64_t f = 0; f < F; f++) {
        ra_mp_zero(MF(s, M_P, f), (size_t)DD);
        ra_mp_zero(MF(s, M_A, f), (size_t)DD);
        ra_mp_zero(MF(s, M_PZ, f), (size_t)DD);
        ra_mp_zero(ZF(s, Z_BZ, f), (size_t)D);
        for (int64_t t = 0; t < S; t++) {
            const int64_t n = f * S + t;
            mpfr_srcptr be = NN(s, B_BETA, n), K = TOK(s, A_K, n), Kr = TOK(s, A_KR, n),
                        V = TOK(s, A_V, n);
            for (int64_t i = 0; i < D; i++) {
                mpfr_fma(ZF(s, Z_BZ, f) + i, be, K + i, ZF(s, Z_BZ, f) + i, MPFR_RNDN);
                for (int64_t j = 0; j < D; j++) {
                    mpfr_mul(s->x, be, Kr + i, MPFR_RNDN);
                    mpfr_fma(MF(s, M_P, f) + i * D + j, s->x, Kr + j, MF(s, M_P, f) + i * D + j,
                             MPFR_RNDN);
                    mpfr_fma(MF(s, M_A, f) + i * D + j, s->x, V + j, MF(s, M_A, f) + i * D + j,
                             MPFR_RNDN);
                    mpfr_mul(s->x, be, K + i, MPFR_RNDN);
                    mpfr_fma(MF(s, M_PZ, f) + i * D + j, s->x, K + j, MF(s, M_PZ, f) + i * D + j,
                             MPFR_RNDN);
                }
            }
        }
    }
    mpfr_ptr T = s->tmp.x;
    for (int64_t f = 0; f < F; f++) { /* M_f = g_f (I - P_f) M_{f-1} + A_f */
        imp(s, T, MF(s, M_P, f), MFW(s, f), D, 0);
        for (int64_t j = 0; j < DD; j++)
            mpfr_fma(MFW(s, f + 1) + j, g + f, T + j, MF(s, M_A, f) + j, MPFR_RNDN);
        imp(s, T, MF(s, M_PZ, f), ZFW(s, f), 1, 0);
        for (int64_t j = 0; j < D; j++)
            mpfr_fma(ZFW(s, f + 1) + j, g + f, T + j, ZF(s, Z_BZ, f) + j, MPFR_RNDN);
    }
    for (int64_t f = F - 2; f >= 0; f--) { /* M'_f = g_{f+1} (I - P_{f+1}) M'_{f+1} + A_{f+1} */
        imp(s, T, MF(s, M_P, f + 1), MRV(s, f + 1), D, 0);
        for (int64_t j = 0; j < DD; j++)
            mpfr_fma(MRV(s, f) + j, g + f + 1, T + j, MF(s, M_A, f + 1) + j, MPFR_RNDN);
        imp(s, T, MF(s, M_PZ, f + 1), ZRV(s, f + 1), 1, 0);
        for (int64_t j = 0; j < D; j++)
            mpfr_fma(ZRV(s, f) + j, g + f + 1, T + j, ZF(s, Z_BZ, f + 1) + j, MPFR_RNDN);
    }
    for (int64_t n = 0; n < s->N; n++) {
        const int64_t f = n / S;
        mpfr_ptr den = NN(s, B_DEN, n);
        mpfr_set_zero(den, 1);
        for (int64_t d = 0; d < D; d++) {
            mpfr_add(s->x, ZFW(s, f + 1) + d, ZRV(s, f) + d, MPFR_RNDN);
            mpfr_fma(den, TOK(s, A_Q, n) + d, s->x, den, MPFR_RNDN);
        }
        for (int64_t e = 0; e < D; e++) {
            mpfr_ptr num = TOK(s, A_NUM, n) + e;
            mpfr_set_zero(num, 1);
            for (int64_t d = 0; d < D; d++) {
                mpfr_add(s->x, MFW(s, f + 1) + d * D + e, MRV(s, f) + d * D + e, MPFR_RNDN);
                mpfr_fma(num, TOK(s, A_QR, n) + d, s->x, num, MPFR_RNDN);
            }
        }
    }
    (void)p;
}

/* Layout slot of each array (NULL when the layout has none). */
typedef struct slots {
    mpfr_ptr a[RA_BIGDN_NARR];
} slots;

/* The seed's backward phases on head (b, h); results into the layout. */
static void backward(st *s, const ra_bigdn_problem *p, mpfr_srcptr g, int64_t b, int64_t h,
                     const slots *o)
{
    const ra_bigdn_shape *sh = &p->s;
    const int full = p->kind == RA_BIGDN_FULL;
    const int64_t D = s->D, DD = s->DD, F = s->F, S = s->S;
    mpfr_ptr x = s->x, y = s->y, acc = s->acc, T = s->tmp.x, T2 = s->tmp.x + DD;
    mpfr_set_d(y, p->eps, MPFR_RNDN);
    /* output_divide_bwd */
    for (int64_t n = 0; n < s->N; n++) {
        mpfr_add(acc, NN(s, B_DEN, n), y, MPFR_RNDN); /* den + eps */
        mpfr_ptr dd = NN(s, B_DDEN, n);
        mpfr_set_zero(dd, 1);
        for (int64_t e = 0; e < D; e++) {
            const int64_t oi = ra_bigdn_tok(sh, b, n, h, e);
            ra_tensor_get_mpfr(x, p->dout, oi);
            mpfr_div(TOK(s, A_DNUM, n) + e, x, acc, MPFR_RNDN);
            mpfr_fma(dd, x, TOK(s, A_NUM, n) + e, dd, MPFR_RNDN);
            if (o->a[RA_BIGDN_P_NUM])
                mpfr_set(o->a[RA_BIGDN_P_NUM] + oi, TOK(s, A_DNUM, n) + e, MPFR_RNDN);
        }
        mpfr_div(dd, dd, acc, MPFR_RNDN);
        mpfr_div(dd, dd, acc, MPFR_RNDN);
        mpfr_neg(dd, dd, MPFR_RNDN);
        if (o->a[RA_BIGDN_P_DEN])
            mpfr_set(o->a[RA_BIGDN_P_DEN] + (b * s->N + n) * s->H + h, dd, MPFR_RNDN);
    }
    /* C-bar: dQ = dO M^T, dM_C = Q^T dO; z: dQ_z = dden z, dz_C = sum Q dden */
    for (int64_t f = 0; f < F; f++) {
        ra_mp_zero(MF(s, M_DMC, f), (size_t)DD);
        ra_mp_zero(ZF(s, Z_DZC, f), (size_t)D);
        for (int64_t t = 0; t < S; t++) {
            const int64_t n = f * S + t;
            for (int64_t d = 0; d < D; d++) {
                mpfr_ptr dq = TOK(s, A_DQKV, n) + d;
                mpfr_set_zero(dq, 1);
                for (int64_t e = 0; e < D; e++) {
                    mpfr_add(x, MFW(s, f + 1) + d * D + e, MRV(s, f) + d * D + e, MPFR_RNDN);
                    mpfr_fma(dq, TOK(s, A_DNUM, n) + e, x, dq, MPFR_RNDN);
                    mpfr_fma(MF(s, M_DMC, f) + d * D + e, TOK(s, A_QR, n) + d,
                             TOK(s, A_DNUM, n) + e, MF(s, M_DMC, f) + d * D + e, MPFR_RNDN);
                }
                mpfr_add(x, ZFW(s, f + 1) + d, ZRV(s, f) + d, MPFR_RNDN);
                mpfr_mul(TOK(s, A_DQZ, n) + d, NN(s, B_DDEN, n), x, MPFR_RNDN);
                mpfr_fma(ZF(s, Z_DZC, f) + d, TOK(s, A_Q, n) + d, NN(s, B_DDEN, n),
                         ZF(s, Z_DZC, f) + d, MPFR_RNDN);
            }
        }
    }
    /* B-bar (dM_final = 0) */
    for (int64_t f = F - 1; f >= 0; f--) {
        mpfr_ptr tf = MF(s, M_TF, f), zf = ZF(s, Z_TF, f);
        if (f == F - 1) {
            for (int64_t j = 0; j < DD; j++)
                mpfr_set(tf + j, MF(s, M_DMC, f) + j, MPFR_RNDN);
            for (int64_t j = 0; j < D; j++)
                mpfr_set(zf + j, ZF(s, Z_DZC, f) + j, MPFR_RNDN);
            continue;
        }
        imp(s, T, MF(s, M_P, f + 1), MF(s, M_TF, f + 1), D, 1);
        for (int64_t j = 0; j < DD; j++)
            mpfr_fma(tf + j, g + f + 1, T + j, MF(s, M_DMC, f) + j, MPFR_RNDN);
        imp(s, T, MF(s, M_PZ, f + 1), ZF(s, Z_TF, f + 1), 1, 1);
        for (int64_t j = 0; j < D; j++)
            mpfr_fma(zf + j, g + f + 1, T + j, ZF(s, Z_DZC, f) + j, MPFR_RNDN);
    }
    imp(s, T, MF(s, M_P, 0), MF(s, M_TF, 0), D, 1); /* dM_init */
    for (int64_t j = 0; j < DD && o->a[RA_BIGDN_P_M0]; j++)
        mpfr_mul(o->a[RA_BIGDN_P_M0] + (b * s->H + h) * DD + j, g, T + j, MPFR_RNDN);
    for (int64_t f = 0; f < F; f++) {
        mpfr_ptr tr = MF(s, M_TR, f), zr = ZF(s, Z_TR, f);
        if (f == 0) {
            for (int64_t j = 0; j < DD; j++)
                mpfr_set(tr + j, MF(s, M_DMC, 0) + j, MPFR_RNDN);
            for (int64_t j = 0; j < D; j++)
                mpfr_set(zr + j, ZF(s, Z_DZC, 0) + j, MPFR_RNDN);
            continue;
        }
        imp(s, T, MF(s, M_P, f), MF(s, M_TR, f - 1), D, 1);
        for (int64_t j = 0; j < DD; j++)
            mpfr_fma(tr + j, g + f, T + j, MF(s, M_DMC, f) + j, MPFR_RNDN);
        imp(s, T, MF(s, M_PZ, f), ZF(s, Z_TR, f - 1), 1, 1);
        for (int64_t j = 0; j < D; j++)
            mpfr_fma(zr + j, g + f, T + j, ZF(s, Z_DZC, f) + j, MPFR_RNDN);
    }
    /* combine */
    for (int64_t f = 0; f < F; f++) {
        mpfr_ptr dA = MF(s, M_DA, f), dP = MF(s, M_DP, f), dPz = MF(s, M_DPZ, f),
                 dBz = ZF(s, Z_DBZ, f);
        mpfr_srcptr tf = MF(s, M_TF, f), zf = ZF(s, Z_TF, f);
        mpfr_srcptr tr = f ? MF(s, M_TR, f - 1) : NULL, zr = f ? ZF(s, Z_TR, f - 1) : NULL;
        for (int64_t i = 0; i < D; i++) {
            mpfr_set(dBz + i, zf + i, MPFR_RNDN);
            if (f)
                mpfr_add(dBz + i, dBz + i, zr + i, MPFR_RNDN);
            for (int64_t j = 0; j < D; j++) {
                const int64_t ij = i * D + j;
                mpfr_set(dA + ij, tf + ij, MPFR_RNDN);
                if (f)
                    mpfr_add(dA + ij, dA + ij, tr + ij, MPFR_RNDN);
                /* -g total_dM_fwd M_fwd_prev^T  (M_fwd_prev[f] = M_fwd_full[f]) */
                mpfr_set_zero(acc, 1);
                for (int64_t m = 0; m < D; m++)
                    mpfr_fma(acc, tf + i * D + m, MFW(s, f) + j * D + m, acc, MPFR_RNDN);
                mpfr_mul(dP + ij, g + f, acc, MPFR_RNDN);
                mpfr_neg(dP + ij, dP + ij, MPFR_RNDN);
                mpfr_mul(x, zf + i, ZFW(s, f) + j, MPFR_RNDN);
                mpfr_mul(dPz + ij, g + f, x, MPFR_RNDN);
                mpfr_neg(dPz + ij, dPz + ij, MPFR_RNDN);
                if (!f)
                    continue;
                /* -g[f] total_dM_rev[f-1] M_rev_at[f]^T  (M_rev_at[f] = M_rev_full[f]) */
                mpfr_set_zero(acc, 1);
                for (int64_t m = 0; m < D; m++)
                    mpfr_fma(acc, tr + i * D + m, MRV(s, f) + j * D + m, acc, MPFR_RNDN);
                mpfr_mul(acc, g + f, acc, MPFR_RNDN);
                mpfr_sub(dP + ij, dP + ij, acc, MPFR_RNDN);
                mpfr_mul(x, zr + i, ZRV(s, f) + j, MPFR_RNDN);
                mpfr_mul(x, g + f, x, MPFR_RNDN);
                mpfr_sub(dPz + ij, dPz + ij, x, MPFR_RNDN);
            }
        }
        /* dg = <tf, (I-P) M_fwd_prev> + <tr, (I-P) M_rev_at> + z */
        mpfr_set_zero(acc, 1);
        imp(s, T2, MF(s, M_P, f), MFW(s, f), D, 0);
        for (int64_t j = 0; j < DD; j++)
            mpfr_fma(acc, tf + j, T2 + j, acc, MPFR_RNDN);
        imp(s, T2, MF(s, M_PZ, f), ZFW(s, f), 1, 0);
        for (int64_t j = 0; j < D; j++)
            mpfr_fma(acc, zf + j, T2 + j, acc, MPFR_RNDN);
        if (f) {
            imp(s, T2, MF(s, M_P, f), MRV(s, f), D, 0);
            for (int64_t j = 0; j < DD; j++)
                mpfr_fma(acc, tr + j, T2 + j, acc, MPFR_RNDN);
            imp(s, T2, MF(s, M_PZ, f), ZRV(s, f), 1, 0);
            for (int64_t j = 0; j < D; j++)
                mpfr_fma(acc, zr + j, T2 + j, acc, MPFR_RNDN);
        }
        mpfr_set(o->a[full ? RA_BIGDN_DECAY : RA_BIGDN_CDECAY] + ra_bigdn_gate(sh, b, h, f), acc,
                 MPFR_RNDN);
        const int64_t mi = ((b * s->H + h) * F + f) * DD, vi = ((b * s->H + h) * F + f) * D;
        /* the frame's adjoints into the perturbation rows they claim */
        const struct {
            int arr;
            mpfr_srcptr v;
            int64_t n, at;
        } put[] = {{RA_BIGDN_P_MT, MF(s, M_DMC, f), DD, mi},
                   {RA_BIGDN_P_MF, tf, DD, mi},
                   {RA_BIGDN_P_MR, MF(s, M_TR, f), DD, mi},
                   {RA_BIGDN_P_A, dA, DD, mi},
                   {RA_BIGDN_P_P, dP, DD, mi},
                   {RA_BIGDN_P_PZ, dPz, DD, mi},
                   {RA_BIGDN_P_ZT, ZF(s, Z_DZC, f), D, vi},
                   {RA_BIGDN_P_ZF, zf, D, vi},
                   {RA_BIGDN_P_ZR, ZF(s, Z_TR, f), D, vi},
                   {RA_BIGDN_P_BZ, dBz, D, vi}};
        for (size_t q = 0; q < sizeof put / sizeof put[0]; q++)
            for (int64_t j = 0; j < put[q].n; j++)
                mpfr_set(o->a[put[q].arr] + put[q].at + j, put[q].v + j, MPFR_RNDN);
    }
    /* A-bar KV and Z, per token */
    for (int64_t n = 0; n < s->N; n++) {
        const int64_t f = n / S;
        mpfr_srcptr dA = MF(s, M_DA, f), dP = MF(s, M_DP, f), dPz = MF(s, M_DPZ, f),
                    dBz = ZF(s, Z_DBZ, f), be = NN(s, B_BETA, n), K = TOK(s, A_KR, n),
                    V = TOK(s, A_V, n), Kz = TOK(s, A_K, n);
        mpfr_ptr dbkv = NN(s, B_DBKV, n), dbz = NN(s, B_DBZ, n);
        mpfr_set_zero(dbkv, 1);
        mpfr_set_zero(dbz, 1);
        for (int64_t a = 0; a < D; a++) {
            /* K_dP[a] = sum_i K_i dP[i][a]; K_dPT[a] = sum_i K_i dP[a][i]; V_dAT[a] = sum_i V_i
               dA[a][i]; K_dA[a] = sum_i K_i dA[i][a] */
            mpfr_ptr kdp = T, kdpt = T + 1, vdat = T + 2, kda = T + 3, kdpz = T + 4, kdpzt = T + 5;
            mpfr_set_zero(kdp, 1), mpfr_set_zero(kdpt, 1), mpfr_set_zero(vdat, 1);
            mpfr_set_zero(kda, 1), mpfr_set_zero(kdpz, 1), mpfr_set_zero(kdpzt, 1);
            for (int64_t i = 0; i < D; i++) {
                mpfr_fma(kdp, K + i, dP + i * D + a, kdp, MPFR_RNDN);
                mpfr_fma(kdpt, K + i, dP + a * D + i, kdpt, MPFR_RNDN);
                mpfr_fma(vdat, V + i, dA + a * D + i, vdat, MPFR_RNDN);
                mpfr_fma(kda, K + i, dA + i * D + a, kda, MPFR_RNDN);
                mpfr_fma(kdpz, Kz + i, dPz + i * D + a, kdpz, MPFR_RNDN);
                mpfr_fma(kdpzt, Kz + i, dPz + a * D + i, kdpzt, MPFR_RNDN);
            }
            /* dK_kv = beta (K_dP + K_dPT) + beta V_dAT */
            mpfr_add(x, kdp, kdpt, MPFR_RNDN);
            mpfr_mul(x, be, x, MPFR_RNDN);
            mpfr_fma(TOK(s, A_DKKV, n) + a, be, vdat, x, MPFR_RNDN);
            mpfr_mul(TOK(s, A_DV, n) + a, be, kda, MPFR_RNDN); /* dV = beta K_dA */
            mpfr_fma(dbkv, kdp, K + a, dbkv, MPFR_RNDN);       /* rowsum(K_dP * K) */
            mpfr_fma(dbkv, kda, V + a, dbkv, MPFR_RNDN);       /* rowsum(K_dA * V) */
            /* dK_z = beta (K_dPz + K_dPzT) + beta dB_z */
            mpfr_add(x, kdpz, kdpzt, MPFR_RNDN);
            mpfr_mul(x, be, x, MPFR_RNDN);
            mpfr_fma(TOK(s, A_DKZ, n) + a, be, dBz + a, x, MPFR_RNDN);
            mpfr_fma(dbz, kdpz, Kz + a, dbz, MPFR_RNDN);    /* rowsum(K_dPz * K) */
            mpfr_fma(dbz, Kz + a, dBz + a, dbz, MPFR_RNDN); /* rowsum(K * dB_z) */
        }
        mpfr_add(o->a[full ? RA_BIGDN_BETA : RA_BIGDN_CBETA] + ra_bigdn_beta(sh, b, h, f, n % S),
                 dbkv, dbz, MPFR_RNDN);
        for (int64_t d = 0; d < D; d++) {
            const int64_t oi = ra_bigdn_tok(sh, b, n, h, d);
            if (!full) {
                mpfr_set(o->a[RA_BIGDN_Q] + oi, TOK(s, A_DQZ, n) + d, MPFR_RNDN);
                mpfr_set(o->a[RA_BIGDN_QR] + oi, TOK(s, A_DQKV, n) + d, MPFR_RNDN);
                mpfr_set(o->a[RA_BIGDN_K] + oi, TOK(s, A_DKZ, n) + d, MPFR_RNDN);
                mpfr_set(o->a[RA_BIGDN_KR] + oi, TOK(s, A_DKKV, n) + d, MPFR_RNDN);
                mpfr_set(o->a[RA_BIGDN_V] + oi, TOK(s, A_DV, n) + d, MPFR_RNDN);
                continue;
            }
            mpfr_set(o->a[RA_BIGDN_QKV] + ra_bigdn_qkv(sh, b, n, 2, h, d), TOK(s, A_DV, n) + d,
                     MPFR_RNDN);
            /* fused unrope: dY[d] cos[d] + dY[d^1] sin[d^1], + dz, relu mask (, k_scale) */
            for (int j = 0; j < 2; j++) {
                mpfr_srcptr dy = TOK(s, j ? A_DKKV : A_DQKV, n), dz = TOK(s, j ? A_DKZ : A_DQZ, n),
                            relu = TOK(s, j ? A_K : A_Q, n);
                mpfr_ptr r = o->a[j ? RA_BIGDN_P_KN : RA_BIGDN_P_QN] + oi;
                ra_tensor_get_mpfr(x, p->in[RA_BIGDN_COS], n * D + d);
                mpfr_mul(r, dy + d, x, MPFR_RNDN);
                ra_tensor_get_mpfr(x, p->in[RA_BIGDN_SIN], n * D + (d ^ 1));
                mpfr_fma(r, dy + (d ^ 1), x, r, MPFR_RNDN);
                mpfr_add(r, r, dz + d, MPFR_RNDN);
                if (mpfr_sgn(relu + d) <= 0)
                    mpfr_set_zero(r, 1);
                if (j) {
                    mpfr_set_d(x, p->k_scale, MPFR_RNDN);
                    mpfr_mul(r, r, x, MPFR_RNDN);
                }
            }
        }
    }
}

/* RMSNorm backward of every token (bigdn): dqkv's q, k slots, dq_nw, dk_nw. */
static void rmsnorm_bwd(st *s, const ra_bigdn_problem *p, mpfr_srcptr inv, const slots *o)
{
    const ra_bigdn_shape *sh = &p->s;
    const int64_t C = s->H * s->D;
    mpfr_ptr x = s->x, y = s->y, acc = s->acc, c3 = s->tmp.x, w = s->tmp.x + 1;
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t n = 0; n < s->N; n++)
            for (int j = 0; j < 2; j++) {
                mpfr_srcptr irms = inv + 2 * (b * s->N + n) + j;
                mpfr_srcptr dy =
                    o->a[j ? RA_BIGDN_P_KN : RA_BIGDN_P_QN] + ra_bigdn_tok(sh, b, n, 0, 0);
                mpfr_ptr dnw = o->a[j ? RA_BIGDN_KNW : RA_BIGDN_QNW];
                mpfr_set_zero(acc, 1); /* corr = sum(w dy x) */
                for (int64_t c = 0; c < C; c++) {
                    ra_tensor_get_mpfr(x, p->in[RA_BIGDN_QKV], ra_bigdn_qkv(sh, b, n, j, 0, c));
                    ra_tensor_get_mpfr(w, p->in[j ? RA_BIGDN_KNW : RA_BIGDN_QNW], c);
                    mpfr_mul(y, w, dy + c, MPFR_RNDN);
                    mpfr_fma(acc, y, x, acc, MPFR_RNDN);
                    mpfr_mul(y, dy + c, x, MPFR_RNDN); /* dnw += dy x irms */
                    mpfr_fma(dnw + c, y, irms, dnw + c, MPFR_RNDN);
                }
                mpfr_mul(c3, irms, irms, MPFR_RNDN);
                mpfr_mul(c3, c3, irms, MPFR_RNDN);
                mpfr_div_si(c3, c3, C, MPFR_RNDN);
                mpfr_mul(c3, c3, acc, MPFR_RNDN);
                for (int64_t c = 0; c < C; c++) {
                    mpfr_ptr dx = o->a[RA_BIGDN_QKV] + ra_bigdn_qkv(sh, b, n, j, 0, c);
                    ra_tensor_get_mpfr(x, p->in[RA_BIGDN_QKV], ra_bigdn_qkv(sh, b, n, j, 0, c));
                    ra_tensor_get_mpfr(w, p->in[j ? RA_BIGDN_KNW : RA_BIGDN_QNW], c);
                    mpfr_mul(y, irms, w, MPFR_RNDN);
                    mpfr_mul(y, y, dy + c, MPFR_RNDN);
                    mpfr_mul(dx, c3, x, MPFR_RNDN);
                    mpfr_sub(dx, y, dx, MPFR_RNDN);
                }
            }
}

static ra_status eval(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c, int corrected,
                      mpfr_prec_t prec)
{
    (void)corrected; /* every formula of seed 003 holds: no corrected forms */
    ra_bigdn_problem p;
    RA_TRY(ra_bigdn_problem_init(&p, c, RA_BIGDN_NEED_COTANGENTS, "derive"));
    slots o;
    memset(&o, 0, sizeof o);
    for (int a = 0; a < io->nin; a++) {
        const int arr = ra_bigdn_gc_arr(p.kind, 1, a);
        if (arr < 0)
            RA_ERRORF(RA_EINTERNAL, "derive bigdn: layout input %d is no array", a);
        RA_TRY(ra_mparr_init(&grads[a], (size_t)io->in[a].n, prec));
        o.a[arr] = grads[a].x;
    }
    if (!o.a[RA_BIGDN_P_NUM])
        RA_ERROR("derive bigdn: needs the layout with the perturbation arrays", RA_EINTERNAL);
    st s = {.B = p.s.B, .F = p.s.F, .S = p.s.S, .H = p.s.H, .D = p.s.D};
    s.N = s.F * s.S, s.DD = s.D * s.D;
    ra_mparr inv = {0}, g = {0};
    ra_status e = ra_mparr_init(&s.tok, (size_t)(A_NTOK * s.N * s.D), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&s.nn, (size_t)(B_NN * s.N + 1), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&s.mf, (size_t)(M_NF * s.F * s.DD), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&s.mfull, (size_t)(2 * (s.F + 1) * s.DD), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&s.zf, (size_t)(Z_NF * s.F * s.D), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&s.zfull, (size_t)(2 * (s.F + 1) * s.D), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&s.tmp, (size_t)(2 * s.DD + 8), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&s.fv, 3, prec);
    if (e == RA_OK)
        e = ra_mparr_init(&inv, (size_t)(2 * s.B * s.N), prec);
    if (e == RA_OK)
        e = ra_mparr_init(&g, (size_t)s.F, prec);
    if (e == RA_OK) {
        s.x = s.fv.x, s.y = s.fv.x + 1, s.acc = s.fv.x + 2;
        ra_mp_range range;
        ra_mp_range_widen(&range);
        mpfr_clear_flags();
        for (int64_t b = 0; b < s.B; b++)
            for (int64_t h = 0; h < s.H; h++) {
                for (int64_t f = 0; f < s.F; f++)
                    ra_tensor_get_mpfr(
                        g.x + f, p.in[p.kind == RA_BIGDN_FULL ? RA_BIGDN_DECAY : RA_BIGDN_CDECAY],
                        ra_bigdn_gate(&p.s, b, h, f));
                features(&s, &p, b, h, inv.x);
                forward(&s, &p, g.x);
                backward(&s, &p, g.x, b, h, &o);
            }
        if (p.kind == RA_BIGDN_FULL)
            rmsnorm_bwd(&s, &p, inv.x, &o);
        if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p() || mpfr_divby0_p())
            RA_REPORTF(e = RA_ENUMERIC, "derive bigdn at %ld bits: left MPFR's exponent range",
                       (long)prec);
        ra_mp_range_restore(&range);
    }
    ra_mparr *all[] = {&s.tok, &s.nn, &s.mf, &s.mfull, &s.zf, &s.zfull, &s.tmp, &s.fv, &inv, &g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ra_mparr_free(all[i]);
    return e;
}

#define SOURCE                                                                                     \
    "seed 003 (seeds/003_a4b1d992d153796a.txt, Sana chunkwise BiGDN backward): "                   \
    "output_divide_bwd, "                                                                          \
    "phase_c_bwd, _phase_b_bidi_bwd_pytorch, combine_bidi_dA_dP_dg, phase_a_kv_bwd, "              \
    "phase_a_z_bwd, the Z chain and RMSNorm of FusedBiGDNChunkwiseFunction.backward, "             \
    "fused_rope_unrope_bwd"

static const ra_derive_set core_set = {
    .name = "bigdn.core, seed 003",
    .source = SOURCE,
    .shipped = 0,
    .gc = &ra_gc_op_bigdn_core_state,
    .formulas = core_formulas,
    .cases = core_cases,
    .eval = eval,
};

static const ra_derive_set full_set = {
    .name = "bigdn, seed 003",
    .source = SOURCE,
    .shipped = 0,
    .gc = &ra_gc_op_bigdn_state,
    .formulas = full_formulas,
    .cases = full_cases,
    .eval = eval,
};

const ra_derive_set *const ra_bigdn_derive_sets[] = {&full_set, NULL};
const ra_derive_set *const ra_bigdn_core_derive_sets[] = {&core_set, NULL};
