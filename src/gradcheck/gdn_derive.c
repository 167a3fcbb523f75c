/* The gated delta rule's formula set: the reverse-time adjoint of SPEC.md §1 as written. */
#include <stdlib.h>
#include <string.h>

#include "core/gdn_case.h"
#include "gradcheck/derive.h"
#include "gradcheck/gdn_gc.h"
#include "ref/gdn.h"

/*
 * SPEC.md §1 (and docs/gdn.md) ship this adjoint, lambda = dL/dS_t:
 *
 *     lambda = dht (or 0)
 *     for t = T..1:
 *         lambda += scale * q_t do_t^T
 *         dq_t  = scale * S_t do_t
 *         r_t   = v_t - S~^T k_t;  u_t = beta_t r_t
 *         du    = lambda^T k_t
 *         dk_t  = lambda u_t - beta_t S~ du
 *         dbeta_t = du . r_t
 *         dv_t  = beta_t du
 *         dS~   = lambda - beta_t k_t du^T
 *         dg_t  = <dS~, S~>
 *         lambda = a_t dS~
 *     dh0 = lambda
 *
 * with dq, dk summed over the value heads of a key head, and with l2norm
 * the chain dx = dx^/n - x (x . dx^)/n^3, n = sqrt(|x|^2 + l2eps).  eval
 * transcribes it line by line over stored states S_0 .. S_T (not the
 * reference's segments and recursions), so `recaudit derive` proves the
 * listing itself, independently of how src/ref/gdn.c evaluates it.
 */

static const ra_derive_formula formulas[] = {
    {"q", "dq_t = scale * S_t do_t", NULL},
    {"k", "dk_t = lambda u_t - beta_t S~ du", NULL},
    {"v", "dv_t = beta_t du", NULL},
    {"g", "dg_t = <dS~, S~>", NULL},
    {"beta", "dbeta_t = du . r_t", NULL},
    {"h0", "dh0 = lambda (after t = 1; lambda = a_t dS~)", NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_case cases[] = {
    {"h0, dht", "B=1,T=5,Hk=1,Hv=2,K=3,V=2", "default", "h0"},
    {"h0, dht, l2norm (dx = dx^/n - x (x . dx^)/n^3)", "B=1,T=5,Hk=1,Hv=2,K=3,V=2", "default",
     "h0 l2norm"},
    {NULL, NULL, NULL, NULL},
};

typedef struct work {
    ra_mparr S, kv, qv, vec, sc;
} work;

static ra_status eval(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c, int corrected,
                      mpfr_prec_t prec)
{
    (void)corrected;
    ra_gdn_problem p;
    RA_TRY(ra_gdn_problem_init(&p, c, RA_GDN_NEED_COTANGENTS, "derive"));
    if (!p.h0 || !p.dht || io->nin != RA_GDN_NDIFF)
        RA_ERROR("derive gdn: the cases carry h0 and dht", RA_EINTERNAL);
    const ra_gdn_shape *s = &p.s;
    const int64_t K = s->K, V = s->V, T = s->T, KV = K * V, G = s->Hv / s->Hk;
    for (int a = 0; a < io->nin; a++)
        RA_TRY(ra_mparr_init(&grads[a], (size_t)io->in[a].n, prec));
    ra_gdn_data d;
    RA_TRY(ra_gdn_data_init(&d, &p));
    work w;
    memset(&w, 0, sizeof w);
    /* S: S_0 .. S_T; kv, qv: the (normalised) keys and queries of the head */
    ra_status st = ra_mparr_init(&w.S, (size_t)((T + 1) * KV), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w.kv, (size_t)(T * K), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w.qv, (size_t)(T * K), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w.vec, (size_t)(3 * KV + 4 * V + 2 * K), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w.sc, 10, prec);
    if (st != RA_OK)
        goto done;
    ra_mp_range range;
    ra_mp_range_widen(&range);
    mpfr_clear_flags();
    mpfr_ptr lam = w.vec.x, St = lam + KV, dSt = St + KV, r = dSt + KV, u = r + V, du = u + V,
             dov = du + V, dqh = dov + V, dkh = dqh + K;
    mpfr_ptr scale = w.sc.x, eps = w.sc.x + 1, a = w.sc.x + 2, x = w.sc.x + 3, y = w.sc.x + 4,
             n2 = w.sc.x + 5, nrm = w.sc.x + 6, beta = w.sc.x + 7, dot = w.sc.x + 8;
    ra_gdn_params(scale, eps, &d.in);
    ra_mparr *dq = &grads[RA_GDN_Q], *dk = &grads[RA_GDN_K];
#define SS(t, i, j) (w.S.x + (t)*KV + (i)*V + (j))
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t hv = 0; hv < s->Hv; hv++) {
            const int64_t hk = ra_gdn_key_head(s, hv);
            for (int64_t t = 0; t < T; t++)
                for (int which = 0; which < 2; which++) {
                    mpfr_ptr dst = (which ? w.kv.x : w.qv.x) + t * K;
                    const ra_tensor *src = which ? p.k : p.q;
                    for (int64_t i = 0; i < K; i++)
                        ra_tensor_get_mpfr(dst + i, src, ra_gdn_qk_index(s, b, t, hk, i));
                    if (p.l2norm) {
                        ra_gdn_l2norm(n2, nrm, dst, K, eps);
                        for (int64_t i = 0; i < K; i++)
                            mpfr_div(dst + i, dst + i, nrm, MPFR_RNDN);
                    }
                }
            for (int64_t i = 0; i < K; i++)
                for (int64_t j = 0; j < V; j++)
                    ra_tensor_get_mpfr(SS(0, i, j), p.h0, ra_gdn_state_index(s, b, hv, i, j));
            /* forward: S~ = a S_{t-1}; u = beta (v - S~^T k); S_t = S~ + k u^T */
            for (int64_t t = 1; t <= T; t++) {
                const int64_t gi = ra_gdn_gate_index(s, b, t - 1, hv);
                ra_tensor_get_mpfr(a, p.g, gi);
                mpfr_exp(a, a, MPFR_RNDN);
                ra_tensor_get_mpfr(beta, p.beta, gi);
                mpfr_srcptr k = w.kv.x + (t - 1) * K;
                for (int64_t j = 0; j < V; j++) {
                    ra_tensor_get_mpfr(x, p.v, ra_gdn_v_index(s, b, t - 1, hv, j));
                    for (int64_t i = 0; i < K; i++) {
                        mpfr_mul(y, a, SS(t - 1, i, j), MPFR_RNDN);
                        mpfr_mul(y, y, k + i, MPFR_RNDN);
                        mpfr_sub(x, x, y, MPFR_RNDN);
                    }
                    mpfr_mul(u + j, beta, x, MPFR_RNDN);
                }
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < V; j++) {
                        mpfr_mul(SS(t, i, j), a, SS(t - 1, i, j), MPFR_RNDN);
                        mpfr_fma(SS(t, i, j), k + i, u + j, SS(t, i, j), MPFR_RNDN);
                    }
            }
            /* the adjoint, line by line */
            for (int64_t i = 0; i < K; i++)
                for (int64_t j = 0; j < V; j++)
                    ra_tensor_get_mpfr(lam + i * V + j, p.dht, ra_gdn_state_index(s, b, hv, i, j));
            for (int64_t t = T; t >= 1; t--) {
                const int64_t tt = t - 1, gi = ra_gdn_gate_index(s, b, tt, hv);
                mpfr_srcptr q = w.qv.x + tt * K, k = w.kv.x + tt * K;
                ra_tensor_get_mpfr(a, p.g, gi);
                mpfr_exp(a, a, MPFR_RNDN);
                ra_tensor_get_mpfr(beta, p.beta, gi);
                for (int64_t j = 0; j < V; j++)
                    ra_tensor_get_mpfr(dov + j, p.do_, ra_gdn_v_index(s, b, tt, hv, j));
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < V; j++) {
                        mpfr_mul(St + i * V + j, a, SS(t - 1, i, j), MPFR_RNDN); /* S~ */
                        mpfr_mul(x, scale, q + i, MPFR_RNDN); /* lambda += scale q do^T */
                        mpfr_fma(lam + i * V + j, x, dov + j, lam + i * V + j, MPFR_RNDN);
                    }
                for (int64_t i = 0; i < K; i++) { /* dq_t = scale S_t do_t */
                    mpfr_set_zero(dqh + i, 1);
                    for (int64_t j = 0; j < V; j++)
                        mpfr_fma(dqh + i, SS(t, i, j), dov + j, dqh + i, MPFR_RNDN);
                    mpfr_mul(dqh + i, dqh + i, scale, MPFR_RNDN);
                }
                for (int64_t j = 0; j < V; j++) { /* r = v - S~^T k; u = beta r; du = lambda^T k */
                    ra_tensor_get_mpfr(r + j, p.v, ra_gdn_v_index(s, b, tt, hv, j));
                    mpfr_set_zero(du + j, 1);
                    for (int64_t i = 0; i < K; i++) {
                        mpfr_mul(x, St + i * V + j, k + i, MPFR_RNDN);
                        mpfr_sub(r + j, r + j, x, MPFR_RNDN);
                        mpfr_fma(du + j, lam + i * V + j, k + i, du + j, MPFR_RNDN);
                    }
                    mpfr_mul(u + j, beta, r + j, MPFR_RNDN);
                }
                for (int64_t i = 0; i < K; i++) { /* dk = lambda u - beta S~ du */
                    mpfr_set_zero(dkh + i, 1);
                    mpfr_set_zero(y, 1);
                    for (int64_t j = 0; j < V; j++) {
                        mpfr_fma(dkh + i, lam + i * V + j, u + j, dkh + i, MPFR_RNDN);
                        mpfr_fma(y, St + i * V + j, du + j, y, MPFR_RNDN);
                    }
                    mpfr_mul(y, y, beta, MPFR_RNDN);
                    mpfr_sub(dkh + i, dkh + i, y, MPFR_RNDN);
                }
                mpfr_ptr dbeta = grads[RA_GDN_BETA].x + gi, dg = grads[RA_GDN_G].x + gi;
                mpfr_set_zero(dbeta, 1);
                for (int64_t j = 0; j < V; j++) { /* dbeta = du . r; dv = beta du */
                    mpfr_fma(dbeta, du + j, r + j, dbeta, MPFR_RNDN);
                    mpfr_mul(grads[RA_GDN_V].x + ra_gdn_v_index(s, b, tt, hv, j), beta, du + j,
                             MPFR_RNDN);
                }
                mpfr_set_zero(dg, 1);
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < V;
                         j++) { /* dS~ = lambda - beta k du^T; dg = <dS~, S~> */
                        mpfr_mul(x, beta, k + i, MPFR_RNDN);
                        mpfr_mul(x, x, du + j, MPFR_RNDN);
                        mpfr_sub(dSt + i * V + j, lam + i * V + j, x, MPFR_RNDN);
                        mpfr_fma(dg, dSt + i * V + j, St + i * V + j, dg, MPFR_RNDN);
                        mpfr_mul(lam + i * V + j, a, dSt + i * V + j,
                                 MPFR_RNDN); /* lambda = a dS~ */
                    }
                for (int64_t i = 0; i < K; i++) { /* the group sum of dq^, dk^ */
                    const int64_t qi = ra_gdn_qk_index(s, b, tt, hk, i);
                    mpfr_add(dq->x + qi, dq->x + qi, dqh + i, MPFR_RNDN);
                    mpfr_add(dk->x + qi, dk->x + qi, dkh + i, MPFR_RNDN);
                }
            }
            for (int64_t i = 0; i < K; i++) /* dh0 = lambda */
                for (int64_t j = 0; j < V; j++)
                    mpfr_set(grads[RA_GDN_H0].x + ra_gdn_state_index(s, b, hv, i, j),
                             lam + i * V + j, MPFR_RNDN);
        }
#undef SS
    /* l2norm: dx = dx^/n - x (x . dx^)/n^3 with the raw x */
    for (int64_t e = 0; p.l2norm && e < s->B * T * s->Hk; e++)
        for (int which = 0; which < 2; which++) {
            mpfr_ptr gx = (which ? dk->x : dq->x) + e * K, xr = dqh;
            for (int64_t i = 0; i < K; i++)
                ra_tensor_get_mpfr(xr + i, which ? p.k : p.q, e * K + i);
            ra_gdn_l2norm(n2, nrm, xr, K, eps);
            mpfr_set_zero(dot, 1);
            for (int64_t i = 0; i < K; i++)
                mpfr_fma(dot, xr + i, gx + i, dot, MPFR_RNDN);
            mpfr_mul(y, n2, nrm, MPFR_RNDN); /* n^3 */
            for (int64_t i = 0; i < K; i++) {
                mpfr_div(x, gx + i, nrm, MPFR_RNDN);
                mpfr_mul(gx + i, xr + i, dot, MPFR_RNDN);
                mpfr_div(gx + i, gx + i, y, MPFR_RNDN);
                mpfr_sub(gx + i, x, gx + i, MPFR_RNDN);
            }
        }
    (void)G;
    if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p())
        RA_REPORTF(st = RA_ENUMERIC, "derive gdn at %ld bits: left MPFR's exponent range",
                   (long)prec);
    ra_mp_range_restore(&range);
done:
    ra_mparr_free(&w.S);
    ra_mparr_free(&w.kv);
    ra_mparr_free(&w.qv);
    ra_mparr_free(&w.vec);
    ra_mparr_free(&w.sc);
    ra_gdn_data_clear(&d);
    return st;
}

static const ra_derive_set spec1 = {
    .name = "gdn, SPEC.md §1",
    .source = "SPEC.md §1 / docs/gdn.md \"Backward\"",
    .shipped = 1,
    .gc = &ra_gc_op_gdn,
    .formulas = formulas,
    .cases = cases,
    .eval = eval,
};

const ra_derive_set *const ra_gdn_derive_sets[] = {&spec1, NULL};
